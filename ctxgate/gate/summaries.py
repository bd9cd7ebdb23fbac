"""Per-length summaries: RULER's average and effective length, HELMET's categories and overall
score, and the mean of each task family beyond them (MRCR-, BABILong- and NoLiMa-style).

Membership comes from the task registry (``ctxgate.tasks.registry.membership``): a task's spec says
which summary its score counts in. Aggregation is over the tasks that ran. A summary built from
fewer than all of its member tasks is marked ``partial`` and names what is missing: a subset average
is never presented as the full benchmark score. A member that was selected but produced no score (an
error, a crashed worker, an interrupted run) is ``errored``: the summary is then ``incomplete``, and
a length whose RULER average is incomplete never counts as effective, because the missing task might
have failed there.

A member that ``--sequential`` stopped early is ``early``: its mean is biased by the stopping (a
case stopped at 10 of 10 right reads 100%), so a summary that averages it is an estimate, marked as
such, and a length whose RULER average has one never counts as effective. Only fixed-n means, or
each early case's own confidence sequence, carry a guarantee.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from ctxgate.records.schema import EffectiveLength, GroupScore, LongScore, RelativeEffectiveLength
from ctxgate.tasks.registry import Membership, membership

RULER_THRESHOLD = 85.6  # Llama-2-7B at 4K, the RULER paper's bar


def summary_names(tasks: Membership | None = None) -> list[str]:
    """The names of the summaries per length, as the report's ``by_length`` keys them."""
    tasks = tasks or membership()
    return ["ruler", *(f"helmet_{c}" for c in tasks.helmet), "helmet_overall", *tasks.families]


def group(
    scores: Mapping[str, float],
    members: Sequence[str],
    errored: Collection[str] = (),
    early: Collection[str] = (),
) -> GroupScore:
    present = tuple(m for m in members if m in scores)
    failed = tuple(m for m in members if m in errored and m not in scores)
    missing = tuple(m for m in members if m not in scores and m not in failed)
    value = round(sum(scores[m] for m in present) / len(present), 2) if present else None
    return GroupScore(value, present, missing, failed, tuple(m for m in present if m in early))


def ruler_average(
    scores: Mapping[str, float],
    errored: Collection[str] = (),
    early: Collection[str] = (),
    tasks: Membership | None = None,
) -> GroupScore:
    return group(scores, (tasks or membership()).ruler, errored, early)


def category_members(
    category: str, scores: Mapping[str, float], errored: Collection[str], tasks: Membership
) -> tuple[str, ...]:
    """A HELMET category's members, with HELMET's own files' tasks in place of the tasks they stand
    in for when any of them ran at this length (HELMET's Recall is either its own files or the
    suite's RULER cases)."""
    members = tasks.helmet.get(category, ())
    own = {stand_in: task for stand_in, task in tasks.stand_ins.items() if task in members}
    if any(t in scores or t in errored for t in own):
        return tuple(next((s for s, t in own.items() if t == m), m) for m in members)
    return members


def helmet_recall(
    scores: Mapping[str, float],
    errored: Collection[str] = (),
    early: Collection[str] = (),
    tasks: Membership | None = None,
) -> GroupScore:
    """HELMET Recall: HELMET's own RULER files when any ran at this length, in place of the suite's
    RULER cases of the same tasks (the report's member list says which)."""
    return group(
        scores, category_members("recall", scores, errored, tasks or membership()), errored, early
    )


def helmet_categories(
    scores: Mapping[str, float], errored: Collection[str], early: Collection[str], tasks: Membership
) -> dict[str, GroupScore]:
    """Every HELMET category with at least one member that ran or was meant to. A Cite task's score
    is already the mean of its three numbers (correctness, citation recall, citation precision), so
    the category equals HELMET's mean of six."""
    groups = {
        c: group(scores, category_members(c, scores, errored, tasks), errored, early)
        for c in tasks.helmet
    }
    return {name: g for name, g in groups.items() if g.score is not None or g.errored}


def _stand_in(member: str, ran: Collection[str], tasks: Membership) -> str:
    """The published data's task in place of the generated ``member`` where it ran, else the member."""
    return next((s for s, task in tasks.stand_ins.items() if task == member and s in ran), member)


def families(
    scores: Mapping[str, float], errored: Collection[str], early: Collection[str], tasks: Membership
) -> dict[str, GroupScore]:
    """Each task family beyond RULER and HELMET (its suite) with a member that ran or was meant to:
    the mean of its members, each generated task's published twin in its place where that ran."""
    ran = set(scores) | set(errored)
    groups = {
        f: group(scores, tuple(_stand_in(m, ran, tasks) for m in members), errored, early)
        for f, members in tasks.families.items()
    }
    return {name: g for name, g in groups.items() if g.score is not None or g.errored}


