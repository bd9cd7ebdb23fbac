"""result.py's table per length: Overall, Easy, Hard, Short, Medium, Long, each the share of its
questions answered right. A case keeps, as its metric's parts, the share of its samples in each
split and the share right in it, so each split's count comes back from the case record alone."""

from __future__ import annotations

from collections.abc import Sequence

from ctxgate.api import CaseRecord, Report, ReportSection, format_length

from .settings import NAME, SECTION
from .tasks import SPLITS, TASK

COLUMNS = ("Overall", "Easy", "Hard", "Short", "Medium", "Long")


def counts(case: CaseRecord) -> dict[str, tuple[int, int]]:
    """Each split's (right, questions) in the case; Overall from its score."""
    n = case.n
    found = {"overall": (round((case.score or 0.0) * n / 100), n)}
    for split in SPLITS:
        inside = round(case.parts.get(split, 0.0) * n / 100)
        found[split] = (round(case.parts.get(f"{split}_right", 0.0) * n / 100), inside)
    return found


def _cell(right: int, total: int) -> str:
    return f"{100 * right / total:.1f}" if total else "—"


def section(report: Report) -> list[ReportSection]:
    cases = sorted(
        (c for c in report.cases if c.task == TASK and c.score is not None and c.n),
        key=lambda c: c.length,
    )
    if not cases:
        return []
    rows: list[Sequence[str]] = [("length", *COLUMNS)]
    named: dict[str, str] = {}
    for case in cases:
        found = counts(case)
        rows.append((format_length(case.length), *(_cell(*found[k.lower()]) for k in COLUMNS)))
        for key, (right, total) in found.items():
            if total:
                named[f"longbench2.{key}.{case.length}"] = f"{100 * right / total:.2f}"
    chosen = SECTION.of(report.run.extras)
    how = "with chain of thought" if chosen.cot else "without chain of thought"
    line = (
        f"LongBench v2 ({how}, {chosen.truncation} truncation): result.py's splits, each the share "
        "of its questions answered right (easy/hard: the question's difficulty; short/medium/long: "
        "its context under 32K words, to 128K, beyond)"
    )
    return [ReportSection(NAME, "LongBench v2 splits", (line,), tuple(map(tuple, rows)), named)]
