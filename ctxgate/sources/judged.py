"""InfiniteBench's English book QA and multiple choice, and the data of HELMET's judged tasks:
NarrativeQA, InfiniteBench Sum and Multi-LexSum (hub layouts, local JSON-lines copies first, with
HELMET's released key points where present) and ALCE (``alce/*_eval_gtr_top2000.json``)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxgate.memo import memo
from ctxgate.sources import door
from ctxgate.sources.errors import DataNotGiven, DataUnavailable
from ctxgate.sources.files import (
    FETCH_HINT,
    DataFile,
    Rows,
    as_texts,
    hub_hint,
    hub_splits,
    load_rows,
    read_jsonl,
    read_local_or_hub,
    sha256_of_json,
)

HUB_ID = "xinrongzhang2022/InfiniteBench"
SUBSETS = {"infbench_qa": "longbook_qa_eng", "infbench_mc": "longbook_choice_eng"}
INFBENCH_FIELDS = ("id", "context", "input", "answer")
NARRATIVEQA_HUB, LEXSUM_HUB = "deepmind/narrativeqa", "allenai/multi_lexsum"
NARRATIVEQA_FIELDS = ("document", "question", "answers")
INFBENCH_SUM_FIELDS = ("id", "context", "answer")
LEXSUM_FIELDS = ("id", "sources", "summary/long")  # rows without summary/short are skipped
ALCE_FILES = {
    "alce_asqa": ("asqa_eval_gtr_top2000.json", "asqa_revised.json"),
    "alce_qampari": ("qampari_eval_gtr_top2000.json", "qampari_revised.json"),
}
ALCE_FIELDS = {
    "alce_asqa": ("question", "docs", "qa_pairs"),
    "alce_qampari": ("question", "docs", "answers"),
}
ALCE_PROMPT_FIELDS = ("instruction", "demo_prompt", "doc_prompt", "demos")


def _keypoints(task: str, folder: str, name: str, field: str, summary: str) -> DataFile:
    optional = f"the judge writes key points from the {summary} summary"
    where, kinds = (f"{folder}/{re.escape(name)}",), ((field, "list"),)
    return DataFile(task, where, ("id", field), optional=optional, kinds=kinds)


# local copies of the hub's splits (by split), HELMET's key points and ALCE's files
_TEXTS = (("context", "text"), ("input", "text"))
INFBENCH = {
    t: hub_splits(t, "infbench", HUB_ID, INFBENCH_FIELDS, [s], _TEXTS) for t, s in SUBSETS.items()
}
NARRATIVEQA = hub_splits(
    "narrativeqa",
    "narrativeqa",
    NARRATIVEQA_HUB,
    NARRATIVEQA_FIELDS,
    ("test", "train"),
    (("document", "object"), ("question", "object"), ("answers", "objects")),
)
INFBENCH_SUM = hub_splits(
    "infbench_sum", "infbench", HUB_ID, INFBENCH_SUM_FIELDS, ("longbook_sum_eng",), _TEXTS[:1]
)
LEXSUM = hub_splits(
    "multi_lexsum",
    "multi_lexsum",
    LEXSUM_HUB,
    LEXSUM_FIELDS,
    ("validation", "train"),
    (("sources", "list"), ("summary/long", "text")),
)
KEYPOINTS = {
    "infbench_sum": _keypoints(
        "infbench_sum", "infbench", "longbook_sum_eng_keypoints.jsonl", "keypoints", "gold"
    ),
    "multi_lexsum": _keypoints(
        "multi_lexsum", "multi_lexsum", "multi_lexsum_val.jsonl", "summary/short_keypoints", "short"
    ),
}
ALCE_TESTS = {
    t: DataFile(
        t,
        (f"alce/{re.escape(n)}",),
        ALCE_FIELDS[t],
        kinds=(
            ("question", "text"),
            ("docs", "objects"),
            ("qa_pairs", "objects"),
            ("answers", "list"),
        ),
    )
    for t, (n, _) in ALCE_FILES.items()
}
ALCE_PROMPTS = {  # HELMET's release keeps them in alce/, its repository in prompts/
    t: DataFile(
        t,
        tuple(f"{d}/{re.escape(n)}" for d in ("alce", "prompts")),
        ALCE_PROMPT_FIELDS,
        kinds=(*((f, "text") for f in ALCE_PROMPT_FIELDS[:3]), ("demos", "list")),
    )
    for t, (_, n) in ALCE_FILES.items()
}
DATA_FILES = (
    *(
        f
        for splits in (*INFBENCH.values(), NARRATIVEQA, INFBENCH_SUM, LEXSUM)
        for f in splits.values()
    ),
    *KEYPOINTS.values(),
    *(f for t in ALCE_FILES for f in (ALCE_TESTS[t], ALCE_PROMPTS[t])),
)


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


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
    for r in read_local_or_hub(INFBENCH[task][subset], data_dir, HUB_ID, None, subset, hint):
        fault = INFBENCH[task][subset].fault(r)
        if fault or (task == "infbench_mc" and len(r.get("options") or ()) != 4):
            raise DataUnavailable(
                f"{task}: a record in {local} {fault or 'lacks 4 options'}; {hint}"
            )
        options = tuple(map(str, r.get("options") or ()))
        books.append(Book(str(r["id"]), r["context"], r["input"], as_texts(r["answer"]), options))
    for b in books:
        if task == "infbench_mc" and b.answers[0] not in b.options:
            raise DataUnavailable(
                f"{task}: record {b.key}'s answer {b.answers[0]!r} is not one of its options"
            )
    digest = sha256_of_json([(b.key, b.question, b.answers, b.options, b.context) for b in books])
    return BookSet(tuple(books), digest)


@dataclass(frozen=True)
class LongDoc:
    """A question with answers (NarrativeQA) or a gold summary (Summ) over a long document."""

    key: str
    context: str
    question: str
    answers: tuple[str, ...]
    expert_summary: str = ""  # the summary precision is judged against
    keypoints: tuple[str, ...] = ()  # shipped ones; empty: the judge decomposes keypoint_source
    keypoint_source: str = ""


@dataclass(frozen=True)
class LongDocSet:
    items: tuple[LongDoc, ...]
    demos: tuple[LongDoc, ...]
    sha256: str


def _rows(
    task: str, local: dict[str, DataFile], data_dir: str | None, hub: str, split: str, hint: str
) -> Rows:
    """The local copy of ``split`` or the hub's, records checked for its fields (Multi-LexSum:
    only those with a short summary, as HELMET keeps)."""
    config = "v20230518" if hub == LEXSUM_HUB else None
    rows = read_local_or_hub(local[split], data_dir, hub, config, split, hint)
    if hub == LEXSUM_HUB:
        rows = tuple(r for r in rows if r.get("summary/short") is not None)
    for r in rows:
        fault = local[split].fault(r)
        if fault:
            raise DataUnavailable(f"{task}: a record of its {split} split {fault}; {hint}")
    return rows


def _shipped_keypoints(task: str, data_dir: str | None, hint: str) -> dict[str, tuple[str, ...]]:
    entry = KEYPOINTS[task]
    found = entry.find(Path(data_dir or "."))
    rows = load_rows(str(found[0]), "train", None, hint) if found else ()
    return {str(r["id"]): tuple(r.get(entry.fields[1]) or ()) for r in rows}


def _doc_set(items: list[LongDoc], demos: list[LongDoc], summary: bool) -> LongDocSet:
    """The set, hashed over what its task reads of each item."""
    rows: list[tuple[object, ...]]
    if summary:
        rows = [(d.key, d.answers, d.keypoints, d.context) for d in items]
    else:
        rows = [(d.key, d.question, d.answers, d.context) for d in items]
    return LongDocSet(tuple(items), tuple(demos), _digest(rows))


@memo(4)
def load_narrativeqa(data_dir: str | None) -> LongDocSet:
    folder = Path(data_dir or ".") / "narrativeqa"
    hint = hub_hint("NarrativeQA's test.jsonl and train.jsonl (hub columns)", folder)
    test: list[LongDoc] = []
    train: list[LongDoc] = []
    for split, out in (("test", test), ("train", train)):
        rows = _rows("narrativeqa", NARRATIVEQA, data_dir, NARRATIVEQA_HUB, split, hint)
        for i, r in enumerate(rows):
            key = str(r["document"].get("id", "")) + f"#{i}"
            answers = tuple(a["text"] for a in r["answers"])
            out.append(LongDoc(key, r["document"]["text"], r["question"]["text"], answers))
    return _doc_set(test, train, summary=False)


@memo(4)
def load_infbench_sum(data_dir: str | None) -> LongDocSet:
    folder = Path(data_dir or ".") / "infbench"
    hint = hub_hint("InfiniteBench's longbook_sum_eng.jsonl", folder)
    keypoints = _shipped_keypoints("infbench_sum", data_dir, hint)
    items = []
    for r in _rows("infbench_sum", INFBENCH_SUM, data_dir, HUB_ID, "longbook_sum_eng", hint):
        gold = (r["answer"][0] if isinstance(r["answer"], list) else r["answer"]).strip()
        key = str(r["id"])
        items.append(LongDoc(key, r["context"], "", (gold,), gold, keypoints.get(key, ()), gold))
    return _doc_set(items, items, summary=True)


@memo(4)
def load_multi_lexsum(data_dir: str | None) -> LongDocSet:
    folder = Path(data_dir or ".") / "multi_lexsum"
    hint = hub_hint("Multi-LexSum's validation.jsonl and train.jsonl (hub columns)", folder)
    # HELMET's key points for the validation cases (scripts/eval_gpt4_summ.py reads this file)
    shipped = _shipped_keypoints("multi_lexsum", data_dir, hint)
    items: list[LongDoc] = []
    demos: list[LongDoc] = []
    for split, out in (("validation", items), ("train", demos)):
        for r in _rows("multi_lexsum", LEXSUM, data_dir, LEXSUM_HUB, split, hint):
            short, keypoints = r["summary/short"], tuple(r.get("summary/short_keypoints") or ())
            if split == "validation":
                keypoints = shipped.get(str(r["id"])) or keypoints
            context, summary = "\n\n".join(r["sources"]), r["summary/long"]
            out.append(LongDoc(str(r["id"]), context, "", (short,), summary, keypoints, short))
    return _doc_set(items, demos, summary=True)


@dataclass(frozen=True)
class CiteItem:
    key: str
    question: str
    docs: tuple[tuple[str, str], ...]  # (title, text), retrieval order
    answers: tuple[tuple[str, ...], ...]  # ASQA: short answers per QA pair; QAMPARI: aliases


@dataclass(frozen=True)
class CiteSet:
    items: tuple[CiteItem, ...]
    instruction: str
    demo_prompt: str
    doc_prompt: str
    demos: tuple[dict[str, Any], ...]
    sha256: str


@memo(4)
def load_alce(task: str, data_dir: str | None) -> CiteSet:
    root = Path(data_dir or ".")
    test_name, prompt_name = ALCE_FILES[task]
    test = next(iter(ALCE_TESTS[task].find(root)), None)
    prompt = next(iter(ALCE_PROMPTS[task].find(root)), None)
    if test is None or prompt is None:
        raise DataNotGiven(
            f"{task} needs HELMET's alce/{test_name} and its prompt file {prompt_name} (in alce/ "
            f"or prompts/) under --data-dir; {FETCH_HINT}"
        )
    spec = door.json_document(prompt, f"use HELMET's {prompt_name}")
    if not isinstance(spec, dict):
        raise DataUnavailable(f"{prompt}: not a JSON object; use HELMET's {prompt_name}")
    fault = ALCE_PROMPTS[task].fault(spec)
    if fault:
        raise DataUnavailable(f"{task}: {prompt} {fault}; use HELMET's {prompt_name}")
    items = []
    for i, r in enumerate(read_jsonl(test)):
        fault = ALCE_TESTS[task].fault(r)
        if fault:
            raise DataUnavailable(f"{task}: a record in {test} {fault}; {FETCH_HINT}")
        qampari = task == "alce_qampari"
        answers = r["answers"] if qampari else [p["short_answers"] for p in r["qa_pairs"]]
        key = str(r.get("sample_id") or r.get("id") or i)
        docs = tuple((d["title"], d["text"]) for d in r["docs"])
        items.append(CiteItem(key, r["question"], docs, tuple(tuple(a) for a in answers)))
    parts = (spec["instruction"], spec["demo_prompt"], spec["doc_prompt"])
    digest = _digest([spec, [(c.key, c.question, c.docs, c.answers) for c in items]])
    return CiteSet(tuple(items), *parts, tuple(spec["demos"]), digest)
