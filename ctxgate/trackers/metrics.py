"""What a tracker is given: the report's numbers as ``ctxgate/<what>/<length>``. A score without a
value is left out: a 0 would draw a false drop on the curve."""

from __future__ import annotations

from typing import Any

from ctxgate.lengths import format_length
from ctxgate.records.schema import Report


def metrics(report: Report) -> dict[str, float]:
    out: dict[str, float] = {}
    for case in report.cases:
        if case.score is not None:
            at = format_length(case.length)
            out[f"ctxgate/case/{case.task}/{at}"] = float(case.score)
            out[f"ctxgate/case_n/{case.task}/{at}"] = float(case.n)
    for length, groups in report.length_summaries.items():
        at = format_length(length)
        for group, summary in groups.items():
            if summary.score is not None:
                name = "ruler_avg" if group == "ruler" else group
                out[f"ctxgate/{name}/{at}"] = float(summary.score)
    if report.effective_length is not None:
        out["ctxgate/effective_length"] = float(report.effective_length.value)
    for name, relative in report.relative_effective_length.items():
        out[f"ctxgate/relative_effective_length/{name}"] = float(relative.value)
    for gate in report.gates:
        out[f"ctxgate/gate/{gate.name}"] = 1.0 if gate.verdict == "pass" else 0.0
    return out


def case_table(report: Report) -> tuple[list[str], list[list[Any]]]:
    """The per-case table: columns and rows, for a tracker's table view."""
    columns = ["task", "length", "score", "n", "floor", "verdict", "fill_min", "message"]
    return columns, [[getattr(c, k) for k in columns] for c in report.cases]
