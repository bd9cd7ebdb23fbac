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

from ctxgate.memo import is_file, memo
from ctxgate.sources.errors import DataNotGiven, DataUnavailable
from ctxgate.sources.files import (
    FETCH_HINT,
    DataFile,
    Rows,
    as_texts,
    first_bad_line,
    hub_hint,
    hub_splits,
    load_rows,
    missing_fields,
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
    return DataFile(task, folder, re.escape(name), ("id", field), optional=optional)


DATA_FILES = (
    *hub_splits("infbench_qa", "infbench", HUB_ID, INFBENCH_FIELDS, [SUBSETS["infbench_qa"]]),
    *hub_splits("infbench_mc", "infbench", HUB_ID, INFBENCH_FIELDS, [SUBSETS["infbench_mc"]]),
    *hub_splits(
        "narrativeqa", "narrativeqa", NARRATIVEQA_HUB, NARRATIVEQA_FIELDS, ("test", "train")
    ),
    *hub_splits("infbench_sum", "infbench", HUB_ID, INFBENCH_SUM_FIELDS, ("longbook_sum_eng",)),
    _keypoints("infbench_sum", "infbench", "longbook_sum_eng_keypoints.jsonl", "keypoints", "gold"),
    *hub_splits("multi_lexsum", "multi_lexsum", LEXSUM_HUB, LEXSUM_FIELDS, ("validation", "train")),
    _keypoints(
        "multi_lexsum", "multi_lexsum", "multi_lexsum_val.jsonl", "summary/short_keypoints", "short"
    ),
    *(
        DataFile(task, "alce", re.escape(name), fields)
        for task, (test, prompt) in ALCE_FILES.items()
        for name, fields in ((test, ALCE_FIELDS[task]), (prompt, ALCE_PROMPT_FIELDS))
    ),
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
    for r in read_local_or_hub(local, HUB_ID, None, subset, hint):
        missing = missing_fields(r, INFBENCH_FIELDS)
        if missing or (task == "infbench_mc" and len(r.get("options") or ()) != 4):
            raise DataUnavailable(
                f"{task}: a record in {local} lacks {missing or ['4 options']}; {hint}"
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
    task: str, fields: tuple[str, ...], folder: Path, hub: str, split: str, hint: str
) -> Rows:
    """``folder/{split}.jsonl`` or the hub's split, records checked for ``fields`` (Multi-LexSum:
    only those with a short summary, as HELMET keeps)."""
    config = "v20230518" if hub == LEXSUM_HUB else None
    rows = read_local_or_hub(folder / f"{split}.jsonl", hub, config, split, hint)
    if hub == LEXSUM_HUB:
        rows = tuple(r for r in rows if r.get("summary/short") is not None)
    for r in rows:
        missing = missing_fields(r, fields)
        if missing:
            raise DataUnavailable(f"{task}: a record in {folder} lacks {missing}; {hint}")
    return rows


def _shipped_keypoints(path: Path, field: str, hint: str) -> dict[str, tuple[str, ...]]:
    rows = load_rows(str(path), "train", None, hint) if is_file(path) else ()
    return {str(r["id"]): tuple(r.get(field) or ()) for r in rows}


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
        rows = _rows("narrativeqa", NARRATIVEQA_FIELDS, folder, NARRATIVEQA_HUB, split, hint)
        for i, r in enumerate(rows):
            key = str(r["document"].get("id", "")) + f"#{i}"
            answers = tuple(a["text"] for a in r["answers"])
            out.append(LongDoc(key, r["document"]["text"], r["question"]["text"], answers))
    return _doc_set(test, train, summary=False)


@memo(4)
def load_infbench_sum(data_dir: str | None) -> LongDocSet:
    folder = Path(data_dir or ".") / "infbench"
    hint = hub_hint("InfiniteBench's longbook_sum_eng.jsonl", folder)
    keypoints = _shipped_keypoints(folder / "longbook_sum_eng_keypoints.jsonl", "keypoints", hint)
    items = []
    for r in _rows("infbench_sum", INFBENCH_SUM_FIELDS, folder, HUB_ID, "longbook_sum_eng", hint):
        gold = (r["answer"][0] if isinstance(r["answer"], list) else r["answer"]).strip()
        key = str(r["id"])
        items.append(LongDoc(key, r["context"], "", (gold,), gold, keypoints.get(key, ()), gold))
    return _doc_set(items, items, summary=True)


@memo(4)
def load_multi_lexsum(data_dir: str | None) -> LongDocSet:
    folder = Path(data_dir or ".") / "multi_lexsum"
    hint = hub_hint("Multi-LexSum's validation.jsonl and train.jsonl (hub columns)", folder)
    # HELMET's key points for the validation cases (scripts/eval_gpt4_summ.py reads this file)
    shipped = _shipped_keypoints(folder / "multi_lexsum_val.jsonl", "summary/short_keypoints", hint)
    items: list[LongDoc] = []
    demos: list[LongDoc] = []
    for split, out in (("validation", items), ("train", demos)):
        for r in _rows("multi_lexsum", LEXSUM_FIELDS, folder, LEXSUM_HUB, split, hint):
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
    test = root / "alce" / test_name
    prompts = (root / "alce" / prompt_name, root / "prompts" / prompt_name)
    prompt = next((p for p in prompts if is_file(p)), None)
    if not is_file(test) or prompt is None:
        raise DataNotGiven(
            f"{task} needs HELMET's alce/{test_name} and its prompt file {prompt_name} (in alce/ "
            f"or prompts/) under --data-dir; {FETCH_HINT}"
        )
    problem = first_bad_line(prompt)
    if problem:
        raise DataUnavailable(f"{problem}; use HELMET's {prompt_name}")
    spec = json.loads(prompt.read_text(encoding="utf-8"))
    if not isinstance(spec, dict):
        raise DataUnavailable(f"{prompt}: not a JSON object; use HELMET's {prompt_name}")
    missing = missing_fields(spec, ALCE_PROMPT_FIELDS)
    if missing:
        raise DataUnavailable(f"{task}: {prompt} lacks {missing}; use HELMET's {prompt_name}")
    items = []
    for i, r in enumerate(read_jsonl(test)):
        missing = missing_fields(r, ALCE_FIELDS[task])
        if missing:
            raise DataUnavailable(f"{task}: a record in {test} lacks {missing}; {FETCH_HINT}")
        qampari = task == "alce_qampari"
        answers = r["answers"] if qampari else [p["short_answers"] for p in r["qa_pairs"]]
        key = str(r.get("sample_id") or r.get("id") or i)
        docs = tuple((d["title"], d["text"]) for d in r["docs"])
        items.append(CiteItem(key, r["question"], docs, tuple(tuple(a) for a in answers)))
    parts = (spec["instruction"], spec["demo_prompt"], spec["doc_prompt"])
    digest = _digest([spec, [(c.key, c.question, c.docs, c.answers) for c in items]])
    return CiteSet(tuple(items), *parts, tuple(spec["demos"]), digest)
