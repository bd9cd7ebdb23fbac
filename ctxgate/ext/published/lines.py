"""A run against the papers' published numbers, in words (``ctxgate published``'s lines), and as
the report's section: its table, a row per measure and length, and its notes."""

from __future__ import annotations

from ctxgate.api import ReportSection, format_length

from .records import PublishedLength, Reference


def _measured(e: PublishedLength) -> str:
    return f"{e.measured or 0.0:.1f} {_interval(e.ci)}"


def _interval(bounds: tuple[float, float] | None) -> str:
    low, high = bounds or (0.0, 0.0)
    return f"[{low:.1f}, {high:.1f}]"


def published_lines(section: Reference) -> list[str]:
    """``report.reference`` in words, a line per measure and length."""
    out = [f"Against the published numbers for {section.model} ({section.matched}):"]
    for row in section.rows:
        for e in row.lengths:
            head = f"  {row.label} at {format_length(e.length)} ({row.table})"
            head += f": published {e.published:.1f}"
            text = f"{head}, measured {_measured(e)}, difference {e.difference or 0.0:+.1f}"
            if e.verdict == "not measured":
                out.append(f"{head}, not measured in this run")
            elif e.verdict == "settings differ":
                out.append(f"{text}: no verdict, settings differ ({'; '.join(e.differs)})")
            else:
                word = "WITHIN" if e.verdict == "within" else "OUTSIDE"
                band = f"the band {_interval(e.band)} (the interval ±{row.allowance:g} points)"
                out.append(f"{text}: {word} {band}")
    return out + [f"  {line}" for line in _reference_notes(section)]


def _reference_notes(section: Reference) -> list[str]:
    """Each table's effective length with its bar, and the source of the band's allowance."""
    notes = [
        f"{row.label} ({row.table}): the paper's effective length {row.effective}"
        + (f" (above {row.effective_bar})" if row.effective_bar else "")
        + (f", claimed {row.claimed}" if row.claimed else "")
        for row in section.rows
        if row.effective
    ]
    allowances = sorted({(r.allowance, r.allowance_source) for r in section.rows})
    return notes + [f"band: the measured interval ±{a:g} points ({why})" for a, why in allowances]


def section(reference: Reference) -> ReportSection:
    """The report's section: a row per measure and length, with its verdict, and the notes."""
    head = ("measure", "length", "published", "measured (95% CI)", "difference", "verdict")
    rows = [head]
    for row in reference.rows:
        for e in row.lengths:
            cells = (f"{row.label} ({row.table})", format_length(e.length), f"{e.published:.1f}")
            if e.verdict == "not measured":
                rows.append((*cells, "—", "—", "not measured"))
                continue
            verdict = f"{e.verdict} {_interval(e.band)}"
            if e.verdict == "settings differ":
                verdict = f"settings differ: {'; '.join(e.differs)}"
            rows.append((*cells, _measured(e), f"{e.difference or 0.0:+.1f}", verdict))
    said = f"Against the published numbers for {reference.model} ({reference.matched})"
    lines = (f"{said}: a row per measure and length below", *_reference_notes(reference))
    return ReportSection("published", "Published numbers", lines, tuple(rows))
