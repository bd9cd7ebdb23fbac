"""GraphWalks' grade: the set F1 of the nodes on the output's "Final Answer: [...]" line against the
answer's. ``graphwalks_f1`` reads as lm-evaluation-harness's ``f1`` does (the last line, trailing
newlines off), ``graphwalks_flexible_f1`` as its ``flexible_f1`` (the last line that has the list);
``graphwalks_card_f1`` runs the dataset card's code as printed (docs/decisions.md). References: one,
the answer's nodes as a JSON list (as NeMo-Skills' ``expected_answer``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

from ctxgate.api import Metric, Scored

_LIST = re.compile(r"Final Answer:\s*\[(.*)\]")
_CARD_LIST = re.compile(r"Final Answer: ?\[.*\]")
_MARK = "Final Answer:"


def _items(inside: str) -> list[str]:
    return [item.strip().strip("'\"") for item in inside.split(",") if item.strip()]


def last_line_nodes(response: str) -> list[str]:
    """The nodes listed on the last line; none where it has no list."""
    line = response.rstrip("\n").split("\n")[-1]
    found = _LIST.search(line) if _MARK in line else None
    return _items(found.group(1)) if found else []


def any_line_nodes(response: str) -> list[str]:
    """The nodes of the last line that has a list; none where no line has one."""
    for line in reversed(response.rstrip("\n").split("\n")):
        found = _LIST.search(line)
        if found:
            return _items(found.group(1))
    return []


def card_nodes(response: str) -> list[str]:
    """The card's ``get_list``: the whole match split at commas, so the first item keeps
    "Final Answer: [" before it, and no trailing newline is taken off first."""
    line = response.split("\n")[-1]
    found = _CARD_LIST.search(line) if _MARK in line else None
    if not found:
        return []
    return [item.strip() for item in found.group(0).strip("[]").split(",") if item.strip()]


def set_f1(said: Iterable[object], gold: Iterable[object], none_overlap: float = 0.0) -> float:
    """F1 of two sets; ``none_overlap``: the score where recall and precision are both 0 (the card
    prints 1 there)."""
    sampled, truth = set(said), set(gold)
    overlap = len(sampled & truth)
    recall = overlap / len(truth) if truth else 0.0
    precision = overlap / len(sampled) if sampled else 0.0
    if recall + precision == 0:
        return none_overlap
    return 2 * recall * precision / (recall + precision)


def reference(nodes: Iterable[str]) -> str:
    return json.dumps(sorted(nodes))


def gold_nodes(refs: Sequence[str]) -> list[str]:
    """The answer's nodes from the one reference, a JSON list of names."""
    try:
        value = json.loads(refs[0]) if len(refs) == 1 else None
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(
            f"GraphWalks needs one reference, the answer's nodes as a JSON list, got {list(refs)!r}"
        )
    return value


def _strict(pred: str, refs: Sequence[str], prefix: str | None) -> Scored:
    said = last_line_nodes(pred)
    return set_f1(said, gold_nodes(refs)), ", ".join(said)


def _flexible(pred: str, refs: Sequence[str], prefix: str | None) -> Scored:
    said = any_line_nodes(pred)
    return set_f1(said, gold_nodes(refs)), ", ".join(said)


def _card(pred: str, refs: Sequence[str], prefix: str | None) -> Scored:
    said = card_nodes(pred)
    return set_f1(said, gold_nodes(refs), none_overlap=1.0), ", ".join(said)


GRAPHWALKS_F1 = Metric(
    "graphwalks_f1",
    _strict,
    "GraphWalks: set F1 of the nodes on the output's last line, 'Final Answer: [...]' "
    "(lm-evaluation-harness's f1); reference: the answer's nodes as a JSON list",
)
GRAPHWALKS_FLEXIBLE_F1 = Metric(
    "graphwalks_flexible_f1",
    _flexible,
    "GraphWalks: set F1 of the last 'Final Answer: [...]' line anywhere in the output "
    "(lm-evaluation-harness's flexible_f1)",
)
GRAPHWALKS_CARD_F1 = Metric(
    "graphwalks_card_f1",
    _card,
    "GraphWalks: the dataset card's grading code as printed, its quirks included (the first node "
    "keeps 'Final Answer: [' before it; no overlap scores 1)",
)
METRICS = (GRAPHWALKS_F1, GRAPHWALKS_FLEXIBLE_F1, GRAPHWALKS_CARD_F1)
