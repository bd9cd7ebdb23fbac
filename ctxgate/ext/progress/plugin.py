"""``--progress``: the live line's option, read into the plan, and the run plugin that draws it
(``pytest_plugin.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxgate.api import Get, Option, OptionGroup, Plan, hookimpl

if TYPE_CHECKING:
    import pytest

NAME = "progress"
PROGRESS = Option(
    "--progress",
    "auto (default): a live line with each worker's case, samples done, tokens/s and ETA, when "
    "the output is a terminal; off: never",
    default="auto",
    choices=("auto", "off"),
)


@hookimpl
def ctxgate_option_groups() -> list[OptionGroup]:
    return [OptionGroup("ctxgate", "", (PROGRESS,))]


@hookimpl
def ctxgate_plan_section(get: Get, plan: Plan) -> tuple[str, str]:
    return NAME, PROGRESS.read(get(PROGRESS.dest))


@hookimpl
def ctxgate_run_plugin(plan: Plan, config: pytest.Config) -> object | None:
    from .pytest_plugin import run_plugin

    return run_plugin(plan, config, shown=plan.extras.get(NAME, PROGRESS.default) != "off")
