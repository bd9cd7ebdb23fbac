"""RULERv2's tasks, metrics, data files, option and published numbers, for the spine's registries.
``--ruler2-tokens-to-generate`` is read into the plan's ``ruler2`` section, gives the twelve tasks
their generation budget and is recorded in the run, so a baseline with another budget is refused."""

from __future__ import annotations

import importlib.resources
from collections.abc import Mapping
from importlib.abc import Traversable
from typing import TYPE_CHECKING

from ctxgate.api import hookimpl

from .settings import SECTION, Ruler2Settings

if TYPE_CHECKING:
    from ctxgate.api import DataFile, Get, Metric, OptionGroup, Plan, Slot


@hookimpl
def ctxgate_task_modules() -> list[str]:
    return [f"{__package__}.tasks"]


@hookimpl
def ctxgate_metrics() -> list[Metric]:
    from .metrics import METRICS

    return list(METRICS)


@hookimpl
def ctxgate_data_files() -> list[DataFile]:
    from .files import DATA_FILES

    return list(DATA_FILES)


@hookimpl
def ctxgate_option_groups() -> list[OptionGroup]:
    return [SECTION.group()]


@hookimpl
def ctxgate_plan_section(get: Get, plan: Plan) -> tuple[str, Ruler2Settings]:
    return SECTION.read(get)


@hookimpl
def ctxgate_task_budgets(plan: Plan) -> Mapping[str, int]:
    from .tasks import specs

    budget = SECTION.of(plan.extras).tokens_to_generate
    return {spec.name: budget for spec in specs()}


@hookimpl
def ctxgate_slots() -> list[Slot]:
    return [SECTION.slot()]


@hookimpl
def ctxgate_run_record(plan: Plan) -> dict[str, object]:
    return SECTION.record(plan.extras)


@hookimpl
def ctxgate_published_files() -> list[Traversable]:
    """Answered where the published extra declares the hook."""
    return [importlib.resources.files(__package__) / "published.toml"]
