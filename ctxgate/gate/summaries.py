"""Per-length summaries: RULER's average and effective length, HELMET's categories and overall
score, and the mean of each task family beyond them (MRCR-, BABILong- and NoLiMa-style).

Membership comes from the task registry (a task's spec says which summary its score counts in);
aggregation is over the tasks that ran. A summary over fewer than all its members is ``partial`` and
names what is missing: a subset average is never presented as the full benchmark score. A member
selected but without a score (an error, a crashed worker, an interrupted run) makes it
``incomplete``; one that ``--sequential`` stopped early makes it an estimate (``early``: a case
stopped at 10 of 10 right reads 100%). A length whose RULER average is either never counts as
effective: the missing task might have failed there, and only fixed-n means carry a guarantee.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

from ctxgate.records.summary import EffectiveLength, GroupScore, LongScore, RelativeEffectiveLength
from ctxgate.tasks.registry import Membership, membership

RULER_THRESHOLD = 85.6  # Llama-2-7B at 4K, the RULER paper's bar
# NoLiMa: a length is effective while the score keeps 85% of the short-context base
RELATIVE_SHARE = 0.85
BASE_UP_TO = 1024  # NoLiMa's base: the mean at 250, 500 and 1K tokens
# 100-LongBench's base, its "0-8k" bucket: samples of 2K, 4K and 6K tokens (generate_dataset.py's
# *_base, range(2, 8, 2) thousand); every length from 8K on is compared with it
LONGBENCH_BASE, LONGBENCH_BUCKET = (2048, 4096, 6144), 8192
Scores = Mapping[str, float]  # task -> score, percent
# a summary's (chance, the lower end of its score's interval) by length: means over its members
Chances = Mapping[int, tuple[float, float]]
Names = Collection[str]


def summary_names() -> list[str]:
    """The names of the summaries per length, as the report's ``by_length`` keys them."""
    tasks = membership()
    return ["ruler", *(f"helmet_{c}" for c in tasks.helmet), "helmet_overall", *tasks.families]


def group(
    scores: Scores, members: Sequence[str], errored: Names = (), early: Names = ()
) -> GroupScore:
    present = tuple(m for m in members if m in scores)
    failed = tuple(m for m in members if m in errored and m not in scores)
    missing = tuple(m for m in members if m not in scores and m not in failed)
    value = round(sum(scores[m] for m in present) / len(present), 2) if present else None
    return GroupScore(value, present, missing, failed, tuple(m for m in present if m in early))


def ruler_average(
    scores: Scores, errored: Names = (), early: Names = (), tasks: Membership | None = None
) -> GroupScore:
    return group(scores, (tasks or membership()).ruler, errored, early)


def category_members(
    category: str, scores: Scores, errored: Names, tasks: Membership
) -> tuple[str, ...]:
    """A HELMET category's members, HELMET's own files' tasks in place of those they stand
    in for when any of them ran at this length."""
    members = tasks.helmet.get(category, ())
    own = {stand_in: task for stand_in, task in tasks.stand_ins.items() if task in members}
    if any(t in scores or t in errored for t in own):
        return tuple(next((s for s, t in own.items() if t == m), m) for m in members)
    return members


def helmet_recall(
    scores: Scores, errored: Names = (), early: Names = (), tasks: Membership | None = None
) -> GroupScore:
    """HELMET Recall: HELMET's own RULER files when any ran, else the suite's RULER cases."""
    members = category_members("recall", scores, errored, tasks or membership())
    return group(scores, members, errored, early)


def _ran(groups: Mapping[str, GroupScore]) -> dict[str, GroupScore]:
    """The groups with a member that ran or was meant to."""
    return {name: g for name, g in groups.items() if g.score is not None or g.errored}


