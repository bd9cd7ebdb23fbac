"""``--reference``'s slot in the report (``Report.extras["reference"]``): the run against the
papers' published numbers, a row per measure with its lengths."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ctxgate.api import Slot

REFERENCE = "reference"


@dataclass(frozen=True)
class PublishedLength:
    """A published score at one length against this run's."""

    length: int
    """In tokens."""
    published: float
    """The paper's score, percent."""
    verdict: Literal["within", "outside", "settings differ", "not measured"]
    """Whether the published score lies in ``band``; ``settings differ``: not the paper's."""
    differs: tuple[str, ...] = ()
    """How the setting differs."""
    measured: float | None = None
    """This run's score for the measure, percent."""
    ci: tuple[float, float] | None = None
    """The measured score's 95% interval."""
    difference: float | None = None
    """Measured less published, points."""
    band: tuple[float, float] | None = None
    """``ci`` widened by the table's ``allowance``."""


@dataclass(frozen=True)
class PublishedRow:
    """A published row (a model's numbers for one measure, from one table) at this run's lengths."""

    measure: str
    """A ``by_length`` summary (``ruler``, ``helmet_rag``, ...) or a RULER part (``ruler_niah``)."""
    label: str
    """The measure's name in words."""
    source: str
    """The published table's key in ``ctxgate/ext/published/published.toml``."""
    paper: str
    """The paper."""
    table: str
    """The table or figure."""
    model_label: str
    """The model's row label in the paper."""
    allowance: float
    """Points a reproduction may differ by beyond its own interval."""
    allowance_source: str
    """Where ``allowance`` comes from."""
    chat_template: str
    """The paper's policy for the model: ``on``, ``off``, or ``task`` (each task its own)."""
    lengths: tuple[PublishedLength, ...]
    """The row's lengths that this run has."""
    claimed: str | None = None
    """The claimed context length."""
    effective: str | None = None
    """The paper's effective length."""
    effective_bar: str | None = None
    """What ``effective`` was measured against."""


@dataclass(frozen=True)
class Reference:
    """``--reference``: the run against a paper's published numbers (information, never a gate)."""

    model: str
    """The papers' id for the model."""
    matched: str
    """How the model was chosen: ``--reference``, or the name it was matched by."""
    rows: tuple[PublishedRow, ...]
    """Every published row for the model with a length this run has."""


SLOTS = (Slot(REFERENCE, "report", Reference),)
