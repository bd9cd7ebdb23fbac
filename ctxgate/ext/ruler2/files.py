"""RULERv2's records: MMLU (``cais/mmlu`` ``all``: test needles, auxiliary_train haystack) and
HotpotQA distractor (validation needles, train paragraphs), read from ``--data-dir`` where the
hub's files are placed there, else the small samples shipped beside this module."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from ctxgate.api import DataFile, DataUnavailable, iter_rows, memo

from .mmlu import Item, item
from .qa import Needle

_SHIPPED = "the small sample shipped with ctxgate is read"
MMLU_FILES = {
    split: DataFile(
        f"ruler2_mmlu_{split}",
        (rf"mmlu/all/{split}-.*\.parquet", rf"ruler2/mmlu/{split}\.jsonl"),
        ("question", "choices", "answer"),
        hub="cais/mmlu",
        optional=_SHIPPED,
        kinds=(("question", "text"), ("answer", "number")),
    )
    for split in ("test", "auxiliary_train")
}
HOTPOTQA_FILES = {
    split: DataFile(
        f"ruler2_hotpotqa_{split}",
        (rf"hotpot_qa/distractor/{split}-.*\.parquet", rf"ruler2/hotpotqa/{split}\.jsonl"),
        ("question", "answer", "context", "supporting_facts"),
        hub="hotpotqa/hotpot_qa",
        optional=_SHIPPED,
        kinds=(("question", "text"), ("answer", "text")),
    )
    for split in ("train", "validation")
}
DATA_FILES = (*MMLU_FILES.values(), *HOTPOTQA_FILES.values())
SAMPLES = {
    "ruler2_mmlu_test": "mmlu_test_sample.jsonl",
    "ruler2_mmlu_auxiliary_train": "mmlu_auxiliary_train_sample.jsonl",
    "ruler2_hotpotqa_validation": "hotpotqa_validation_sample.jsonl",
    "ruler2_hotpotqa_train": "hotpotqa_validation_sample.jsonl",  # no train sample: its paragraphs
}


def _rows(file: DataFile, data_dir: str | None) -> Iterator[tuple[dict[str, Any], str]]:
    """Each record checked, with where it was read; none kept (the train splits are large)."""
    found = file.find(Path(data_dir)) if data_dir else ()
    paths = [str(p) for p in found] or [
        str(resources.files(__package__).joinpath("data").joinpath(SAMPLES[file.task]))
    ]
    fix = f"place {file.hub}'s files as {file.where} under --data-dir"
    count = 0
    for path in paths:
        for n, row in enumerate(iter_rows(path, "train", None, fix), start=1):
            fault = file.fault(row)
            if fault:
                raise DataUnavailable(f"{path}: record {n} {fault}; {fix}")
            count += 1
            yield row, path
    if not count:
        raise DataUnavailable(f"{', '.join(paths)}: no records; {fix}")


def _item(row: dict[str, Any], where: str) -> Item:
    choices = row["choices"]
    if not isinstance(choices, Sequence) or len(choices) != 4 or row["answer"] not in range(4):
        raise DataUnavailable(
            f"{where}: a record has {len(choices) if isinstance(choices, Sequence) else 'no'} "
            f"choices or answer {row['answer']!r} (MMLU's: four choices, answer 0-3); "
            "restore cais/mmlu's file"
        )
    return item(str(row["question"]), [str(c) for c in choices], int(row["answer"]))


@memo(4)
def load_mmlu(data_dir: str | None) -> tuple[tuple[Item, ...], tuple[Item, ...]]:
    """The test items (needles) and the auxiliary_train items (haystack)."""
    test = tuple(_item(*read) for read in _rows(MMLU_FILES["test"], data_dir))
    return test, tuple(_item(*read) for read in _rows(MMLU_FILES["auxiliary_train"], data_dir))


def _paragraphs(row: dict[str, Any]) -> list[tuple[str, str]]:
    context = row["context"]
    return [(t, f"{t}\n{''.join(s)}") for t, s in zip(context["title"], context["sentences"])]


@memo(4)
def load_hotpotqa(data_dir: str | None) -> tuple[tuple[Needle, ...], tuple[str, ...]]:
    """The validation needles and the train paragraphs, in first-seen order (the reference's
    ``list(set(...))`` order changes with each process's string hashes)."""
    needles = []
    for row, _ in _rows(HOTPOTQA_FILES["validation"], data_dir):
        gold_titles = set(row["supporting_facts"]["title"])
        paragraphs = _paragraphs(row)
        needles.append(
            Needle(
                str(row["question"]),
                (str(row["answer"]),),
                tuple(text for t, text in paragraphs if t in gold_titles),
                tuple(text for t, text in paragraphs if t not in gold_titles),
            )
        )
    train = _rows(HOTPOTQA_FILES["train"], data_dir)
    haystack = dict.fromkeys(text for row, _ in train for _, text in _paragraphs(row))
    return tuple(needles), tuple(haystack)