def helmet_categories(
    scores: Scores, errored: Names, early: Names, tasks: Membership
) -> dict[str, GroupScore]:
    """Every HELMET category that ran (a Cite task's score is already the mean of its three
    numbers, so the category equals HELMET's mean of six)."""
    return _ran(
        {
            c: group(scores, category_members(c, scores, errored, tasks), errored, early)
            for c in tasks.helmet
        }
    )


def summary_tasks(name: str) -> set[str]:
    """Every task whose score a summary (``summary_names``) can average, stand-ins included."""
    tasks = membership()
    helmet = {f"helmet_{c}": set(m) for c, m in tasks.helmet.items()}
    helmet["helmet_overall"] = set().union(*helmet.values())
    found = {"ruler": set(tasks.ruler), **helmet, **{f: set(m) for f, m in tasks.families.items()}}
    members = found.get(name, set())
    return members | {s for s, task in tasks.stand_ins.items() if task in members}


def _stand_in(member: str, ran: Names, tasks: Membership) -> str:
    """The published data's task in place of the generated ``member`` where it ran."""
    return next((s for s, task in tasks.stand_ins.items() if task == member and s in ran), member)


def families(
    scores: Scores, errored: Names, early: Names, tasks: Membership
) -> dict[str, GroupScore]:
    """Each task family beyond RULER and HELMET that ran, published twins in place."""
    ran = set(scores) | set(errored)
    return _ran(
        {
            f: group(scores, tuple(_stand_in(m, ran, tasks) for m in members), errored, early)
            for f, members in tasks.families.items()
        }
    )


def helmet_overall(categories: Mapping[str, GroupScore], tasks: Membership) -> GroupScore:
    """The mean of the category scores; partial when a category is missing or partial."""
    present = {c: g.score for c, g in categories.items() if g.score is not None}
    errored = tuple(f"{c}/{t}" for c, g in categories.items() for t in g.errored)
    missing = tuple(c for c in tasks.helmet if c not in categories)
    missing += tuple(f"{c}/{t}" for c in present for t in categories[c].missing)
    early = tuple(f"{c}/{t}" for c in present for t in categories[c].early)
    value = round(sum(present.values()) / len(present), 2) if present else None
    return GroupScore(value, tuple(present), missing, errored, early)


def _passing_run(passing: Mapping[int, bool]) -> int:
    """The longest length that passes with every shorter one; 0: the shortest fails."""
    run = [L for L, _ in itertools.takewhile(lambda item: item[1], passing.items())]
    return run[-1] if run else 0


