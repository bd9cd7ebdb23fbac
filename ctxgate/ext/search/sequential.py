"""Sequential gate decisions that keep their error rate under optional stopping: testing by betting.

A case's one-sided question is fixed before it runs: is the true mean above the floor (with a
baseline: did it drop by more than the tolerance)? Wealth W_t = prod_{i <= t} (1 + lambda_i (x_i -
m)) bets that the mean exceeds m, ``lambda_i`` from earlier samples only: if the mean is at most m,
W is a nonnegative supermartingale from 1, so by Ville's inequality stopping when it reaches 1/alpha
claims "above m" wrongly with probability at most alpha, however the stopping time is chosen
(Shafer 2021, JRSS-A; Waudby-Smith & Ramdas 2024, JRSS-B, Sec. 5). The mirror process bets on
"below m". The bet is their aGRAPA rule, clipped to [0, c/m] (or c/(1-m)), c = 0.9, so no sample can
ruin the bettor; the interval is their predictable plug-in empirical-Bernstein confidence sequence
(Thm. 2), valid at every t at once. Scores are in [0, 1]; a paired difference is mapped there.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ctxgate.api import QuestionTest, StopRecord

from .records import LengthVerdict

if TYPE_CHECKING:
    from ctxgate.api import EarlyStop

BET_CAP = 0.9  # fraction of the largest bet that cannot lose everything on one sample


@dataclass(frozen=True)
class Verdict:
    decided: str | None  # "above" | "below" | None (not yet certain)
    n: int
    low: float  # the confidence sequence's bounds on the mean, in the data's own scale
    high: float


class Bettor:
    """Wealth for "mean > m" and "mean < m" over observations in [0, 1], and the EB CS."""

    def __init__(self, m: float, alpha: float) -> None:
        if not 0.0 <= m <= 1.0:
            raise ValueError(
                f"the threshold {m} is outside [0, 1]: scores are fractions here "
                "(a floor of 80 is 0.8)"
            )
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha {alpha} must be in (0, 1), e.g. 0.05")
        self.m, self.alpha = m, alpha
        self.up = self.down = 1.0
        self.n, self._sum = 0, 0.0
        # the running estimates before any sample (the paper's priors)
        self._mean, self._var, self._sq = 0.5, 0.25, 0.25
        self._lam_sum = self._lam_x = self._penalty = 0.0
        self.low, self.high = 0.0, 1.0

    def observe(self, x: float) -> None:
        if not 0.0 <= x <= 1.0:
            raise ValueError(f"observation {x} is outside [0, 1]")
        gap = self._mean - self.m
        bet = gap / (self._var + gap * gap)
        if self.m > 0:
            self.up *= 1.0 + min(max(bet, 0.0), BET_CAP / self.m) * (x - self.m)
        if self.m < 1:
            self.down *= 1.0 - min(max(-bet, 0.0), BET_CAP / (1.0 - self.m)) * (x - self.m)
        self._confidence_sequence(x)
        self.n += 1
        self._sum += x
        mean = (0.5 + self._sum) / (self.n + 1)
        self._sq += (x - mean) ** 2
        self._mean, self._var = mean, self._sq / (self.n + 1)

    def _confidence_sequence(self, x: float) -> None:
        # one step of the predictable plug-in EB CS, two-sided at level alpha, intersected
        t = self.n + 1
        log_term = math.log(2.0 / self.alpha)
        lam = min(math.sqrt(2.0 * log_term / (self._var * t * math.log(1.0 + t))), 0.5)
        self._lam_sum += lam
        self._lam_x += lam * x
        self._penalty += (x - self._mean) ** 2 * (-math.log(1.0 - lam) - lam)  # psi_E; 4s cancel
        centre = self._lam_x / self._lam_sum
        margin = (log_term + self._penalty) / self._lam_sum
        self.low, self.high = max(self.low, centre - margin), min(self.high, centre + margin)

    def decided(self) -> Literal["above", "below"] | None:
        if self.up >= 1.0 / self.alpha:
            return "above"
        if self.down >= 1.0 / self.alpha:
            return "below"
        return None


@dataclass(frozen=True)
class StopRule:
    """``alpha``: each claim's error rate; never stop before ``min_samples``; ``max_samples``: the
    fixed-n budget of ``run``, after which it ends undecided (None: the scores' own end)."""

    alpha: float = 0.05
    min_samples: int = 10
    max_samples: int | None = 100

    def __post_init__(self) -> None:
        if self.min_samples < 1 or (
            self.max_samples is not None and self.min_samples > self.max_samples
        ):
            raise ValueError(
                f"min_samples {self.min_samples} must be between 1 "
                f"and max_samples {self.max_samples}"
            )

    def run(self, scores: Iterable[float], threshold: float, paired: bool = False) -> Verdict:
        """Observe ``scores`` (``paired``: differences, and ``threshold``, in [-1, 1]) one at a
        time, so a lazy caller generates no more than needed, until certain or out of budget."""
        to_unit = (lambda v: (v + 1.0) / 2.0) if paired else (lambda v: v)
        bettor = Bettor(to_unit(threshold), self.alpha)
        answer = None
        for x in scores:
            bettor.observe(to_unit(x))
            if bettor.n >= self.min_samples and (answer := bettor.decided()):
                break
            if self.max_samples is not None and bettor.n >= self.max_samples:
                break
        low, high = (bettor.low, bettor.high)
        if paired:
            low, high = 2 * low - 1, 2 * high - 1
        return Verdict(answer, bettor.n, round(low, 6), round(high, 6))


@dataclass(frozen=True)
class Questions:
    """A case's gate questions: is the mean above ``floor`` (a fraction)? did it drop against
    ``baseline`` (index -> score, paired) by more than ``tolerance`` (a fraction)?"""

    floor: float | None = None
    baseline: Mapping[int, float] | None = None
    tolerance: float = 0.0

    @property
    def asked(self) -> bool:
        return bool(self.floor) or self.baseline is not None


class CaseTest:
    """--sequential for one case: its scores fed in index order to a test per question. It fails as
    soon as one test is certain it fails, passes when all are certain it passes."""

    def __init__(self, rule: StopRule, questions: Questions) -> None:
        self.rule, self.questions = rule, questions
        # Each question's test runs at alpha / (questions asked), so the case's verdict, which any
        # one claim can decide, is wrong at most alpha of the time (a union bound).
        asked = bool(questions.floor) + (questions.baseline is not None)
        self.claim_alpha = rule.alpha / max(asked, 1)
        self.floor = Bettor(questions.floor, self.claim_alpha) if questions.floor else None
        self.drop = None
        if questions.baseline is not None:
            self.drop = Bettor((1.0 - questions.tolerance) / 2.0, self.claim_alpha)
        self.used = 0
        self.verdict: Literal["pass", "fail"] | None = None

    def feed(self, done: Mapping[int, Any]) -> None:
        """``done``: index -> outcome with a ``score``; consumes the next indices while there."""
        while (
            self.verdict is None and (o := done.get(self.used)) is not None and o.score is not None
        ):
            if self.floor is not None:
                self.floor.observe(o.score)
            base = self.questions.baseline
            if self.drop is not None and base is not None:
                if self.used not in base:  # the baseline lacks this sample: nothing more to pair
                    self.drop = None
                else:
                    self.drop.observe((o.score - base[self.used] + 1.0) / 2.0)
            self.used += 1
            if self.used >= self.rule.min_samples:
                self.verdict = self._decide()

    def _decide(self) -> Literal["pass", "fail"] | None:
        answers = [t.decided() for t in (self.floor, self.drop) if t is not None]
        if "below" in answers:
            return "fail"
        if answers and all(a == "above" for a in answers):
            return "pass"
        return None

    def record(self, budget: int) -> StopRecord:
        stopped = {"pass": "certain it passes", "fail": "certain it fails", None: "budget"}
        floor = drop = None
        if self.floor is not None:
            floor = QuestionTest(self.floor.decided(), _percent(self.floor.low, self.floor.high))
        if self.drop is not None:
            interval = _percent(2 * self.drop.low - 1, 2 * self.drop.high - 1)
            tolerance = round(self.questions.tolerance * 100, 2)
            drop = QuestionTest(self.drop.decided(), interval, tolerance)
        rule, verdict = self.rule, self.verdict
        run = (rule.alpha, rule.min_samples, self.used, budget, verdict, stopped[verdict])
        return StopRecord(*run, round(self.claim_alpha, 6), floor, drop)


def early_stop(rule: StopRule, questions: Questions) -> EarlyStop:
    """A case's test, and its record where it has no scores to test (judged, with no judge in the
    run: it runs its full count, and says why)."""
    from ctxgate.api import EarlyStop

    why = "judged, with no judge in this run: no scores to test, so it runs its full count"
    unjudged = StopRecord(rule.alpha, rule.min_samples, 0, 0, None, why)
    return EarlyStop(lambda: CaseTest(rule, questions), unjudged)


def _percent(low: float, high: float) -> tuple[float, float]:
    return round(low * 100, 2), round(high * 100, 2)


def judge_length(
    length: int, rounds: Iterable[Sequence[float]], bar: float, rule: StopRule
) -> LengthVerdict:
    """A summary's verdict at one length: the test bets on rounds of one sample per member, in
    index order, whose mean in [0, 1] has the summary's mean as its expectation, so a certain claim
    is wrong at most ``alpha`` of the time however the stopping falls; a length it cannot decide
    within the budget is judged on its plain mean, as the fixed grid judges it. ``rounds``: each
    member's score of one sample (in [0, 1]), drawn lazily so nothing past the verdict is drawn;
    ``bar``: the summary passes strictly above it (a fraction); ``rule.max_samples``: the full
    count, where the verdict is the plain mean's."""
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
