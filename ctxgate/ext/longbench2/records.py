"""LongBench v2's questions in the hub dataset's schema (``zai-org/LongBench-v2``, ``data.json``: a
JSON list of records), read from ``--data-dir`` only: a run never downloads, and the data is not
shipped. Each record is checked in full on first read; an error names the record, the field and
the fix."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard

from ctxgate.api import DataFile, DataNotGiven, DataUnavailable, json_document, memo, sha256_of

FOLDER = "longbench2"
LAYOUTS = (rf"{FOLDER}/data\.json", r"LongBench-v2/data\.json")
FIELDS = (
    "_id",
    "domain",
    "sub_domain",
    "difficulty",
    "length",
    "question",
    "choice_A",
    "choice_B",
    "choice_C",
    "choice_D",
    "answer",
    "context",
)
DATA = DataFile(
    "longbench2",
    LAYOUTS,
    FIELDS,
    optional="the longbench2 cases skip",
    kinds=tuple((f, "text") for f in FIELDS),
)
DATA_FILES = (DATA,)
DIFFICULTIES = ("easy", "hard")
LENGTHS = ("short", "medium", "long")
LETTERS = ("A", "B", "C", "D")
FETCH = (
    "get data.json of the hub dataset zai-org/LongBench-v2 (Apache-2.0), e.g. `huggingface-cli "
    "download zai-org/LongBench-v2 data.json --repo-type dataset --local-dir DATA_DIR/longbench2`, "
    "and pass --data-dir DATA_DIR; `ctxgate data verify` pins it"
)
_SCHEMA = " (LongBench v2's data.json schema)"


@dataclass(frozen=True)
class Record:
    """One question, as pred.py keeps it."""

    id: str
    domain: str
    sub_domain: str
    difficulty: str  # easy | hard
    length: str  # short | medium | long: the context's words, under 32K, to 128K, beyond
    question: str
    choices: tuple[str, str, str, str]
    answer: str  # A | B | C | D
    context: str


@dataclass(frozen=True)
class RecordSet:
    records: tuple[Record, ...]
    path: str
    sha256: str


def load(data_dir: str | None) -> RecordSet:
    """The questions under ``--data-dir``; ``DataNotGiven`` (a skip) where there are none."""
    found = DATA.find(Path(data_dir)) if data_dir else ()
    if not found:
        where = Path(data_dir or "DATA_DIR") / FOLDER / "data.json"
        raise DataNotGiven(
            f"longbench2 reads {DATA.where} under --data-dir, none at {where}; {FETCH}"
        )
    return read(str(found[0]))


@memo(2)
def read(source: str) -> RecordSet:
    doc = json_document(Path(source), f"restore the file ({FETCH})")
    return RecordSet(parse(doc, source), source, sha256_of(Path(source)))


def parse(doc: object, source: str) -> tuple[Record, ...]:
    """Every record, checked; the first fault is refused in one line."""
    if not isinstance(doc, list) or not doc:
        raise DataUnavailable(
            f"{source}: LongBench v2's data.json is a non-empty JSON list of records; restore the "
            f"file ({FETCH})"
        )
    return tuple(_record(r, f"{source}: record {n}") for n, r in enumerate(doc, start=1))


def _filled(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and bool(value.strip())


def _bad(where: str, field: str, want: str) -> DataUnavailable:
    return DataUnavailable(f"{where}: field {field!r} must be {want}; restore the file{_SCHEMA}")


def _text(record: dict[str, object], field: str, where: str, choices: tuple[str, ...] = ()) -> str:
    value = record.get(field)
    if choices and value not in choices:
        raise _bad(where, field, f"one of {', '.join(choices)}, not {value!r}")
    if not _filled(value):
        raise _bad(where, field, "a non-empty string")
    return value


def _record(raw: object, where: str) -> Record:
    if not isinstance(raw, dict):
        raise DataUnavailable(f"{where}: a record is a JSON object; restore the file{_SCHEMA}")
    rid = _text(raw, "_id", where)
    where = f"{where} ({rid!r})"  # repr: an id may hold a line break, and a message is one line
    a, b, c, d = (_text(raw, f"choice_{x}", where) for x in LETTERS)
    return Record(
        rid,
        _text(raw, "domain", where),
        _text(raw, "sub_domain", where),
        _text(raw, "difficulty", where, DIFFICULTIES),
        _text(raw, "length", where, LENGTHS),
        _text(raw, "question", where),
        (a, b, c, d),
        _text(raw, "answer", where, LETTERS),
        _text(raw, "context", where),
    )
