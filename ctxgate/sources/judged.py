"""Data of HELMET's judged tasks: NarrativeQA, InfiniteBench Sum, Multi-LexSum (hub layouts, local copies first)
and ALCE (HELMET's released ``alce/*_eval_gtr_top2000.json`` with its prompt files).

Local layouts under ``--data-dir`` (hub columns, JSON lines):
* ``narrativeqa/{test,train}.jsonl``: ``document.text``, ``question.text``, ``answers[].text`` (deepmind/narrativeqa).
* ``infbench/longbook_sum_eng.jsonl`` (id, context, answer) and HELMET's ``infbench/longbook_sum_eng_keypoints.jsonl``
  (id, keypoints), if present.
* ``multi_lexsum/{validation,train}.jsonl``: id, sources, summary/long, summary/short (allenai/multi_lexsum
  v20230518), and HELMET's released key points ``multi_lexsum/multi_lexsum_val.jsonl`` (id,
  summary/short_keypoints) when present; key points in the rows themselves are used otherwise.
* ``alce/{asqa,qampari}_eval_gtr_top2000.json`` (question, docs[title,text], qa_pairs[short_answers] or
  answers[[aliases]]) and the prompt files ``alce/{asqa,qampari}_revised.json`` (or HELMET's ``prompts/``):
  instruction, demo_prompt, doc_prompt, demos.
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
    first_bad_line,
    hub_hint,
    hub_splits,
    load_rows,
    missing_fields,
    read_jsonl,
    read_local_or_hub,
)
from ctxgate.sources.infbench import HUB_ID

NARRATIVEQA_FIELDS = ("document", "question", "answers")
INFBENCH_SUM_FIELDS = ("id", "context", "answer")
LEXSUM_FIELDS = ("id", "sources", "summary/long")  # rows without summary/short are skipped, as HELMET does
ALCE_FILES = {
    "alce_asqa": ("asqa_eval_gtr_top2000.json", "asqa_revised.json"),
    "alce_qampari": ("qampari_eval_gtr_top2000.json", "qampari_revised.json"),
}
ALCE_FIELDS = {"alce_asqa": ("question", "docs", "qa_pairs"), "alce_qampari": ("question", "docs", "answers")}
ALCE_PROMPT_FIELDS = ("instruction", "demo_prompt", "doc_prompt", "demos")


DATA_FILES = (
    *hub_splits("narrativeqa", "narrativeqa", "deepmind/narrativeqa", NARRATIVEQA_FIELDS, ("test", "train")),
    *hub_splits("infbench_sum", "infbench", HUB_ID, INFBENCH_SUM_FIELDS, ("longbook_sum_eng",)),
    DataFile(
        "infbench_sum",
        "infbench",
        re.escape("longbook_sum_eng_keypoints.jsonl"),
        ("id", "keypoints"),
        optional="the judge writes key points from the gold summary",
    ),
    *hub_splits("multi_lexsum", "multi_lexsum", "allenai/multi_lexsum", LEXSUM_FIELDS, ("validation", "train")),
    DataFile(
        "multi_lexsum",
        "multi_lexsum",
        re.escape("multi_lexsum_val.jsonl"),
        ("id", "summary/short_keypoints"),
        optional="the judge writes key points from the short summary",
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
class LongDoc:
    """One test item over a long document: a question with answers (NarrativeQA) or a gold summary (Summ)."""

    key: str
    context: str
    question: str
    answers: tuple[str, ...]
    expert_summary: str = ""  # the summary precision is judged against
    keypoints: tuple[str, ...] = ()  # shipped key points; empty: the judge decomposes ``keypoint_source``
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
    return {str(r["id"]): tuple(r.get(field) or ()) for r in load_rows(str(path), "train", None, hint)}


@memo(4)
def load_narrativeqa(data_dir: str | None) -> LongDocSet:
    folder = Path(data_dir or ".") / "narrativeqa"
    hint = hub_hint("NarrativeQA's test.jsonl and train.jsonl (hub columns)", folder)

    def read(split: str) -> list[LongDoc]:
        out = []
        for i, r in enumerate(read_local_or_hub(folder / f"{split}.jsonl", "deepmind/narrativeqa", None, split, hint)):
            _need("narrativeqa", r, NARRATIVEQA_FIELDS, folder, hint)
            out.append(
                LongDoc(
                    str(r.get("document", {}).get("id", "")) + f"#{i}",
                    r["document"]["text"],
                    r["question"]["text"],
                    tuple(a["text"] for a in r["answers"]),
                )
            )
        return out

    items, demos = read("test"), read("train")
    return LongDocSet(tuple(items), tuple(demos), _digest([(d.key, d.question, d.answers, d.context) for d in items]))


@memo(4)
def load_infbench_sum(data_dir: str | None) -> LongDocSet:
    folder = Path(data_dir or ".") / "infbench"
    hint = hub_hint("InfiniteBench's longbook_sum_eng.jsonl", folder)
    keypoints = _shipped_keypoints(folder / "longbook_sum_eng_keypoints.jsonl", "keypoints", hint)
    items = []
    for r in read_local_or_hub(folder / "longbook_sum_eng.jsonl", HUB_ID, None, "longbook_sum_eng", hint):
        _need("infbench_sum", r, INFBENCH_SUM_FIELDS, folder, hint)
        gold = (r["answer"][0] if isinstance(r["answer"], list) else r["answer"]).strip()
        items.append(LongDoc(str(r["id"]), r["context"], "", (gold,), gold, keypoints.get(str(r["id"]), ()), gold))
    return LongDocSet(tuple(items), tuple(items), _digest([(d.key, d.answers, d.keypoints, d.context) for d in items]))


@memo(4)
def load_multi_lexsum(data_dir: str | None) -> LongDocSet:
    folder = Path(data_dir or ".") / "multi_lexsum"
    hint = hub_hint("Multi-LexSum's validation.jsonl and train.jsonl (hub columns)", folder)

    def read(split: str) -> list[LongDoc]:
        out = []
        for r in read_local_or_hub(folder / f"{split}.jsonl", "allenai/multi_lexsum", "v20230518", split, hint):
            if r.get("summary/short") is None:  # HELMET keeps only cases with a short summary
                continue
            _need("multi_lexsum", r, LEXSUM_FIELDS, folder, hint)
            out.append(
                LongDoc(
                    str(r["id"]),
                    "\n\n".join(r["sources"]),
                    "",
                    (r["summary/short"],),
                    r["summary/long"],
                    tuple(r.get("summary/short_keypoints") or ()),
                    r["summary/short"],
                )
            )
        return out

    items, demos = read("validation"), read("train")
    # HELMET's key points for the validation cases (scripts/eval_gpt4_summ.py reads them from this file)
    shipped = _shipped_keypoints(folder / "multi_lexsum_val.jsonl", "summary/short_keypoints", hint)
    items = [replace(d, keypoints=shipped.get(d.key) or d.keypoints) for d in items]
    return LongDocSet(tuple(items), tuple(demos), _digest([(d.key, d.answers, d.keypoints, d.context) for d in items]))


@dataclass(frozen=True)
class CiteItem:
    key: str
    question: str
    docs: tuple[tuple[str, str], ...]  # (title, text), retrieval order
    answers: tuple[tuple[str, ...], ...]  # ASQA: short answers per QA pair; QAMPARI: aliases per answer


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
    prompt = next((p for p in (root / "alce" / prompt_name, root / "prompts" / prompt_name) if is_file(p)), None)
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
        items.append(
            CiteItem(
                str(r.get("sample_id") or r.get("id") or i),
                r["question"],
                tuple((d["title"], d["text"]) for d in r["docs"]),
                tuple(tuple(a) for a in answers),
            )
        )
    return CiteSet(
        tuple(items),
        spec["instruction"],
        spec["demo_prompt"],
        spec["doc_prompt"],
        tuple(spec["demos"]),
        _digest([spec, [(c.key, c.question, c.docs, c.answers) for c in items]]),
    )
