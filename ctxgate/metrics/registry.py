"""The metric registry. Scorers are small pure functions; the task says which one applies."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ctxgate.metrics import text


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
    full = (prefix + " " + pred) if prefix else pred
    parsed = text.parse_output(full, prefix or "Answer:")
    return max(text.substring_exact_match(pred, refs), text.substring_exact_match(parsed, refs)), parsed


_METRICS = {
    m.name: m
    for m in (
        Metric("string_match_all", _ruler_all, "RULER: fraction of references contained (case-insensitive)"),
        Metric("string_match_part", _ruler_part, "RULER: 1 if any reference is contained (case-insensitive)"),
        Metric("helmet_subem", _helmet_subem, "HELMET SubEM on normalized text, max over raw and parsed output"),
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


def score_prediction(metric: str, prediction: str, references: Sequence[str],
                     prefix: str | None = None) -> tuple[float, str]:
    """Score one prediction in [0, 1]; also returns the text the metric looked at (cleaned or parsed)."""
    if not references:
        raise ValueError("a prediction needs at least one reference answer to be scored")
    return get_metric(metric).fn(prediction, references, prefix)
