"""Reading and writing report files: atomically on the way out, suspiciously on the way in. A
report's predictions file name is trusted only as a plain file name beside the report, so a report
from elsewhere cannot make ``ctxgate`` read (or rewrite) an arbitrary file."""

from __future__ import annotations

import errno
import json
import os
import re
import reprlib
from dataclasses import dataclass, field, make_dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxgate import __version__
from ctxgate.records.case import Prediction, SampleCase, SampleOutcome
from ctxgate.records.migrate import migrated
from ctxgate.records.schema import SCHEMA_VERSION, Report, adapter_for, is_length_key, to_json
from ctxgate.records.slots import Level, SlotError, slots, typed
from ctxgate.records.vocabulary import DESCRIBED
from ctxgate.refusal import CtxgateError, byte_order_mark

if TYPE_CHECKING:
    from pydantic import ValidationError


def report_schema(predictions: bool = False) -> dict[str, object]:
    """The report's JSON Schema, or with ``predictions`` that of a ``.predictions.jsonl`` line."""
    schema = adapter_for(Prediction if predictions else Report).json_schema()
    # pydantic reads the docstrings of a class's own fields, and a line's are its bases', in order
    if predictions:
        own = schema["properties"]
        bases = (adapter_for(b).json_schema()["properties"] for b in (SampleCase, SampleOutcome))
        schema["properties"] = {
            name: {**own[name], **p} for part in bases for name, p in part.items()
        }
    else:
        _with_slots(schema)
    title = "ctxgate prediction line" if predictions else "ctxgate run report"
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema, "title": title}


def _with_slots(schema: dict[str, Any]) -> None:
    """Each record's ``extras`` with the installed extras' slots, each its model's schema (its
    fields described by their docstrings); another name stays any JSON (an absent extra's)."""
    defs = schema.setdefault("$defs", {})
    records: dict[Level, dict[str, Any]] = {
        "report": schema,
        "run": defs["RunInfo"],
        "case": defs["CaseRecord"],
    }
    for level, record in records.items():
        known = slots(level)
        if not known:
            continue
        fields = [(name, slot.model | None, field(default=None)) for name, slot in known.items()]
        holder = make_dataclass(f"{level.title()}Slots", fields, frozen=True)
        holder.__pydantic_config__ = DESCRIBED  # type: ignore[attr-defined]
        found = adapter_for(holder).json_schema(ref_template="#/$defs/{model}")
        defs.update(found.pop("$defs", {}))
        extras = record["properties"]["extras"]
        extras["properties"] = {
            name: {**prop, "description": known[name].model.__doc__ or name}
            for name, prop in found["properties"].items()
        }


READS = (1, SCHEMA_VERSION)  # the schema versions a report is read in (records/migrate.py)


class ReportFileError(CtxgateError, ValueError):
    """A report or its predictions cannot be read; the message names the file and the fix."""


@dataclass(frozen=True)
class Beside:
    """A file an extra writes beside the report (``hookspec.ctxgate_report_files``): its ``text``,
    or None with the ``note`` that says why it was not written (the report never waits on it);
    ``pointer``: the Markdown report's line that points to it."""

    path: Path
    text: str | None
    note: str | None = None
    pointer: str | None = None


def atomic_write(path: Path, text: str) -> None:
    """Readers see the old file or the new one, never half of one."""
    atomic_write_all({path: text})


def atomic_write_all(files: dict[Path, str]) -> None:
    """Files that belong together: each written in full beside its destination before any is
    renamed, so a failure leaves all the old ones. An OSError names the destination."""
    for path in files:
        if not path.parent.is_dir():
            problem = errno.ENOTDIR if path.parent.exists() else errno.ENOENT
            raise OSError(problem, os.strerror(problem), str(path))
        if path.is_dir() and not path.is_symlink():  # a link is replaced itself
            raise OSError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    tmps = {path: path.with_name(f".{path.name}.{os.getpid()}.tmp") for path in files}
    try:
        for path, text in files.items():
            try:
                with tmps[path].open("w", encoding="utf-8") as f:
                    f.write(text)
                    f.flush()
                    os.fsync(f.fileno())
            except OSError as exc:  # about the destination, not the temporary file (same subclass)
                if not exc.errno:
                    raise
                raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
        for path, tmp in tmps.items():
            os.replace(tmp, path)
    except BaseException:
        for tmp in tmps.values():
            tmp.unlink(missing_ok=True)
        raise


