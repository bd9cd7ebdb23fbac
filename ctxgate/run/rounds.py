"""A summary's cases at one length drawn together, in rounds of one sample each, so that the
summary's own sequential test (``stats.sequential.judge_length``) can stop them all at once.

The rounds are drawn ``step`` samples a case at a time (a batch for the engine), each case in turn;
the test reads them in index order, so its verdict is the same however they were batched. A case
with a question of its own (``--sequential``: its floor, its baseline) goes on to its own verdict;
one without stops with the summary, scored on the rounds the summary used, or runs its full count
where the summary could not decide."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

from ctxgate.backends.base import Backend
from ctxgate.records.schema import LengthVerdict
from ctxgate.run.case import CaseResult, Drawing, drive
from ctxgate.run.progress import Progress
from ctxgate.stats.sequential import StopRule, judge_length

CaseKey = tuple[str, int]


def run_together(
    draws: Sequence[Drawing],
    backend: Backend,
    bar: float,
    rule: StopRule,
    progress: Callable[[Progress], None] | None = None,
    name: str = "RULER's average",
) -> tuple[LengthVerdict, dict[str, Exception]]:
    """``draws``: the summary's cases at one length, opened (``open_case``); ``bar``: the summary
    passes strictly above it (a fraction). Each case is left drawn, for ``case_result``; a case
    that fails is left out from then on, its exception returned under its task's name."""
    step, failed, live = max(rule.min_samples, 1), {}, list(draws)

    def turn(d: Drawing) -> None:
        try:
            drive(d, backend, progress)
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
            if not live or any(i not in d.done for d in live):
                return  # a case ran out of samples: the summary's count is spent
            yield [d.done[i].score or 0.0 for d in live]
            i += 1

    for d in draws:
        d.held_open = True
    length = draws[0].length
    verdict = judge_length(length, rounds(), bar, StopRule(rule.alpha, rule.min_samples, None))
    said = "passes" if verdict.passed else "fails"
    for d in list(live):
        d.held_open = False
        if d.test is None and verdict.certain:
            d.cut = (verdict.rounds, f"with {name}: certain it {said} after {verdict.rounds}")
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
        runs: Callable[[str, int], bool] = lambda task, length: True,
    ) -> None:
        """``runs``: whether a grouped case runs, asked when its length's turn comes."""
        self._groups, self._open, self._finish, self._together = groups, open_case, finish, together
        self._runs = runs
        self._results: dict[CaseKey, CaseResult | Exception] = {}
        self.verdicts: dict[int, LengthVerdict] = {}

    def __contains__(self, key: object) -> bool:
        """Grouped, at a length the search has not decided: there each case runs on its own."""
        if not isinstance(key, tuple) or key[0] not in self._groups.get(key[1], ()):
            return False
        return all(self._runs(task, key[1]) for task in self._groups[key[1]])

    def take(self, key: CaseKey) -> CaseResult:
        length = key[1]
        if length not in self.verdicts:
            self._draw(length)
        got = self._results.pop(key)
        if isinstance(got, Exception):
            raise got
        return got

    def _draw(self, length: int) -> None:
        draws = []
        for task in self._groups[length]:
            try:
                draws.append(self._open(task, length))
            except Exception as exc:  # noqa: BLE001 - the case's item raises it
                self._results[(task, length)] = exc
        if not draws:
            self.verdicts[length] = LengthVerdict(length, False, 0, False, 0.0)
            return
        self.verdicts[length], failed = self._together(draws)
        for d in draws:
            key = (d.spec.name, length)
            try:
                self._results[key] = failed.get(d.spec.name) or self._finish(d)
            except Exception as exc:  # noqa: BLE001 - the case's item raises it
                self._results[key] = exc

    def close(self) -> None:
        """Nothing runs ahead of its item."""
