"""BABILong's prompts and its released sets (Kuratov et al., 2024; github.com/booydar/babilong): the
prompt is ``get_formatted_input`` with ``DEFAULT_TEMPLATE`` and ``DEFAULT_PROMPTS``, as its script
uses them for instruction-tuned models; a set (a task at ``0k`` ... ``1M``) is read from
``<data-dir>/babilong/`` in any of the hub's three layouts."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ctxgate.api import (
    DataFile,
    DataNotGiven,
    DataUnavailable,
    load_rows,
    memo,
    missing_fields,
    sha256_of_files,
)

FOLDER = "babilong"
FIELDS = ("input", "question", "target")
_SKIPS = "its cases skip; ctx_babi_* run"
DOWNLOAD = "huggingface-cli download RMT-team/babilong --repo-type dataset --local-dir {folder}"
_CONFIG = r"(?P<config>\d+[kM])"  # a set's length, as BABILong names it
# a split's sets in the hub's three layouts, in the order the loader tries them
SETS = {
    s: DataFile(
        f"babilong_{s}",
        (
            rf"{FOLDER}/{_CONFIG}/{s}-.*\.parquet",
            rf"{FOLDER}/data/{s}/{_CONFIG}\.json",
            rf"{FOLDER}/{s}/{_CONFIG}-.*\.parquet",
        ),
        FIELDS,
        optional=_SKIPS,
        kinds=tuple((f, "text") for f in FIELDS),
    )
    for s in ("qa1", "qa2", "qa3", "qa4", "qa5")
}
DATA_FILES = tuple(SETS.values())

TEMPLATE_HEAD = "{instruction}\n\n{examples}\n\n{post_prompt}\n\n<context>\n"
TEMPLATE_TAIL = "\n</context>\n\nQuestion: {question}"


@dataclass(frozen=True)
class Prompt:
    instruction: str
    examples: str
    post_prompt: str

    def head(self) -> str:
        """The template up to the context (stripped, as the reference strips the whole)."""
        return TEMPLATE_HEAD.format(**vars(self)).lstrip()


def tail(question: str) -> str:
    """The template after the context, stripped (the released questions end with a space)."""
    return TEMPLATE_TAIL.format(question=question).rstrip()


def format_input(prompt: Prompt, context: str, question: str) -> str:
    """BABILong's ``get_formatted_input``: the prompt as one text."""
    return prompt.head() + context.strip() + tail(question)


# BABILong's DEFAULT_PROMPTS verbatim (down to qa2's missing space after "question.")
_PROMPTS_FILE = resources.files(__package__).joinpath("babilong_prompts.json")
PROMPTS = {task: Prompt(**p) for task, p in json.loads(_PROMPTS_FILE.read_text("utf-8")).items()}


@dataclass(frozen=True)
class Record:
    input: str
    question: str
    target: str


@dataclass(frozen=True)
class BabilongSet:
    config: str  # BABILong's name of the set's length: 0k, 1k, ... 1M
    records: tuple[Record, ...]
    paths: tuple[str, ...]
    sha256: str


def input_tokens(config: str) -> int:
    """The GPT-2 tokens BABILong sized a set's inputs to (``data/create_tasks.py``): its decimal
    length less the 300 it leaves for the prompt (3,700 for ``4k``)."""
    scale = 1_000_000 if config.endswith("M") else 1000
    return max(int(config[:-1]) * scale - 300, 0)


def config_name(length: int) -> str | None:
    """BABILong's name of a length (0 -> ``0k``, 4096 -> ``4k``, 1048576 -> ``1M``), or None."""
    if length == 0:
        return "0k"
    if length > 0 and length % (1 << 20) == 0:
        return f"{length >> 20}M"
    if length > 0 and length % 1024 == 0:
        return f"{length >> 10}k"
    return None


@memo(16)
def load_set(task: str, split: str, data_dir: str | None, length: int) -> BabilongSet:
    """The released records of ``split`` (qa1-qa5) at ``length``; ``task`` is named in messages."""
    config = config_name(length)
    root = Path(data_dir or ".") / FOLDER
    fix = (
        f"`{DOWNLOAD.format(folder=root)}` (the suite never downloads) and pass --data-dir "
        f"{data_dir or 'DIR'}"
    )
    if config is None:
        raise DataNotGiven(
            f"{task} reads BABILong's released sets, which exist for lengths named 0k, 1k, 2k, 4k, "
            f"... 128k, 1M; length {length} has none: choose such a --lengths value"
        )
    files = SETS[split].find(root.parent, config=config) if data_dir and split in SETS else ()
    if not files:
        raise DataNotGiven(
            f"{task} reads BABILong's {config} set of {split} ({root}/{config}/{split}-*.parquet "
            f"or {root}/data/{split}/{config}.json), for length {length}, and none is there; get "
            f"it with {fix}"
        )
    records: list[Record] = []
    for path in files:
        rows = load_rows(str(path), "train", None, f"restore the file with {fix}")
        for n, row in enumerate(rows, start=1):
            bad = missing_fields(row, FIELDS) or [f for f in FIELDS if not isinstance(row[f], str)]
            if bad:
                raise DataUnavailable(
                    f"{path}: record {n} has no text in {', '.join(bad)} (BABILong's records hold "
                    f"input, question and target as text); restore the file with {fix}"
                )
            records.append(Record(row["input"], row["question"], row["target"]))
    if not records:
        raise DataUnavailable(
            f"{', '.join(map(str, files))}: no records (BABILong's sets hold 100); restore it with "
            f"{fix}"
        )
    return BabilongSet(config, tuple(records), tuple(map(str, files)), sha256_of_files(*files))
