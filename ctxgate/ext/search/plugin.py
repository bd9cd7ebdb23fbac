"""``--sequential`` and ``--search-effective-length``: their options and plan section, each case's
early stop, RULER's cases drawn together under a search, and the report's lines on both."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ctxgate.api import (
    Get,
    Option,
    OptionError,
    OptionGroup,
    ReportSection,
    Slot,
    hookimpl,
    positive,
    whole,
)

from .records import SEARCH_SLOT, SEQUENTIAL_SLOT, SLOTS, SearchRecord, SequentialSettings

if TYPE_CHECKING:
    import pytest

    from ctxgate.api import EarlyStop, Plan, Report

    from .pytest_plugin import SearchRun

NAME = "search"


def _alpha(text: str) -> float:
    value = positive(text)
    if value >= 0.5:
        raise ValueError("must be between 0 and 0.5")
    return value


# --- --sequential
SEQUENTIAL = Option(
    "--sequential",
    "stop a case as soon as its verdict is certain at --sequential-alpha (a test by betting, "
    "valid however early it stops): the floor verdict under pytest, the regression verdict of a "
    "bisect probe; fewer generations for clear cases; docs/training.md",
    action="store_true",
)
SEQUENTIAL_ALPHA = Option(
    "--sequential-alpha",
    "--sequential: the error rate of each case's early verdict (default %(default)s)",
    default=0.05,
    parse=_alpha,
)
SEQUENTIAL_MIN = Option(
    "--sequential-min",
    "--sequential: never stop a case before this many samples (default %(default)s)",
    default=10,
    parse=whole(1),
)
SEARCH = Option(
    "--search-effective-length",
    "run the lengths shortest first and skip a case once every effective length it counts in "
    "is decided (RULER's: the first length where its average fails its bar, or where it reaches "
    "[session] min_effective_length; each summary's relative one alike, RULER's, HELMET's, the "
    "families'); a case a floor or baseline expects runs anyway; with --sequential, RULER's "
    "average's own test also stops each length's RULER cases; docs/gates.md",
    action="store_true",
)

COST = "ctxgate-cost"
COST_TEXT = "ctxgate cost: stop a case once its verdict is certain, a search once its length is"


@dataclass(frozen=True)
class CostSettings:
    sequential: SequentialSettings | None = None  # None: every case runs its samples
    search: bool = False  # --search-effective-length


def settings(plan: Plan) -> CostSettings:
    found = plan.extras.get(NAME)
    return found if isinstance(found, CostSettings) else CostSettings()


@hookimpl
def ctxgate_option_groups() -> list[OptionGroup]:
    sequential = (SEQUENTIAL, SEQUENTIAL_ALPHA, SEQUENTIAL_MIN)
    return [
        OptionGroup(COST, COST_TEXT, sequential, evaluates=True),
        OptionGroup(COST, COST_TEXT, (SEARCH,)),
    ]


@hookimpl
def ctxgate_slots() -> tuple[Slot, ...]:
    return SLOTS


@hookimpl
def ctxgate_plan_section(get: Get, plan: Plan) -> tuple[str, CostSettings]:
    values = {o.dest: o.read(get(o.dest)) for o in (SEQUENTIAL, SEQUENTIAL_ALPHA, SEQUENTIAL_MIN)}
    search = bool(SEARCH.read(get(SEARCH.dest)))
    sequential = None
    if values["sequential"]:
        sequential = SequentialSettings(values["sequential_alpha"], values["sequential_min"])
    _check(sequential, plan, search)
    return NAME, CostSettings(sequential, search)


def _check(sequential: SequentialSettings | None, plan: Plan, search: bool) -> None:
    """Means that stopped early are biased, so no gate may average them; RULER's average has a
    test of its own under --search-effective-length."""
    thresholds = plan.thresholds
    if sequential is not None and thresholds.min_effective_length and not search:
        raise OptionError(
            f"--sequential cannot check min_effective_length ({thresholds.path}): the effective "
            "length averages RULER's tasks, and an average of means that stopped early is biased, "
            "with no guarantee. Add --search-effective-length (the average's own test decides "
            "each length), drop --sequential, or pass --thresholds with a file whose [session] "
            "min_effective_length is 0"
        )
    if sequential is not None and thresholds.relative_min_length:
        raise OptionError(
            "--sequential cannot check [relative_effective_length.min_length] "
            f"({thresholds.path}): a relative effective length compares averages of means, and "
            "means that stopped early are biased, with no guarantee. Drop --sequential, or pass "
            "--thresholds with a file without that table"
        )


@hookimpl
def ctxgate_run_record(plan: Plan) -> dict[str, SequentialSettings | None]:
    return {SEQUENTIAL_SLOT: settings(plan).sequential}


@hookimpl
def ctxgate_run_plugin(plan: Plan, config: pytest.Config) -> SearchRun | None:
    """The search, as the run goes: it needs the lengths in order, from this one process."""
    if not settings(plan).search or not plan.model.model:
        return None
    if config.getoption("numprocesses", None) or hasattr(config, "workerinput"):
        raise OptionError(
            "--search-effective-length runs the lengths in order, from this one pytest process: "
            "drop -n (the engine batches each case's samples)"
        )
    from .pytest_plugin import SearchRun

    return SearchRun(plan, settings(plan).sequential)


@hookimpl
def ctxgate_case_stop(
    plan: Plan, floor: float | None, baseline: Mapping[int, float] | None, tolerance: float
) -> EarlyStop | None:
    """--sequential asks the case's gate questions; a case with neither runs its full count."""
    from .sequential import Questions, StopRule, early_stop

    sequential = settings(plan).sequential
    questions = Questions(floor, baseline, tolerance)
    if sequential is None or not questions.asked:
        return None
    return early_stop(StopRule(sequential.alpha, sequential.min_samples, None), questions)


@hookimpl
def ctxgate_report_sections(report: Report) -> list[ReportSection]:
    from .lines import search_line, sequential_line

    search = report.extras.get(SEARCH_SLOT)
    lines = [search_line(search, report.cases)] if isinstance(search, SearchRecord) else []
    lines += [line] if (line := sequential_line(report)) else []
    return [ReportSection(NAME, "Search", tuple(lines))] if lines else []
