"""RULER's cases at one length drawn together, in rounds of one sample each, so that the average's
own sequential test (``sequential.judge_length``) can stop them all at once.

The rounds are drawn ``step`` samples a case at a time (a batch for the engine), each case in turn;
the test reads them in index order, so its verdict is the same however they were batched. A case
with a question of its own (``--sequential``: its floor, its baseline) goes on to its own verdict
and is scored on all it drew; one without stops with the average, scored on the rounds the average
used, or runs its full count where the average could not be decided. A case that fails ends the
test (the mean it bet on is no longer the average's): the others run their full counts."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ctxgate.api import (
    CaseResult,
    Drawing,
    Runner,
    StopRecord,
    drive,
    fits_at_all,
    get_task,
)

from .records import LengthVerdict, SequentialSettings
from .sequential import StopRule, judge_length

if TYPE_CHECKING:
    from ctxgate.api import Plan


CaseKey = tuple[str, int]


def run_together(
    draws: Sequence[Drawing], bar: float, rule: StopRule
) -> tuple[LengthVerdict, dict[str, Exception]]:
    """``draws``: the cases at one length, opened (``open_case``); ``bar``: the average passes
    strictly above it (a fraction); ``rule``: ``--sequential``'s, with no sample limit. Each case is
    left drawn, for ``case_result``; a case that fails is left out from then on, its exception
    returned under its task's name."""
    step, failed, live = max(rule.min_samples, 1), {}, list(draws)

    def turn(d: Drawing) -> None:
        try:
            drive(d)
        except Exception as exc:  # noqa: BLE001 - the case's item raises it
            failed[d.spec.name] = exc
            live.remove(d)

    def rounds() -> Iterator[list[float]]:
        i = 0
        while live:
            for d in list(live):
                if i not in d.done:
                    d.limit = min(d.n, i + step)
                    turn(d)
            if failed or any(i not in d.done for d in live):
                return  # a case failed, or ran out of samples: the test ends undecided
            yield [d.done[i].score or 0.0 for d in live]
            i += 1

    for d in draws:
        d.held_open = True
    verdict = judge_length(draws[0].length, rounds(), bar, rule)
    said = "passes" if verdict.passed else "fails"
    for d in live:
        d.held_open = False
        d.drawn_past = d.decided() and len(d.done) > d.test.used  # type: ignore[union-attr]
        if d.test is None and verdict.certain:
            why = f"with RULER's average: certain it {said}"
            record = StopRecord(rule.alpha, rule.min_samples, 0, d.n, None, why)
            d.cut = (verdict.rounds, replace(record, by_summary=True))
        else:
            d.limit = d.n
            turn(d)  # on to its own verdict, or its full count
    return verdict, failed


class Together:
    """The ``ctxgate_ahead`` of a search under ``--sequential``: the first of a length's grouped
    cases to be taken draws the whole group (``run_together``); the others take what it left."""

    def __init__(
        self,
        groups: Mapping[int, Sequence[str]],
        open_case: Callable[[str, int], Drawing],
        finish: Callable[[Drawing], CaseResult],
        together: Callable[[Sequence[Drawing]], tuple[LengthVerdict, dict[str, Exception]]],
        runs: Callable[[str, int], bool],
    ) -> None:
        """``runs``: whether a grouped case runs, asked when its length's turn comes."""
        self._groups, self._open, self._finish, self._together = groups, open_case, finish, together
        self._runs = runs
        self._results: dict[CaseKey, CaseResult | Exception] = {}
        self.verdicts: dict[int, LengthVerdict] = {}
        self._drawn: set[int] = set()

    def __contains__(self, key: object) -> bool:
        """Whether the case is drawn with its group: not where the search left one of them out
        (each case that runs there runs on its own), nor once taken."""
        if not isinstance(key, tuple) or key[0] not in self._groups.get(key[1], ()):
            return False
        if key[1] in self._drawn:
            return key in self._results
        return all(self._runs(task, key[1]) for task in self._groups[key[1]])

    def take(self, key: CaseKey) -> CaseResult:
        length = key[1]
        if length not in self._drawn:
            self._draw(length)
        got = self._results.pop(key)
        if isinstance(got, Exception):
            raise got
        return got

    def _draw(self, length: int) -> None:
        self._drawn.add(length)
        draws = []
        for task in self._groups[length]:
            try:
                draws.append(self._open(task, length))
            except Exception as exc:  # noqa: BLE001 - the case's item raises it
                self._results[(task, length)] = exc
        if not draws:
            return
        self.verdicts[length], failed = self._together(draws)
        for d in draws:
            key = (d.spec.name, length)
            try:
                self._results[key] = failed.get(d.spec.name) or self._finish(d)
            except Exception as exc:  # noqa: BLE001 - the case's item raises it
                self._results[key] = exc


def together(
    plan: Plan,
    sequential: SequentialSettings | None,
    keys: Sequence[CaseKey],
    runner: Runner,
    runs: Callable[[str, int], bool],
) -> Together:
    """The search's way of running the selected cases: without --sequential each in its item's
    turn (no group), with it RULER's cases at each length drawn together."""
    groups: dict[int, list[str]] = {}
    if sequential is None:
        return Together(groups, runner.open, runner.finish, lambda draws: _never(), runs)
    for task, length in keys:
        if get_task(task).suite == "ruler" and fits_at_all(get_task(task), length):
            groups.setdefault(length, []).append(task)
    rule = StopRule(sequential.alpha, sequential.min_samples, None)  # no sample limit
    bar = plan.thresholds.effective_threshold / 100
    return Together(
        groups,
        runner.open,
        runner.finish,
        lambda draws: run_together(draws, bar, rule),
        runs,
    )


def _never() -> tuple[LengthVerdict, dict[str, Exception]]:
    raise AssertionError("no case is grouped without --sequential")
