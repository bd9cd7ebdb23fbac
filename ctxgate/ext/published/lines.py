"""A run against the papers' published numbers, in words: the terminal's lines and the Markdown
report's table."""

from __future__ import annotations

from ctxgate.lengths import format_length
from ctxgate.records.schema import PublishedLength, Reference, Report
from ctxgate.report.tables import md_row


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


def markdown_lines(report: Report) -> list[str]:
    section = report.reference
    if not section or not section.rows:
        return []
    out = ["", f"#### Against the published numbers for {section.model} ({section.matched})", ""]
    out += [
        "| measure | length | published | measured (95% CI) | difference | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for row in section.rows:
        for e in row.lengths:
            cells = [f"{row.label} ({row.table})", format_length(e.length), f"{e.published:.1f}"]
            if e.verdict == "not measured":
                cells += ["—", "—", "not measured"]
            else:
                verdict = f"{e.verdict} {_interval(e.band)}"
                if e.verdict == "settings differ":
                    verdict = f"settings differ: {'; '.join(e.differs)}"
                cells += [_measured(e), f"{e.difference or 0.0:+.1f}", verdict]
            out.append(md_row(cells))
    return out + [""] + [f"- {line}" for line in _reference_notes(section)]
