"""The effective length by search: lengths shortest first, stopped at the first that fails.

The effective length is the longest length at which the summary (RULER's average of its tasks)
passes with every shorter one, so the first failing length decides it and the longer ones cannot
change it. Within a length, the summary's own sequential test stops the members once it is certain
which side of the bar their mean is on: it bets (``stats.sequential.Bettor``) on rounds of one
sample per member, in index order, whose mean in [0, 1] has the summary's mean as its expectation,
so a certain claim is wrong at most ``alpha`` of the time however the stopping falls. A length it
cannot decide within the budget is judged on its full count, as the fixed grid judges it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ctxgate.stats.sequential import Bettor, StopRule


@dataclass(frozen=True)
class LengthVerdict:
    """How the summary fared at one length."""

    length: int
    passed: bool
    rounds: int  # rounds of one sample per member used
    certain: bool  # decided by the test at its error rate; False: judged on the full count
    mean: float  # of the rounds used, percent


def judge_length(
    length: int, rounds: Iterable[Sequence[float]], bar: float, rule: StopRule
) -> LengthVerdict:
    """``rounds``: each member's score of one sample (in [0, 1]), drawn lazily so nothing past
    the verdict is generated; ``bar``: the summary passes strictly above it (a fraction);
    ``rule.max_samples``: the full count, where the verdict is the plain mean's."""
    bettor, used, total = Bettor(bar, rule.alpha), 0, 0.0
    claim = None
    for scores in rounds:
        mean = sum(scores) / len(scores)
        bettor.observe(mean)
        used, total = used + 1, total + mean
        if used >= rule.min_samples and (claim := bettor.decided()):
            break
        if rule.max_samples is not None and used >= rule.max_samples:
            break
    average = total / used if used else 0.0
    passed = claim == "above" if claim else average > bar
    return LengthVerdict(length, passed, used, claim is not None, round(100 * average, 2))


def search(
    lengths: Iterable[int],
    rounds_at: Callable[[int], Iterable[Sequence[float]]],
    bar: float,
    rule: StopRule,
) -> tuple[int, list[LengthVerdict]]:
    """The effective length (0: the shortest fails) and each length run, shortest first, up to
    the first that fails."""
    ran: list[LengthVerdict] = []
    for length in sorted(lengths):
        ran.append(judge_length(length, rounds_at(length), bar, rule))
        if not ran[-1].passed:
            break
    passing = [v.length for v in ran if v.passed]
    return (passing[-1] if passing else 0), ran
