"""The search's and ``--sequential``'s slots in the records: the run's settings of
``--sequential`` (``RunInfo.extras["sequential"]``) and how ``--search-effective-length`` ran the
lengths (``Report.extras["search"]``)."""

from __future__ import annotations

from dataclasses import dataclass

from ctxgate.api import Slot

SEQUENTIAL_SLOT, SEARCH_SLOT = "sequential", "search"


@dataclass(frozen=True)
class SequentialSettings:
    """``--sequential``'s rule, as the run's record keeps it."""

    alpha: float
    """The error rate of each case's early verdict (``--sequential-alpha``)."""
    min_samples: int
    """No case stops before this many samples (``--sequential-min``)."""


@dataclass(frozen=True)
class LengthVerdict:
    """``--search-effective-length``: RULER's average at one length the search ran."""

    length: int
    """In tokens."""
    passed: bool
    """Above the effective-length threshold."""
    rounds: int
    """Rounds of one sample per task the verdict used (``--sequential``); else each task's count."""
    certain: bool
    """Decided by the average's sequential test; false: on the plain mean, as the full grid is."""
    mean: float
    """RULER's average over the rounds used, percent."""


@dataclass(frozen=True)
class SearchRecord:
    """``--search-effective-length``: the lengths run shortest first, and why the rest did not."""

    ran: tuple[int, ...]
    """The lengths where a case ran."""
    skipped: tuple[int, ...] = ()
    """The lengths where the search left a case out (a case a floor or baseline expects runs)."""
    why: str | None = None
    """What decided each effective length the search follows; null: none was decided."""
    ruler: tuple[LengthVerdict, ...] = ()
    """RULER's average at each length run, shortest first."""
    ruler_skipped: tuple[int, ...] | None = None
    """Of ``skipped``, the lengths where it left a RULER case out (null, in a report written before
    the search followed other summaries: all of them)."""

    @property
    def decided(self) -> dict[int, bool]:
        """The lengths the search judged: those its average's own test was certain of, and as
        failing, those where it left a RULER case out (RULER's average there is partial); a length
        where it left out only other summaries' cases is RULER's to judge."""
        certain = {v.length: v.passed for v in self.ruler if v.certain}
        left_out = self.skipped if self.ruler_skipped is None else self.ruler_skipped
        return {**{length: False for length in left_out}, **certain}


SLOTS = (
    Slot(SEQUENTIAL_SLOT, "run", SequentialSettings),
    Slot(SEARCH_SLOT, "report", SearchRecord),
)
