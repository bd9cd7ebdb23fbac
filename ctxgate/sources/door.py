"""The one door for data files the project reads and did not write (data sets in .jsonl, .json or
.parquet, needle sets, prompt files) and for JSON held in their fields. Every way such a file can
fail to decode (a folder, FIFO, socket or device where the file goes, a link to nothing or to
itself, no read permission, no bytes, not UTF-8, not JSON, JSON nested deeper than the parser
reads, the wrong JSON type, not parquet, no rows, text columns that are not UTF-8) is one
``DataUnavailable`` line naming the file (and line or row), what is wrong and the fix. Only a path
with no entry at all is data not given (``absent``)."""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from ctxgate.memo import noted
from ctxgate.sources.errors import DataNotGiven, DataUnavailable

RECORD_FILES = (".jsonl", ".json", ".parquet")
_NL = b"\n"
_BATCH = 16  # parquet rows checked at a time: an MRCR prompt is up to 5 MB
# what stands where a file goes, by the letter ``stat.filemode`` gives its kind
_NOT_FILES = dict(
    zip("dpscb", ("a folder", "a FIFO", "a socket", "a character device", "a block device"))
)


class Undecodable(ValueError):
    """What is wrong with a file's content, and where in it (``at``: ":LINE" or ", row N")."""

    def __init__(self, problem: str, at: str = "") -> None:
        super().__init__(problem)
        self.at = at


def refuse(where: object, problem: str, fix: str) -> DataUnavailable:
    return DataUnavailable(f"{where}: {problem}; {fix}")


def json_value(text: str) -> object:
    """``text`` parsed, or ``Undecodable``: Python's parser raises RecursionError on deep nesting
    and a bare ValueError on an integer too long to convert."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise Undecodable(f"not valid JSON ({exc.msg}: {where})") from None
    except RecursionError:
        raise Undecodable("JSON nested deeper than the parser reads") from None
    except ValueError as exc:
        raise Undecodable(f"not readable JSON ({said(exc)})") from None


def json_field(text: object, where: str, fix: str) -> object:
    """JSON held in a record's text field (an MRCR prompt)."""
    try:
        if not isinstance(text, str):
            raise Undecodable(f"a {kind(text)}, not JSON text")
        return json_value(text)
    except Undecodable as bad:
        raise DataUnavailable(f"{where} is {bad}; {fix}") from None


def kind(value: object) -> str:
    kinds = {dict: "JSON object", list: "JSON list", str: "string", bool: "JSON boolean"}
    return "JSON null" if value is None else kinds.get(type(value), "JSON number")


def _text(path: Path) -> str:
    """The file's text; absent is the caller's ``DataNotGiven``, the rest ``Undecodable``."""
    raw = _bytes(path)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        byte, at = raw[exc.start], f":{raw.count(_NL, 0, exc.start) + 1}"
        raise Undecodable(f"not UTF-8 text (byte {byte:#04x} at offset {exc.start})", at) from None


def _bytes(path: Path) -> bytes:
    _a_file(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise Undecodable(f"cannot be read ({exc.strerror or exc})") from None
    if not raw.strip():
        raise Undecodable("is empty")
    return raw


def _a_file(path: Path) -> None:
    """A regular file this process may read, or what stands there instead, told by its mode
    alone: opening a FIFO to find out would block the run until a writer came."""
    try:
        found = path.stat()
    except FileNotFoundError:  # an entry (``absent``) that leads nowhere
        gone = "is a dangling symbolic link" if path.is_symlink() else "does not exist"
        raise Undecodable(gone) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Undecodable("is a looping symbolic link (it leads back to itself)") from None
        raise Undecodable(f"cannot be read ({exc.strerror or exc})") from None
    mode = stat.filemode(found.st_mode)
    if mode[0] != "-":
        raise Undecodable(f"is {_NOT_FILES.get(mode[0], 'no regular file')}, where a file goes")
    if not os.access(path, os.R_OK):
        raise Undecodable(f"is not readable by this user (mode {mode})")
    if found.st_size == 0:
        raise Undecodable("is empty")


def entry_problem(path: Path) -> str | None:
    """Why what stands at ``path`` is no file to read ("FILE: what"), or None, by its mode alone."""
    try:
        _a_file(path)
    except Undecodable as bad:
        return f"{path}: {bad}"
    return None


def absent(path: Path) -> bool:
    """No entry at all: the one way data is not given. A link that leads nowhere or to itself is
    there, and unreadable (``_a_file`` names it)."""
    noted(path)  # the loaders' memo watches the path either way
    try:
        os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:  # a path that cannot be looked at (a file as a folder above it): unreadable
        pass
    return False


def said(exc: BaseException) -> str:
    """A library's message on one line, a control character from the file (a NUL) escaped."""
    text = " ".join(str(exc).split())[:160]
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text) or "no message"


