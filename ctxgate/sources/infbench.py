"""InfiniteBench's English book QA and multiple choice, in the hub layout (id, context, input,
answer, options)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ctxgate.memo import memo
from ctxgate.sources.errors import DataUnavailable
from ctxgate.sources.files import (
    as_texts,
    hub_hint,
    hub_splits,
    missing_fields,
    read_local_or_hub,
    sha256_of_json,
)

HUB_ID = "xinrongzhang2022/InfiniteBench"
SUBSETS = {"infbench_qa": "longbook_qa_eng", "infbench_mc": "longbook_choice_eng"}
FIELDS = ("id", "context", "input", "answer")
DATA_FILES = tuple(
    f
    for task, subset in SUBSETS.items()
    for f in hub_splits(task, "infbench", HUB_ID, FIELDS, [subset])
)


@dataclass(frozen=True)
class Book:
    key: str
    context: str
    question: str
    answers: tuple[str, ...]
    options: tuple[str, ...]


@dataclass(frozen=True)
class BookSet:
    books: tuple[Book, ...]
    sha256: str


@memo(4)
def load_infbench(task: str, data_dir: str | None) -> BookSet:
    subset = SUBSETS[task]
    local = Path(data_dir or ".") / "infbench" / f"{subset}.jsonl"
    hint = hub_hint(f"InfiniteBench's {subset}.jsonl", local)
    books = []
    for r in read_local_or_hub(local, HUB_ID, None, subset, hint):
        missing = missing_fields(r, FIELDS)
        if missing or (task == "infbench_mc" and len(r.get("options") or ()) != 4):
            raise DataUnavailable(
                f"{task}: a record in {local} lacks {missing or ['4 options']}; {hint}"
            )
        options = tuple(map(str, r.get("options") or ()))
        books.append(Book(str(r["id"]), r["context"], r["input"], as_texts(r["answer"]), options))
    if task == "infbench_mc":
        for b in books:
            if b.answers[0] not in b.options:
                raise DataUnavailable(
                    f"{task}: record {b.key}'s answer {b.answers[0]!r} is not one of its options"
                )
    digest = sha256_of_json([(b.key, b.question, b.answers, b.options, b.context) for b in books])
    return BookSet(tuple(books), digest)