def report_text(report: Report) -> str:
    """The report file's text: every field of its records, as JSON."""
    return json.dumps(to_json(report), indent=1) + "\n"


def created_at(path: Path) -> str:
    """When a report was written, from its first bytes only (it may be a huge or endless file)."""
    try:
        with path.open("rb") as f:
            head = f.read(4096).decode("utf-8", errors="replace")
    except OSError:
        return "an unknown time (it cannot be read)"
    found = re.search(r'"created":\s*"([^"]{1,64})"', head)
    return found.group(1) if found else "an unknown time (it is not a readable report)"


def read_report(path: str | Path) -> Report:
    """A report written by ``--report`` in this schema; anything else is one error naming it."""
    p = Path(path)
    if not p.is_file():
        raise _not_a_report(f"{p} does not exist or is not a file")
    try:
        text = p.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _not_a_report(f"{p} cannot be read ({exc})") from None
    if said := byte_order_mark(text, str(p), "JSON"):
        raise ReportFileError(said)
    if not text.strip():
        raise ReportFileError(
            f"{p} is empty (0 bytes of JSON): the run that wrote it did not finish; re-run it "
            "with --report, or pass another report"
        )
    report = _json_of(p, text)
    cases = report.get("cases") if isinstance(report, dict) else None
    if not isinstance(cases, list) or not all(
        isinstance(c, dict) and {"task", "length", "verdict"} <= c.keys() for c in cases
    ):
        raise _not_a_report(
            f"{p} is JSON but not a ctxgate report (no 'cases' list of case records)"
        )
    version = report.get("schema_version")
    if version not in READS:
        raise ReportFileError(
            f"{p} has report schema_version {version!r}; this ctxgate {__version__} reads versions "
            f"{', '.join(map(str, READS))}: re-run that checkpoint with this version, or use the "
            "ctxgate that wrote it"
        )
    from pydantic import ValidationError

    if version != SCHEMA_VERSION:
        text = json.dumps(migrated(report))
    try:
        found = with_slots(adapter_for(Report).validate_json(text, strict=True), str(p))
    except ValidationError as exc:
        raise ReportFileError(
            f"{p}: {_first_error(exc, 'the report')}; the file was edited or written by another "
            "tool: re-run the checkpoint with --report, or restore the file"
        ) from None
    except SlotError as exc:
        raise ReportFileError(f"{p}: {exc}") from None
    if (bad := next((key for key in found.by_length if not is_length_key(key)), None)) is not None:
        raise ReportFileError(
            f"{p}: by_length key {reprlib.repr(bad)} is not a length in tokens: the report was "
            "edited or damaged; re-run the checkpoint with --report to write it again, or restore "
            "the file"
        )
    return found


def _json_of(p: Path, text: str) -> Any:
    """The report file's JSON; a predictions file given in its place is named as such."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if _predictions(text):
            guess = p.name.removesuffix(".predictions.jsonl") + ".json"
            raise ReportFileError(
                f"{p} holds a report's predictions, not the report: pass the report written "
                f"beside it ({p.with_name(guess)})"
            ) from None
        where = f"{p}:{exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno})"
        raise _not_a_report(f"{where}; the file is cut short or was edited") from None


def with_slots(report: Report, where: str = "the report") -> Report:
    """The report with each installed extra's slot read into its model, its run's and its cases'
    too; an absent extra's slot stays JSON (``records/slots.py``)."""
    cases = tuple(
        replace(c, extras=typed(c.extras, "case", f"{where}: cases[{i}]"))
        for i, c in enumerate(report.cases)
    )
    run = replace(report.run, extras=typed(report.run.extras, "run", f"{where}: run"))
    return replace(
        report, cases=cases, run=run, extras=typed(report.extras, "report", f"{where}: report")
    )


