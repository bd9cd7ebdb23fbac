"""Per-length summaries: RULER's average and effective length, HELMET's Recall category.

Aggregation is over the tasks that ran. A summary built from fewer than all of its member tasks is marked
``partial`` and names what is missing: a subset average is never presented as the full benchmark score. A member
that was selected but produced no score (an error, a crashed worker, an interrupted run) is ``errored``: the
summary is then ``incomplete``, and a length whose RULER average is incomplete never counts as effective, because
the missing task might have failed there.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

RULER_TASKS = (
    "niah_single_1",
    "niah_single_2",
    "niah_single_3",
    "niah_multikey_1",
    "niah_multikey_2",
    "niah_multikey_3",
    "niah_multivalue",
    "niah_multiquery",
    "vt",
    "cwe",
    "fwe",
    "qa_1",
    "qa_2",
)
HELMET_RECALL_TASKS = ("json_kv", "niah_multikey_2", "niah_multikey_3", "niah_multivalue")
# the same three tasks from HELMET's own RULER-format files; when any of them ran they replace the suite's cases
HELMET_OWN_RECALL = ("helmet_multikey_2", "helmet_multikey_3", "helmet_multivalue")
# HELMET's seven categories, each the plain mean of its members' scores (all x 100), in the paper's order. A Cite
# task's score is already the mean of its three numbers (correctness, citation recall, citation precision), so the
# category equals HELMET's mean of six.
HELMET_CATEGORIES: dict[str, tuple[str, ...]] = {
    "recall": HELMET_RECALL_TASKS,
    "rag": ("kilt_nq", "kilt_triviaqa", "kilt_popqa", "kilt_hotpotqa"),
    "rerank": ("msmarco_rerank",),
    "cite": ("alce_asqa", "alce_qampari"),
    "longqa": ("narrativeqa", "infbench_qa", "infbench_mc"),
    "summ": ("infbench_sum", "multi_lexsum"),
    "icl": ("icl_trec_coarse", "icl_trec_fine", "icl_banking77", "icl_clinic150", "icl_nlu"),
}
CATEGORY_LABELS = {
    "recall": "Recall",
    "rag": "RAG",
    "rerank": "Re-rank",
    "cite": "Cite",
    "longqa": "LongQA",
    "summ": "Summ",
    "icl": "ICL",
    "overall": "overall",
}
RULER_THRESHOLD = 85.6  # Llama-2-7B at 4K, the RULER paper's bar


@dataclass(frozen=True)
class GroupScore:
    score: float | None  # the mean over the members that have a score
    members: tuple[str, ...]
    missing: tuple[str, ...] = ()  # not selected in this run
    errored: tuple[str, ...] = ()  # selected, but no score

    @property
    def partial(self) -> bool:
        return bool(self.missing)

    @property
    def incomplete(self) -> bool:
        return bool(self.errored)


@dataclass(frozen=True)
class EffectiveLength:
    """``value``: the largest tested length such that it and every shorter tested length score > threshold
    (0 if the shortest fails). ``max_passing``: the largest passing length, gaps allowed (the looser reading)."""

    value: int
    max_passing: int
    threshold: float
    per_length: Mapping[int, bool] = field(default_factory=dict)
    partial: bool = False
    incomplete: tuple[int, ...] = ()  # lengths with a RULER task that produced no score: counted as failing


def group(scores: Mapping[str, float], members: Sequence[str], errored: Collection[str] = ()) -> GroupScore:
    present = tuple(m for m in members if m in scores)
    failed = tuple(m for m in members if m in errored and m not in scores)
    missing = tuple(m for m in members if m not in scores and m not in failed)
    value = round(sum(scores[m] for m in present) / len(present), 2) if present else None
    return GroupScore(value, present, missing, failed)


def ruler_average(scores: Mapping[str, float], errored: Collection[str] = ()) -> GroupScore:
    return group(scores, RULER_TASKS, errored)


def recall_members(scores: Mapping[str, float], errored: Collection[str] = ()) -> tuple[str, ...]:
    """HELMET Recall: JSON KV and HELMET's own RULER files when they ran at this length, else the suite's RULER
    cases of the same tasks (the report's member list says which)."""
    own = any(t in scores or t in errored for t in HELMET_OWN_RECALL)
    return ("json_kv", *HELMET_OWN_RECALL) if own else HELMET_RECALL_TASKS


def helmet_recall(scores: Mapping[str, float], errored: Collection[str] = ()) -> GroupScore:
    return group(scores, recall_members(scores, errored), errored)


def helmet_categories(scores: Mapping[str, float], errored: Collection[str] = ()) -> dict[str, GroupScore]:
    """Every HELMET category with at least one member that ran or was meant to."""
    groups = {
        name: group(scores, recall_members(scores, errored) if name == "recall" else members, errored)
        for name, members in HELMET_CATEGORIES.items()
    }
    return {name: g for name, g in groups.items() if g.score is not None or g.errored}


def helmet_overall(categories: Mapping[str, GroupScore]) -> GroupScore:
    """HELMET's overall score: the mean of the seven category scores. Partial when a category is missing or is
    itself partial (its missing tasks are named as ``category/task``)."""
    present = {c: g for c, g in categories.items() if g.score is not None}
    errored = tuple(f"{c}/{t}" for c, g in categories.items() for t in g.errored)
    missing = tuple(c for c in HELMET_CATEGORIES if c not in categories)
    missing += tuple(f"{c}/{t}" for c, g in present.items() for t in g.missing)
    value = round(sum(g.score for g in present.values() if g.score is not None) / len(present), 2) if present else None
    return GroupScore(value, tuple(present), missing, errored)


def effective_length(
    ruler_by_length: Mapping[int, GroupScore], threshold: float = RULER_THRESHOLD
) -> EffectiveLength | None:
    scored = {L: g for L, g in sorted(ruler_by_length.items()) if g.score is not None or g.incomplete}
    if not scored:
        return None
    # strictly above, as the paper; a length where a task produced no score cannot be shown to pass
    passing = {L: g.score is not None and g.score > threshold and not g.incomplete for L, g in scored.items()}
    value = 0
    for L, ok in passing.items():
        if not ok:
            break
        value = L
    max_passing = max((L for L, ok in passing.items() if ok), default=0)
    return EffectiveLength(
        value,
        max_passing,
        threshold,
        passing,
        any(g.partial for g in scored.values()),
        tuple(L for L, g in scored.items() if g.incomplete),
    )


def weighted_average(by_length: Mapping[int, float], increasing: bool = True) -> float | None:
    """RULER's wAvg: weights 1..n over the lengths in increasing order (inc) or n..1 (dec)."""
    if not by_length:
        return None
    lengths = sorted(by_length)
    weights = range(1, len(lengths) + 1) if increasing else range(len(lengths), 0, -1)
    return round(sum(w * by_length[L] for w, L in zip(weights, lengths)) / sum(weights), 2)
