"""Paired comparison of a case with the same case of a baseline run, sample by sample.

Binary outcomes use Tango's score interval for the difference of paired proportions (Tango 1998,
Statistics in Medicine 17:891-908): of n samples, c flipped to right and b to wrong; the interval is
every delta d with |T(d)| < z, T(d) = (c - b - n d) / sqrt(n (2 q(d) + d (1 - d))), q(d) the
maximum-likelihood probability of a flip to wrong given d. A half-unit continuity correction keeps
the one-sided error at or below its level at the suite's sample counts (without it, regressions are
claimed up to 1.5x too often when few samples flip: tests/test_paired.py). Fractional outcomes use a
seeded paired bootstrap. A case regresses when the upper end of the one-sided interval for
(current - baseline) lies below -tolerance: noise alone fails nothing.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from statistics import NormalDist

CONTINUITY = 0.5  # samples the numerator moves towards 0; 0 is the plain score interval


@dataclass(frozen=True)
class PairedResult:
    n: int
    current: float  # percent
    baseline: float
    delta: float  # percentage points, current - baseline
    low: float  # each end one-sided at the confidence (two-sided at 2 confidence - 1), points
    high: float
    method: str
    flipped_to_right: int | None = None
    flipped_to_wrong: int | None = None

    def regressed(self, tolerance: float) -> bool:
        return self.high < -tolerance


def tango_statistic(c: int, b: int, n: int, delta: float, continuity: float = CONTINUITY) -> float:
    """Tango's statistic for ``delta`` = P(flip to right) - P(flip to wrong), in (-1, 1)."""
    a_, b_ = 2 * n, -c - b + (2 * n - c + b) * delta
    c_ = -b * delta * (1 - delta)
    q = (-b_ + math.sqrt(max(b_ * b_ - 4 * a_ * c_, 0.0))) / (2 * a_)
    numerator = c - b - n * delta
    numerator = (
        max(numerator - continuity, 0.0) if numerator > 0 else min(numerator + continuity, 0.0)
    )
    variance = n * (2 * q + delta * (1 - delta))
    if variance <= 0:
        return 0.0 if numerator == 0 else math.copysign(math.inf, numerator)
    return numerator / math.sqrt(variance)


def tango_interval(c: int, b: int, n: int, confidence: float) -> tuple[float, float]:
    """The deltas not rejected one-sidedly at ``confidence`` on either side; T falls with delta, so
    each end is found by bisection."""
    z = NormalDist().inv_cdf(confidence)
    edge = 1 - 1e-12
    statistic = partial(tango_statistic, c, b, n)

    def bisect(inside: float, outside: float, kept: Callable[[float], bool]) -> float:
        for _ in range(60):
            mid = (inside + outside) / 2
            inside, outside = (mid, outside) if kept(mid) else (inside, mid)
        return inside

    centre = (c - b) / n  # the statistic is 0 here
    high = 1.0 if statistic(edge) > -z else bisect(centre, edge, lambda d: statistic(d) > -z)
    low = -1.0 if statistic(-edge) < z else bisect(centre, -edge, lambda d: statistic(d) < z)
    return low, high


def compare(
    current: Sequence[float],
    baseline: Sequence[float],
    confidence: float = 0.95,
    resamples: int = 4000,
    seed: int = 0,
) -> PairedResult:
    if len(current) != len(baseline) or not current:
        raise ValueError(
            f"paired comparison needs the same samples: {len(current)} vs {len(baseline)}"
        )
    n = len(current)
    cur, base = 100 * sum(current) / n, 100 * sum(baseline) / n
    shared = (n, round(cur, 2), round(base, 2), round(cur - base, 2))
    if all(v in (0.0, 1.0) for v in (*current, *baseline)):
        c = sum(1 for x, y in zip(current, baseline) if x > y)
        b = sum(1 for x, y in zip(current, baseline) if x < y)
        low, high = (round(100 * end, 2) for end in tango_interval(c, b, n, confidence))
        return PairedResult(*shared, low, high, "tango-score", c, b)
    diffs = [x - y for x, y in zip(current, baseline)]
    rng = random.Random(seed)
    means = sorted(100 * sum(rng.choice(diffs) for _ in range(n)) / n for _ in range(resamples))
    low = means[int((1 - confidence) * (resamples - 1))]
    high = means[int(confidence * (resamples - 1))]
    return PairedResult(*shared, round(low, 2), round(high, 2), "paired-bootstrap")