def _not_a_report(problem: str) -> ReportFileError:
    return ReportFileError(f"{problem}: pass the JSON written by --report")


def _first_error(exc: ValidationError, whole: str = "the line") -> str:
    """Where the first misfit is, what it should be and what it is."""
    error = exc.errors()[0]
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"])
    found = "" if error["type"] == "missing" else f" (it is {reprlib.repr(error['input'])})"
    return f"{where.lstrip('.') or whole}: {error['msg']}{found}"


def _predictions(text: str) -> bool:
    """Whether a text's first line is a prediction row, as a ``.predictions.jsonl`` holds them."""
    try:
        first = json.loads(text.split("\n", 1)[0])
    except json.JSONDecodeError:
        return False
    return isinstance(first, dict) and {"sample_sha256", "prediction"} <= first.keys()


def _a_report(path: Path) -> Path | None:
    """Where a report's predictions are, when ``path`` is a report (a JSON object with cases, as
    ``--report`` writes it over lines), not a predictions file; else None."""
    try:
        with path.open("rb") as f:
            head = f.read(64)
    except OSError:
        return None
    if not head.lstrip().startswith(b"{") or b"\n" not in head.lstrip()[:3]:
        return None  # a predictions file's first line is a whole JSON object
    try:
        report = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(report, dict) or "cases" not in report:
        return None
    named = report.get("predictions")
    name = named if isinstance(named, str) and Path(named).name == named else None
    return path.with_name(name or path.with_suffix(".predictions.jsonl").name)


def predictions_path(report_path: str | Path, report: Report) -> Path:
    """The report's predictions file: a bare file name in the report's own folder, nothing else."""
    p = Path(report_path)
    name = report.predictions or p.with_suffix(".predictions.jsonl").name
    if not isinstance(name, str) or Path(name).name != name or name in (".", ".."):
        raise ReportFileError(
            f"{p}: its 'predictions' field {name!r} is not a file name beside the report; a "
            "report names its .predictions.jsonl by bare file name. Restore the field (e.g. "
            f"{p.with_suffix('.predictions.jsonl').name!r}) or re-run with --report"
        )
    found = p.parent / name
    if found.is_symlink():
        raise ReportFileError(
            f"{found} is a symbolic link (to {os.readlink(found)}); a report reads only the "
            "predictions file written beside it: copy the file in place of the link"
        )
    return found


def read_predictions(path: Path) -> list[Prediction]:
    """The rows of a ``.predictions.jsonl`` as records; the first line or field amiss is named."""
    from pydantic import ValidationError

    if not path.is_file():
        raise ReportFileError(
            f"{path} is missing: the .predictions.jsonl written beside a --report is needed"
        )
    if (report := _a_report(path)) is not None:
        raise ReportFileError(
            f"{path} is a report, not its predictions: pass {report}, the .predictions.jsonl "
            "written beside it"
        )
    adapter = adapter_for(Prediction)
    rows = []
    line_no = 0
    with path.open(encoding="utf-8", errors="strict") as f:
        try:
            for line_no, line in enumerate(f, start=1):
                if line_no == 1 and (said := byte_order_mark(line, str(path), "JSON")):
                    raise ReportFileError(said)
                if not line.strip():
                    continue
                try:
                    rows.append(adapter.validate_json(line, strict=True))
                except ValidationError as exc:
                    raise ReportFileError(
                        f"{path}:{line_no}: {_first_error(exc)}; each line must be a prediction "
                        "record written by ctxgate: restore the file from the run, or re-run with "
                        "--report"
                    ) from None
        except UnicodeDecodeError:  # reading the line after the last one read
            raise ReportFileError(
                f"{path}:{line_no + 1}: not UTF-8 text; the file was damaged: restore it from the "
                "run, or re-run with --report"
            ) from None
    return rows
