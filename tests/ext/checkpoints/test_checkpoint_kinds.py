"""pytest, ``ctxgate watch`` and ``ctxgate bisect`` on run folders of the checkpoint kinds training
runs save besides Hugging Face folders: LoRA adapters (a real Trainer run) and FSDP distributed
checkpoints, whose retrieval breaks at a known step. Each is resolved once into a checkpoint value
(``backends/formats.py``) whichever verb opens it, and the same checkpoints, thresholds file and
options give the same verdicts from all three."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import call_ctxgate

BREAK_AT = 2  # checkpoint-300 of checkpoint-100 .. -400
CASES = (
    "-k",
    "niah_single_1",
    "--lengths",
    "256",
    "--samples",
    "10",
    "--no-cache",
    "--allow-pickle",
)


@pytest.fixture(scope="module", params=["adapter_sequence", "sharded_sequence"])
def run_folder(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from fixtures import training_runs

    run = tmp_path_factory.mktemp(request.param) / "run"
    getattr(training_runs, request.param)(run, count=4, break_at=BREAK_AT)
    return run


def test_pytest_watch_and_bisect_give_the_same_verdicts(run_folder, real_suite, pytester):
    thresholds = pytester.path / "thresholds.toml"
    thresholds.write_text("[regression]\ntolerance = 5.0\n")
    reference = real_suite(
        *CASES, "--report", "reference.json", model=run_folder / "checkpoint-100"
    )
    assert reference.ret == 0, reference.stdout.str()[-2000:]
    gated = (*CASES, f"--thresholds={thresholds}", f"--baseline={pytester.path / 'reference.json'}")

    # watch itself in this process; each checkpoint's pytest is its own process, as watch starts it
    watch = call_ctxgate(
        "watch", str(run_folder), "--once", "--settle", "0", "--reports", "reports", "--", *gated,
        cwd=pytester.path,
    )  # fmt: skip
    assert watch.returncode == 0, watch.stdout[-2000:] + watch.stderr[-2000:]
    verdicts = {}
    for report in sorted((pytester.path / "reports").glob("checkpoint-*.json")):
        (case,) = json.loads(report.read_text())["cases"]
        verdicts[report.stem] = case["verdict"]
    assert verdicts == {
        "checkpoint-100": "pass",
        "checkpoint-200": "pass",
        "checkpoint-300": "fail",
        "checkpoint-400": "fail",
    }

    bisect = call_ctxgate(
        "bisect", str(run_folder), *CASES, "--thresholds", str(thresholds), "--json", "bisect.json",
        cwd=pytester.path,
    )  # fmt: skip
    assert bisect.returncode == 0, bisect.stdout[-2000:] + bisect.stderr[-2000:]
    taken = json.loads((pytester.path / "bisect.json").read_text())
    assert Path(taken["first_bad"]).name == "checkpoint-300"
    for probe in taken["path"]:
        assert probe["bad"] == (verdicts[Path(probe["checkpoint"]).name] == "fail"), probe
