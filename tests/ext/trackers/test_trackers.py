"""--log-to: the run's scores in W&B (offline), TensorBoard and MLflow (a file store) at the
checkpoint's training step, each read back with the tracker's own reader; a failing tracker is one
note and never fails the gate."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ctxgate.ext.trackers.sinks import metrics
from ctxgate.steps import training_step
from tests.conftest import TINY, typed_report

READ_BACK = """
import json, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
import mlflow
root = sys.argv[1]
events = EventAccumulator(root + "/tb")
events.Reload()
tb = {
    n: [[e.step, e.value] for e in events.Scalars("ctxgate/ruler_avg/" + n)] for n in ("512", "1K")
}
client = mlflow.MlflowClient(tracking_uri="file:" + root + "/mlruns")
(run,) = client.search_runs(experiment_ids=["0"])
metric = client.get_metric_history(run.info.run_id, "ctxgate/ruler_avg/1K")
history = [[m.step, m.value] for m in metric]
artifacts = [a.path for a in client.list_artifacts(run.info.run_id, "ctxgate")]
seen = run.data.metrics["ctxgate/tokens_seen"]
print(json.dumps({"tb": tb, "mlflow": history, "tokens_seen": seen, "artifacts": artifacts}))
"""
CASES = ("-k", "niah_single_1", "--lengths", "512,1k", "--samples", "2", "--no-cache")


def test_the_step_comes_from_the_flag_trainer_state_or_the_folder_name(tmp_path):
    run = tmp_path / "checkpoint-1200"
    run.mkdir()
    assert training_step(str(run), None).value == 1200
    (run / "trainer_state.json").write_text(
        json.dumps({"global_step": 1250, "num_input_tokens_seen": 5_000_000})
    )
    step = training_step(str(run), None)
    assert (step.value, step.source, step.tokens_seen) == (1250, "trainer_state.json", 5_000_000)
    assert training_step(str(run), 7).value == 7
    for name, value in (
        ("global_step300", 300),
        ("iter_0004000", 4000),
        ("step-12", 12),
        ("final", None),
    ):
        folder = tmp_path / name
        folder.mkdir()
        assert training_step(str(folder), None).value == value


def test_metrics_leave_out_what_has_no_score():
    report = typed_report(
        [
            {"task": "vt", "length": 8192, "score": 80.0, "n": 100},
            {"task": "cwe", "length": 8192, "score": None},
        ],
        by_length={
            "8192": {
                "ruler": {"score": 80.0, "members": ["vt"], "missing": ["cwe"], "partial": True},
                "helmet_recall": {"score": None, "members": []},
            }
        },
        effective_length={"value": 8192, "max_passing": 8192, "threshold": 85.6},
        long_score={"ruler": {"value": -5.0, "base": 80.0, "base_lengths": [4096]}},
        gates=[
            {"name": "floors", "verdict": "pass", "message": ""},
            {"name": "cases", "verdict": "fail", "message": ""},
        ],
    )
    assert metrics(report) == {
        "ctxgate/case/vt/8K": 80.0,
        "ctxgate/case_n/vt/8K": 100.0,
        "ctxgate/ruler_avg/8K": 80.0,
        "ctxgate/partial/ruler_avg/8K": 1.0,  # a subset's mean, marked as one
        "ctxgate/effective_length": 8192.0,
        "ctxgate/long_score/ruler": -5.0,
        "ctxgate/gate/floors": 1.0,
        "ctxgate/gate/cases": 0.0,
    }


@pytest.fixture
def checkpoint(tmp_path) -> Path:
    """The shipped checkpoint as a Trainer checkpoint at step 40."""
    folder = tmp_path / "run" / "checkpoint-40"
    shutil.copytree(TINY, folder)
    (folder / "trainer_state.json").write_text(
        json.dumps({"global_step": 40, "num_input_tokens_seen": 81920})
    )
    return folder


def test_all_three_trackers_hold_the_ruler_average_per_length_at_the_step(
    checkpoint, real_suite, pytester, tmp_path, monkeypatch
):
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    monkeypatch.delenv("WANDB_RUN_ID", raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    (tmp_path / "wandb").mkdir()
    result = real_suite(
        *CASES, "--report", "out/run.json", "--log-to", f"tensorboard={tmp_path / 'tb'}",
        "--log-to", f"mlflow=file:{tmp_path / 'mlruns'}", "--log-to", "wandb=ctxgate-tests",
        model=checkpoint, own_process=True,  # each tracker library keeps a run per process
    )  # fmt: skip
    out = result.stdout.str()
    assert result.ret == 0, out[-3000:]
    assert out.count("at step 40 (trainer_state.json)") == 3, out[-2000:]
    report = json.loads((pytester.path / "out" / "run.json").read_text())
    expected = {L: report["by_length"][str(L)]["ruler"]["score"] for L in (512, 1024)}

    # read back in a process of its own: the trackers' readers, loaded here, leave this process's
    # package metadata unusable for later in-process pytest runs (their entry points are not found)
    read = subprocess.run(
        [sys.executable, "-c", READ_BACK, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "MLFLOW_ALLOW_FILE_STORE": "true"},
    )
    back = json.loads(read.stdout.strip().splitlines()[-1])
    assert back["tb"] == {"512": [[40, expected[512]]], "1K": [[40, expected[1024]]]}
    assert back["mlflow"] == [[40, expected[1024]]]
    assert back["tokens_seen"] == 81920
    assert "ctxgate/run.json" in back["artifacts"]

    (files,) = (tmp_path / "wandb").glob("wandb/offline-run-*/files")
    (table,) = files.glob("media/table/ctxgate/summary_*.table.json")
    logged = dict(json.loads(table.read_text())["data"])
    assert (
        logged["ctxgate/ruler_avg/512"] == expected[512]
        and logged["ctxgate/ruler_avg/1K"] == expected[1024]
    )
    (records,) = files.parent.glob("run-*.wandb")
    assert b"train/global_step" in records.read_bytes()


def test_a_tracker_that_fails_is_a_note_and_the_gate_stands(
    checkpoint, real_suite, pytester, tmp_path, monkeypatch
):
    monkeypatch.setenv("WANDB_MODE", "online")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc key either
    result = real_suite(
        *CASES, "--report", "out/run.json", "--log-to", "wandb", model=checkpoint, own_process=True
    )
    out = result.stdout.str()
    assert result.ret == 0, out[-3000:]
    assert (
        "note: --log-to wandb failed (" in out
        and "the report is unaffected. Fix: check WANDB_API_KEY" in out
    )
    assert (pytester.path / "out" / "run.json").is_file()


def test_an_unknown_tracker_is_a_usage_error(real_suite):
    result = real_suite(*CASES, "--log-to", "neptune")
    said = "'neptune' is not a tracker ctxgate or an installed package logs to"
    assert result.ret == 4 and said in result.stderr.str()
