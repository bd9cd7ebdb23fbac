"""InfiniteBench's English book QA and multiple choice, and the data of HELMET's judged tasks:
NarrativeQA, InfiniteBench Sum and Multi-LexSum (hub layouts, local JSON-lines copies first, with
HELMET's released key points where present) and ALCE (``alce/*_eval_gtr_top2000.json``).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ctxgate.memo import is_file, memo
from ctxgate.records.schema import Json
from ctxgate.sources.errors import DataNotGiven, DataUnavailable
from ctxgate.sources.files import (
    FETCH_HINT,
    DataFile,
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
# rows without summary/short are skipped, as HELMET does
LEXSUM_FIELDS = ("id", "sources", "summary/long")
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
    if task == "infbench_mc":
        for b in books:
            if b.answers[0] not in b.options:
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
    # shipped key points; empty: the judge decomposes ``keypoint_source``
    keypoints: tuple[str, ...] = ()
    keypoint_source: str = ""


@dataclass(frozen=True)
class LongDocSet:
    items: tuple[LongDoc, ...]
    demos: tuple[LongDoc, ...]
    sha256: str


def _need(task: str, r: Json, fields: tuple[str, ...], where: Path, hint: str) -> None:
    missing = missing_fields(r, fields)
    if missing:
        raise DataUnavailable(f"{task}: a record in {where} lacks {missing}; {hint}")


def _shipped_keypoints(path: Path, field: str, hint: str) -> dict[str, tuple[str, ...]]:
    """HELMET's released key points by id, where its file is present."""
    if not is_file(path):
        return {}
    rows = load_rows(str(path), "train", None, hint)
    return {str(r["id"]): tuple(r.get(field) or ()) for r in rows}


@memo(4)
def load_narrativeqa(data_dir: str | None) -> LongDocSet:
    folder = Path(data_dir or ".") / "narrativeqa"
    hint = hub_hint("NarrativeQA's test.jsonl and train.jsonl (hub columns)", folder)

    def read(split: str) -> list[LongDoc]:
        local = folder / f"{split}.jsonl"
        rows = read_local_or_hub(local, NARRATIVEQA_HUB, None, split, hint)
        out = []
        for i, r in enumerate(rows):
            _need("narrativeqa", r, NARRATIVEQA_FIELDS, folder, hint)
            key = str(r.get("document", {}).get("id", "")) + f"#{i}"
            answers = tuple(a["text"] for a in r["answers"])
            out.append(LongDoc(key, r["document"]["text"], r["question"]["text"], answers))
        return out

    return _doc_set(read("test"), read("train"), summary=False)


def _doc_set(items: list[LongDoc], demos: list[LongDoc], summary: bool) -> LongDocSet:
    """The set, hashed over what its task reads of each item."""
    rows: list[tuple[object, ...]]
    if summary:
        rows = [(d.key, d.answers, d.keypoints, d.context) for d in items]
    else:
        rows = [(d.key, d.question, d.answers, d.context) for d in items]
    return LongDocSet(tuple(items), tuple(demos), _digest(rows))


@memo(4)
def load_infbench_sum(data_dir: str | None) -> LongDocSet:
    folder = Path(data_dir or ".") / "infbench"
    hint = hub_hint("InfiniteBench's longbook_sum_eng.jsonl", folder)
    keypoints = _shipped_keypoints(folder / "longbook_sum_eng_keypoints.jsonl", "keypoints", hint)
    local = folder / "longbook_sum_eng.jsonl"
    rows = read_local_or_hub(local, HUB_ID, None, "longbook_sum_eng", hint)
    items = []
    for r in rows:
        _need("infbench_sum", r, INFBENCH_SUM_FIELDS, folder, hint)
        gold = (r["answer"][0] if isinstance(r["answer"], list) else r["answer"]).strip()
        key = str(r["id"])
        items.append(LongDoc(key, r["context"], "", (gold,), gold, keypoints.get(key, ()), gold))
    return _doc_set(items, items, summary=True)


@memo(4)
def load_multi_lexsum(data_dir: str | None) -> LongDocSet:
    folder = Path(data_dir or ".") / "multi_lexsum"
    hint = hub_hint("Multi-LexSum's validation.jsonl and train.jsonl (hub columns)", folder)

    def read(split: str) -> list[LongDoc]:
        out = []
        local = folder / f"{split}.jsonl"
        rows = read_local_or_hub(local, LEXSUM_HUB, "v20230518", split, hint)
        for r in rows:
            short = r.get("summary/short")
            if short is None:  # HELMET keeps only cases with a short summary
                continue
            _need("multi_lexsum", r, LEXSUM_FIELDS, folder, hint)
            keypoints = tuple(r.get("summary/short_keypoints") or ())
            context = "\n\n".join(r["sources"])
            summary = r["summary/long"]
            out.append(LongDoc(str(r["id"]), context, "", (short,), summary, keypoints, short))
        return out

    items, demos = read("validation"), read("train")
    # HELMET's key points for the validation cases (scripts/eval_gpt4_summ.py reads this file)
    shipped = _shipped_keypoints(folder / "multi_lexsum_val.jsonl", "summary/short_keypoints", hint)
    items = [replace(d, keypoints=shipped.get(d.key) or d.keypoints) for d in items]
    return _doc_set(items, demos, summary=True)


@dataclass(frozen=True)
class CiteItem:
    key: str
    question: str
    docs: tuple[tuple[str, str], ...]  # (title, text), retrieval order
    # ASQA: short answers per QA pair; QAMPARI: aliases per answer
    answers: tuple[tuple[str, ...], ...]


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
    qampari = task == "alce_qampari"
    items = []
    for i, r in enumerate(read_jsonl(test)):
        _need(task, r, ALCE_FIELDS[task], test, FETCH_HINT)
        answers = r["answers"] if qampari else [p["short_answers"] for p in r["qa_pairs"]]
        key = str(r.get("sample_id") or r.get("id") or i)
        docs = tuple((d["title"], d["text"]) for d in r["docs"])
        items.append(CiteItem(key, r["question"], docs, tuple(tuple(a) for a in answers)))
    parts = (spec["instruction"], spec["demo_prompt"], spec["doc_prompt"])
    digest = _digest([spec, [(c.key, c.question, c.docs, c.answers) for c in items]])
    return CiteSet(tuple(items), *parts, tuple(spec["demos"]), digest)
