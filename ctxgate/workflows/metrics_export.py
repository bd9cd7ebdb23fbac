"""OpenMetrics text of a report (GitLab's ``metrics`` report, Prometheus' textfile collector)."""

from __future__ import annotations

import argparse
from typing import Any

from ctxgate.records.schema import Report


def _labels(**labels: Any) -> str:
    def esc(v: Any) -> str:
        return str(v).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    return "{" + ",".join(f'{k}="{esc(v)}"' for k, v in labels.items()) + "}"


def openmetrics(report: Report) -> str:
    model = report.run.model
    lines = [
        "# TYPE ctxgate_case_score gauge",
        "# UNIT ctxgate_case_score percent",
        "# HELP ctxgate_case_score Score of one task at one input length.",
    ]
    for c in report.cases:
        if c.score is not None:
            lines.append(
                f"ctxgate_case_score{_labels(model=model, task=c.task, length=c.length)} {c.score}"
            )
    lines += [
        "# TYPE ctxgate_category_score gauge",
        "# HELP ctxgate_category_score Category score per length.",
    ]
    for length, groups in report.by_length.items():
        for key, group in groups.items():
            if group.score is not None:
                lines.append(
                    f"ctxgate_category_score{_labels(model=model, category=key, length=length)} "
                    f"{group.score}"
                )
    if eff := report.effective_length:
        lines += [
            "# TYPE ctxgate_effective_length gauge",
            "# HELP ctxgate_effective_length RULER effective length.",
            f"ctxgate_effective_length{_labels(model=model)} {eff.value}",
        ]
    if report.relative_effective_length:
        lines += [
            "# TYPE ctxgate_relative_effective_length gauge",
            "# HELP ctxgate_relative_effective_length A summary's effective length against its "
            "own short-context "
            "score.",
        ]
        lines += [
            f"ctxgate_relative_effective_length{_labels(model=model, summary=name)} "
            f"{relative.value}"
            for name, relative in report.relative_effective_length.items()
        ]
    failed = sum(1 for c in report.cases if c.verdict == "fail")
    unscored = sum(1 for c in report.cases if c.verdict == "error")
    lines += [
        "# TYPE ctxgate_failed_cases gauge",
        f"ctxgate_failed_cases{_labels(model=model)} {failed}",
        "# TYPE ctxgate_unscored_cases gauge",
        "# HELP ctxgate_unscored_cases Selected cases without a score (error, crashed worker, not "
        "run).",
        f"ctxgate_unscored_cases{_labels(model=model)} {unscored}",
        "# TYPE ctxgate_complete gauge",
        "# HELP ctxgate_complete 1 when every selected case finished.",
        f"ctxgate_complete{_labels(model=model)} {int(report.complete)}",
        "# EOF",
    ]
    return "\n".join(lines) + "\n"


def add_parser(sub: argparse._SubParsersAction) -> None:
    m = sub.add_parser("metrics", help="print a report as OpenMetrics text (GitLab metrics report)")
    m.add_argument("report")
    m.set_defaults(fn=main)


def main(args: argparse.Namespace) -> int:
    from ctxgate.records.io import read_report

    print(openmetrics(read_report(args.report)), end="")
    return 0
