"""HELMET's released per-length files, read as HELMET's ``data.py`` (HEAD) reads them, so that at
the lengths HELMET built them for the suite's prompts are HELMET's prompts. RAG (``kilt/``) and
re-rank (``msmarco/``): a line is one question at one gold depth; HELMET keeps the lines of
``random.Random(seed).sample(sorted(keys), 100)`` in file order, and picks a line's demos by
shuffling the demo file with ``sha256(key) % 2**31`` as seed, dropping repeated keys. JSON KV and
RULER: the first 100 records after ``shuffle(seed)``, which is numpy's
``default_rng(seed).permutation``, reproduced here."""

from __future__ import annotations

import hashlib
import math
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxgate.memo import memo
from ctxgate.sources.errors import DataNotGiven, DataUnavailable
from ctxgate.sources.files import (
    FETCH_HINT,
    DataFile,
    Rows,
    as_texts,
    read_jsonl,
    sha256_of_files,
    sha256_of_json,
    verify_hint,
)

MAX_TEST_KEYS = 100  # HELMET's max_test_samples: questions (RAG, re-rank) or records (JSON KV)
# the k (passages, KV pairs) HELMET's configs use at each length
RAG_K = {8192: 50, 16384: 105, 32768: 220, 65536: 440, 131072: 1000}
MSMARCO_K = {8192: 50, 16384: 130, 32768: 285, 65536: 600, 131072: 1000}
JSON_KV_K = {8192: 105, 16384: 220, 32768: 440, 65536: 900, 131072: 1800}
RAG_FOLDER = "kilt"


@dataclass(frozen=True)
class RagSet:
    """A RAG task's ``kilt/{test}_k{K}_{depth}.jsonl`` per length and its demo files (HEAD's name
    first); read here per length and by ``kilt.py`` for ctxgate's placement."""

    test: str
    depth: str  # the gold depths HELMET's configs read
    demos: tuple[str, ...]


RAG_SETS = {
    "kilt_nq": RagSet("nq-dev-multikilt_1000", "dep6", ("nq-train-multikilt_1000_k3_dep6.jsonl",)),
    "kilt_triviaqa": RagSet(
        "triviaqa-dev-multikilt_1000", "dep6", ("triviaqa-train-multikilt_1000_k3_dep6.jsonl",)
    ),
    "kilt_hotpotqa": RagSet(
        "hotpotqa-dev-multikilt_1000", "dep3", ("hotpotqa-train-multikilt_1000_k3_dep3.jsonl",)
    ),
    # PopQA has one split: HEAD draws its demos from the test questions' k3 file (the first
    # release had a train file); the demos then exclude the question asked
    "kilt_popqa": RagSet(
        "popqa_test_1000",
        "dep6",
        ("popqa_test_1000_k3_dep6.jsonl", "popqa_train_1000_k3_dep6.jsonl"),
    ),
}
RAG_FIELDS = {
    task: ("question", "answers", "ctxs") + (("s_pop",) if task == "kilt_popqa" else ())
    for task in RAG_SETS
}
RAG_KINDS = (("question", "text"), ("answers", "list"), ("ctxs", "objects"), ("s_pop", "number"))
_K_DEP = r"_k(?P<k>\d+)_(?P<dep>dep\d+)\.jsonl"  # k: passages (or KV pairs) per line
# per task: the test questions at any k and depth, and the demo files, HEAD's name first
RAG_TESTS = {
    task: DataFile(
        task, (f"{RAG_FOLDER}/{re.escape(rag.test)}{_K_DEP}",), RAG_FIELDS[task], kinds=RAG_KINDS
    )
    for task, rag in RAG_SETS.items()
}
RAG_DEMOS = {
    task: DataFile(
        task,
        tuple(f"{RAG_FOLDER}/{re.escape(n)}" for n in rag.demos),
        RAG_FIELDS[task],
        kinds=RAG_KINDS,
    )
    for task, rag in RAG_SETS.items()
}
# HEAD's layout, then the first release's
MSMARCO_DIRS = ("msmarco", "msmarco/trec2019psg_preprocessed")
MSMARCO_FIELDS = ("qid", "query", "ctxs")
MSMARCO_KINDS = (("query", "text"), ("ctxs", "objects"))
MSMARCO_DEMO = "test_reranking_data_k10_dep3.jsonl"
MSMARCO_TESTS = DataFile(
    "msmarco_rerank",
    tuple(f"{d}/test_reranking_data{_K_DEP}" for d in MSMARCO_DIRS),
    MSMARCO_FIELDS,
    kinds=MSMARCO_KINDS,
)
MSMARCO_DEMOS = DataFile(
    "msmarco_rerank",
    tuple(f"{d}/{re.escape(MSMARCO_DEMO)}" for d in MSMARCO_DIRS),
    MSMARCO_FIELDS,
    kinds=MSMARCO_KINDS,
)
# HELMET's own RULER-format files (``ruler/{task}/validation_{L}.jsonl``), read by its Recall tasks
RULER_FOLDERS = {f"helmet_{n}": f"niah_{n}" for n in ("multikey_2", "multikey_3", "multivalue")}
RULER_FIELDS = ("context", "query", "outputs", "type_needle_v")
_RECALL = "HELMET Recall uses the suite's RULER cases"
RULER_FILES = {
    task: DataFile(
        task,
        (rf"ruler/{folder}/validation_(?P<length>\d+)\.jsonl",),
        RULER_FIELDS,
        optional=_RECALL,
        kinds=(("context", "text"), ("type_needle_v", "text")),
    )
    for task, folder in RULER_FOLDERS.items()
}
JSON_KV = DataFile(
    "json_kv",
    (f"json_kv/test{_K_DEP}",),
    ("context", "question", "answer", "demos"),
    optional="JSON KV is generated",
    kinds=(("context", "text"), ("question", "text"), ("demos", "list")),
)
DATA_FILES = (JSON_KV, *RULER_FILES.values())


