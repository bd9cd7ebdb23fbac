"""LongBench v2's answers to ctxgate's hooks: its task module, metric and data file; its options
(``--longbench2-cot``, ``--longbench2-truncation``), read once into its section of the plan, which
the builder and the reading find and the run's record keeps (a ``--baseline`` run must match); the
chain of thought's two requests per question (a reading); result.py's splits as a report section;
and its published numbers."""

from __future__ import annotations

import importlib.abc
import importlib.resources
from typing import TYPE_CHECKING

from ctxgate.api import hookimpl

from .settings import SECTION, Longbench2Settings

if TYPE_CHECKING:
    from ctxgate.api import (
        Backend,
        DataFile,
        Get,
        Metric,
        ModelSpec,
        OptionGroup,
        Plan,
        Reading,
        Report,
        ReportSection,
        Slot,
    )


@hookimpl
def ctxgate_option_groups() -> list[OptionGroup]:
    return [SECTION.group()]


@hookimpl
def ctxgate_plan_section(get: Get, plan: Plan) -> tuple[str, Longbench2Settings]:
    return SECTION.read(get)


@hookimpl
def ctxgate_plan_lines(plan: Plan) -> list[str]:
    chosen = SECTION.of(plan.extras)
    if chosen == Longbench2Settings():
        return []
    cot = "with chain of thought (two requests per question)" if chosen.cot else "no thought"
    return [f"LongBench v2: {cot}, {chosen.truncation} truncation"]


@hookimpl
def ctxgate_task_modules() -> list[str]:
    return [f"{__package__}.tasks"]


@hookimpl
def ctxgate_metrics() -> list[Metric]:
    from .tasks import LONGBENCH2_CHOICE

    return [LONGBENCH2_CHOICE]


@hookimpl
def ctxgate_data_files() -> list[DataFile]:
    from .records import DATA_FILES

    return list(DATA_FILES)


@hookimpl
def ctxgate_slots() -> list[Slot]:
    return [SECTION.slot()]


@hookimpl
def ctxgate_run_record(plan: Plan) -> dict[str, object]:
    return SECTION.record(plan.extras)


@hookimpl
def ctxgate_reading(spec: ModelSpec, backend: Backend) -> Reading | None:
    """Two requests per question where the chain of thought is asked; else nothing to hold."""
    if not SECTION.of(spec.extras).cot:
        return None
    from .cot import CotReading

    return CotReading()


@hookimpl
def ctxgate_report_sections(report: Report) -> list[ReportSection]:
    from .report import section

    return section(report)


@hookimpl(optionalhook=True)  # the published extra declares it: asked where that is installed
def ctxgate_published_files() -> list[importlib.abc.Traversable]:
    return [importlib.resources.files(__package__) / "published.toml"]
