"""The mrcr2 extra's answers to ctxgate's hooks: its tasks, metrics and data files, its options
(read into its section of the plan, which the builder reads, recorded in the run's record and
required of a ``--baseline`` run alike; the generation budget given to the three tasks), and its
published numbers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import resources
from importlib.abc import Traversable
from typing import TYPE_CHECKING

from ctxgate.api import hookimpl

from .settings import NAME, SECTION, Mrcr2Settings

if TYPE_CHECKING:
    from ctxgate.api import DataFile, Get, Metric, OptionGroup, Plan, Slot


@hookimpl
def ctxgate_option_groups() -> list[OptionGroup]:
    return [SECTION.group()]


@hookimpl
def ctxgate_plan_section(get: Get, plan: Plan) -> tuple[str, Mrcr2Settings]:
    return SECTION.read(get)


@hookimpl
def ctxgate_task_budgets(plan: Plan) -> Mapping[str, int]:
    from .tasks import NEEDLES

    budget = SECTION.of(plan.extras).tokens_to_generate
    return {f"{NAME}_{n}needle": budget for n in NEEDLES}


@hookimpl
def ctxgate_slots() -> list[Slot]:
    return [SECTION.slot()]


@hookimpl
def ctxgate_run_record(plan: Plan) -> dict[str, object]:
    return SECTION.record(plan.extras)


@hookimpl
def ctxgate_task_modules() -> list[str]:
    return [f"{__package__}.tasks"]


@hookimpl
def ctxgate_metrics() -> list[Metric]:
    from .metric import MRCR2_FIRST, MRCR2_RATIO

    return [MRCR2_RATIO, MRCR2_FIRST]


@hookimpl
def ctxgate_data_files() -> list[DataFile]:
    from .corpus import DATA_FILES

    return list(DATA_FILES)


@hookimpl(optionalhook=True)  # the published extra declares it
def ctxgate_published_files() -> Sequence[Traversable]:
    return [resources.files(__package__) / "published.toml"]
