"""The families' tasks, metrics and data files, as the spine's registries take them, and the
report's count of NoLiMa-style answers that named more than one character."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxgate.api import ReportSection, hookimpl

if TYPE_CHECKING:
    from ctxgate.api import DataFile, Metric, Report


@hookimpl
def ctxgate_task_modules() -> list[str]:
    return [f"{__package__}.{name}" for name in ("mrcr", "babilong", "nolima")]


@hookimpl
def ctxgate_metrics() -> list[Metric]:
    from .metrics import BABILONG_MATCH, MRCR_RATIO, NOLIMA_CONTAINS, NOLIMA_ONE_NAME

    return [NOLIMA_ONE_NAME, NOLIMA_CONTAINS, BABILONG_MATCH, MRCR_RATIO]


@hookimpl
def ctxgate_data_files() -> list[DataFile]:
    from . import babilong_files, mrcr_files, nolima_files

    return [f for reader in (babilong_files, mrcr_files, nolima_files) for f in reader.DATA_FILES]


@hookimpl
def ctxgate_report_sections(report: Report) -> list[ReportSection]:
    """How many NoLiMa-style answers named another of the record's characters (each scored 0)."""
    from .metrics import NAMED_OTHERS

    cases = [c for c in report.cases if NAMED_OTHERS in c.parts]
    named = sum(round(c.parts[NAMED_OTHERS] * c.n / 100) for c in cases)
    if not named:
        return []
    line = (
        f"NoLiMa-style: {named} of {sum(c.n for c in cases)} answers named another of the "
        "record's characters, each scored 0 (NoLiMa's own rule: ctxgate rescore "
        "REPORT.predictions.jsonl --metric nolima_contains)"
    )
    return [ReportSection("families", "NoLiMa-style names", (line,))]
