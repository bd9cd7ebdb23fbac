"""Paired comparison of a case with the same case of a baseline run, sample by sample.

Both runs score the same samples (same data hash), so the right test is paired. Binary outcomes use the exact
conditional test on discordant pairs: of the d samples where the runs disagree, c flipped to right and b to
wrong; c ~ Binomial(d, p) and the delta is (c - b) / n. The Clopper-Pearson interval for p gives the interval for
the delta. Fractional outcomes use a paired bootstrap (seeded, so the verdict is reproducible).

A case regresses when the drop is larger than its tolerance *with the stated confidence*: the upper end of the
one-sided interval for (current - baseline) lies below -tolerance. Noise alone therefore does not fail a case.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class PairedResult:
    n: int
    current: float  # percent
    baseline: float
    delta: float  # percentage points, current - baseline
    low: float  # one-sided interval for delta at the confidence (low is -inf-like for one-sided: two-sided shown)
    high: float
    method: str
    flipped_to_right: int | None = None
    flipped_to_wrong: int | None = None

    def regressed(self, tolerance: float) -> bool:
        return self.high < -tolerance


def _beta_quantile(q: float, a: float, b: float) -> float:
    """Quantile of Beta(a, b) by bisection on the regularized incomplete beta (a, b >= 1 or edge cases)."""
    lo, hi = 0.0, 1.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if _betainc(a, b, mid) < q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b) by its continued fraction (Numerical Recipes' Lentz form)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _betainc(b, a, 1.0 - x)
    f, c, d = 1.0, 1.0, 0.0
    for i in range(400):
        m = i // 2
        if i == 0:
            num = 1.0
        elif i % 2 == 0:
            num = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        else:
            num = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        d = 1.0 + num * d
        d = 1e-300 if abs(d) < 1e-300 else d
        d = 1.0 / d
        c = 1.0 + num / c
        c = 1e-300 if abs(c) < 1e-300 else c
        f *= c * d
        if abs(1.0 - c * d) < 1e-12:
            break
    return front * (f - 1.0) / a


def clopper_pearson(k: int, n: int, confidence: float) -> tuple[float, float]:
    alpha = 1 - confidence
    low = 0.0 if k == 0 else _beta_quantile(alpha / 2, k, n - k + 1)
    high = 1.0 if k == n else _beta_quantile(1 - alpha / 2, k + 1, n - k)
    return low, high


def compare(
    current: Sequence[float], baseline: Sequence[float], confidence: float = 0.95, resamples: int = 4000, seed: int = 0
) -> PairedResult:
    if len(current) != len(baseline) or not current:
        raise ValueError(f"paired comparison needs the same samples: {len(current)} vs {len(baseline)}")
    n = len(current)
    cur, base = 100 * sum(current) / n, 100 * sum(baseline) / n
    if all(v in (0.0, 1.0) for v in (*current, *baseline)):
        c = sum(1 for x, y in zip(current, baseline) if x > y)
        b = sum(1 for x, y in zip(current, baseline) if x < y)
        d = b + c
        if d == 0:
            low = high = 0.0
        else:
            # one-sided at `confidence` on each side = two-sided at 2 * confidence - 1
            p_low, p_high = clopper_pearson(c, d, 2 * confidence - 1)
            low, high = 100 * d * (2 * p_low - 1) / n, 100 * d * (2 * p_high - 1) / n
        return PairedResult(
            n,
            round(cur, 2),
            round(base, 2),
            round(cur - base, 2),
            round(low, 2),
            round(high, 2),
            "exact-discordant",
            c,
            b,
        )
    diffs = [x - y for x, y in zip(current, baseline)]
    rng = random.Random(seed)
    means = sorted(100 * sum(rng.choice(diffs) for _ in range(n)) / n for _ in range(resamples))
    tail = 1 - confidence
    low = means[int(tail * (resamples - 1))]
    high = means[int(confidence * (resamples - 1))]
    return PairedResult(
        n, round(cur, 2), round(base, 2), round(cur - base, 2), round(low, 2), round(high, 2), "paired-bootstrap"
    )
