"""How a model's output is read before it is scored (``hookspec.ctxgate_reading``): as it came,
or by the extras' readings in turn. A reasoning model's thought is the reading that matters: split
off the answer, held to its budget, its answer prefix following it (docs/architecture.md,
"Reasoning")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ctxgate.backends.base import Backend, Generation, GenerationParams
from ctxgate.records.case import SampleOutcome


class Reading:
    """How a model's output is read before it is scored: as it came. An extra's reading
    (``hookspec.ctxgate_reading``) may ask the engine for more (``params``), hold the backend to a
    budget of its own (``hold``), split part of the output off (``read``: the answer, and the
    sample's fields of what was split off), sum that over the case (``fields``), need positions
    past the prompt's length (``positions``), have a chat prompt's answer prefix follow the
    model's thought (``holds_prefix``: ``hold`` then puts it there) and add to the run's record
    (``record``)."""

    positions = 0
    holds_prefix = False
    beyond = ""  # what a case of a length beyond the window asks on top: " with ..."
    lower = ""  # and how to ask less: ", lower ..."

    def params(self, params: GenerationParams) -> GenerationParams:
        return params

    def hold(self, backend: Backend) -> Backend:
        return backend

    def read(self, gen: Generation) -> tuple[str, dict[str, Any]]:
        return gen.text, {}

    def fields(self, outcomes: Sequence[SampleOutcome], answer_budget: int) -> dict[str, Any]:
        return {}

    def record(self) -> dict[str, Any]:
        return {}


class Readings(Reading):
    """The extras' readings in turn (``hookspec.ctxgate_reading`` collects them): each asks the
    engine for what it needs and holds the backend inside the one before it; each reads what the
    one before left of the output; what they split off, sum and record is put together."""

    def __init__(self, parts: Sequence[Reading]) -> None:
        self.parts = tuple(parts)
        self.positions = sum(p.positions for p in self.parts)
        self.holds_prefix = any(p.holds_prefix for p in self.parts)
        self.beyond = "".join(p.beyond for p in self.parts)
        self.lower = "".join(p.lower for p in self.parts)

    def params(self, params: GenerationParams) -> GenerationParams:
        for part in self.parts:
            params = part.params(params)
        return params

    def hold(self, backend: Backend) -> Backend:
        for part in self.parts:
            backend = part.hold(backend)
        return backend

    def read(self, gen: Generation) -> tuple[str, dict[str, Any]]:
        split: dict[str, Any] = {}
        for part in self.parts:
            text, fields_of = part.read(gen)
            gen, split = replace(gen, text=text), split | fields_of
        return gen.text, split

    def fields(self, outcomes: Sequence[SampleOutcome], answer_budget: int) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for part in self.parts:
            found |= part.fields(outcomes, answer_budget)
        return found

    def record(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for part in self.parts:
            found |= part.record()
        return found
