"""A running case's progress, and the one status line the terminal shows for all workers' cases.
Pure values and formatting: plugins/progress.py moves them between processes and draws them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


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

    def eta_seconds(self) -> float | None:
        """Seconds until the case's last sample at this run's pace; None before a generation."""
        generated = self.done - self.from_cache
        if generated <= 0 or self.seconds <= 0:
            return None
        return (self.total - self.done) * self.seconds / generated

    def describe(self) -> str:
        """``vt-4096 12/20 310 tok/s ETA 0:12``"""
        parts = [self.case, f"{self.done}/{self.total}"]
        if self.generated_tokens and self.seconds > 0:
            parts.append(f"{self.generated_tokens / self.seconds:.0f} tok/s")
        eta = self.eta_seconds()
        parts.append(f"ETA {clock(eta)}" if eta is not None else "starting")
        return " ".join(parts)


def case_label(task: str, length: int) -> str:
    return f"{task}-{length}"


def clock(seconds: float) -> str:
    """0:07, 12:30, 2:05:00"""
    whole = max(0, int(round(seconds)))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def status_line(
    finished: int, selected: int, running: Iterable[tuple[str, Progress]], width: int
) -> str:
    """``[3/26 cases] gw0 vt-4096 12/20 310 tok/s ETA 0:12 | gw1 cwe-8192 ...``, cut to ``width``
    characters (an ellipsis marks the cut); empty when nothing is running or there is no room."""
    cases = [
        f"{worker} {p.describe()}".strip() for worker, p in sorted(running, key=lambda wp: wp[0])
    ]
    if not cases or width < 10:
        return ""
    line = f"[{finished}/{selected} cases] " + " | ".join(cases) if selected else " | ".join(cases)
    return line if len(line) <= width else line[: width - 1] + "…"
