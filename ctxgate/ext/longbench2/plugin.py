"""LongBench v2's answers to ctxgate's hooks: its task module, metric and data file; its options
(``--longbench2-cot``, ``--longbench2-truncation``), read once into its section of the plan, which
the builder and the reading find and the run's record keeps (a ``--baseline`` run must match); the
chain of thought's two requests per question (a reading); result.py's splits as a report section;
and its published numbers."""

from __future__ import annotations

import importlib.abc
import importlib.resources
from typing import TYPE_CHECKING

from ctxgate.api import Option, OptionGroup, Slot, hookimpl

from .settings import FILL, NAME, REFERENCE, TRUNCATIONS, Longbench2Settings, settings_of

if TYPE_CHECKING:
    from ctxgate.api import (
        Backend,
        DataFile,
        Get,
        Metric,
        ModelSpec,
        Plan,
        Reading,
        Report,
        ReportSection,
    )

COT = Option(
    "--longbench2-cot",
    "LongBench v2 with chain of thought, as pred.py's --cot: the 0shot_cot prompt with 1024 new "
    "tokens, then 0shot_cot_ans with the thought and 128 (two requests per question)",
    action="store_true",
)
TRUNCATION = Option(
    "--longbench2-truncation",
    f"how a LongBench v2 prompt is cut in its middle: {REFERENCE}, to pred.py's max_len in "
    f"proportion to the length (120000 at 128K); {FILL}, to all the length rule leaves "
    "(default %(default)s)",
    default=REFERENCE,
    choices=TRUNCATIONS,
)


@hookimpl
def ctxgate_option_groups() -> list[OptionGroup]:
    return [OptionGroup("ctxgate-longbench2", "LongBench v2", (COT, TRUNCATION), evaluates=True)]


@hookimpl
def ctxgate_plan_section(get: Get, plan: Plan) -> tuple[str, Longbench2Settings]:
    cot = bool(COT.read(get(COT.dest)))
    return NAME, Longbench2Settings(cot, str(TRUNCATION.read(get(TRUNCATION.dest))))


@hookimpl
def ctxgate_plan_lines(plan: Plan) -> list[str]:
    chosen = settings_of(plan.extras)
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
    flags = f"{COT.flag} and {TRUNCATION.flag}"
    return [Slot(NAME, "run", Longbench2Settings, baseline=flags)]


@hookimpl
def ctxgate_run_record(plan: Plan) -> dict[str, object]:
    """The settings where they are not the defaults (a run that leaves them says nothing, as one
    without this extra; a baseline without the slot ran at the defaults)."""
    chosen = settings_of(plan.extras)
    return {NAME: None if chosen == Longbench2Settings() else chosen}


@hookimpl
def ctxgate_reading(spec: ModelSpec, backend: Backend) -> Reading | None:
    """Two requests per question where the chain of thought is asked; else nothing to hold."""
    if not settings_of(spec.extras).cot:
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
