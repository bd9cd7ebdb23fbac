"""``ctxgate diff BASE.json NEW.json``: the baseline gate's paired comparison, as a table. A case
only the baseline scored is MISSING and fails like a regression (a report that lost cases must never
compare as "same"); one only the new run scored is named in a note and fails nothing."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from ctxgate.gate.baseline import BaselineError, load_baseline
from ctxgate.gate.thresholds import Thresholds, thresholds_here
from ctxgate.gate.verdicts import not_in_baseline
from ctxgate.lengths import format_length
from ctxgate.run.options import THRESHOLDS
from ctxgate.stats.paired import PairedResult
from ctxgate.tasks.registry import task_names


@dataclass(frozen=True)
class DiffRow:
    task: str
    length: int
    result: PairedResult | None  # None: the new run has no score for a case the baseline scored
    tolerance: float
    missing: str = ""  # why the new run has no score

    @property
    def verdict(self) -> str:
        if self.result is None:
            return "MISSING"
        if self.result.regressed(self.tolerance):
            return "REGRESSED"
        if self.result.low > self.tolerance:
            return "improved"
        return "same"


@dataclass(frozen=True)
class Diff:
    rows: tuple[DiffRow, ...]
    notes: tuple[str, ...]  # incomplete sides, said in words
    failed: bool  # a regression, a missing case, or an incomplete new run


def diff_reports(base_path: str, new_path: str, thresholds: Thresholds) -> Diff:
    base, new = load_baseline(base_path), load_baseline(new_path)
    base.check_run(new.run)
    rows = []
    for key in sorted(set(base.cases) & set(new.cases)):
        case = new.cases[key]
        result = base.compare_case(
            *key, case.data_sha256, case.scores, thresholds.regression_confidence
        )
        if result is not None:
            rows.append(DiffRow(*key, result, thresholds.tolerance_for(*key)))
    for t, L in sorted(set(base.cases) - set(new.cases)):  # scored by the baseline only
        why = new.unscored.get((t, L)) or new.skipped.get((t, L), "not in the new run")
        rows.append(DiffRow(t, L, None, thresholds.tolerance_for(t, L), why))
    if not rows:
        raise BaselineError(
            f"{base_path} and {new_path} have no case in common: run the same tasks and lengths"
        )
    notes = []
    if new.incompleteness():
        notes.append(f"NEW {new.incompleteness()}: it cannot pass")
    if base.incompleteness():
        notes.append(f"BASE {base.incompleteness()}: those cases are not compared")
    # scored by the new run only; those BASE left unscored are said above
    if only_new := sorted(set(new.cases) - set(base.cases) - set(base.unscored)):
        notes.append(f"NEW: {not_in_baseline([f'{t}-{L}' for t, L in only_new], 'not compared')}")
    failed = bool(new.incompleteness()) or any(r.verdict in ("REGRESSED", "MISSING") for r in rows)
    return Diff(tuple(sorted(rows, key=lambda r: (r.task, r.length))), tuple(notes), failed)


def render(diff: Diff, markdown: bool, confidence: float) -> str:
    header = "task length base new delta".split()
    header += [f"{int(confidence * 100)}% interval", "n", "tolerance", "verdict"]
    body = []
    for r in diff.rows:
        p, numbers = r.result, ["", "", "", "", ""]  # no numbers where the new run has no score
        if p is not None:
            numbers = [f"{p.baseline:.1f}", f"{p.current:.1f}", f"{p.delta:+.1f}"]
            numbers += [f"{p.low:+.1f} .. {p.high:+.1f}", str(p.n)]
        verdict = r.verdict if p is not None else f"MISSING ({r.missing})"
        body.append([r.task, format_length(r.length), *numbers, f"{r.tolerance:.1f}", verdict])
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        table = "\n".join(lines + ["| " + " | ".join(b) + " |" for b in body]) + "\n"
        return table + "".join(f"\n- {n}" for n in diff.notes) + ("\n" if diff.notes else "")
    widths = [max(len(x[i]) for x in [header, *body]) for i in range(len(header))]
    rows = ["  ".join(c.ljust(w) for c, w in zip(row, widths)) + "\n" for row in [header, *body]]
    return "".join(rows) + "".join(f"{n}\n" for n in diff.notes)


def add_parser(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser(
        "diff", help="compare two reports case by case, paired (exit 1 on a regression)"
    )
    d.add_argument("base", help="the baseline report (with its .predictions.jsonl beside it)")
    d.add_argument("new", help="the report to compare")
    THRESHOLDS.add_to(d)  # the tolerances of the comparison, found as pytest finds them
    d.add_argument("--markdown", action="store_true", help="print a Markdown table")
    d.set_defaults(fn=main)


def main(args: argparse.Namespace) -> int:
    thresholds = thresholds_here(args.thresholds, task_names())
    diff = diff_reports(args.base, args.new, thresholds)
    print(render(diff, args.markdown, thresholds.regression_confidence), end="")
    return 1 if diff.failed else 0
