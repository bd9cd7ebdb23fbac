"""A task's chance score at a length: what a random answer scores there, in percent. Derived from
the answer space where it gives one figure for every length (``TaskSpec.chance`` a number), else
measured over bands of lengths (``Bands``): by bench/chance.py for the spine's and the extras'
tasks, shipped as ``data/chance.json`` (``TaskSpec.chance`` the name of its row), or by another
package for its own tasks."""

from __future__ import annotations

import functools
import json
from importlib import resources

from ctxgate.tasks.bands import Bands, Chance
from ctxgate.tasks.base import TaskSpec


@functools.cache
def _bands() -> dict[str, Bands]:
    text = resources.files("ctxgate.data").joinpath("chance.json").read_text("utf-8")
    table: dict[str, list[list[float]]] = json.loads(text)["tasks"]
    return {
        task: Bands(
            tuple(int(r[0]) for r in rows),
            tuple(Chance(r[1], r[2], r[3], int(r[4])) for r in rows),
        )
        for task, rows in table.items()
    }


def chance_at(spec: TaskSpec, length: int) -> Chance:
    """The chance at ``length``."""
    if isinstance(spec.chance, Bands):
        return spec.chance.at(length)
    if not isinstance(spec.chance, str):
        return Chance(spec.chance, spec.chance, spec.chance)
    if spec.chance not in _bands():
        raise KeyError(f"data/chance.json has no row {spec.chance}: run bench/chance.py --write")
    return _bands()[spec.chance].at(length)
