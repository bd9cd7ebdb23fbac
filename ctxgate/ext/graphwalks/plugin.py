"""GraphWalks' answers to ctxgate's hooks: its task modules, metrics and data files, its option
(``--graphwalks-bfs-wording``, read by the builders from its section of the plan, recorded in the
run's record and required of a ``--baseline`` alike), and its published scores."""

from __future__ import annotations

import importlib.abc
import importlib.resources
from typing import TYPE_CHECKING

from ctxgate.api import Get, Option, OptionGroup, Plan, Slot, hookimpl

from .prompt import ORIGINAL, WORDINGS
from .settings import NAME, GraphwalksSettings

if TYPE_CHECKING:
    from ctxgate.api import DataFile, Metric

WORDING = Option(
    "--graphwalks-bfs-wording",
    "the BFS operation's words in GraphWalks prompts: as the dataset wrote them ('with depth N'), "
    "or NeMo-Skills' rewording, 'and return only the nodes at exactly depth N (not nodes at "
    "intermediate depths)' (default %(default)s)",
    default=ORIGINAL,
    choices=WORDINGS,
)


@hookimpl
def ctxgate_option_groups() -> list[OptionGroup]:
    return [OptionGroup("graphwalks", "GraphWalks: BFS and parents", (WORDING,), evaluates=True)]


@hookimpl
def ctxgate_plan_section(get: Get, plan: Plan) -> tuple[str, GraphwalksSettings]:
    return NAME, GraphwalksSettings(WORDING.read(get(WORDING.dest)))


@hookimpl
def ctxgate_slots() -> list[Slot]:
    return [Slot(NAME, "run", GraphwalksSettings, baseline=WORDING.flag)]


@hookimpl
def ctxgate_run_record(plan: Plan) -> dict[str, object]:
    """The settings where they are not the defaults (a run that leaves them says nothing, as one
    without this extra; a baseline without the slot ran at the defaults)."""
    chosen = plan.extras.get(NAME)
    return {NAME: None if chosen == GraphwalksSettings() else chosen}


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
