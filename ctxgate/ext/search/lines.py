"""The report's lines on a search and on cases stopped early."""

from __future__ import annotations

from ctxgate.lengths import format_length
from ctxgate.records.schema import Report, SearchRecord


def search_line(search: SearchRecord) -> str:
    """Which lengths ``--search-effective-length`` ran, and why not the rest."""
    ran = ", ".join(format_length(L) for L in search.ran) or "none"
    if search.skipped:
        skipped = ", ".join(format_length(L) for L in search.skipped)
        return f"Search: ran {ran}; skipped {skipped}: {search.why}"
    if search.why:  # decided, yet every case past it ran: each for its floor or baseline score
        kept = "each case past the decision for its floor or baseline"
        return f"Search: ran every length ({ran}), {kept}: {search.why}"
    return f"Search: ran every length ({ran}); none decided the effective length early"


def sequential_line(report: Report) -> str | None:
    """How many cases --sequential stopped early, what it saved, and what an early mean is."""
    if seq := [c.sequential for c in report.cases if c.sequential]:
        drawn = sum(c.n for c in report.cases if c.sequential)  # every sample scored, in flight too
        budget = sum(s.budget for s in seq)
        early = sum(1 for s in seq if s.early)
        counts = (
            "counts as effective only where RULER's average's own test decided it "
            "(--search-effective-length)"
            if report.search
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
