"""The session's verdict: its summaries per length (RULER's average and effective length, HELMET's
categories) and its gates, computed from the case records. The report (``ctxgate.report.build``)
lays them out; it decides nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ctxgate.gate import summaries
from ctxgate.gate.thresholds import Thresholds
from ctxgate.gate.verdicts import session_gates
from ctxgate.records.case import CaseRecord
from ctxgate.records.schema import BaselineRun
from ctxgate.records.summary import (
    EffectiveLength,
    Gate,
    GroupScore,
    LongScore,
    Overall,
    RelativeEffectiveLength,
)
from ctxgate.tasks.registry import Membership, membership

ByLength = Mapping[str, Mapping[str, GroupScore]]


@dataclass(frozen=True)
class SessionVerdict:
    complete: bool  # the session finished and every selected case has its verdict
    by_length: dict[str, dict[str, GroupScore]]
    overall: Overall
    effective_length: EffectiveLength | None
    gates: tuple[Gate, ...]
    relative_effective_length: dict[str, RelativeEffectiveLength]
    long_score: dict[str, LongScore]
    # what it was judged with: the session ended (or was interrupted), the baseline
    session_complete: bool = True
    baseline: BaselineRun | None = None


def stopped_early(case: CaseRecord) -> bool:
    """``--sequential`` stopped the case before its sample count: its mean is biased."""
    return case.stop is not None and case.stop.early


def _length_summary(
    ruler: GroupScore,
    scores: Mapping[str, float],
    errored: set[str],
    early: set[str],
    tasks: Membership,
) -> dict[str, GroupScore]:
    categories = summaries.helmet_categories(scores, errored, early, tasks)
    # always shown, as RULER's average is
    recall = summaries.helmet_recall(scores, errored, early, tasks)
    out = {"ruler": ruler, "helmet_recall": recall}
    out |= {f"helmet_{name}": g for name, g in categories.items() if name != "recall"}
    if categories:
        out["helmet_overall"] = summaries.helmet_overall(categories, tasks)
    return out | summaries.families(scores, errored, early, tasks)


def summarize(
    cases: Sequence[CaseRecord], threshold: float, decided: Mapping[int, bool] | None = None
) -> tuple[dict[str, dict[str, GroupScore]], Overall, EffectiveLength | None]:
    """Scores per length; a case with verdict "error" makes every summary it is in incomplete.
    ``decided``: the lengths RULER's average was decided at by its own test."""
    tasks = membership()
    scored: dict[int, dict[str, float]] = {}
    errored: dict[int, set[str]] = {}
    early: dict[int, set[str]] = {}
    for c in cases:
        if c.score is not None and c.verdict in ("pass", "fail"):
            scored.setdefault(c.length, {})[c.task] = c.score
            if stopped_early(c):
                early.setdefault(c.length, set()).add(c.task)
        elif c.verdict == "error":
            errored.setdefault(c.length, set()).add(c.task)
    lengths = sorted(set(scored) | set(errored))
    facts = {L: (scored.get(L, {}), errored.get(L, set()), early.get(L, set())) for L in lengths}
    ruler = {L: summaries.ruler_average(*facts[L], tasks=tasks) for L in lengths}
    by_length = {str(L): _length_summary(ruler[L], *facts[L], tasks) for L in lengths}
    ruler_scores = {L: g.score for L, g in ruler.items() if g.score is not None}
    average = sum(ruler_scores.values()) / len(ruler_scores) if ruler_scores else None
    overall = Overall(
        ruler_avg=None if average is None else round(average, 2),
        ruler_wavg_inc=summaries.weighted_average(ruler_scores, True),
        ruler_wavg_dec=summaries.weighted_average(ruler_scores, False),
        incomplete=any(g.incomplete for g in ruler.values()),
        early=any(bool(g.early) for g in ruler.values()),
        partial=any(g.partial for g in ruler.values()),
    )
    return by_length, overall, summaries.effective_length(ruler, threshold, decided)


