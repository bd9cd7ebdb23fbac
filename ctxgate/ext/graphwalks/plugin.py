"""GraphWalks' answers to ctxgate's hooks: its task modules, metrics and data files, its option
(``--graphwalks-bfs-wording``, read by the builders from its section of the plan, recorded in the
run's record and required of a ``--baseline`` alike), and its published scores."""

from __future__ import annotations

import importlib.abc
import importlib.resources
from typing import TYPE_CHECKING

from ctxgate.api import hookimpl

from .settings import SECTION, GraphwalksSettings

if TYPE_CHECKING:
    from ctxgate.api import DataFile, Get, Metric, OptionGroup, Plan, Slot


@hookimpl
def ctxgate_option_groups() -> list[OptionGroup]:
    return [SECTION.group()]


@hookimpl
def ctxgate_plan_section(get: Get, plan: Plan) -> tuple[str, GraphwalksSettings]:
    return SECTION.read(get)


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
    from .grader import METRICS

    return list(METRICS)


@hookimpl
def ctxgate_data_files() -> list[DataFile]:
    from .files import DATA_FILES

    return list(DATA_FILES)


@hookimpl(optionalhook=True)  # the published extra declares it: asked where that is installed
def ctxgate_published_files() -> list[importlib.abc.Traversable]:
    return [importlib.resources.files(__package__) / "published.toml"]
