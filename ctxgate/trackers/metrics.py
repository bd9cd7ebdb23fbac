"""What a tracker is given: the report's numbers under flat names (the step they belong to: ``ctxgate.steps``).

Names are ``ctxgate/<what>/<length>`` so a tracker groups them per length (``ctxgate/ruler_avg/128K``,
``ctxgate/helmet_recall/32K``, ``ctxgate/case/niah_single_1/8K``); a score without a value (a case that could not
run, a partial category) is left out rather than logged as 0, which would draw a false drop on the curve.
"""

from __future__ import annotations

from typing import Any

from ctxgate.lengths import format_length


def metrics(report: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for case in report.get("cases", []):
        if case.get("score") is not None:
            at = format_length(int(case["length"]))
            out[f"ctxgate/case/{case['task']}/{at}"] = float(case["score"])
            out[f"ctxgate/case_n/{case['task']}/{at}"] = float(case.get("n") or 0)
    for length, groups in (report.get("by_length") or {}).items():
        at = format_length(int(length))
        for group, summary in groups.items():
            if isinstance(summary, dict) and summary.get("score") is not None:
                name = "ruler_avg" if group == "ruler" else group
                out[f"ctxgate/{name}/{at}"] = float(summary["score"])
    effective = (report.get("effective_length") or {}).get("value")
    if effective is not None:
        out["ctxgate/effective_length"] = float(effective)
    for gate in report.get("gates") or []:
        out[f"ctxgate/gate/{gate['name']}"] = 1.0 if gate.get("verdict") == "pass" else 0.0
    return out


def case_table(report: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """The per-case table: columns and rows, for a tracker's table view."""
    columns = ["task", "length", "score", "n", "floor", "verdict", "fill_min", "message"]
    rows = [[c.get(k) for k in columns] for c in report.get("cases", [])]
    return columns, rows
