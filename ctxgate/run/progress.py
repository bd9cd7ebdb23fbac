"""A running case's progress, as the case reports it after each sample to whoever listens
(``Listener``, in the stash under ``plugins.cases.PROGRESS_KEY``: the progress extra's line)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Progress:
    """Where a case stands after a sample finished. ``done`` counts cached samples too; the rate and
    the ETA use only what the backend generated in this run, over ``seconds`` of generating."""

    case: str  # "vt-4096"
    done: int
    total: int
    from_cache: int
    generated_tokens: int
    seconds: float


def case_label(task: str, length: int) -> str:
    return f"{task}-{length}"


class Listener(Protocol):
    """Hears each running case's progress, and when the case is over."""

    def __call__(self, progress: Progress) -> None: ...

    def end(self, case: str) -> None: ...
