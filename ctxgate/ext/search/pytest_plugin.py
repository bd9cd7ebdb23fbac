"""``--search-effective-length`` as one pytest run goes (its run plugin, ``ctxgate_run_plugin``):
the selected cases run shortest length first; each case's record goes to the search
(``searching.Searching``), which says which cases past the length that decided every summary they
count in are left out, and why (the spine skips them, unless a gate expects their score); with
``--sequential``, RULER's cases at each length are drawn together (``rounds.together``)."""

from __future__ import annotations

from collections.abc import Generator, Sequence

import pytest

from ctxgate.api import CaseRecord, Plan, Runner, case_of, hookimpl, score_expected

from .records import SEARCH_SLOT, SearchRecord, SequentialSettings
from .rounds import Together, together
from .searching import Searching


class SearchRun:
    """The search of one run: its cases' order, what it leaves out, what it decided."""

    def __init__(self, plan: Plan, sequential: SequentialSettings | None) -> None:
        self.plan, self.sequential = plan, sequential
        self.searching: Searching | None = None  # once the cases are selected
        self.together: Together | None = None  # RULER's cases drawn together (--sequential)

    # outermost (tryfirst among the wrappers): its code after the yield runs once every other
    # plugin, --lf and --ff included, has selected and ordered
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> Generator[None, None, None]:
        """Shortest length first, and the search begun over the cases selected."""
        yield
        keys = [(i, case_of(i.nodeid)) for i in items]
        items[:] = [i for i, _ in sorted(keys, key=lambda pair: pair[1][1] if pair[1] else 0)]
        self.searching = Searching(self.plan.thresholds, [k for _, k in keys if k is not None])

    @hookimpl
    def ctxgate_left_out(self, task: str, length: int) -> str | None:
        """A case whose score a gate expects (a floor, a baseline score) runs: no gate goes
        unchecked."""
        plan = self.plan
        scored = plan.baseline is not None and (task, length) in plan.baseline.cases
        floor = plan.thresholds.floor_for(task, length)
        if self.searching is None or score_expected(floor, scored):
            return None
        return self.searching.skip(task, length)

    @hookimpl
    def ctxgate_cases_ahead(
        self, plan: Plan, keys: Sequence[tuple[str, int]], runner: Runner
    ) -> Together:
        """No case runs before the search knows it is needed; with --sequential, RULER's cases at
        each length are drawn together, so that the average's own test can stop them."""
        runs = lambda task, length: self.ctxgate_left_out(task, length) is None  # noqa: E731
        self.together = together(plan, self.sequential, keys, runner, runs)
        return self.together

    @hookimpl
    def ctxgate_case_done(self, record: CaseRecord) -> None:
        if self.searching is not None:
            verdicts = self.together.verdicts if self.together is not None else {}
            self.searching.record(record, verdicts.get(record.length))

    @hookimpl
    def ctxgate_decided_lengths(self) -> dict[int, bool] | None:
        return self.searching.summary().decided if self.searching is not None else None

    @hookimpl
    def ctxgate_report_record(self, report: object, plan: Plan) -> dict[str, SearchRecord]:
        return {SEARCH_SLOT: self.searching.summary()} if self.searching is not None else {}
