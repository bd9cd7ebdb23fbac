"""ctxgate watch on real checkpoints: a checkpoint is done only when its evaluation completed; one
whose evaluation did not complete is tried again (and again once its files change); one that cannot
be opened is named and skipped until its files change; arguments pytest refuses stop the watcher
instead of marking anything."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

from ctxgate.cli import main
from tests.conftest import TINY, call_ctxgate

PYTEST = ["--", "-k", "vt", "--lengths", "1k", "--samples", "2", "--no-cache"]


def _run(tmp_path: Path, steps: tuple[int, ...]) -> Path:
    run = tmp_path / "run"
    for step in steps:
        shutil.copytree(
            TINY, run / f"checkpoint-{step}", ignore=shutil.ignore_patterns("training_log.json")
        )
    return run


def _edit_config(checkpoint: Path, **values: object) -> None:
    config = checkpoint / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), **values}))


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """checkpoint-100 is whole; checkpoint-200 opens, but its config was saved with a window of 512
    tokens, so its case at 1k cannot run."""
    monkeypatch.chdir(tmp_path)
    run = _run(tmp_path, (100, 200))
    _edit_config(run / "checkpoint-200", max_position_embeddings=512)
    return run


def _watch_once(run: Path, reports: Path) -> list[str]:
    """``ctxgate watch RUN`` for one pass over what is there now, its reports in ``reports``."""
    return ["watch", str(run), "--once", "--settle", "0", "--reports", str(reports)]


def state(reports: Path) -> dict:
    return json.loads((reports / "watch-state.json").read_text())


def test_a_failed_evaluation_is_not_done_and_is_retried_once_fixed(run_dir, tmp_path, capsys):
    reports = tmp_path / "reports"
    watch = _watch_once(run_dir, reports)  # options before --
    assert main([*watch, *PYTEST]) == 1  # a checkpoint that could not be evaluated fails the step
    first = state(reports)
    # each checkpoint's cost from its report, and the watch's in all
    spent = [
        json.loads((reports / f"{c}.json").read_text())["cost"]["total"] for c in first["done"]
    ]
    out = capsys.readouterr().out
    assert f"ctxgate watch: checkpoint-100: cost: {spent[0]['generations']} generations" in out
    assert f"ctxgate watch: cost in all: {spent[0]['generations']} generations" in out
    assert first["done"] == ["checkpoint-100"]
    assert (
        first["failed"]["checkpoint-200"]["attempts"] == 1
        and first["failed"]["checkpoint-200"]["exit_code"] == 1
    )
    report = json.loads((reports / "checkpoint-200.json").read_text())
    assert report["complete"] is False and report["error"] is None  # it opened
    assert {c["error_kind"] for c in report["cases"]} == {"window"}
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
    shutil.copy(TINY / "config.json", run_dir / "checkpoint-200" / "config.json")  # fixed
    assert main([*watch, "--attempts", "2", *PYTEST]) == 0
    final = state(reports)
    assert final["done"] == ["checkpoint-100", "checkpoint-200"] and final["failed"] == {}
    assert (reports / "trend" / "trend.csv").is_file()


def test_arguments_pytest_refuses_stop_the_watcher_and_mark_nothing(run_dir, tmp_path, capsys):
    reports = tmp_path / "reports"
    code = main([*_watch_once(run_dir, reports), "--", "--no-such-option"])
    assert code == 2
    assert "pytest refused the arguments" in capsys.readouterr().err
    assert not (reports / "watch-state.json").exists()


def test_pytest_arguments_without_the_separator_are_refused_with_the_fix_that_runs(
    run_dir, tmp_path, capsys
):
    reports = tmp_path / "reports"
    watch = _watch_once(run_dir, reports)
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


def test_a_checkpoint_that_cannot_be_opened_is_named_and_skipped_until_its_files_change(tmp_path):
    """checkpoint-200's weights cut short (its checks before loading fail) and checkpoint-300's
    config of another size (its load fails): each is named and skipped, neither tried again nor
    counted as not evaluated, until its files change; exit 5, as bisect's range. A DCP save without
    .metadata and a log folder are named as not in the sequence."""
    from fixtures.training_runs import FSDP, damage

    run = _run(tmp_path, (100, 200, 300))
    damage(run / "checkpoint-200", "weights")
    _edit_config(run / "checkpoint-300", vocab_size=5000)
    (run / "checkpoint-400" / FSDP).mkdir(parents=True)
    (run / "checkpoint-400" / FSDP / "__0_0.distcp").write_bytes(b"\0" * 64)
    (run / "runs").mkdir()
    reports = tmp_path / "reports"
    watch = (*_watch_once(run, reports), *PYTEST)

    first = call_ctxgate(*watch, cwd=tmp_path)
    assert first.returncode == 5, first.stdout[-3000:] + first.stderr[-3000:]
    found = state(reports)
    assert found["done"] == ["checkpoint-100"] and found["failed"] == {}
    assert sorted(found["skipped"]) == ["checkpoint-200", "checkpoint-300"]
    assert "is truncated" in found["skipped"]["checkpoint-200"]["why"]
    assert "(5000, 128) by config.json" in found["skipped"]["checkpoint-300"]["why"]
    err = first.stderr.splitlines()
    for name, why in (
        (
            "checkpoint-200",
            "skipped: it cannot be opened (" + found["skipped"]["checkpoint-200"]["why"],
        ),
        ("checkpoint-300", "skipped: it cannot be opened ("),
        ("checkpoint-400", f"is not in the sequence: {FSDP}/ without .metadata"),
        ("runs", "is not in the sequence: not a checkpoint"),
    ):
        assert len([line for line in err if name in line and why in line]) == 1, (name, err)
    assert "not evaluated completely" not in first.stderr

    again = call_ctxgate(*watch, cwd=tmp_path)  # the same files: not tried again
    assert again.returncode == 5 and "--model=" not in again.stdout
    assert "checkpoint-200 skipped" in again.stderr

    shutil.copy(TINY / "model.safetensors", run / "checkpoint-200" / "model.safetensors")
    fixed = call_ctxgate(*watch, cwd=tmp_path)  # its files changed: evaluated, done
    assert fixed.returncode == 5 and fixed.stdout.count("--model=") == 1
    assert state(reports)["done"] == ["checkpoint-100", "checkpoint-200"]
    assert list(state(reports)["skipped"]) == ["checkpoint-300"]
