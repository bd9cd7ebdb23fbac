"""``ctxgate html REPORT.json [--baseline OLD.json] [--trend REPORTS...] -o FILE``: the HTML report
drawn from stored reports (and the predictions beside them), without a model."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from ctxgate.api import (
    BASELINE,
    THRESHOLDS,
    CtxgateError,
    Prediction,
    Report,
    ReportFileError,
    atomic_write_all,
    comparison_entry,
    describe_comparison,
    diff_reports,
    load_points,
    predictions_path,
    read_predictions,
    read_report,
    task_names,
    thresholds_here,
)
from ctxgate.ext.html.page import PageInput, render


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("html", help="draw the HTML report of a stored report (no model needed)")
    p.add_argument(
        "report", help="a report written by --report, with its .predictions.jsonl beside it"
    )
    BASELINE.add_to(p)
    p.add_argument(
        "--trend", nargs="+", default=(), metavar="REPORT", help="reports of several checkpoints"
    )
    THRESHOLDS.add_to(p)  # the tolerances of the comparison, found as pytest finds them
    p.add_argument("-o", "--output", help="where to write it (default: the report's .html)")
    p.set_defaults(fn=main)


def build(args: argparse.Namespace) -> str:
    path = Path(args.report)
    report = read_report(path)
    if not report.cases:
        raise ReportFileError(
            f"{path} has no cases (its run selected none), so there is nothing to draw: pass the "
            "report of a run that ran cases"
        )
    rows = _rows(path, report)
    baseline_rows: list[Prediction] = []
    # a --thresholds given is checked with or without --baseline (a mistake is said at once); a page
    # without a comparison needs no thresholds, so a broken file found on the way does not stop it
    if args.thresholds or args.baseline:
        thresholds = thresholds_here(args.thresholds, task_names())
    if args.baseline:
        diff = diff_reports(args.baseline, str(path), thresholds)
        confidence = thresholds.regression_confidence
        entries = {  # each compared case's entry, as a run with --baseline records it
            (r.task, r.length): comparison_entry(
                r.result,
                r.tolerance,
                confidence,
                r.verdict == "REGRESSED",
                describe_comparison(r.result, r.tolerance),
            )
            for r in diff.rows
            if r.result is not None
        }
        cases = tuple(
            replace(c, baseline=entries.get((c.task, c.length), c.baseline)) for c in report.cases
        )
        report = replace(report, cases=cases)
        baseline_rows = _rows(Path(args.baseline), read_report(Path(args.baseline)))
    trend = load_points(args.trend) if args.trend else []
    return render(PageInput(report, rows, baseline_rows, args.baseline, trend, path.name))


def _rows(path: Path, report: Report) -> list[Prediction]:
    predictions = predictions_path(path, report)
    return read_predictions(predictions) if predictions.is_file() else []


def main(args: argparse.Namespace) -> int:
    page = build(args)
    out = Path(args.output) if args.output else Path(args.report).with_suffix(".html")
    try:
        atomic_write_all({out: page})
    except OSError as exc:
        raise CtxgateError(
            f"cannot write {out} ({exc.strerror or exc}): pass a writable -o FILE"
        ) from None
    print(out)
    return 0
