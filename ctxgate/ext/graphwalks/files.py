"""GraphWalks' released parquet files in ``<data-dir>/graphwalks/`` (never downloaded): the hub's
``graphwalks_128k_and_shorter.parquet`` and ``graphwalks_256k_to_1mil.parquet``, any ``*.parquet``
there read in name order; each row's prompt is read on use."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxgate.api import (
    DataFile,
    DataNotGiven,
    DataUnavailable,
    check_data_file,
    memo,
    open_table,
    sha256_of_files,
)

from .graph import KINDS

FIELDS = ("prompt", "answer_nodes", "problem_type")
HUB = "openai/graphwalks (huggingface.co/datasets/openai/graphwalks)"
GRAPHWALKS_FILES = DataFile(
    "graphwalks",
    (r"graphwalks/.*\.parquet",),
    FIELDS,
    optional="the graphwalks_* cases skip; ctx_graphwalks_* run",
)
DATA_FILES = (GRAPHWALKS_FILES,)
_PARENTS_OF = re.compile(r"Find the parents of node ([^\s.]+)\.")


def fix(folder: Path) -> str:
    return f"put {HUB}'s parquet files in {folder}/ and pass --data-dir"


@dataclass(frozen=True)
class Row:
    where: str  # the file and its row, for messages
    prompt: str
    answer: tuple[str, ...]
    kind: str
    fixed: bool  # a parents answer that named the node itself, which the card's fix takes out


@dataclass(frozen=True)
class GraphwalksFiles:
    """The rows of every file, in order; ``parts``: the files' ``datasets.Dataset``s."""

    paths: tuple[str, ...]
    sha256: str
    parts: tuple[Any, ...]
    kinds: tuple[str, ...]  # each row's problem_type
    n_chars: tuple[int, ...]  # each row's prompt_chars, else its prompt's length

    def indices(self, kind: str) -> tuple[int, ...]:
        return tuple(i for i, k in enumerate(self.kinds) if k == kind)

    def row(self, index: int) -> Row:
        part, local = self._locate(index)
        record, where = self.parts[part][local], f"{self.paths[part]}: row {local + 1}"
        return parse_row(record, where)

    def _locate(self, index: int) -> tuple[int, int]:
        for part, rows in enumerate(self.parts):
            if index < len(rows):
                return part, index
            index -= len(rows)
        raise IndexError(index)


def _restore(problem: str) -> DataUnavailable:
    return DataUnavailable(f"{problem}; restore the file from {HUB}")


def parse_row(record: object, where: str) -> Row:
    """A row checked: a prompt with its operation, the answer's nodes as a list of names, and
    ``bfs`` or ``parents``; a parents answer loses the node asked about (the card's 2026-02-27
    fix of 24 rows, as NeMo-Skills' prepare.py also takes it out)."""
    if not isinstance(record, dict):
        raise _restore(f"{where} is not a row of {', '.join(FIELDS)}")
    missing = [f for f in FIELDS if record.get(f) is None]
    if missing:
        raise _restore(f"{where} lacks {', '.join(missing)}")
    prompt, answer, kind = (record[f] for f in FIELDS)
    if not isinstance(prompt, str) or "Operation:" not in prompt:
        raise _restore(f"{where}: field prompt is not a GraphWalks prompt (it has no 'Operation:')")
    if not isinstance(answer, list) or not all(isinstance(n, str) for n in answer):
        raise _restore(f"{where}: field answer_nodes is not a list of node names")
    if kind not in KINDS:
        raise _restore(f"{where}: field problem_type is {kind!r}, not one of {', '.join(KINDS)}")
    # the last operation is the row's own: the worked examples ask about "uvwx" and "abcd" first
    asked = _PARENTS_OF.findall(prompt)[-1:] if kind == "parents" else []
    kept = [n for n in answer if n not in asked]
    return Row(where, prompt, tuple(kept), kind, len(kept) != len(answer))


def graphwalks_paths(data_dir: str | None) -> tuple[Path, ...]:
    return tuple(sorted(GRAPHWALKS_FILES.find(Path(data_dir)))) if data_dir else ()


def not_given(data_dir: str | None, task: str, length: int | None = None) -> DataNotGiven:
    folder = Path(data_dir or ".") / "graphwalks"
    at = f" (for length {length})" if length is not None else ""
    return DataNotGiven(
        f"{task} reads {GRAPHWALKS_FILES.where} under {folder.parent}, and none is there{at}: "
        f"{fix(folder)}; the generated ctx_{task} needs no files"
    )


@memo(4)
def load_graphwalks(data_dir: str | None, task: str = "graphwalks") -> GraphwalksFiles:
    """The files, checked for their columns; rows are checked as they are read."""
    paths = graphwalks_paths(data_dir)
    if not paths:
        raise not_given(data_dir, task)
    folder = Path(data_dir or ".") / "graphwalks"
    parts = tuple(_read(p, folder) for p in paths)
    kinds = tuple(k for part in parts for k in part["problem_type"])
    sizes = tuple(n for part in parts for n in _sizes(part))
    return GraphwalksFiles(tuple(map(str, paths)), sha256_of_files(*paths), parts, kinds, sizes)


def _read(path: Path, folder: Path) -> Any:
    check_data_file(path, f"restore the file from {HUB}")
    return open_table(path, FIELDS, fix(folder))


def _sizes(rows: Any) -> list[int]:
    if "prompt_chars" in rows.column_names:
        sizes = rows["prompt_chars"]
        if all(isinstance(n, int) and n > 0 for n in sizes):
            return list(sizes)
    return [len(p) if isinstance(p, str) else 0 for p in rows["prompt"]]
