"""The report's lines on a search and on cases stopped early."""

from __future__ import annotations

from collections.abc import Sequence

from ctxgate.api import CaseRecord, Report, format_length, in_registry_order

from .records import SEARCH_SLOT, SearchRecord


def _lengths(lengths: Sequence[int]) -> str:
    return ", ".join(format_length(L) for L in lengths)


def by_task(
    cases: Sequence[CaseRecord],
) -> dict[tuple[tuple[int, ...], tuple[int, ...]], list[str]]:
    """The tasks by what the search did with them: (lengths run, lengths left out) -> the tasks, in
    the table's order. Read from the cases' ``skip_kind``, so the JSON report says it too; a case
    the session never reached was neither."""
    seen: dict[str, tuple[set[int], set[int]]] = {}
    for c in cases:
        ran, left_out = seen.setdefault(c.task, (set(), set()))
        if c.error_kind != "not_run":
            (left_out if c.skip_kind == "search_stopped" else ran).add(c.length)
    groups: dict[tuple[tuple[int, ...], tuple[int, ...]], list[str]] = {}
    for task in in_registry_order(seen):
        ran, left_out = seen[task]
        groups.setdefault((tuple(sorted(ran)), tuple(sorted(left_out))), []).append(task)
    return groups


def search_line(search: SearchRecord, cases: Sequence[CaseRecord]) -> str:
    """Which lengths ``--search-effective-length`` ran, and why not the rest: per task, since a
    case a floor or baseline expects, or one in a summary not yet decided, runs past a decision
    while its length is skipped for the others (tasks the search treated alike share one entry)."""
    ran = _lengths(search.ran) or "none"
    if search.skipped:
        groups = by_task(cases)
        said = []
        for (runs, left_out), tasks in groups.items():
            who = "every task" if len(groups) == 1 and len(tasks) > 1 else ", ".join(tasks)
            what = [f"ran {_lengths(runs)}"] if runs else []
            what += [f"skipped {_lengths(left_out)}"] if left_out else []
            said.append(f"{who} {', '.join(what) or 'ran none'}")
        return f"Search: {'; '.join(said) or f'ran {ran}'}: {search.why}"
    if search.why:  # decided, yet every case past it ran: for a floor, a baseline, a summary
        kept = "each case past a decision for its floor, its baseline or a summary not yet decided"
        return f"Search: ran every length ({ran}), {kept}: {search.why}"
    return f"Search: ran every length ({ran}); none decided the effective length early"


def sequential_line(report: Report) -> str | None:
    """How many cases --sequential stopped early, what it saved, and what an early mean is."""
    if seq := [c.stop for c in report.cases if c.stop]:
        drawn = sum(c.n for c in report.cases if c.stop)  # every sample scored, in flight too
        budget = sum(s.budget for s in seq)
        early = sum(1 for s in seq if s.early)
        counts = (
            "counts as effective only where RULER's average's own test decided it "
            "(--search-effective-length)"
            if isinstance(report.extras.get(SEARCH_SLOT), SearchRecord)
            else "never counts as effective"
        )
        return (
            f"Sequential (error rate {seq[0].alpha} per case): {early} of {len(seq)} cases "
            f"stopped early; {drawn} samples scored where fixed n takes {budget} "
            f"({budget - drawn} saved). A case stopped early reports an estimate biased by the "
            "stopping (its interval is the confidence sequence, valid at any stop): summaries "
            f"marked ~ average such estimates, and a length with one {counts}"
        )
    return None