def judge_session(
    cases: Sequence[CaseRecord],
    thresholds: Thresholds,
    complete: bool,
    threshold: float | None = None,
    baseline: BaselineRun | None = None,
    decided: Mapping[int, bool] | None = None,
) -> SessionVerdict:
    """``threshold``: the effective-length bar when not the thresholds' own (a report judged
    again keeps its); ``decided``: the lengths whose RULER average an extra's own test decided
    (``hookspec.ctxgate_decided_lengths``; a report judged again: its effective length's)."""
    if threshold is None:
        threshold = thresholds.effective_threshold
    by_length, overall, eff = summarize(cases, threshold, decided)
    inputs = summary_inputs(cases, by_length)
    relative, long = relative_lengths(inputs, thresholds), long_scores(inputs)
    if any(c.skip_kind == "search_stopped" for c in cases):  # spans lack the lengths left out
        overall = replace(overall, partial=True)
        relative = {k: replace(v, partial=True) for k, v in relative.items()}
        long = {k: replace(v, partial=True) for k, v in long.items()}
    gates = session_gates(cases, complete, eff, baseline, thresholds, relative)
    finished = complete and not any(c.verdict == "error" for c in cases)
    scored = (by_length, overall, eff, gates, relative, long)
    return SessionVerdict(finished, *scored, complete, baseline)


def _per_summary(by_length: ByLength) -> dict[str, dict[int, GroupScore]]:
    """Each summary's scores by length, in the summaries' order."""
    return {
        name: {int(L): groups[name] for L, groups in by_length.items() if name in groups}
        for name in summaries.summary_names()
    }


Facts = tuple[float, float, float]  # a member's score, its chance, the low end of its interval
Aligned = tuple[dict[int, GroupScore], summaries.Chances]  # by length: groups, chances


def summary_inputs(cases: Sequence[CaseRecord], by_length: ByLength) -> dict[str, Aligned]:
    """What the relative effective length and LongScore compare: each summary's groups over the
    members every scored length has, so that the base and each length average the same tasks
    (partial where that leaves one out; none where no member ran at every length), and its
    chances there, the means over those members (HELMET's overall: over its categories')."""
    at: dict[tuple[str, int], Facts] = {
        (c.task, c.length): (c.score, c.chance or 0.0, c.ci[0] if c.ci else c.score)
        for c in cases
        if c.score is not None and c.verdict in ("pass", "fail")
    }
    out: dict[str, Aligned] = {}
    stopped = {(c.task, c.length) for c in cases if c.skip_kind == "search_stopped"}
    for name, by in _per_summary(by_length).items():
        facts = _categories(out) if name == "helmet_overall" else at
        # a length where a search left a member out is past a decision (the summary's, where a gate
        # asks for it): it stays out, or the members that ran there for other gates would narrow
        # what all had and move the base
        if stopped:
            mine = summaries.summary_tasks(name)
            by = {L: g for L, g in by.items() if not any((t, L) in stopped for t in mine)}
        # a length with a member unscored fails as it is, and leaves the others' members alone
        whole = {L: g for L, g in by.items() if not g.incomplete}
        per = {L: {m: facts[m, L] for m in g.members if (m, L) in facts} for L, g in whole.items()}
        per = {L: here for L, here in per.items() if here}
        common = set.intersection(*map(set, per.values())) if per else set()
        if per and not common:  # no member ran at every length: nothing to compare
            continue
        groups, chances = dict(by), {}
        for L, here in per.items():
            kept = [f for m, f in here.items() if m in common]
            left_out = len(kept) < len(by[L].members)
            members = tuple(m for m in by[L].members if m in common)
            score = round(sum(f[0] for f in kept) / len(kept), 2)
            groups[L] = replace(
                by[L], score=score, members=members, partial=by[L].partial or left_out
            )
            chances[L] = (sum(f[1] for f in kept) / len(kept), sum(f[2] for f in kept) / len(kept))
        out[name] = (groups, chances)
    return out


def _categories(done: Mapping[str, Aligned]) -> dict[tuple[str, int], Facts]:
    """HELMET's categories as the overall score's members: their aligned scores and chances."""
    return {
        (name.removeprefix("helmet_"), L): (g.score, *chances[L])
        for name, (groups, chances) in done.items()
        for L, g in groups.items()
        if name.startswith("helmet_") and g.score is not None and L in chances
    }


def relative_lengths(
    inputs: Mapping[str, Aligned], thresholds: Thresholds
) -> dict[str, RelativeEffectiveLength]:
    """Each summary's effective length relative to its own base, where it has one."""
    share, up_to = thresholds.relative_share, thresholds.relative_base_up_to
    found = {
        name: summaries.relative_effective_length(groups, share, up_to, chances)
        for name, (groups, chances) in inputs.items()
    }
    return {name: f for name, f in found.items() if f is not None}


def long_scores(inputs: Mapping[str, Aligned]) -> dict[str, LongScore]:
    """Each summary's LongScore (100-LongBench's), where it has one."""
    found = {name: summaries.long_score(g, chances) for name, (g, chances) in inputs.items()}
    return {name: f for name, f in found.items() if f is not None}