def _flagged(
    scored: Mapping[int, GroupScore], decided: Mapping[int, bool] | None = None
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The lengths with a member without a score, and those with one stopped early (and no test
    of the average that decided it)."""
    incomplete = tuple(L for L, g in scored.items() if g.incomplete)
    return incomplete, tuple(L for L, g in scored.items() if g.early and L not in (decided or {}))


def effective_length(
    ruler_by_length: Mapping[int, GroupScore],
    threshold: float = RULER_THRESHOLD,
    decided: Mapping[int, bool] | None = None,
) -> EffectiveLength | None:
    """``decided``: lengths whose average its own sequential test decided
    (``--search-effective-length``), early-stopped members or not."""
    decided = decided or {}
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
    passing |= {L: ok and not scored[L].incomplete for L, ok in decided.items() if L in scored}
    value, longest = _passing_run(passing), max((L for L, ok in passing.items() if ok), default=0)
    partial = any(g.partial for g in scored.values())
    flagged, kept = _flagged(scored, decided), {L: ok for L, ok in decided.items() if L in scored}
    return EffectiveLength(value, longest, threshold, passing, partial, *flagged, decided=kept)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def above_chance(base_at: Sequence[int], chances: Chances) -> tuple[float, str | None]:
    """The base's chance, and why the base is not above it (the lower ends of its lengths'
    intervals at or below their chance), or None."""
    chance = _mean([chances.get(L, (0.0, 0.0))[0] for L in base_at])
    low = _mean([chances.get(L, (0.0, 0.0))[1] for L in base_at])
    if low > chance:
        return chance, None
    return (
        chance,
        f"its base is not above chance: the low end of its interval {low:.3g} <= {chance:.3g}",
    )


def relative_effective_length(
    by_length: Mapping[int, GroupScore],
    share: float = RELATIVE_SHARE,
    base_up_to: int = BASE_UP_TO,
    chances: Chances | None = None,
) -> RelativeEffectiveLength | None:
    """None when no length up to ``base_up_to`` has a complete score; none (``value`` 0, with
    ``why``) when the base is not above chance, 0 included. A length passes on what it scores
    above its chance."""
    chances = chances or {}
    scored = {L: g for L, g in sorted(by_length.items()) if g.score is not None or g.incomplete}
    base_lengths = tuple(
        L for L, g in scored.items() if L <= base_up_to and g.score is not None and not g.incomplete
    )
    if not base_lengths:
        return None
    base = _mean([scored[L].score or 0.0 for L in base_lengths])
    chance, why = above_chance(base_lengths, chances) if chances else (0.0, None)
    why = why or ("its base is 0: no share of it to keep" if base <= 0 else None)
    facts = (round(base, 2), base_lengths, share)
    chance, partial = round(chance, 2), any(g.partial for g in scored.values())
    if why:
        return RelativeEffectiveLength(0, *facts, chance=chance, why=why, partial=partial)
    passing = {
        L: g.score is not None
        and g.score - chances.get(L, (0.0, 0.0))[0] >= share * (base - chance)
        and not (g.incomplete or g.early)
        for L, g in scored.items()
    }
    found = RelativeEffectiveLength(_passing_run(passing), *facts, passing, *_flagged(scored))
    return replace(found, chance=chance, partial=partial)


def long_score(
    by_length: Mapping[int, GroupScore], chances: Chances | None = None
) -> LongScore | None:
    """100-LongBench's LongScore (analysis/utils.py's ``rank``), in percent: the mean over the
    lengths of 8K or more of 100 * (score - base) / base, the base the mean at those of 2K, 4K and
    6K that ran (its 0-8K bucket), each above its chance. A length with a member unscored counts in
    neither."""
    scored = {
        L: g.score for L, g in sorted(by_length.items()) if g.score is not None and not g.incomplete
    }
    if not scored:
        return None
    chances = chances or {}
    base_at = tuple(L for L in scored if L in LONGBENCH_BASE)
    longer = [L for L in scored if L >= LONGBENCH_BUCKET]
    partial = any(by_length[L].partial for L in (*base_at, *longer))
    base = _mean([scored[L] for L in base_at]) if base_at else None
    chance, why = above_chance(base_at, chances) if chances else (0.0, None)
    if base is None or not longer or base == chance or why:
        why = why or ("a base of 0" if longer else "no length of 8K or more")
        if not base_at:
            why = "no length of 2K, 4K or 6K, its base"
        base = None if base is None else round(base, 2)
        return LongScore(None, base, base_at, why=why, chance=round(chance, 2), partial=partial)
    above = {L: scored[L] - chances.get(L, (0.0, 0.0))[0] for L in longer}
    per_length = {L: round(100 * (above[L] - (base - chance)) / (base - chance), 2) for L in longer}
    mean = round(sum(per_length.values()) / len(per_length), 2)
    return LongScore(mean, round(base, 2), base_at, per_length, None, round(chance, 2), partial)


def weighted_average(by_length: Mapping[int, float], increasing: bool = True) -> float | None:
    """RULER's wAvg: weights 1..n over the lengths in increasing order (inc) or n..1 (dec)."""
    if not by_length:
        return None
    lengths = sorted(by_length)
    weights = range(1, len(lengths) + 1) if increasing else range(len(lengths), 0, -1)
    return round(sum(w * by_length[L] for w, L in zip(weights, lengths)) / sum(weights), 2)
