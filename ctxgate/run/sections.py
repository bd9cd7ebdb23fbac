"""An extra's settings as one piece: its options, read once into a frozen record that the run's
plan keeps under the extra's name (``hookspec.ctxgate_plan_section``), that its builders and
readings find there, that the run's record keeps in a run slot where it differs from the defaults,
and that a ``--baseline`` run must match. An extra answers its hooks through it, so the rules are
written once: a run at the defaults reads as one without the extra (a bare install's report is
the same), and a baseline without the slot ran at the defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from ctxgate.records.slots import Slot
from ctxgate.run.flags import Get, Option, OptionGroup

S = TypeVar("S")


@dataclass(frozen=True)
class Section(Generic[S]):
    """``kind``: a frozen dataclass whose fields, in order, are ``options``' values, each field's
    default its option's, so that ``kind()`` is the run at the defaults. ``title``: the options'
    heading in ``--help``."""

    name: str
    kind: type[S]
    options: tuple[Option, ...]
    title: str

    def group(self) -> OptionGroup:
        """The options, which the verbs that evaluate a checkpoint take too."""
        return OptionGroup(f"ctxgate-{self.name}", self.title, self.options, evaluates=True)

    def read(self, get: Get) -> tuple[str, S]:
        """The plan's section, as ``ctxgate_plan_section`` answers."""
        return self.name, self.kind(*(o.read(get(o.dest)) for o in self.options))

    def of(self, extras: Mapping[str, object]) -> S:
        """The settings in a plan's, a spec's or a build context's ``extras``; the defaults where
        the section is absent (a plan made before the extra was installed)."""
        found = extras.get(self.name)
        return found if isinstance(found, self.kind) else self.kind()

    def slot(self) -> Slot:
        return Slot(self.name, "run", self.kind, baseline=", ".join(o.flag for o in self.options))

    def record(self, extras: Mapping[str, object]) -> dict[str, object]:
        """The run slot's value, as ``ctxgate_run_record`` answers: null at the defaults."""
        chosen = self.of(extras)
        return {self.name: None if chosen == self.kind() else chosen}
