"""HELMET's released RAG (``kilt/``) and re-rank (``msmarco/``) files as per-question passage pools.
A released line is one question at one gold depth, placed for Llama-2 tokens; ctxgate re-places the
passages for the model under test, so it keeps per question the gold passage(s) and the distractors
in retrieval order (first seen), and forgets where the file put the gold."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxgate.memo import is_file, memo
from ctxgate.metrics.text import helmet_normalize
from ctxgate.records.schema import Json
from ctxgate.sources.errors import DataNotGiven, DataUnavailable
from ctxgate.sources.files import (
    FETCH_HINT,
    DataFile,
    Rows,
    largest_k,
    missing_fields,
    read_jsonl,
    sha256_of_files,
    verify_hint,
)
from ctxgate.sources.helmet_files import (
    MSMARCO_DEMO,
    MSMARCO_DIRS,
    MSMARCO_TEST,
    RAG_FOLDER,
    RAG_SETS,
    popqa_3,
)


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


_ByText = dict[tuple[str, str], Passage]  # passages by (title, text)
RAG_FIELDS = {
    task: ("question", "answers", "ctxs") + (("s_pop",) if task == "kilt_popqa" else ())
    for task in RAG_SETS
}
MSMARCO_FIELDS = ("qid", "query", "ctxs")
_ELSEWHERE = "HELMET's other layout keeps them in {}/"
DATA_FILES = tuple(
    DataFile(task, RAG_FOLDER, pattern, RAG_FIELDS[task])
    for task, rag in RAG_SETS.items()
    for pattern in (rag.test_pattern, rag.demo_pattern)
) + tuple(  # either layout serves: each is optional alone
    DataFile("msmarco_rerank", folder, pattern, MSMARCO_FIELDS, optional=_ELSEWHERE.format(other))
    for folder, other in (MSMARCO_DIRS, MSMARCO_DIRS[::-1])
    for pattern in (MSMARCO_TEST, re.escape(MSMARCO_DEMO))
)


def _files(
    data_dir: str | None, task: str, folder: str, test_re: str, demo_re: str
) -> tuple[tuple[Path, Path], Rows, Rows]:
    fields = MSMARCO_FIELDS if task == "msmarco_rerank" else RAG_FIELDS[task]
    if not data_dir:
        raise DataNotGiven(f"{task} needs HELMET's released data; {FETCH_HINT}")
    where = Path(data_dir) / folder
    test = largest_k(where, test_re)
    demo = where / demo_re if "(" not in demo_re else largest_k(where, demo_re)
    if test is None or demo is None or not is_file(demo):
        absent = test_re if test is None else demo_re
        raise DataNotGiven(f"{task}: no file matching {absent!r} in {where}; {FETCH_HINT}")
    records = []
    for path in (test, demo):
        records.append(read_jsonl(path))
        for record in records[-1]:
            missing = missing_fields(record, fields)
            if missing:
                has = ", ".join(k for k in sorted(record) if record[k] is not None)
                raise DataUnavailable(
                    f"{path}: a record lacks {', '.join(missing)} (has {has}); "
                    f"HELMET's layout is expected" + verify_hint(path, ", ")
                )
    return (test, demo), records[0], records[1]


def _passage(c: dict[str, Any]) -> Passage:
    title, pid = str(c.get("title") or ""), str(c.get("id", ""))
    return Passage(title, str(c["text"]), pid, int(c.get("label") or 0))


def _key(r: Json) -> str:
    return str(r.get("id", r["question"]))


def _pool(items: tuple[RagItem, ...], demos: Iterable[Demo], paths: tuple[Path, Path]) -> Pool:
    firsts: dict[str, Demo] = {}
    for d in demos:
        firsts.setdefault(d.key, d)
    return Pool(items, tuple(firsts.values()), sha256_of_files(*paths), str(paths[0]))


@memo(8)
def load_rag(task: str, data_dir: str | None) -> Pool:
    rag = RAG_SETS[task]
    paths, rows, demo_rows = _files(data_dir, task, RAG_FOLDER, rag.test_pattern, rag.demo_pattern)
    rows, demo_rows = popqa_3(task, rows), popqa_3(task, demo_rows)
    # per question: its question and answers as first seen, its gold and other passages
    grouped: dict[str, tuple[str, tuple[str, ...], _ByText, _ByText]] = {}
    for r in rows:
        answers = tuple(str(a) for a in r["answers"])
        normalized = tuple(helmet_normalize(a) for a in answers)
        flagged = any("has_answer" in c for c in r["ctxs"])
        _, _, gold, other = grouped.setdefault(_key(r), (r["question"], answers, {}, {}))
        for c in r["ctxs"]:
            p = _passage(c)
            if flagged:
                is_gold = bool(c.get("has_answer"))
            else:
                text = helmet_normalize(p.text)
                is_gold = any(a and a in text for a in normalized)
            (gold if is_gold else other).setdefault((p.title, p.text), p)
    items = tuple(
        RagItem(k, q, a, tuple(g.values()), tuple(o.values()))
        for k, (q, a, g, o) in grouped.items()
        if g
    )
    if not items:
        raise DataUnavailable(
            f"{paths[0]}: no question has a gold passage (ctxs flagged has_answer, or containing "
            "an answer)" + verify_hint(paths[0], "; ")
        )
    demos = (
        Demo(_key(r), r["question"], str(r["answers"][0]), tuple(map(_passage, r["ctxs"])))
        for r in demo_rows
    )
    return _pool(items, demos, paths)


@memo(4)
def load_msmarco(data_dir: str | None) -> Pool:
    folder = next(
        (f for f in MSMARCO_DIRS if data_dir and largest_k(Path(data_dir) / f, MSMARCO_TEST)),
        MSMARCO_DIRS[0],
    )
    paths, rows, demo_rows = _files(data_dir, "msmarco_rerank", folder, MSMARCO_TEST, MSMARCO_DEMO)
    grouped: dict[str, tuple[str, dict[str, Passage]]] = {}  # qid -> query, passages by id
    for r in rows:
        _, ctxs = grouped.setdefault(str(r["qid"]), (r["query"], {}))
        for c in r["ctxs"]:
            ctxs.setdefault(str(c["id"]), _passage(c))
    items = tuple(RagItem(qid, q, (), (), tuple(c.values())) for qid, (q, c) in grouped.items())
    demos = (
        ranked_demo(str(r["qid"]), r["query"], tuple(map(_passage, r["ctxs"]))) for r in demo_rows
    )
    return _pool(items, demos, paths)


def ranked_demo(key: str, query: str, passages: tuple[Passage, ...]) -> Demo:
    """A re-rank demo, whose answer ranks its passages by label (stably, most relevant first)."""
    ranking = " > ".join(p.pid for p in sorted(passages, key=lambda p: p.label, reverse=True))
    return Demo(key, query, ranking, passages)
