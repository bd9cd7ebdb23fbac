"""``ctxgate published [MODEL] [--report REPORT.json]``: the models the papers cover, a model's
published numbers, or a stored report against them; exit status 0: information, not a gate."""

from __future__ import annotations

import argparse
from pathlib import Path

from ctxgate.api import CtxgateError, format_length, read_report
from ctxgate.ext.published.compare import compare, measure_label
from ctxgate.ext.published.lines import published_lines
from ctxgate.ext.published.records import Reference
from ctxgate.ext.published.scores import all_published, resolve, rows_for


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "published", help="the papers' published scores; a stored report against a model's"
    )
    p.add_argument(
        "model", nargs="?", help="an id (meta-llama/Llama-3.1-8B-Instruct) or a paper's row label"
    )
    p.add_argument("--report", help="a report written by --report, to compare with MODEL's numbers")
    p.set_defaults(fn=main)


def main(args: argparse.Namespace) -> int:
    if args.model is None:
        if args.report:
            raise CtxgateError("--report needs a MODEL to compare with")
        seen: dict[str, dict[str, list[str]]] = {}
        for p in all_published():
            name = f"{p.source.paper.split(' ')[0]} {p.label}"
            seen.setdefault(p.model, {}).setdefault(name, []).append(p.source.table.split(" (")[0])
        for model, where in sorted(seen.items(), key=lambda kv: kv[0].lower()):
            said = "; ".join(
                f"{name}: {', '.join(dict.fromkeys(tables))}" for name, tables in where.items()
            )
            print(f"{model:<50}{said}")
        return 0
    model = resolve(args.model)
    if args.report is None:
        for p in rows_for(model):
            scores = ", ".join(f"{format_length(L)} {s:.1f}" for L, s in sorted(p.scores.items()))
            bar = f" (above {p.effective_bar})" if p.effective_bar else ""
            extra = f"; effective {p.effective}{bar} of claimed {p.claimed}" if p.effective else ""
            source = f"{p.source.paper}, {p.source.table}"
            print(f"{measure_label(p.measure)} ({source}): {scores}{extra}")
        return 0
    report = read_report(Path(args.report))
    rows = compare(report, rows_for(model))
    if not rows:
        have = ", ".join(format_length(L) for L in report.length_summaries) or "none"
        print(
            f"{args.report} has no length the papers give for {model} (it has {have}; RULER's "
            "are 4K-128K)"
        )
        return 0
    print("\n".join(published_lines(Reference(model, "ctxgate published", tuple(rows)))))
    return 0
