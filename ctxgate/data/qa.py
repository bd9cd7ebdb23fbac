"""SQuAD v2 and HotpotQA (distractor) for RULER's qa_1 and qa_2, read through ``datasets``. Each
becomes a deduplicated, sorted document pool plus questions pointing into it, as RULER's QA
generator works on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ctxgate.memo import memo
from ctxgate.sources.files import Rows, load_rows, sha256_of_json

DEFAULT_SQUAD = "rajpurkar/squad_v2"
DEFAULT_HOTPOTQA = "hotpotqa/hotpot_qa"


@dataclass(frozen=True)
class Question:
    query: str
    answers: tuple[str, ...]
    gold: tuple[int, ...]  # indices of the documents that answer it
    related: tuple[int, ...]  # same-article documents, preferred as distractors (SQuAD)


@dataclass(frozen=True)
class QAPool:
    docs: tuple[str, ...]
    questions: tuple[Question, ...]
    sha256: str
    source: str


def _load_rows(source: str, flag: str, config: str | None) -> Rows:
    fix = (
        f"pass {flag} PATH with a local copy in the hub's layout (a .jsonl/.parquet file or a "
        "save_to_disk folder)"
    )
    return load_rows(source, "validation", config, fix)


# a question, its answers, the documents that answer it and those of its article
_RawQuestion = tuple[str, tuple[str, ...], list[str], list[str]]


def _pool(docs: list[str], raw_questions: list[_RawQuestion], source: str) -> QAPool:
    pool = sorted(set(docs))
    where = {d: i for i, d in enumerate(pool)}
    questions = []
    for q, a, gold, near in raw_questions:
        others = tuple(where[d] for d in near if d not in gold)
        questions.append(Question(q, a, tuple(where[d] for d in gold), others))
    digest = sha256_of_json([pool, [(q.query, q.answers, q.gold) for q in questions]])
    return QAPool(tuple(pool), tuple(questions), digest, source)


@memo(4)
def load_squad(source: str = DEFAULT_SQUAD) -> QAPool:
    rows = _load_rows(source, "--squad", None)
    by_title: dict[str, dict[str, None]] = {}  # ordered, de-duplicated paragraphs per article
    for r in rows:
        by_title.setdefault(r["title"], {})[r["context"]] = None
    questions = []
    for r in rows:
        answers = tuple(dict.fromkeys(r["answers"]["text"]))
        if answers:  # SQuAD v2's unanswerable questions are left out, as RULER does
            questions.append((r["question"], answers, [r["context"]], list(by_title[r["title"]])))
    return _pool([r["context"] for r in rows], questions, source)


@memo(4)
def load_hotpotqa(source: str = DEFAULT_HOTPOTQA) -> QAPool:
    rows = _load_rows(source, "--hotpotqa", "distractor")
    docs: list[str] = []
    questions: list[Any] = []
    for r in rows:
        ctx = r["context"]
        paragraphs = [f"{t}\n{''.join(s)}" for t, s in zip(ctx["title"], ctx["sentences"])]
        docs.extend(paragraphs)
        questions.append((r["question"], (r["answer"],), paragraphs, []))
    return _pool(docs, questions, source)
