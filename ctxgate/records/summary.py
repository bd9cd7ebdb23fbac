"""What the gates read over a run's cases: each summary's score per length, the effective lengths
and LongScore derived from them, RULER's averages, and each gate's verdict."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class GroupScore:
    """A summary's score at one length (RULER's average, a HELMET category, a task family),
    present when one of its members ran or errored."""

    score: float | None
    """The mean over ``members`` that have a score, percent; a family's official data, where it
    ran, stands in for the generated task it replaces."""
    members: tuple[str, ...]
    """The tasks that count in it at this length."""
    missing: tuple[str, ...] = ()
    """Members not selected in this run."""
    errored: tuple[str, ...] = ()
    """Members selected but without a score."""
    early: tuple[str, ...] = ()
    """Members stopped early by ``--sequential``: their means are biased."""
    partial: bool = False
    """``missing`` is not empty (written for readers of the file; derived)."""
    incomplete: bool = False
    """``errored`` is not empty (derived)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "partial", bool(self.missing))
        object.__setattr__(self, "incomplete", bool(self.errored))


@dataclass(frozen=True)
class EffectiveLength:
    """RULER's effective length over the tested lengths (docs/gates.md)."""

    value: int
    """The largest length above ``threshold`` with every shorter one; 0: the shortest fails."""
    max_passing: int
    """The largest passing length, gaps allowed (the looser reading)."""
    threshold: float
    """The bar a length's RULER average must pass, percent."""
    per_length: dict[int, bool] = field(default_factory=dict)
    """Whether each tested length passed."""
    partial: bool = False
    """A RULER task was not selected: the value is over fewer than 13 tasks."""
    incomplete: tuple[int, ...] = ()
    """Lengths with a RULER task that produced no score: counted as failing."""
    early: tuple[int, ...] = ()
    """Lengths with a RULER task stopped early by ``--sequential``: counted as failing."""
    decided: dict[int, bool] = field(default_factory=dict)
    """Lengths whose average its own test decided before every case there ran
    (``--search-effective-length``), passing or failing: early-stopped members or not."""


@dataclass(frozen=True)
class RelativeEffectiveLength:
    """A summary's effective length against the model's own short-context score (NoLiMa's rule)."""

    value: int
    """The longest length that, with every shorter one, keeps ``share`` of ``base``; 0: none."""
    base: float
    """The summary's mean over ``base_lengths``, percent."""
    base_lengths: tuple[int, ...]
    """The run's lengths up to ``[relative_effective_length] base_up_to`` (NoLiMa: up to 1K)."""
    share: float
    """The share of ``base`` a length must keep (``[relative_effective_length] share``)."""
    per_length: dict[int, bool] = field(default_factory=dict)
    """Whether each length kept the share."""
    incomplete: tuple[int, ...] = ()
    """Lengths with a member that produced no score: counted as failing."""
    early: tuple[int, ...] = ()
    """Lengths with a member stopped early by ``--sequential``: counted as failing."""
    chance: float = 0.0
    """The base's chance score: a length keeps ``share`` of what the base scores above chance,
    ``score - its chance >= share * (base - chance)``."""
    why: str | None = None
    """Why there is none (``value`` 0): the base is not above chance."""
    partial: bool = False
    """A member missing at a length (each averages what all had), or lengths a search skipped."""


@dataclass(frozen=True)
class LongScore:
    """100-LongBench's LongScore of a summary, percent (a length a member lacks counts nowhere)."""

    value: float | None
    """The mean of ``per_length``; null: see ``why``."""
    base: float | None
    """The summary's mean over ``base_lengths``."""
    base_lengths: tuple[int, ...]
    """The run's lengths of 2K, 4K and 6K (100-LongBench's 0-8K bucket)."""
    per_length: dict[int, float] = field(default_factory=dict)
    """Each length of 8K or more: 100 * (score - base) / base, each above its chance."""
    why: str | None = None
    """No length of 2K, 4K or 6K, none of 8K or more, or a base not above chance."""
    chance: float = 0.0
    """The base's chance score (the mean of its lengths' means over the members)."""
    partial: bool = False
    """As ``RelativeEffectiveLength.partial``."""


@dataclass(frozen=True)
class Overall:
    """RULER's averages over the tested lengths."""

    ruler_avg: float | None = None
    """RULER's average over the tested lengths, percent."""
    ruler_wavg_inc: float | None = None
    """Weighted by length rank, 1..n from the shortest."""
    ruler_wavg_dec: float | None = None
    """Weighted by length rank, 1..n from the longest."""
    incomplete: bool = False
    """A length's RULER average is incomplete."""
    early: bool = False
    """A RULER case stopped early by ``--sequential``."""
    partial: bool = False
    """A length's RULER average is partial (a task missing), or a length search skipped lengths."""


@dataclass(frozen=True)
class Gate:
    """One gate: ``cases`` (every selected case finished, one ran), ``floors`` (a case without a
    score counts as failing), ``baseline``, ``min_effective_length``,
    ``min_relative_effective_length.SUMMARY``."""

    name: str
    """Which gate."""
    verdict: Literal["pass", "fail"]
    """Whether it passed."""
    message: str
    """What it found, in one line."""
