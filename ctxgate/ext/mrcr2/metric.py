"""MRCR v2's score (eval_hub's ``run_evaluation.mrcr_v2_metric``): the output after the last copy
of the answer's 12-character random string, compared with the answer after it by difflib's
``SequenceMatcher`` ratio; 0 without the string. The reference finds the string anywhere
(``rfind``), so text before it passes (eval_hub issue 8); the ``first`` rule asks, as the
reference's docstring does, that the stripped output open with it."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from ctxgate.api import Metric, Scored

from .forms import HASH_LENGTH
from .settings import HASH_RULES

RULE = "hash: "  # the second reference: the rule the run asked for (--mrcr2-hash)


def mrcr2_score(prediction: str, target: str, rule: str = HASH_RULES[0]) -> tuple[float, str]:
    """The score, 0-1, and the part of the output compared (empty where none was)."""
    if not isinstance(prediction, str) or not prediction:
        return 0.0, ""
    target = target.strip()
    if len(target) < HASH_LENGTH:
        return 0.0, ""
    token, reference = target[:HASH_LENGTH], target[HASH_LENGTH:].strip()
    prediction = prediction.strip()
    if rule == "first" and not prediction.startswith(token):
        return 0.0, ""
    start = prediction.rfind(token)
    if start == -1:
        return 0.0, ""
    content = prediction[start + HASH_LENGTH :].strip()
    return difflib.SequenceMatcher(a=reference, b=content).ratio(), content


def rule_of(references: Sequence[str]) -> str:
    """The rule a sample's references carry, else the reference scorer's."""
    found = [r.removeprefix(RULE) for r in references[1:] if r.startswith(RULE)]
    if found and found[0] not in HASH_RULES:
        raise ValueError(
            f"mrcr2 reference {RULE}{found[0]!r} is no rule; it is one of {', '.join(HASH_RULES)}"
        )
    return found[0] if found else HASH_RULES[0]


def _as_asked(prediction: str, references: Sequence[str], prefix: str | None) -> Scored:
    return mrcr2_score(prediction, references[0], rule_of(references))


def _first(prediction: str, references: Sequence[str], prefix: str | None) -> Scored:
    return mrcr2_score(prediction, references[0], "first")


MRCR2_RATIO = Metric(
    "mrcr2_ratio",
    _as_asked,
    "MRCR v2's SequenceMatcher ratio after the last copy of the random string (0 without it); "
    "found anywhere, as the reference's rfind, unless the run asked --mrcr2-hash first",
)
MRCR2_FIRST = Metric(
    "mrcr2_first",
    _first,
    "MRCR v2's ratio, the output required to open with the random string (the reference "
    "docstring's rule; eval_hub issue 8)",
)
