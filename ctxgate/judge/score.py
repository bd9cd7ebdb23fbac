"""Scoring stored generations with judges: one function per judged metric, run concurrently per
case. A sample's ``judge_input`` is stored with its prediction, so ``ctxgate judge REPORT.json``
can score a run later without the model or the data."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ctxgate.judge import verdict
from ctxgate.judge.client import JudgeClient, JudgeSettings
from ctxgate.judge.entail import EntailmentFailed, HFEntailment, LLMEntailment
from ctxgate.metrics import judged, registry
from ctxgate.metrics.registry import Metric, UnknownMetric, get_metric
from ctxgate.metrics.text import parse_output

Ref = Mapping[str, Any]  # a sample's judge input: what the rubric needs besides the output


@dataclass(frozen=True)
class Judges:
    client: JudgeClient | None = None
    entail: Callable[[str, str], bool] | None = None
    max_failure_rate: float = 0.05
    helmet_compat: bool = False  # ALCE: read [0] as the last document, as the reference does

    def entailment(self) -> dict[str, object] | None:
        describe: Callable[[], dict[str, object]] | None = getattr(self.entail, "describe", None)
        return describe() if describe else None

    def describe(self) -> dict[str, object]:
        return {
            "llm": self.client.settings.describe() if self.client else None,
            "entailment": self.entailment(),
            "max_failure_rate": self.max_failure_rate,
        }


def build_judges(
    settings: JudgeSettings | None,
    nli_model: str | None,
    max_failure_rate: float,
    helmet_compat: bool = False,
    allow_pickle: bool = False,
) -> Judges | None:
    """The LLM judge and the entailment judge (the local NLI model, else the LLM judge)."""
    if settings is None and nli_model is None:
        return None
    client = JudgeClient(settings) if settings else None
    entail: Callable[[str, str], bool] | None = LLMEntailment(client) if client else None
    if nli_model:
        entail = HFEntailment(nli_model, allow_pickle=allow_pickle)
    return Judges(client, entail, max_failure_rate, helmet_compat)


@dataclass(frozen=True)
class SampleJudgement:
    score: float | None  # None: the verdict failed
    parts: dict[str, float] = field(default_factory=dict)
    error: str | None = None


class _Failed(Exception):
    pass


def _ask(
    judges: Judges, rubric: str, check: Callable[[dict[str, object]], Any], **values: str
) -> Any:
    assert judges.client is not None
    v = judges.client.ask(verdict.render(rubric, **values), check)
    if v.value is None:
        raise _Failed(f"{rubric}: {v.error}")
    return v.value


def _narrativeqa(prediction: str, ref: Ref, judges: Judges) -> SampleJudgement:
    values = {"question": ref["question"], "correct_answers": str(list(ref["answers"]))}
    # HELMET's judge script flattens newlines before taking the text after "Answer:"
    values["parsed_output"] = parse_output(prediction.replace("\n", " "), "Answer:")
    fluency, correctness = _ask(judges, "longqa", verdict.longqa, **values)
    parts = {"fluency": fluency, "correctness": correctness}
    return SampleJudgement(judged.narrativeqa_score(fluency, correctness), parts)


def _summary(prediction: str, ref: Ref, judges: Judges) -> SampleJudgement:
    style = ref["style"]  # legal (Multi-LexSum) | book (InfiniteBench Sum)
    text = prediction.strip()
    # the data's key points, else the judge's (cached) decomposition of the gold summary
    points = tuple(
        ref.get("keypoints")
        or _ask(judges, "keypoints", verdict.keypoints, summary=ref["keypoint_source"])
    )
    fluency = _ask(judges, f"fluency_{style}", verdict.fluency, text=text)
    numbered = "\n".join(f"{i + 1}. {p}" for i, p in enumerate(points))
    found = _ask(
        judges, f"recall_{style}", verdict.recall(len(points)), keypoints=numbered, summary=text
    )
    expert = ref["expert_summary"]
    supported, count = _ask(
        judges, f"precision_{style}", verdict.precision, expert_summary=expert, summary=text
    )
    s = judged.SummaryScore(fluency, found, len(points), supported, count)
    parts = {"fluency": fluency, "recall": s.recall, "precision": s.precision, "f1": s.f1}
    return SampleJudgement(s.score, parts)


def _alce(qampari: bool, prediction: str, ref: Ref, judges: Judges) -> SampleJudgement:
    assert judges.entail is not None
    docs, n_docs = {int(i): (d[0], d[1]) for i, d in ref["docs"].items()}, int(ref["n_docs"])
    sents = judged.citation_sentences(prediction, ref["question"], qampari)
    try:
        cite = judged.citation_scores(sents, docs, n_docs, judges.entail, judges.helmet_compat)
    except EntailmentFailed as exc:
        raise _Failed(f"entailment: {exc}") from None
    if qampari:
        name, correct = "rec_top5", judged.qampari_rec_top5(prediction, ref["answers"])
    else:
        name, correct = "str_em", judged.asqa_str_em(prediction, ref["short_answers"])
    parts = {name: correct, "citation_rec": cite.recall, "citation_prec": cite.precision}
    return SampleJudgement((correct + cite.recall + cite.precision) / 3, parts)


# the scorer of each judged metric; its description and the judge it needs are the registry's
JUDGED: dict[Metric, Callable[[str, Ref, Judges], SampleJudgement]] = {
    registry.NARRATIVEQA_JUDGE: _narrativeqa,
    registry.SUMMARY_JUDGE: _summary,
    registry.ALCE_ASQA: partial(_alce, False),
    registry.ALCE_QAMPARI: partial(_alce, True),
}


def is_judged(metric: str) -> bool:
    try:
        return get_metric(metric).judged
    except UnknownMetric:
        return False


def missing_judge(metric: str, judges: Judges | None) -> str | None:
    """Why this metric cannot be scored with these judges (None: it can)."""
    need = get_metric(metric).judge
    if need == "llm" and (judges is None or judges.client is None):
        return "needs an LLM judge: pass --judge-model (and --judge-base-url for a local server)"
    if need == "entailment" and (judges is None or judges.entail is None):
        return (
            "needs an entailment judge: pass --nli-model PATH (a local NLI checkpoint) or "
            "--judge-model"
        )
    return None


def compact_input(metric: str, prediction: str, judge_input: Ref) -> dict[str, object]:
    """What to store for the judge: citation checks read only the documents the output cites."""
    if metric not in ("alce_asqa", "alce_qampari"):
        return dict(judge_input)
    docs = judge_input["docs"]
    cited = judged.cited_documents(prediction, judge_input["question"], metric == "alce_qampari")
    keep = {len(docs) - 1 if r == -1 else r for r in cited}
    return {
        **judge_input,
        "docs": {str(i): list(docs[i]) for i in sorted(keep) if 0 <= i < len(docs)},
        "n_docs": len(docs),
    }


def judge_one(metric: str, prediction: str, judge_input: Ref, judges: Judges) -> SampleJudgement:
    try:
        return JUDGED[get_metric(metric)](prediction, judge_input, judges)
    except _Failed as exc:
        return SampleJudgement(None, {}, str(exc))


def judge_all(
    metric: str, items: Sequence[tuple[str, Ref]], judges: Judges
) -> list[SampleJudgement]:
    """(prediction, judge input) per sample, judged concurrently, in order."""
    workers = judges.client.settings.concurrency if judges.client else 1
    if workers <= 1 or len(items) <= 1:
        return [judge_one(metric, p, ref, judges) for p, ref in items]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda item: judge_one(metric, item[0], item[1], judges), items))
