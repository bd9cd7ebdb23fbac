"""Reading and writing report files: atomically on the way out, suspiciously on the way in.

A report names its predictions file; that name is trusted only as a plain file name beside the report, so a
report from elsewhere cannot make ``ctxgate`` read (or rewrite) an arbitrary file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class ReportFileError(ValueError):
    """A report or its predictions cannot be read; the message names the file and the fix."""


def atomic_write(path: Path, text: str) -> None:
    """Readers see the old file or the new one, never half of one (a crash mid-write leaves the old file)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def read_report(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if not p.is_file():
        raise ReportFileError(f"{p} does not exist or is not a file: pass the JSON written by --report")
    try:
        report = json.loads(p.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportFileError(f"{p} is not a readable JSON report ({exc}): pass the JSON written by --report") \
            from None
    if not isinstance(report, dict) or not isinstance(report.get("cases"), list):
        raise ReportFileError(f"{p} is JSON but not a ctxgate report (no 'cases' list): pass the JSON written by "
                              "--report")
    return report


def predictions_path(report_path: str | Path, report: dict[str, Any]) -> Path:
    """The report's predictions file: a bare file name in the report's own folder, nothing else."""
    p = Path(report_path)
    name = report.get("predictions") or p.with_suffix(".predictions.jsonl").name
    if not isinstance(name, str) or Path(name).name != name or name in (".", ".."):
        raise ReportFileError(f"{p}: its 'predictions' field {name!r} is not a file name beside the report; a "
                              "report names its .predictions.jsonl by bare file name. Restore the field (e.g. "
                              f"{p.with_suffix('.predictions.jsonl').name!r}) or re-run with --report")
    return p.parent / name


def read_predictions(path: Path, fields: tuple[str, ...] = ("task", "length", "index")) -> list[dict[str, Any]]:
    """The rows of a ``.predictions.jsonl``; each must have ``fields``. Errors name the file and the line."""
    if not path.is_file():
        raise ReportFileError(f"{path} is missing: the .predictions.jsonl written beside a --report is needed")
    rows = []
    with path.open(encoding="utf-8") as f:
        for line_no, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                lacking = [k for k in fields if not isinstance(row, dict) or k not in row]
                if lacking:
                    raise ValueError(f"no {', '.join(lacking)}")
            except ValueError as exc:  # json.JSONDecodeError is one
                raise ReportFileError(f"{path}:{line_no}: {exc}; each line must be a prediction record written by "
                                      f"ctxgate ({', '.join(fields)}, ...)") from None
            rows.append(row)
    return rows
