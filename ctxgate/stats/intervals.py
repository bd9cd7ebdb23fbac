"""Confidence intervals for a case's mean score."""

from __future__ import annotations

import math
from collections.abc import Sequence

_Z = {0.90: 1.6449, 0.95: 1.9600, 0.99: 2.5758}


def z_value(confidence: float) -> float:
    if confidence in _Z:
        return _Z[confidence]
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2)


def interval(scores: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Interval for the mean of per-sample scores in [0, 1], returned in percent.

    Binary outcomes get the Wilson score interval (sensible at 0% and 100%, unlike the normal one); fractional
    outcomes (string_match_all over several references) get a normal interval on the mean, clipped to [0, 100].
    """
    n = len(scores)
    if n == 0:
        return (0.0, 100.0)
    z = z_value(confidence)
    mean = sum(scores) / n
    if all(s in (0.0, 1.0) for s in scores):
        denom = 1 + z * z / n
        centre = (mean + z * z / (2 * n)) / denom
        half = z * math.sqrt(mean * (1 - mean) / n + z * z / (4 * n * n)) / denom
        low, high = centre - half, centre + half
    else:
        var = sum((s - mean) ** 2 for s in scores) / max(n - 1, 1)
        half = z * math.sqrt(var / n)
        low, high = mean - half, mean + half
    return (round(max(0.0, low) * 100, 2), round(min(1.0, high) * 100, 2))