def helmet_overall(categories: Mapping[str, GroupScore], tasks: Membership) -> GroupScore:
    """HELMET's overall score: the mean of the category scores. Partial when a category is missing
    or is itself partial (its missing tasks are named as ``category/task``)."""
    present = {c: g for c, g in categories.items() if g.score is not None}
    errored = tuple(f"{c}/{t}" for c, g in categories.items() for t in g.errored)
    missing = tuple(c for c in tasks.helmet if c not in categories)
    missing += tuple(f"{c}/{t}" for c, g in present.items() for t in g.missing)
    early = tuple(f"{c}/{t}" for c, g in present.items() for t in g.early)
    value = (
        round(sum(g.score for g in present.values() if g.score is not None) / len(present), 2)
        if present
        else None
    )
    return GroupScore(value, tuple(present), missing, errored, early)


def effective_length(
    ruler_by_length: Mapping[int, GroupScore], threshold: float = RULER_THRESHOLD
) -> EffectiveLength | None:
    scored = {
        L: g for L, g in sorted(ruler_by_length.items()) if g.score is not None or g.incomplete
    }
    if not scored:
        return None
    # strictly above, as the paper; a length where a task produced no score, or only an
    # early-stopped estimate, cannot be shown to pass
    passing = {
        L: g.score is not None and g.score > threshold and not g.incomplete and not g.early
        for L, g in scored.items()
    }
    value = 0
    for L, ok in passing.items():
        if not ok:
            break
        value = L
    return EffectiveLength(
        value,
        max((L for L, ok in passing.items() if ok), default=0),
        threshold,
        passing,
        any(g.partial for g in scored.values()),
        tuple(L for L, g in scored.items() if g.incomplete),
        tuple(L for L, g in scored.items() if g.early),
    )


# NoLiMa: a length is effective while the score keeps 85% of the short-context base
RELATIVE_SHARE = 0.85
BASE_UP_TO = 1024  # NoLiMa's base: the mean at 250, 500 and 1K tokens


def relative_effective_length(
    by_length: Mapping[int, GroupScore], share: float = RELATIVE_SHARE, base_up_to: int = BASE_UP_TO
) -> RelativeEffectiveLength | None:
    """A summary's effective length against its own short-context score; None when no length up to
    ``base_up_to`` has a complete score (the base needs one; a base of 0 is no base: every share of
    it passes)."""
    scored = {L: g for L, g in sorted(by_length.items()) if g.score is not None or g.incomplete}
    base_lengths = tuple(
        L for L, g in scored.items() if L <= base_up_to and g.score is not None and not g.incomplete
    )
    base = (
        sum(scored[L].score or 0.0 for L in base_lengths) / len(base_lengths)
        if base_lengths
        else 0.0
    )
    if base <= 0:
        return None
    passing = {
        L: g.score is not None and g.score >= share * base and not g.incomplete and not g.early
        for L, g in scored.items()
    }
    value = 0
    for L, ok in passing.items():
        if not ok:
            break
        value = L
    return RelativeEffectiveLength(
        value,
        round(base, 2),
        base_lengths,
        share,
        passing,
        tuple(L for L, g in scored.items() if g.incomplete),
        tuple(L for L, g in scored.items() if g.early),
    )


# 100-LongBench's base: its "0-8k" data, every sample shorter than its first length, 8K
LONGBENCH_BUCKET = 8192


def long_score(by_length: Mapping[int, GroupScore]) -> LongScore | None:
    """100-LongBench's LongScore (analysis/utils.py's ``rank``), in percent: each length of 8K or
    more scores 100 * (score - base) / base, rounded to 2 places, and LongScore is their mean,
    rounded again; the base is the summary's mean over the run's lengths below 8K, where
    100-LongBench pools its 0-8K bucket's samples (the same mean when each length has the same n). A
    length where a member has no score counts in neither. None: no length has a full score."""
    scored = {
        L: g.score for L, g in sorted(by_length.items()) if g.score is not None and not g.incomplete
    }
    if not scored:
        return None
    below = tuple(L for L in scored if L < LONGBENCH_BUCKET)
    longer = [L for L in scored if L >= LONGBENCH_BUCKET]
    base = sum(scored[L] for L in below) / len(below) if below else None
    if base is None or not longer or base == 0:
        why = (
            "no length below 8K, its base"
            if not below
            else "a base of 0"
            if longer
            else "no length of 8K or more"
        )
        return LongScore(None, None if base is None else round(base, 2), below, why=why)
    per_length = {L: round(100 * (scored[L] - base) / base, 2) for L in longer}
    return LongScore(
        round(sum(per_length.values()) / len(per_length), 2), round(base, 2), below, per_length
    )


def weighted_average(by_length: Mapping[int, float], increasing: bool = True) -> float | None:
    """RULER's wAvg: weights 1..n over the lengths in increasing order (inc) or n..1 (dec)."""
    if not by_length:
        return None
    lengths = sorted(by_length)
    weights = range(1, len(lengths) + 1) if increasing else range(len(lengths), 0, -1)
    return round(sum(w * by_length[L] for w, L in zip(weights, lengths)) / sum(weights), 2)
