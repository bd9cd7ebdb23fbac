"""The one status line the terminal shows for all workers' running cases: pure formatting of the
spine's ``run.progress.Progress`` values."""

from __future__ import annotations

from collections.abc import Iterable

from ctxgate.api import Progress


def eta_seconds(p: Progress) -> float | None:
    """Seconds until the case's last sample at this run's pace; None before a generation."""
    generated = p.done - p.from_cache
    if generated <= 0 or p.seconds <= 0:
        return None
    return (p.total - p.done) * p.seconds / generated


def describe(p: Progress) -> str:
    """``vt-4096 12/20 310 tok/s ETA 0:12``"""
    parts = [p.case, f"{p.done}/{p.total}"]
    if p.generated_tokens and p.seconds > 0:
        parts.append(f"{p.generated_tokens / p.seconds:.0f} tok/s")
    eta = eta_seconds(p)
    parts.append(f"ETA {clock(eta)}" if eta is not None else "starting")
    return " ".join(parts)


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
        f"{worker} {describe(p)}".strip() for worker, p in sorted(running, key=lambda wp: wp[0])
    ]
    if not cases or width < 10:
        return ""
    line = f"[{finished}/{selected} cases] " + " | ".join(cases) if selected else " | ".join(cases)
    return line if len(line) <= width else line[: width - 1] + "…"
