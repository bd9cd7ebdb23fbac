"""HELMET's released RAG (``kilt/``) and re-rank (``msmarco/``) files as per-question passage pools.
A released line is one question at one gold depth, placed for Llama-2 tokens; ctxgate re-places the
passages for the model under test, so it keeps per question the gold passage(s) and the distractors
in retrieval order (first seen), and forgets where the file put the gold."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxgate.memo import memo
from ctxgate.metrics.text import helmet_normalize
from ctxgate.records.vocabulary import Json
from ctxgate.sources.errors import DataNotGiven, DataUnavailable
from ctxgate.sources.files import (
    FETCH_HINT,
    DataFile,
    Rows,
    largest_k,
    read_jsonl,
    sha256_of_files,
    verify_hint,
)
from ctxgate.sources.helmet_files import (
    MSMARCO_DEMOS,
    MSMARCO_TESTS,
    RAG_DEMOS,
    RAG_SETS,
    RAG_TESTS,
    first,
    msmarco_demo,
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
DATA_FILES = (
    *(f for task in RAG_SETS for f in (RAG_TESTS[task], RAG_DEMOS[task])),
    MSMARCO_TESTS,
    MSMARCO_DEMOS,
)


def _files(task: str, *found: tuple[DataFile, Path | None]) -> tuple[tuple[Path, Path], Rows, Rows]:
    """The test and demo files a loader found, read and checked for their entry's fields."""
    paths: list[Path] = []
    records: list[Rows] = []
    for entry, path in found:
        if path is None:
            raise DataNotGiven(f"{task}: no file at {entry.where} under --data-dir; {FETCH_HINT}")
        paths.append(path)
        records.append(read_jsonl(path))
        for record in records[-1]:
            fault = entry.fault(record)
            if fault:
                has = ", ".join(k for k in sorted(record) if record[k] is not None)
                raise DataUnavailable(
                    f"{path}: a record {fault} (has {has}); HELMET's layout is expected"
                    + verify_hint(path, ", ")
                )
    return (paths[0], paths[1]), records[0], records[1]


def _root(task: str, data_dir: str | None) -> Path:
    if not data_dir:
        raise DataNotGiven(f"{task} needs HELMET's released data; {FETCH_HINT}")
    return Path(data_dir)


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
    root, test_file, demo_file = _root(task, data_dir), RAG_TESTS[task], RAG_DEMOS[task]
    test, demo = largest_k(test_file.find(root)), first(demo_file.find(root))
    paths, rows, demo_rows = _files(task, (test_file, test), (demo_file, demo))
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
    root = _root("msmarco_rerank", data_dir)
    test = largest_k(MSMARCO_TESTS.find(root))
    found = (MSMARCO_TESTS, test), (MSMARCO_DEMOS, msmarco_demo(test, root))
    paths, rows, demo_rows = _files("msmarco_rerank", *found)
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
