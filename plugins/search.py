"""``--search-effective-length``: the selected cases run shortest length first, and a case past the
length that decided every summary it counts in is skipped, saying which length decided it and why
(``gate.search.Searching``), unless a gate expects its score. The search needs the lengths in order,
so it runs in one process."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace

import pytest

from ctxgate.gate.search import Searching
from ctxgate.records.schema import Cost
from ctxgate.tasks.registry import get_task

from .cases import CASE_STATE_KEY, LEFT_OUT_KEY, CaseState, case_key, new_record, no_score
from .options import PLAN_KEY, refusals_are_usage_errors

SEARCH_KEY = pytest.StashKey[Searching]()


@refusals_are_usage_errors
def pytest_configure(config: pytest.Config) -> None:
    plan = config.stash[PLAN_KEY]
    if plan.search and (config.getoption("numprocesses", None) or hasattr(config, "workerinput")):
        raise pytest.UsageError(
            "--search-effective-length runs the lengths in order, from this one pytest process: "
            "drop -n (the engine batches each case's samples)"
        )


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> Generator[None, None, None]:
    """After every plugin has selected and ordered: shortest length first, the search begun."""
    yield
    plan = config.stash[PLAN_KEY]
    if not plan.search or not plan.model.model:
        return
    keys = [(i, case_key(i.nodeid)) for i in items]
    items[:] = [i for i, _ in sorted(keys, key=lambda pair: pair[1][1] if pair[1] else 0)]
    searching = Searching(plan.thresholds, [k for _, k in keys if k is not None])
    config.stash[SEARCH_KEY] = searching

    def left_out(task: str, length: int) -> str | None:
        # a case whose score a gate expects (a floor, a baseline score) runs: no gate goes unchecked
        if plan.thresholds.floor_for(task, length):
            return None
        if plan.baseline is not None and (task, length) in plan.baseline.cases:
            return None
        return searching.skip(task, length)

    config.stash[LEFT_OUT_KEY] = left_out


@pytest.hookimpl(tryfirst=True)  # before any fixture: a case skipped loads nothing
def pytest_runtest_setup(item: pytest.Item) -> None:
    left_out, key = item.config.stash.get(LEFT_OUT_KEY, None), case_key(item.nodeid)
    if left_out is None or key is None or (why := left_out(*key)) is None:
        return
    plan = item.config.stash[PLAN_KEY]
    item.config.stash[SEARCH_KEY].skipped.add(key[1])
    state = item.stash.setdefault(CASE_STATE_KEY, CaseState(new_record(*key, plan.thresholds)))
    n = plan.samples or get_task(key[0]).default_samples
    saved = Cost(saved_generations=n, saved_prompt_tokens=n * key[1])
    state.record = replace(state.record, cost=saved)
    no_score(state, "search_stopped", why, plan.baseline)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    searching = item.config.stash.get(SEARCH_KEY, None)
    state = item.stash.get(CASE_STATE_KEY, None)
    if searching is not None and state is not None:
        searching.record(state.record, state.summary)
