"""Confidence intervals for a case's mean score."""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

_Z = {0.90: 1.6449, 0.95: 1.9600, 0.99: 2.5758}


def z_value(confidence: float) -> float:
    return _Z.get(confidence) or NormalDist().inv_cdf(0.5 + confidence / 2)


def interval(scores: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Interval for the mean of per-sample scores in [0, 1], in percent: Wilson's for binary
    outcomes (sensible at 0% and 100%); for fractional ones, Agresti and Coull's adjustment (z^2/2
    pseudo-samples at 0 and at 1 before the normal interval), never zero-width where all scores are
    equal (a point gate under ``rule = "upper"``), and the normal interval as n grows."""
    n = len(scores)
    if n == 0:
        return (0.0, 100.0)
    z = z_value(confidence)
    mean = sum(scores) / n
    if all(s in (0.0, 1.0) for s in scores):
        denom = 1 + z * z / n
        centre = (mean + z * z / (2 * n)) / denom
        half = z * math.sqrt(mean * (1 - mean) / n + z * z / (4 * n * n)) / denom
    else:
        pseudo = z * z / 2
        size = n + 2 * pseudo
        centre = (sum(scores) + pseudo) / size
        spread = sum((s - centre) ** 2 for s in scores) + pseudo * (centre**2 + (1 - centre) ** 2)
        half = z * math.sqrt(spread / size / size)
    return (round(max(0.0, centre - half) * 100, 2), round(min(1.0, centre + half) * 100, 2))
