"""The metric registry. Scorers are small pure functions; the task says which one applies."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from ctxgate.hooks import flat, hook, manager
from ctxgate.metrics import helmet, text
from ctxgate.refusal import CtxgateError

Scored = tuple[float, str]  # the score, and the text scored
# (output, references, answer prefix) -> Scored
Scorer = Callable[[str, Sequence[str], str | None], Scored]
Match = Callable[[str, Sequence[str]], float]
Choice = Callable[[Sequence[str], str, str], float]  # (outputs, letter, option) -> score


@dataclass(frozen=True)
class Metric:
    """A task names its metric by this object. ``fn`` scores one output; a judged metric has none:
    its ``judge`` scores it, by the scorer ``ctxgate.judge.score.JUDGED`` keeps (a floor above)."""

    name: str
    fn: Scorer | None
    description: str
    judge: str | None = None  # llm | entailment
    # an output's components, each 0-1 (output, references): the case keeps their means, percent
    parts: Callable[[str, Sequence[str]], dict[str, float]] | None = None

    @property
    def judged(self) -> bool:
        return self.fn is None


def _ruler(match: Match, pred: str, refs: Sequence[str], prefix: str | None) -> Scored:
    cleaned = text.ruler_clean(pred)
    return match(cleaned, refs), cleaned


def _parsed(pred: str, prefix: str | None) -> str:
    """The rest of the output's line after the answer prefix (else its first line), which HELMET
    scores besides the raw output (``score_prediction`` put the prefix before a completion)."""
    return text.parse_output(pred, prefix or "Answer:")


def _raw_or_parsed(match: Match, pred: str, refs: Sequence[str], prefix: str | None) -> Scored:
    """max(score on the raw output, score on the parsed output), HELMET's rule."""
    parsed = _parsed(pred, prefix)
    return max(match(pred, refs), match(parsed, refs)), parsed


def _label_em(pred: str, refs: Sequence[str], prefix: str | None) -> Scored:
    """ICL: EM on the parsed output only, as HELMET scores its classification tasks."""
    parsed = _parsed(pred, prefix)
    return helmet.exact_match(parsed, refs), parsed


def _ndcg10(pred: str, refs: Sequence[str], prefix: str | None) -> Scored:
    ranking = helmet.parse_rankings(pred)
    return helmet.ndcg_at(ranking, helmet.qrels_from_references(refs), 10), " > ".join(ranking)


def _choice(rule: Choice, pred: str, refs: Sequence[str], prefix: str | None) -> Scored:
    if len(refs) != 2:
        raise ValueError(
            f"multiple choice needs references (letter, 'L. option'), got {list(refs)!r}"
        )
    parsed = _parsed(pred, prefix)
    return rule([pred, parsed], refs[0], refs[1]), parsed


# --helmet-compat swaps a metric for the reference's own behaviour, bugs included
# (docs/decisions.md lists them).
COMPAT = {"mc_accuracy": "mc_accuracy_helmet"}

STRING_MATCH_ALL = Metric(
    "string_match_all",
    partial(_ruler, text.string_match_all),
    "RULER: fraction of references contained (case-insensitive)",
)
STRING_MATCH_PART = Metric(
    "string_match_part",
    partial(_ruler, text.string_match_part),
    "RULER: 1 if any reference is contained (case-insensitive)",
)
HELMET_SUBEM = Metric(
    "helmet_subem",
    partial(_raw_or_parsed, text.substring_exact_match),
    "HELMET SubEM on normalized text, max over raw and parsed output",
)
LABEL_EM = Metric("label_em", _label_em, "HELMET ICL: normalized exact match of the parsed label")
ROUGE_L_F1 = Metric(
    "rouge_l_f1",
    partial(_raw_or_parsed, helmet.rouge_l_f1),
    "ROUGE-L F1 (rouge-score, stemmed), max over references, raw and parsed",
)
NDCG_AT_10 = Metric(
    "ndcg_at_10", _ndcg10, "NDCG@10 of HELMET's parsed ranking; references are ID:LABEL judgments"
)
MC_ACCURACY = Metric(
    "mc_accuracy",
    partial(_choice, helmet.choice_correct),
    "multiple choice: the gold letter or option; an empty output is wrong",
)
MC_ACCURACY_HELMET = Metric(
    "mc_accuracy_helmet",
    partial(_choice, helmet.choice_correct_helmet),
    "HELMET's multiple choice rule, bug included (empty output counts for gold A)",
)
NARRATIVEQA_JUDGE = Metric(
    "narrativeqa_judge", None, "LLM judge: fluency x correctness / 3 (HELMET Table 10)", judge="llm"
)
SUMMARY_JUDGE = Metric(
    "summary_judge",
    None,
    "LLM judge: fluency x F1 of key-point recall and sentence precision (HELMET Tables 11-13)",
    judge="llm",
)
ALCE_ASQA = Metric(
    "alce_asqa", None, "mean of str_em, citation recall, citation precision", judge="entailment"
)
ALCE_QAMPARI = Metric(
    "alce_qampari",
    None,
    "mean of rec_top5, citation recall, citation precision",
    judge="entailment",
)

# every metric above, in order
_METRICS = {m.name: m for m in list(globals().values()) if isinstance(m, Metric)}


def _every() -> dict[str, Metric]:
    """The spine's metrics and the extras' (``hookspec.ctxgate_metrics``), of the plugins
    installed now."""
    return _of(manager())


@functools.lru_cache(maxsize=4)
def _of(plugins: object) -> dict[str, Metric]:
    """Asked once per plugin manager (one a process, made again where the plugins change)."""
    return _METRICS | {m.name: m for m in flat(hook().ctxgate_metrics())}


class MetricRefused(CtxgateError, ValueError):
    """A metric cannot score the references it was given (they are another task's): the message
    says what it needs; each verb adds its own fix."""


class UnknownMetric(CtxgateError, KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def get_metric(name: str) -> Metric:
    try:
        return _every()[name]
    except KeyError:
        choices = ", ".join(sorted(_every()))
        raise UnknownMetric(f"unknown metric {name!r}; choose one of {choices}") from None


def metric_names() -> list[str]:
    """The metrics scored here, by a function (a judged one needs its judge: ``ctxgate judge``)."""
    return sorted(name for name, m in _every().items() if not m.judged)


def resolve(metric: str, helmet_compat: bool = False) -> str:
    """The metric a task's scores come from under the run's compatibility setting."""
    return COMPAT.get(metric, metric) if helmet_compat else metric


def score_prediction(
    metric: str,
    prediction: str,
    references: Sequence[str],
    prefix: str | None = None,
    chat: bool = False,
) -> Scored:
    """Score one prediction in [0, 1], and the text the metric looked at. ``prefix``: the task's
    answer prefix (HELMET's ``system_template``); without the chat template the model completed
    it, so HELMET scores ``prefix + output``, no space added."""
    if not references:
        raise MetricRefused("a prediction needs at least one reference answer to be scored")
    scored = prefix + prediction if prefix and not chat else prediction
    fn = get_metric(metric).fn
    if fn is None:
        raise MetricRefused(f"{metric} is scored by its judge, not here: ctxgate judge REPORT")
    try:
        return fn(scored, references, prefix)
    except ValueError as exc:  # its references are another task's: the metric says what it needs
        raise MetricRefused(f"{metric}: {exc}") from None
