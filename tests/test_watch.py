"""ctxgate watch on real checkpoints: a checkpoint is done only when its evaluation completed; a
broken one is tried again (and again once its files change); arguments pytest refuses stop the
watcher instead of marking anything."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

from ctxgate.cli import main
from tests.conftest import TINY

PYTEST = ["--", "-k", "vt", "--lengths", "1k", "--samples", "2", "--no-cache"]


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """checkpoint-100 is whole; checkpoint-200 was copied only in part (its weights cut in half)."""
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    for step in (100, 200):
        shutil.copytree(
            TINY, run / f"checkpoint-{step}", ignore=shutil.ignore_patterns("training_log.json")
        )
    weights = run / "checkpoint-200" / "model.safetensors"
    with weights.open("r+b") as f:
        f.truncate(weights.stat().st_size // 2)
    return run


def state(reports: Path) -> dict:
    return json.loads((reports / "watch-state.json").read_text())


def test_a_failed_evaluation_is_not_done_and_is_retried_once_fixed(run_dir, tmp_path):
    reports = tmp_path / "reports"
    watch = [
        "watch",
        str(run_dir),
        "--once",
        "--settle",
        "0",
        "--reports",
        str(reports),
    ]  # options before --
    assert main([*watch, *PYTEST]) == 1  # a checkpoint that could not be evaluated fails the step
    first = state(reports)
    assert first["done"] == ["checkpoint-100"]
    assert (
        first["failed"]["checkpoint-200"]["attempts"] == 1
        and first["failed"]["checkpoint-200"]["exit_code"] == 1
    )
    report = json.loads((reports / "checkpoint-200.json").read_text())
    assert report["complete"] is False and "is truncated" in report["error"]["message"]
    assert (
        main([*watch, "--attempts", "2", *PYTEST]) == 1
    )  # the same broken files: one more try, then it waits
    assert state(reports)["failed"]["checkpoint-200"]["attempts"] == 2
    assert (
        main([*watch, "--attempts", "2", *PYTEST]) == 1
    )  # still not evaluated: still failing the step
    assert (
        state(reports)["failed"]["checkpoint-200"]["attempts"] == 2
    )  # not tried: out of attempts, files unchanged
    shutil.copy(
        TINY / "model.safetensors", run_dir / "checkpoint-200" / "model.safetensors"
    )  # the copy completes
    assert main([*watch, "--attempts", "2", *PYTEST]) == 0
    final = state(reports)
    assert final["done"] == ["checkpoint-100", "checkpoint-200"] and final["failed"] == {}
    assert (reports / "trend" / "trend.csv").is_file()


def test_arguments_pytest_refuses_stop_the_watcher_and_mark_nothing(run_dir, tmp_path, capsys):
    reports = tmp_path / "reports"
    code = main(
        [
            "watch",
            str(run_dir),
            "--once",
            "--settle",
            "0",
            "--reports",
            str(reports),
            "--",
            "--no-such-option",
        ]
    )
    assert code == 2
    assert "pytest refused the arguments" in capsys.readouterr().err
    assert not (reports / "watch-state.json").exists()


def test_pytest_arguments_without_the_separator_are_refused_with_the_fix_that_runs(
    run_dir, tmp_path, capsys
):
    reports = tmp_path / "reports"
    watch = ["watch", str(run_dir), "--once", "--settle", "0", "--reports", str(reports)]
    with pytest.raises(SystemExit) as stop:
        main([*watch, *PYTEST[1:]])  # the pytest arguments without their separator
    assert stop.value.code == 2
    (fix,) = re.findall(
        r"pytest arguments go after --: (ctxgate .+)$", capsys.readouterr().err.strip()
    )
    # the command it prints runs as printed: it evaluates checkpoint-100, and fails the step on this
    # run's broken checkpoint-200 only
    assert main(shlex.split(fix)[1:]) == 1
    assert state(reports)["done"] == ["checkpoint-100"] and list(state(reports)["failed"]) == [
        "checkpoint-200"
    ]
