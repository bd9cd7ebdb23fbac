"""``--search-effective-length``: the selected cases run shortest length first; each case's record
goes to the search (``searching.Searching``), which says which cases past the length that decided
every summary they count in are left out, and why (the cases plugin skips them, unless a gate
expects their score). The search needs the lengths in order, so it runs in one process."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from ctxgate.gate.verdicts import score_expected
from ctxgate_plugins.cases import CASE_STATE_KEY, LEFT_OUT_KEY, case_key
from ctxgate_plugins.options import PLAN_KEY, refusals_are_usage_errors
from ctxgate_plugins.reporting import SEARCH_KEY

from .plugin import settings
from .searching import Searching

SEARCHING_KEY = pytest.StashKey[Searching]()


@refusals_are_usage_errors
def pytest_configure(config: pytest.Config) -> None:
    plan = config.stash[PLAN_KEY]
    if settings(plan).search and (
        config.getoption("numprocesses", None) or hasattr(config, "workerinput")
    ):
        raise pytest.UsageError(
            "--search-effective-length runs the lengths in order, from this one pytest process: "
            "drop -n (the engine batches each case's samples)"
        )


# outermost (registered after pytest's own, tryfirst): its code after the yield runs once every
# other plugin, --lf and --ff included, has selected and ordered
@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> Generator[None, None, None]:
    """Shortest length first, and the search begun over the cases selected."""
    yield
    plan = config.stash[PLAN_KEY]
    if not settings(plan).search or not plan.model.model:
        return
    keys = [
        (i, case_key(i.nodeid) if "ctxgate_case" in getattr(i, "fixturenames", ()) else None)
        for i in items
    ]
    items[:] = [i for i, _ in sorted(keys, key=lambda pair: pair[1][1] if pair[1] else 0)]
    searching = Searching(plan.thresholds, [k for _, k in keys if k is not None])
    config.stash[SEARCHING_KEY] = searching
    config.stash[SEARCH_KEY] = searching.summary

    def left_out(task: str, length: int) -> str | None:
        # a case whose score a gate expects (a floor, a baseline score) runs: no gate goes unchecked
        scored = plan.baseline is not None and (task, length) in plan.baseline.cases
        if score_expected(plan.thresholds.floor_for(task, length), scored):
            return None
        return searching.skip(task, length)

    config.stash[LEFT_OUT_KEY] = left_out


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    searching = item.config.stash.get(SEARCHING_KEY, None)
    state = item.stash.get(CASE_STATE_KEY, None)
    if searching is not None and state is not None:
        searching.record(state.record, state.summary)
