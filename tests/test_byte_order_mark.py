"""A user's TOML or JSON file saved with a UTF-8 byte-order mark (Notepad, PowerShell's UTF8): each
reader refuses it in one line that names the mark, which no editor shows, and how to save the file
without it (records.refusal.byte_order_mark, the one rule)."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import pytest

from ctxgate.backends.checkpoint import CheckpointError, read_json
from ctxgate.gate.thresholds import ThresholdsError, load_thresholds
from ctxgate.records.io import ReportFileError, read_predictions, read_report
from ctxgate.tasks import task_names
from tests.conftest import ALL_RIGHT, stored_report

BOM = codecs.BOM_UTF8
NAMED = "starts with a UTF-8 byte-order mark (bytes EF BB BF"
FIX = "Fix: save it as UTF-8 without the mark"


def refusal(error: pytest.ExceptionInfo[Exception], path: Path) -> str:
    line = str(error.value)
    assert "\n" not in line and line.startswith(str(path)) and NAMED in line and FIX in line, line
    return line


def test_a_thresholds_file_with_the_mark_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "thresholds.toml"
    path.write_bytes(BOM + b'[[floor]]\ntask = "vt"\nfloor = 50\n')
    with pytest.raises(ThresholdsError) as refused:
        load_thresholds(path, task_names())
    assert "TOML readers refuse it" in refusal(refused, path)
    path.write_bytes(b'[[floor]]\ntask = "vt"\nfloor = 50\n')  # saved again without it
    assert load_thresholds(path, task_names()).floor_for("vt", 512) == 50


def test_the_suite_stops_on_the_mark_before_the_model_loads(suite, pytester) -> None:
    result = suite(ALL_RIGHT, thresholds="\ufeff[defaults]\nfloor = 10\n")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*thresholds.toml: {NAMED}*{FIX}*"])


def test_a_report_with_the_mark_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    report = json.dumps(stored_report([{"task": "vt", "length": 512, "score": 90.0}]))
    path.write_bytes(BOM + report.encode())
    with pytest.raises(ReportFileError) as refused:
        read_report(path)
    assert "JSON readers refuse it" in refusal(refused, path)
    path.write_text(report)
    assert read_report(path).cases[0].task == "vt"


def test_a_predictions_file_with_the_mark_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "run.predictions.jsonl"
    path.write_bytes(BOM + b'{"task": "vt"}\n')
    with pytest.raises(ReportFileError) as refused:
        read_predictions(path)
    refusal(refused, path)


def test_a_checkpoint_json_file_with_the_mark_is_refused_naming_it(tmp_path: Path) -> None:
    """transformers reads config.json as UTF-8 text and refuses the mark too: refused here, the
    message also keeps the checkpoint reader's own fix at its end."""
    path = tmp_path / "config.json"
    path.write_bytes(BOM + b'{"model_type": "llama"}')
    with pytest.raises(CheckpointError) as refused:
        read_json(path, "restore it")
    assert refusal(refused, path).endswith("; failing that: restore it")


def test_the_mark_inside_a_file_is_its_content(tmp_path: Path) -> None:
    """Only a file's first bytes are the mark: U+FEFF in a string is a character like any."""
    path = tmp_path / "config.json"
    path.write_text('{"name": "\ufeffx"}', encoding="utf-8")
    assert read_json(path) == {"name": "\ufeffx"}
