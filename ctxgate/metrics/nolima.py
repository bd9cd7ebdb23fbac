"""NoLiMa's metric: ``contains`` (evaluation/async_evaluate.py, ``_evaluate_response``), the one its
run configs use: 1 when any gold answer (the needle's character name) is a substring of the raw
response, else 0. No normalization: case, whitespace and punctuation count, as in the reference."""

from __future__ import annotations

from collections.abc import Sequence


def contains(response: str, gold_answers: Sequence[str]) -> float:
    return float(any(gold in response for gold in gold_answers))


def score(prediction: str, references: Sequence[str], prefix: str | None) -> tuple[float, str]:
    # the response as it came: NoLiMa's prompts have no answer prefix
    return contains(prediction, references), prediction