def first(found: tuple[Path, ...]) -> Path | None:
    return found[0] if found else None


def checked(entry: DataFile, path: Path, rows: Rows) -> Rows:
    """``rows``, each with the fields (and kinds) ``entry`` declares, or the first fault named."""
    for n, r in enumerate(rows, start=1):
        fault = entry.fault(r)
        if fault:
            raise DataUnavailable(f"{path}: record {n} {fault}" + verify_hint(path, "; "))
    return rows


@dataclass(frozen=True)
class HelmetFile:
    rows: Rows
    demos: Rows
    key: str  # the field that names a question: id / question / qid / query
    path: str
    sha256: str


def shuffled(count: int, seed: int) -> list[int]:
    """The order of ``datasets.Dataset.shuffle(seed=seed)`` over ``count`` records."""
    import numpy as np

    return [int(i) for i in np.random.default_rng(seed).permutation(count)]


def pick_demos(
    demos: Rows, key_field: str, key: object, shots: int, exclude_same: bool
) -> list[dict[str, Any]]:
    """``shots`` demos for one question: the demo file shuffled with the question's seed (sha256 of
    the key as text, mod 2**31), repeated keys dropped (the first kept), the question itself left
    out first when ``exclude_same``."""
    pool = [d for d in demos if not exclude_same or d[key_field] != key]
    firsts: dict[object, dict[str, Any]] = {}  # by key, in shuffled order
    seed = int(hashlib.sha256(str(key).encode("utf-8")).hexdigest(), 16) % 2**31
    for i in shuffled(len(pool), seed):
        firsts.setdefault(pool[i][key_field], pool[i])
        if len(firsts) == shots:
            break
    return list(firsts.values())


def _select(rows: Rows, key_field: str, seed: int) -> Rows:
    keys = sorted({r[key_field] for r in rows})
    chosen = set(random.Random(seed).sample(keys, min(MAX_TEST_KEYS, len(keys))))
    return tuple(r for r in rows if r[key_field] in chosen)


def popqa_3(task: str, rows: Rows) -> Rows:
    """HELMET's kilt_popqa_3 keeps the entities with popularity below 10^3; others keep all."""
    return rows if task != "kilt_popqa" else tuple(r for r in rows if math.log10(r["s_pop"]) < 3)


