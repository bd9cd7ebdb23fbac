"""CtxgateCallback on a real Trainer run: each saved checkpoint is evaluated by a watcher process
beside training, and the run's trackers (TensorBoard event files, an MLflow file store, W&B offline
files) hold the RULER average per length at each checkpoint's step, read back with each tracker's
own reader."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import HOTPOT, SQUAD

READ_BACK = """
import json, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
import mlflow
events = EventAccumulator(sys.argv[1])
events.Reload()
tb = {
    n: [[e.step, e.value] for e in events.Scalars("ctxgate/ruler_avg/" + n)] for n in ("512", "1K")
}
client = mlflow.MlflowClient(tracking_uri=sys.argv[2])
history = [[m.step, m.value] for r in client.search_runs(experiment_ids=["0"])
           for m in client.get_metric_history(r.info.run_id, "ctxgate/ruler_avg/1K")]
print(json.dumps({"tb": tb, "mlflow": history}))
"""
SUITE = [
    "-k",
    "niah_single_1",
    "--lengths",
    "512,1k",
    "--samples",
    "2",
    "--no-cache",
    "-p",
    "no:cacheprovider",
]


def test_each_saved_checkpoint_is_evaluated_beside_training_and_logged_at_its_step(
    tmp_path, monkeypatch
):
    from ctxgate.ext.trackers import CtxgateCallback
    from fixtures.training_runs import train

    for name in ("WANDB_RUN_ID", "MLFLOW_RUN_ID", "MLFLOW_TRACKING_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    callback = CtxgateCallback(
        [*SUITE, "--squad", str(SQUAD), "--hotpotqa", str(HOTPOT)],
        log_to=["tensorboard", f"mlflow=file:{tmp_path / 'mlruns'}", "wandb=ctxgate-tests"],
        watch_args=["--interval", "1.0", "--settle", "1.0"],
        wait_at_end=True,
    )
    run = tmp_path / "run"
    checkpoints = train(run, steps=4, save_every=2, callbacks=[callback], learning_rate=1e-4)
    assert [c.name for c in checkpoints] == ["checkpoint-2", "checkpoint-4"]
    assert callback.process is not None and callback.process.returncode == 0, (
        run / "ctxgate" / "watch.log"
    ).read_text()
    reports = {
        c.name: json.loads((run / "ctxgate" / f"{c.name}.json").read_text()) for c in checkpoints
    }
    expected = {
        (int(c.name.split("-")[1]), L): reports[c.name]["by_length"][str(L)]["ruler"]["score"]
        for c in checkpoints
        for L in (512, 1024)
    }

    # read back in a process of its own, as test_trackers.py does (the readers spoil this process's
    # entry points for later in-process pytest runs)
    read = subprocess.run(
        [
            sys.executable,
            "-c",
            READ_BACK,
            str(run / "runs" / "ctxgate"),
            f"file:{tmp_path / 'mlruns'}",
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "MLFLOW_ALLOW_FILE_STORE": "true"},
    )
    back = json.loads(read.stdout.strip().splitlines()[-1])
    got = {(step, 1024): value for step, value in back["tb"]["1K"]}
    got |= {(step, 512): value for step, value in back["tb"]["512"]}
    assert got == expected
    assert {(step, 1024): value for step, value in back["mlflow"]} == {
        k: v for k, v in expected.items() if k[1] == 1024
    }

    tables = sorted(
        tmp_path.glob("wandb/offline-run-*/files/media/table/ctxgate/summary_*.table.json")
    )
    assert len(tables) == 2  # one offline run file per evaluation
    values = [dict(json.loads(t.read_text())["data"]) for t in tables]
    assert sorted(v["ctxgate/ruler_avg/1K"] for v in values) == sorted(
        v for k, v in expected.items() if k[1] == 1024
    )
