"""``ctxgate metrics REPORT``: OpenMetrics text of a report (GitLab's ``metrics`` report,
Prometheus' textfile collector)."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

from ctxgate.api import Report

Samples = Iterable[tuple[dict[str, Any], object]]  # (labels besides the model, value)


def _labels(**labels: Any) -> str:
    def esc(v: Any) -> str:
        return str(v).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    return "{" + ",".join(f'{k}="{esc(v)}"' for k, v in labels.items()) + "}"


def openmetrics(report: Report) -> str:
    model = report.run.model

    def gauge(name: str, about: str, samples: Samples) -> list[str]:
        """A gauge's header and its samples; one without a value (no score) is left out."""
        lines = [f"# TYPE ctxgate_{name} gauge"]
        if about:
            lines.append(f"# HELP ctxgate_{name} {about}")
        return lines + [
            f"ctxgate_{name}{_labels(model=model, **k)} {v}" for k, v in samples if v is not None
        ]

    cases = [({"task": c.task, "length": c.length}, c.score) for c in report.cases]
    lines = gauge("case_score", "Score of one task at one input length.", cases)
    lines.insert(1, "# UNIT ctxgate_case_score percent")
    categories = [
        ({"category": key, "length": length}, group.score)
        for length, groups in report.by_length.items()
        for key, group in groups.items()
    ]
    lines += gauge("category_score", "Category score per length.", categories)
    if eff := report.effective_length:
        lines += gauge("effective_length", "RULER effective length.", [({}, eff.value)])
    if relative := report.relative_effective_length:
        lines += gauge(
            "relative_effective_length",
            "A summary's effective length against its own short-context score.",
            [({"summary": name}, r.value) for name, r in relative.items() if not r.why],
        )
    lines += gauge("failed_cases", "", [({}, sum(c.verdict == "fail" for c in report.cases))])
    unscored = sum(c.verdict == "error" for c in report.cases)
    lines += gauge(
        "unscored_cases",
        "Selected cases without a score (error, crashed worker, not run).",
        [({}, unscored)],
    )
    lines += gauge("complete", "1 when every selected case finished.", [({}, int(report.complete))])
    return "\n".join([*lines, "# EOF"]) + "\n"


def add_parser(sub: argparse._SubParsersAction) -> None:
    m = sub.add_parser("metrics", help="print a report as OpenMetrics text (GitLab metrics report)")
    m.add_argument("report")
    m.set_defaults(fn=main)


def main(args: argparse.Namespace) -> int:
    from ctxgate.api import read_report

    print(openmetrics(read_report(args.report)), end="")
    return 0