@memo(16)
def load_rag_file(task: str, data_dir: str, length: int, seed: int) -> HelmetFile | None:
    """HELMET's RAG file for this length, or None (the suite then places passages itself)."""
    if not data_dir or length not in RAG_K:
        return None
    k, dep = str(RAG_K[length]), RAG_SETS[task].depth
    path = first(RAG_TESTS[task].find(Path(data_dir), k=k, dep=dep))
    demo_path = first(RAG_DEMOS[task].find(Path(data_dir)))
    if path is None or demo_path is None:
        return None
    rows = popqa_3(task, checked(RAG_TESTS[task], path, read_jsonl(path)))
    demos = popqa_3(task, checked(RAG_DEMOS[task], demo_path, read_jsonl(demo_path)))
    key = "id" if rows and "id" in rows[0] else "question"
    digest = sha256_of_files(path, demo_path)
    return HelmetFile(_select(rows, key, seed), demos, key, str(path), digest)


def msmarco_demo(test: Path | None, root: Path) -> Path | None:
    """The demo file beside ``test`` (each layout keeps both in one folder)."""
    return next((p for p in MSMARCO_DEMOS.every(root) if test and p.parent == test.parent), None)


@memo(8)
def load_msmarco_file(data_dir: str, length: int, seed: int) -> HelmetFile | None:
    if not data_dir or length not in MSMARCO_K:
        return None
    root = Path(data_dir)
    path = first(MSMARCO_TESTS.find(root, k=str(MSMARCO_K[length]), dep="dep3"))
    demo_path = msmarco_demo(path, root)
    if path is None or demo_path is None:
        return None
    rows = checked(MSMARCO_TESTS, path, read_jsonl(path))
    demos = checked(MSMARCO_DEMOS, demo_path, read_jsonl(demo_path))
    key = "qid" if rows and "qid" in rows[0] else "query"
    selected = _select(rows, key, seed)
    # HELMET then drops the test questions from the demos at once
    if len(demos) > 2 * len(selected):
        qids = {r["qid"] for r in selected}
        demos = tuple(d for d in demos if d["qid"] not in qids)
    return HelmetFile(selected, demos, key, str(path), sha256_of_files(path, demo_path))


@memo(8)
def load_json_kv_file(data_dir: str, length: int, seed: int) -> HelmetFile | None:
    if length not in JSON_KV_K:
        return None
    path = first(JSON_KV.find(Path(data_dir), k=str(JSON_KV_K[length]), dep="dep6"))
    if path is None:
        return None
    rows = checked(JSON_KV, path, read_jsonl(path))
    selected = tuple(rows[i] for i in shuffled(len(rows), seed)[:MAX_TEST_KEYS])
    return HelmetFile(selected, (), "question", str(path), sha256_of_files(path))


@dataclass(frozen=True)
class RulerRecord:
    context: str
    query: str
    type_needle_v: str
    answers: tuple[str, ...]


@dataclass(frozen=True)
class RulerFile:
    records: tuple[RulerRecord, ...]
    path: str
    sha256: str


@memo(16)
def load_ruler_file(task: str, data_dir: str | None, length: int) -> RulerFile:
    relative = Path("ruler", RULER_FOLDERS[task], f"validation_{length}.jsonl")
    path = first(RULER_FILES[task].find(Path(data_dir), length=str(length))) if data_dir else None
    if path is None:
        raise DataNotGiven(
            f"{task} reads HELMET's {relative} (none for length {length}; HELMET ships 8K-128K); "
            f"the suite's RULER cases stand in for HELMET Recall without it; {FETCH_HINT}"
        )
    rows = checked(RULER_FILES[task], path, read_jsonl(path))
    records = [
        RulerRecord(r["context"], str(r["query"]), r["type_needle_v"], as_texts(r["outputs"]))
        for r in rows
    ]
    digest = sha256_of_json([(x.context, x.query, x.answers) for x in records])
    return RulerFile(tuple(records), str(path), digest)


@memo(16)
def order(count: int, seed: int) -> tuple[int, ...]:
    """The record order of ``datasets.Dataset.shuffle(seed=seed)``."""
    return tuple(shuffled(count, seed))
