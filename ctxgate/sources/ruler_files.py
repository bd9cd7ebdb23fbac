"""HELMET's own RULER-format files, which its Recall category reads: one
``ruler/{task}/validation_{L}.jsonl`` per length (context, query, outputs, type_needle_v).

HELMET evaluates the first 100 records after ``shuffle(seed)``; ``order`` reproduces it, so sample
i is the record HELMET evaluates i-th.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ctxgate.memo import is_file, memo
from ctxgate.sources.errors import DataNotGiven, DataUnavailable
from ctxgate.sources.files import (
    FETCH_HINT,
    DataFile,
    as_texts,
    missing_fields,
    read_jsonl,
    sha256_of_json,
    verify_hint,
)
from ctxgate.sources.helmet_files import shuffled

FOLDERS = {f"helmet_{name}": f"niah_{name}" for name in ("multikey_2", "multikey_3", "multivalue")}
FIELDS = ("context", "query", "outputs", "type_needle_v")
_WITHOUT = "HELMET Recall uses the suite's RULER cases"
DATA_FILES = tuple(
    DataFile(task, f"ruler/{folder}", r"validation_\d+\.jsonl", FIELDS, optional=_WITHOUT)
    for task, folder in FOLDERS.items()
)


@dataclass(frozen=True)
class RulerRecord:
    context: str
    query: str
    type_needle_v: str
    answers: tuple[str, ...]


@dataclass(frozen=True)
class RulerFile:
    records: tuple[RulerRecord, ...]
    path: str
    sha256: str


@memo(16)
def load_ruler_file(task: str, data_dir: str | None, length: int) -> RulerFile:
    relative = Path("ruler", FOLDERS[task], f"validation_{length}.jsonl")
    path = Path(data_dir or ".") / relative
    if not data_dir or not is_file(path):
        raise DataNotGiven(
            f"{task} reads HELMET's {relative} (none for length "
            f"{length}; HELMET ships 8K-128K); the suite's RULER cases stand in for HELMET Recall "
            f"without it; {FETCH_HINT}"
        )
    records = []
    for n, r in enumerate(read_jsonl(path), start=1):
        missing = missing_fields(r, FIELDS)
        if missing:
            raise DataUnavailable(
                f"{path}: record {n} lacks {', '.join(missing)}" + verify_hint(path, "; ")
            )
        answers = as_texts(r["outputs"])
        records.append(RulerRecord(r["context"], str(r["query"]), r["type_needle_v"], answers))
    digest = sha256_of_json([(x.context, x.query, x.answers) for x in records])
    return RulerFile(tuple(records), str(path), digest)


@memo(16)
def order(count: int, seed: int) -> tuple[int, ...]:
    """The record order of ``datasets.Dataset.shuffle(seed=seed)``."""
    return tuple(shuffled(count, seed))
