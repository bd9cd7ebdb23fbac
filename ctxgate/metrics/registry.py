"""The metric registry. Scorers are small pure functions; the task says which one applies."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ctxgate.metrics import helmet, text


@dataclass(frozen=True)
class Metric:
    name: str
    fn: Callable[[str, Sequence[str], str | None], tuple[float, str]]
    description: str


def _ruler_all(pred: str, refs: Sequence[str], prefix: str | None) -> tuple[float, str]:
    cleaned = text.ruler_clean(pred)
    return text.string_match_all(cleaned, refs), cleaned


def _ruler_part(pred: str, refs: Sequence[str], prefix: str | None) -> tuple[float, str]:
    cleaned = text.ruler_clean(pred)
    return text.string_match_part(cleaned, refs), cleaned


def _helmet_subem(pred: str, refs: Sequence[str], prefix: str | None) -> tuple[float, str]:
    """max(score on the raw output, score on the parsed output), HELMET's rule."""
    raw, parsed = _with_parsed(pred, prefix)
    return max(text.substring_exact_match(raw, refs), text.substring_exact_match(parsed, refs)), parsed


def _with_parsed(pred: str, prefix: str | None) -> tuple[str, str]:
    """The text HELMET scores raw and the rest of its line after the answer prefix (else its first line). The
    caller has already put the prefix in front of a completion-mode output (``score_prediction``)."""
    return pred, text.parse_output(pred, prefix or "Answer:")


def _label_em(pred: str, refs: Sequence[str], prefix: str | None) -> tuple[float, str]:
    """ICL: EM on the parsed output only, as HELMET scores its classification tasks."""
    _, parsed = _with_parsed(pred, prefix)
    return helmet.exact_match(parsed, refs), parsed


def _rouge_l(pred: str, refs: Sequence[str], prefix: str | None) -> tuple[float, str]:
    raw, parsed = _with_parsed(pred, prefix)
    return max(helmet.rouge_l_f1(raw, refs), helmet.rouge_l_f1(parsed, refs)), parsed


def _ndcg10(pred: str, refs: Sequence[str], prefix: str | None) -> tuple[float, str]:
    ranking = helmet.parse_rankings(pred)
    return helmet.ndcg_at(ranking, helmet.qrels_from_references(refs), 10), " > ".join(ranking)


def _choice(
    rule: Callable[[Sequence[str], str, str], float],
) -> Callable[[str, Sequence[str], str | None], tuple[float, str]]:
    def score(pred: str, refs: Sequence[str], prefix: str | None) -> tuple[float, str]:
        if len(refs) != 2:
            raise ValueError(f"multiple choice needs references (letter, 'L. option'), got {list(refs)!r}")
        raw, parsed = _with_parsed(pred, prefix)
        return rule([raw, parsed], refs[0], refs[1]), parsed

    return score


# --helmet-compat swaps a metric for the reference's own behaviour, bugs included (docs/decisions.md lists them).
COMPAT = {"mc_accuracy": "mc_accuracy_helmet"}

_METRICS = {
    m.name: m
    for m in (
        Metric("string_match_all", _ruler_all, "RULER: fraction of references contained (case-insensitive)"),
        Metric("string_match_part", _ruler_part, "RULER: 1 if any reference is contained (case-insensitive)"),
        Metric("helmet_subem", _helmet_subem, "HELMET SubEM on normalized text, max over raw and parsed output"),
        Metric("label_em", _label_em, "HELMET ICL: normalized exact match of the parsed label"),
        Metric("rouge_l_f1", _rouge_l, "ROUGE-L F1 (rouge-score, stemmed), max over references, raw and parsed"),
        Metric("ndcg_at_10", _ndcg10, "NDCG@10 of HELMET's parsed ranking; references are ID:LABEL judgments"),
        Metric(
            "mc_accuracy",
            _choice(helmet.choice_correct),
            "multiple choice: the gold letter or option; an empty output is wrong",
        ),
        Metric(
            "mc_accuracy_helmet",
            _choice(helmet.choice_correct_helmet),
            "HELMET's multiple choice rule, bug included (empty output counts for gold A)",
        ),
    )
}


class UnknownMetric(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def get_metric(name: str) -> Metric:
    try:
        return _METRICS[name]
    except KeyError:
        raise UnknownMetric(f"unknown metric {name!r}; choose one of {', '.join(sorted(_METRICS))}") from None


def metric_names() -> list[str]:
    return sorted(_METRICS)


def resolve(metric: str, helmet_compat: bool = False) -> str:
    """The metric a task's scores come from under the run's compatibility setting."""
    return COMPAT.get(metric, metric) if helmet_compat else metric


def score_prediction(
    metric: str, prediction: str, references: Sequence[str], prefix: str | None = None, chat: bool = False
) -> tuple[float, str]:
    """Score one prediction in [0, 1]; also returns the text the metric looked at (cleaned or parsed).

    ``prefix``: the task's answer prefix (HELMET's ``system_template``). Without the chat template the prompt ended
    with it and the model completed it, so HELMET scores ``prefix + output``, no space added; with the template
    the prompt ends at the generation prompt and the output is scored as it is (``chat``), parsed after the
    prefix when the model wrote one."""
    if not references:
        raise ValueError("a prediction needs at least one reference answer to be scored")
    scored = prefix + prediction if prefix and not chat else prediction
    return get_metric(metric).fn(scored, references, prefix)
