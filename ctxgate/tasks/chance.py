"""A task's chance score at a length: what a random answer scores there, in percent. Derived from
the answer space where it gives one figure for every length (``TaskSpec.chance`` a number), else
measured by bench/chance.py over bands of lengths and shipped as ``data/chance.json``."""

from __future__ import annotations

import bisect
import functools
import json
from dataclasses import dataclass
from importlib import resources

from ctxgate.tasks.base import TaskSpec


@dataclass(frozen=True)
class Chance:
    """``low``-``high``: where a case's chance falls in the band (each length's mean, two standard
    errors either side); ``samples``: prompts built to measure it, 0 where derived."""

    score: float
    low: float
    high: float
    samples: int = 0


@functools.cache
def _bands() -> dict[str, tuple[tuple[int, ...], tuple[Chance, ...]]]:
    text = resources.files("ctxgate.data").joinpath("chance.json").read_text("utf-8")
    table: dict[str, list[list[float]]] = json.loads(text)["tasks"]
    return {
        task: (
            tuple(int(r[0]) for r in rows),
            tuple(Chance(r[1], r[2], r[3], int(r[4])) for r in rows),
        )
        for task, rows in table.items()
    }


def chance_at(spec: TaskSpec, length: int) -> Chance:
    """The chance at ``length``: the band it falls in (below the first: the first)."""
    if not isinstance(spec.chance, str):
        return Chance(spec.chance, spec.chance, spec.chance)
    if spec.chance not in _bands():
        raise KeyError(f"data/chance.json has no row {spec.chance}: run bench/chance.py --write")
    starts, chances = _bands()[spec.chance]
    return chances[max(bisect.bisect_right(starts, length) - 1, 0)]
