"""OpenAI MRCR's released parquet files in ``<data-dir>/mrcr/`` (never downloaded): the hub's
``{n}needle/{n}needle_*.parquet`` in number order (as the dataset card joins them), else the
first release's ``{n}needle.parquet``; memory-mapped: a prompt (up to 5 MB) is read on use."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxgate.api import (
    DataFile,
    DataNotGiven,
    DataUnavailable,
    check_data_file,
    json_field,
    memo,
    missing_fields,
    open_table,
    sha256_of_files,
)

NEEDLES = (2, 4, 8)
FIELDS = ("prompt", "answer", "random_string_to_prepend", "n_needles")
ROLES = ("user", "assistant")
HUB = "openai/mrcr (huggingface.co/datasets/openai/mrcr)"
# the hub's numbered files, else the first release's single file
FILES = {
    n: DataFile(
        f"mrcr_{n}needle",
        (rf"mrcr/{n}needle/.*\.parquet", rf"mrcr/{n}needle\.parquet"),
        FIELDS,
        optional=f"its cases skip; ctx_mrcr_{n} runs",
    )
    for n in NEEDLES
}
DATA_FILES = tuple(FILES.values())


def fix(folder: Path, needles: int) -> str:
    return f"put {HUB}'s {needles}needle/ parquet files in {folder}/ and pass --data-dir"


def _restore(problem: str) -> DataUnavailable:
    return DataUnavailable(f"{problem}; restore the file from {HUB}")


@dataclass(frozen=True)
class MrcrRow:
    index: int  # in the concatenated files
    where: str  # the file and its row, for messages
    messages: tuple[tuple[str, str], ...]
    answer: str
    prefix: str
    desired_msg_index: int | None
    total_messages: int | None


@dataclass(frozen=True)
class MrcrFile:
    """The rows of one needle count; ``parts``: the files' ``datasets.Dataset``s, in order."""

    needles: int
    paths: tuple[str, ...]
    sha256: str
    parts: tuple[Any, ...]
    n_chars: tuple[int, ...]  # each row's size in characters (n_chars, else its prompt's)

    def __len__(self) -> int:
        return len(self.n_chars)

    def row(self, index: int) -> MrcrRow:
        part, local = self._locate(index)
        record, where = self.parts[part][local], f"{self.paths[part]}: row {local + 1}"
        missing = missing_fields(record, FIELDS)
        if missing:
            raise _restore(f"{where} lacks {', '.join(missing)}")
        if record["n_needles"] != self.needles:
            raise DataUnavailable(
                f"{where} has n_needles {record['n_needles']!r} in the {self.needles}needle files; "
                f"put each needle count's files in its own folder, as {HUB} does"
            )
        for field in ("answer", "random_string_to_prepend"):
            if not isinstance(record[field], str):
                raise _restore(f"{where}: field {field} is not text")
        messages = parse_messages(record["prompt"], where)
        wanted, total = (
            n if isinstance(n := record.get(k), int) else None
            for k in ("desired_msg_index", "total_messages")
        )
        prefix = record["random_string_to_prepend"]
        return MrcrRow(index, where, messages, record["answer"], prefix, wanted, total)

    def answers(self, count: int) -> tuple[str, ...]:
        """The first ``count`` answers without their random strings: to measure a tokenizer by."""
        found: list[str] = []
        for part in self.parts:
            rows = part.select_columns(["answer", "random_string_to_prepend"])[: count - len(found)]
            for answer, prefix in zip(rows["answer"], rows["random_string_to_prepend"]):
                if isinstance(answer, str) and isinstance(prefix, str):
                    found.append(answer.removeprefix(prefix))
        return tuple(found)

    def _locate(self, index: int) -> tuple[int, int]:
        for part, rows in enumerate(self.parts):
            if index < len(rows):
                return part, index
            index -= len(rows)
        raise IndexError(index)


def parse_messages(prompt: object, where: str) -> tuple[tuple[str, str], ...]:
    """A row's ``prompt``: a JSON list of {role: user|assistant, content: text} that starts and
    ends with a user message, with no two assistant messages in a row."""
    field = f"{where}: field prompt"
    messages = json_field(prompt, field, f"restore the file from {HUB}")
    if not isinstance(messages, list) or not messages:
        raise _restore(f"{field} is not a list of messages")
    parsed: list[tuple[str, str]] = []
    for n, m in enumerate(messages):
        role, content = (m.get("role"), m.get("content")) if isinstance(m, dict) else (None, None)
        if role not in ROLES or not isinstance(content, str):
            raise _restore(
                f"{field}, message {n}, is not a {{role: user|assistant, content: text}} object"
            )
        if role == "assistant" and parsed and parsed[-1][0] == "assistant":
            raise _restore(
                f"{field}, messages {n - 1} and {n}, are two assistant messages in a row, which no "
                "conversation has"
            )
        parsed.append((role, content))
    if parsed[0][0] != "user" or parsed[-1][0] != "user":
        raise _restore(f"{field} does not start and end with a user message")
    return tuple(parsed)


def mrcr_paths(data_dir: str | None, needles: int) -> tuple[Path, ...]:
    """The files of ``needles``, in number order (a folder among them is refused when read)."""
    return tuple(sorted(FILES[needles].find(Path(data_dir or ".")), key=_natural))


def _natural(path: Path) -> tuple[Any, ...]:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path.name))


def not_given(data_dir: str | None, needles: int, length: int | None = None) -> DataNotGiven:
    folder = Path(data_dir or ".") / "mrcr"
    at = f" (for length {length})" if length is not None else ""
    return DataNotGiven(
        f"mrcr_{needles}needle reads {FILES[needles].where} under {folder.parent}, and none is "
        f"there{at}: {fix(folder, needles)}; the generated ctx_mrcr_{needles} needs no files"
    )


@memo(6)
def load_mrcr(data_dir: str | None, needles: int) -> MrcrFile:
    """The files of ``needles``, checked for their columns; rows are checked as they are read."""
    if needles not in NEEDLES:
        raise ValueError(f"MRCR has 2, 4 and 8 needles, not {needles}")
    paths = mrcr_paths(data_dir, needles) if data_dir else ()
    if not paths:
        raise not_given(data_dir, needles)
    folder = Path(data_dir or ".") / "mrcr"
    parts = tuple(_read(p, needles, folder) for p in paths)
    sizes = tuple(n for part in parts for n in _sizes(part))
    return MrcrFile(needles, tuple(map(str, paths)), sha256_of_files(*paths), parts, sizes)


def _read(path: Path, needles: int, folder: Path) -> Any:
    check_data_file(path, f"restore the file from {HUB}")
    return open_table(path, FIELDS, fix(folder, needles))


def _sizes(rows: Any) -> Sequence[int]:
    if "n_chars" in rows.column_names:
        sizes = rows["n_chars"]
        if all(isinstance(n, int) for n in sizes):
            return tuple(sizes)
    return tuple(len(p) if isinstance(p, str) else 0 for p in rows["prompt"])
