"""``ctxgate diff BASE.json NEW.json``: the baseline gate's paired comparison, as a table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ctxgate.baseline import BaselineError, load_baseline
from ctxgate.lengths import format_length
from ctxgate.paired import PairedResult
from ctxgate.thresholds import Thresholds


@dataclass(frozen=True)
class DiffRow:
    task: str
    length: int
    result: PairedResult
    tolerance: float

    @property
    def verdict(self) -> str:
        if self.result.regressed(self.tolerance):
            return "REGRESSED"
        if self.result.low > self.tolerance:
            return "improved"
        return "same"


def diff_reports(base_path: str, new_path: str, thresholds: Thresholds) -> list[DiffRow]:
    base, new = load_baseline(base_path), load_baseline(new_path)
    base.check_run(new.run)
    rows = []
    for key in sorted(set(base.cases) & set(new.cases)):
        case = new.cases[key]
        result = base.compare_case(case.task, case.length, case.data_sha256, case.scores,
                                   thresholds.regression_confidence)
        if result is not None:
            rows.append(DiffRow(case.task, case.length, result, thresholds.tolerance_for(case.task, case.length)))
    if not rows:
        raise BaselineError(f"{base_path} and {new_path} have no case in common: run the same tasks and lengths")
    return rows


def render(rows: Sequence[DiffRow], markdown: bool, confidence: float) -> str:
    header = ["task", "length", "base", "new", "delta", f"{int(confidence * 100)}% interval", "n", "tolerance",
              "verdict"]
    body = [[r.task, format_length(r.length), f"{r.result.baseline:.1f}", f"{r.result.current:.1f}",
             f"{r.result.delta:+.1f}", f"{r.result.low:+.1f} .. {r.result.high:+.1f}", str(r.result.n),
             f"{r.tolerance:.1f}", r.verdict] for r in rows]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(b) + " |" for b in body]) + "\n"
    widths = [max(len(x[i]) for x in [header, *body]) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in [header, *body]) + "\n"



