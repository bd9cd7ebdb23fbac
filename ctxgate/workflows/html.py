"""``ctxgate html REPORT.json [--baseline OLD.json] [--trend REPORTS...] -o FILE``: the HTML report drawn from stored
reports, without a model: the run (with its samples from the predictions file beside it), the paired comparison
with a baseline and the samples that flipped, and the trend over several reports."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from ctxgate.gate.baseline import BaselineError, comparison_entry, describe
from ctxgate.gate.thresholds import ThresholdsError, thresholds_here
from ctxgate.records.io import ReportFileError, atomic_write_all, predictions_path, read_predictions, read_report
from ctxgate.records.schema import Report
from ctxgate.report.page import PageInput, render
from ctxgate.run.options import THRESHOLDS
from ctxgate.tasks.registry import task_names
from ctxgate.workflows.diff import diff_reports
from ctxgate.workflows.trend import load_points


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("html", help="draw the HTML report of a stored report (no model needed)")
    p.add_argument("report", help="a report written by --report, with its .predictions.jsonl beside it")
    p.add_argument("--baseline", default=None, help="a report to compare with, paired, as --baseline does")
    p.add_argument("--trend", nargs="+", default=(), metavar="REPORT", help="reports of several checkpoints")
    THRESHOLDS.add_to(p)  # the tolerances of the comparison, found as pytest finds them
    p.add_argument("-o", "--output", default=None, help="where to write it (default: the report's .html)")
    p.set_defaults(fn=main)


def build(args: argparse.Namespace) -> str:
    path = Path(args.report)
    report = read_report(path)
    if not report.cases:
        raise ReportFileError(
            f"{path} has no cases (its run selected none), so there is nothing to draw: pass the report of a run "
            "that ran cases"
        )
    rows = _rows(path, report)
    baseline_rows: list[dict[str, Any]] = []
    if args.baseline:
        thresholds = thresholds_here(args.thresholds, task_names())
        diff = diff_reports(args.baseline, str(path), thresholds)
        compared = {(r.task, r.length): r for r in diff.rows if r.result is not None}
        confidence = thresholds.regression_confidence
        cases = []
        for case in report.cases:
            row = compared.get((case.task, case.length))
            if row is not None and row.result is not None:
                message = describe(row.result, row.tolerance)
                regressed = row.verdict == "REGRESSED"
                entry = comparison_entry(row.result, row.tolerance, confidence, regressed, message)
                case = replace(case, baseline=entry)
            cases.append(case)
        report = replace(report, cases=tuple(cases))
        baseline_rows = _rows(Path(args.baseline), read_report(Path(args.baseline)))
    trend = load_points(args.trend) if args.trend else []
    return render(PageInput(report, rows, baseline_rows, args.baseline, trend, path.name))


def _rows(path: Path, report: Report) -> list[dict[str, Any]]:
    predictions = predictions_path(path, report)
    return read_predictions(predictions) if predictions.is_file() else []


def main(args: argparse.Namespace) -> int:
    try:
        page = build(args)
    except (ReportFileError, BaselineError, ThresholdsError) as exc:
        print(f"ctxgate html: {exc}", file=sys.stderr)
        return 2
    out = Path(args.output) if args.output else Path(args.report).with_suffix(".html")
    try:
        atomic_write_all({out: page})
    except OSError as exc:
        print(f"ctxgate html: cannot write {out} ({exc.strerror or exc}): pass a writable -o FILE", file=sys.stderr)
        return 2
    print(out)
    return 0
