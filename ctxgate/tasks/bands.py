"""A chance score, and one that moves with the length (``Bands``): a leaf that a task's spec and
the chance's lookup (``chance.py``) both name."""

from __future__ import annotations

import bisect
from dataclasses import dataclass


@dataclass(frozen=True)
class Chance:
    """``low``-``high``: where a case's chance falls in the band (each length's mean, two standard
    errors either side); ``samples``: prompts built to measure it, 0 where derived."""

    score: float
    low: float
    high: float
    samples: int = 0


@dataclass(frozen=True)
class Bands:
    """A chance that moves with the length: each band's first length, and its chance."""

    starts: tuple[int, ...]
    chances: tuple[Chance, ...]

    def at(self, length: int) -> Chance:
        """The band ``length`` falls in (below the first: the first)."""
        return self.chances[max(bisect.bisect_right(self.starts, length) - 1, 0)]