def _given(path: Path, fix: str) -> None:
    if absent(path):
        raise DataNotGiven(f"{path} does not exist; {fix}")


def json_document(path: Path, fix: str) -> object:
    """A whole-file JSON document (a needle set, a prompt file)."""
    _given(path, fix)
    try:
        return json_value(_text(path))
    except Undecodable as bad:
        raise refuse(f"{path}{bad.at}", str(bad), fix) from None


def check(path: Path, fix: str) -> None:
    """A records file (``RECORD_FILES``) is readable through to its last record, or refused."""
    _given(path, fix)
    found = problem(path)
    if found:
        raise DataUnavailable(f"{found}; {fix}")


def problem(path: Path) -> str | None:
    """Why a records file cannot be read ("FILE[:LINE]: what"), or None."""
    try:
        if path.suffix.lower() == ".parquet":
            _parquet(path)
        else:
            _json_records(path)
    except Undecodable as bad:
        return f"{path}{bad.at}: {bad}"
    return None


def _json_records(path: Path) -> None:
    """A .json list of objects (or an object of columns), or JSON lines of objects, read a line
    at a time (a train split's lines are a GB: the whole text, then its lines, held twice that)."""
    if path.suffix.lower() != ".json":
        _json_lines(_lines(path))
        return
    text = _text(path)
    try:
        doc = json_value(text)
    except Undecodable as bad:
        if "\n" not in text.strip():  # one line: no JSON lines to fall back on
            raise Undecodable(str(bad)) from None
        _json_lines(enumerate(text.split("\n"), start=1))  # as datasets splits them
        return
    if not isinstance(doc, (list, dict)):
        raise Undecodable(f"holds a {kind(doc)}, not records")
    if not doc:
        raise Undecodable("holds no records")
    rows = doc if isinstance(doc, list) else [doc]
    n = next((n for n, r in enumerate(rows, 1) if not isinstance(r, dict)), 0)
    if n:
        raise Undecodable(f"record {n} is a {kind(rows[n - 1])}, not an object")


def _json_lines(lines: Iterable[tuple[int, str]]) -> None:
    for number, line in lines:
        if line.strip():
            try:
                record = json_value(line)
            except Undecodable as bad:
                raise Undecodable(str(bad), f":{number}") from None
            if not isinstance(record, dict):
                raise Undecodable(f"a {kind(record)}, not a record (an object)", f":{number}")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """The file's lines, split at each newline as datasets splits them, each decoded (no UTF-8
    sequence holds a newline's byte, so the same text and faults as the whole file's)."""
    _a_file(path)
    offset, seen = 0, False
    try:
        with path.open("rb") as f:
            for number, raw in enumerate(f, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    byte, at = raw[exc.start], offset + exc.start
                    raise Undecodable(
                        f"not UTF-8 text (byte {byte:#04x} at offset {at})", f":{number}"
                    ) from None
                seen = seen or bool(raw.strip())
                offset += len(raw)
                yield number, line.removesuffix("\n")
    except OSError as exc:
        raise Undecodable(f"cannot be read ({exc.strerror or exc})") from None
    if not seen:
        raise Undecodable("is empty")


def _parquet(path: Path) -> None:
    """Parquet with rows, every text column UTF-8 (pyarrow checks it only when asked)."""
    _a_file(path)
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with pq.ParquetFile(path) as parquet:
            if parquet.metadata.num_rows == 0:
                raise Undecodable("holds no rows")
            row = 0
            for batch in parquet.iter_batches(batch_size=_BATCH):
                try:
                    batch.validate(full=True)
                except pa.ArrowInvalid as exc:
                    at = f", rows {row + 1}-{row + batch.num_rows}"
                    raise Undecodable(f"holds text that is not UTF-8 ({said(exc)})", at) from None
                row += batch.num_rows
    except (OSError, pa.ArrowException) as exc:
        raise Undecodable(f"not a readable parquet file ({said(exc)})") from None
