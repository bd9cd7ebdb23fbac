"""HELMET's released RAG (``kilt/``) and re-rank (``msmarco/``) files, read into per-question passage pools.

A released file holds one line per question x gold depth, each with k passages already placed for Llama-2 tokens.
ctxgate re-places them for the model under test, so it keeps, per question, the gold passage(s) and the distractors
in retrieval order (first seen), and forgets where the file put the gold.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxgate.memo import is_file, memo
from ctxgate.metrics.text import helmet_normalize
from ctxgate.sources.errors import DataNotGiven, DataUnavailable
from ctxgate.sources.files import FETCH_HINT, DataFile, largest_k, missing_fields, read_jsonl, sha256_of, verify_hint
from ctxgate.sources.helmet_files import MSMARCO_DEMO, MSMARCO_DIRS, MSMARCO_TEST, RAG_FOLDER, RAG_SETS


@dataclass(frozen=True)
class Passage:
    title: str
    text: str
    pid: str = ""
    label: int = 0  # re-rank relevance judgment


@dataclass(frozen=True)
class RagItem:
    key: str
    question: str
    answers: tuple[str, ...]
    gold: tuple[Passage, ...]
    distractors: tuple[Passage, ...]  # hard negatives, best-retrieved first


@dataclass(frozen=True)
class Demo:
    key: str
    question: str
    answer: str  # RAG: the first answer; re-rank: the gold ranking
    passages: tuple[Passage, ...]


@dataclass(frozen=True)
class Pool:
    items: tuple[RagItem, ...]
    demos: tuple[Demo, ...]
    sha256: str
    source: str


RAG_FIELDS = {task: ("question", "answers", "ctxs") + (("s_pop",) if task == "kilt_popqa" else ()) for task in RAG_SETS}
MSMARCO_FIELDS = ("qid", "query", "ctxs")
DATA_FILES = tuple(
    DataFile(task, RAG_FOLDER, pattern, RAG_FIELDS[task])
    for task, rag in RAG_SETS.items()
    for pattern in (rag.test_pattern, rag.demo_pattern)
) + tuple(  # either layout serves: each is optional alone
    DataFile(
        "msmarco_rerank", folder, pattern, MSMARCO_FIELDS, optional=f"HELMET's other layout keeps them in {other}/"
    )
    for folder, other in (MSMARCO_DIRS, MSMARCO_DIRS[::-1])
    for pattern in (MSMARCO_TEST, re.escape(MSMARCO_DEMO))
)
POPQA_MAX_LOG_POPULARITY = 3.0  # HELMET's kilt_popqa_3: subject entities with popularity below 10^3


def _files(data_dir: str | None, task: str, folder: str, test_re: str, demo_re: str) -> tuple[Path, Path]:
    if not data_dir:
        raise DataNotGiven(f"{task} needs HELMET's released data; {FETCH_HINT}")
    where = Path(data_dir) / folder
    test = largest_k(where, test_re)
    demo = where / demo_re if "(" not in demo_re else largest_k(where, demo_re)
    if test is None or demo is None or not is_file(demo):
        missing = test_re if test is None else demo_re
        raise DataNotGiven(f"{task}: no file matching {missing!r} in {where}; {FETCH_HINT}")
    return test, demo


def _passage(c: dict[str, Any]) -> Passage:
    return Passage(str(c.get("title") or ""), str(c["text"]), str(c.get("id", "")), int(c.get("label") or 0))


def _is_gold(c: dict[str, Any], normalized_answers: tuple[str, ...], flagged: bool) -> bool:
    if flagged:
        return bool(c.get("has_answer"))
    text = helmet_normalize(str(c["text"]))
    return any(a and a in text for a in normalized_answers)


def _digest(*paths: Path) -> str:
    return hashlib.sha256("".join(sha256_of(p) for p in paths).encode()).hexdigest()


def _check(record: dict[str, Any], path: Path, fields: tuple[str, ...]) -> None:
    missing = missing_fields(record, fields)
    if missing:
        has = ", ".join(k for k in sorted(record) if record[k] is not None)
        raise DataUnavailable(
            f"{path}: a record lacks {', '.join(missing)} (has {has}); "
            f"HELMET's layout is expected" + verify_hint(path, ", ")
        )


@memo(8)
def load_rag(task: str, data_dir: str | None) -> Pool:
    rag = RAG_SETS[task]
    test, demo_path = _files(data_dir, task, RAG_FOLDER, rag.test_pattern, rag.demo_pattern)
    rows, demo_rows = list(read_jsonl(test)), list(read_jsonl(demo_path))
    for r in rows:
        _check(r, test, RAG_FIELDS[task])
    for r in demo_rows:
        _check(r, demo_path, RAG_FIELDS[task])
    if task == "kilt_popqa":
        rows = [r for r in rows if math.log10(r["s_pop"]) < POPQA_MAX_LOG_POPULARITY]
        demo_rows = [r for r in demo_rows if math.log10(r["s_pop"]) < POPQA_MAX_LOG_POPULARITY]
    grouped: dict[str, dict[str, Any]] = {}
    for r in rows:
        key = str(r.get("id", r["question"]))
        answers = tuple(str(a) for a in r["answers"])
        normalized = tuple(helmet_normalize(a) for a in answers)
        flagged = any("has_answer" in c for c in r["ctxs"])
        entry = grouped.setdefault(key, {"question": r["question"], "answers": answers, "gold": {}, "other": {}})
        for c in r["ctxs"]:
            p = _passage(c)
            (entry["gold"] if _is_gold(c, normalized, flagged) else entry["other"]).setdefault((p.title, p.text), p)
    items = tuple(
        RagItem(k, e["question"], e["answers"], tuple(e["gold"].values()), tuple(e["other"].values()))
        for k, e in grouped.items()
        if e["gold"]
    )
    if not items:
        raise DataUnavailable(
            f"{test}: no question has a gold passage (ctxs flagged has_answer, or containing an "
            "answer)" + verify_hint(test, "; ")
        )
    demos = []
    for r in demo_rows:
        demos.append(
            Demo(
                str(r.get("id", r["question"])),
                r["question"],
                str(r["answers"][0]),
                tuple(_passage(c) for c in r["ctxs"]),
            )
        )
    return Pool(items, tuple(_dedupe(demos)), _digest(test, demo_path), str(test))


def _dedupe(demos: list[Demo]) -> list[Demo]:
    seen: dict[str, Demo] = {}
    for d in demos:
        seen.setdefault(d.key, d)
    return list(seen.values())


@memo(4)
def load_msmarco(data_dir: str | None) -> Pool:
    folder = next(
        (f for f in MSMARCO_DIRS if data_dir and largest_k(Path(data_dir) / f, MSMARCO_TEST)), MSMARCO_DIRS[0]
    )
    test, demo_path = _files(data_dir, "msmarco_rerank", folder, MSMARCO_TEST, MSMARCO_DEMO)
    grouped: dict[str, dict[str, Any]] = {}
    for r in read_jsonl(test):
        _check(r, test, MSMARCO_FIELDS)
        entry = grouped.setdefault(str(r["qid"]), {"query": r["query"], "ctxs": {}})
        for c in r["ctxs"]:
            entry["ctxs"].setdefault(str(c["id"]), _passage(c))
    items = tuple(RagItem(q, e["query"], (), (), tuple(e["ctxs"].values())) for q, e in grouped.items())
    demos = []
    for r in read_jsonl(demo_path):
        _check(r, demo_path, MSMARCO_FIELDS)
        passages = tuple(_passage(c) for c in r["ctxs"])
        ranking = " > ".join(p.pid for p in sorted(passages, key=lambda p: p.label, reverse=True))
        demos.append(Demo(str(r["qid"]), r["query"], ranking, passages))
    return Pool(items, tuple(_dedupe(demos)), _digest(test, demo_path), str(test))
