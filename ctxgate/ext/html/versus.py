"""The HTML report's runs side by side: the paired comparison with a baseline and the samples that
flipped, and the trend of a category against the training step (``ctxgate trend``'s points)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxgate.api import Prediction, Report, format_length
from ctxgate.ext.html.cells import (
    col_heads,
    colour,
    e,
    num,
    score_td,
    section,
    table,
)
from ctxgate.ext.html.samples import Flip, case_key, flips

FLIPS_SHOWN = 200  # per direction; the count says how many there are


def comparison(
    report: Report,
    rows: Sequence[Prediction],
    baseline_rows: Sequence[Prediction],
    baseline_path: str | None,
) -> str:
    compared = [(c, c.baseline) for c in report.cases if c.baseline]
    if not compared and not baseline_rows:
        return ""
    lines = []
    for c, b in compared:
        low, high = b.interval
        verdict = "regressed" if b.regressed else "improved" if low > b.tolerance else "same"
        lines.append(
            f'<tr class="{verdict}"><th scope="row"><a href="#{e(case_key(c.task, c.length))}">'
            f"{e(c.task)}</a></th><td>{format_length(c.length)}</td>"
            f"<td>{num(b.score)}</td><td>{num(c.score)}</td><td>{num(b.delta, True)}</td>"
            f"<td>{num(low, True)} .. {num(high, True)}</td><td>{e(b.n)}</td>"
            f'<td>{num(b.tolerance)}</td><td class="verdict">{verdict.upper()}</td></tr>'
        )
    where = f" ({e(baseline_path)})" if baseline_path else ""
    head = col_heads(*"task length baseline now change interval n tolerance verdict".split())
    compared_table = (
        '<p class="note">Paired per case: the same samples in both runs, the score change with its '
        "interval, and the baseline gate's verdict.</p>"
        + table('class="comparison"', "Cases against the baseline", head, "".join(lines))
        if lines
        else "<p>No case was compared (none of the baseline's cases ran with the same samples).</p>"
    )
    flipped = ""
    if baseline_rows:
        changed = flips(rows, baseline_rows)
        lost = [f for f in changed if f.lost]
        flipped = _flip_table("Right in the baseline, wrong now", "lost", lost)
        gained = [f for f in changed if not f.lost]
        flipped += _flip_table("Wrong in the baseline, right now", "gained", gained)
    return section("comparison", f"Against the baseline{where}", compared_table + flipped)


def _flip_table(title: str, ident: str, found: Sequence[Flip]) -> str:
    if not found:
        return f'<h3 id="flips-{ident}">{e(title)}: none</h3>'
    rows = "".join(
        f'<tr><th scope="row"><a href="#{e(case_key(f.task, f.length))}">{e(f.task)}</a> '
        f"{format_length(f.length)} #{f.index}</th>"
        f"<td>{e(_answers(f.after))}</td>{_said('before', f.before)}{_said('after', f.after)}</tr>"
        for f in found[:FLIPS_SHOWN]
    )
    more = len(found) - FLIPS_SHOWN
    more_note = f"<p>… and {more} more in the predictions files.</p>" if more > 0 else ""
    head = col_heads("sample", "answer(s)", "baseline said (score)", "now says (score)")
    flipped = table(f'class="flips" data-flips="{ident}"', e(title), head, rows)
    return f'<h3 id="flips-{ident}">{e(title)}: {len(found)} sample(s)</h3>{flipped}{more_note}'


def _said(when: str, row: Prediction) -> str:
    score = f'<span class="sc">({100 * (row.score or 0):.0f})</span>'
    return f'<td class="{when}">{e(row.prediction)} {score}</td>'


def _answers(row: Prediction) -> str:
    more = f" (+{len(row.answers) - 4})" if len(row.answers) > 4 else ""
    return " | ".join(row.answers[:4]) + more


def trend(points: Sequence[Mapping[str, Any]]) -> str:
    if not points:
        return ""
    parts = []
    for category in dict.fromkeys(str(p["category"]) for p in points):
        mine = [p for p in points if p["category"] == category]
        steps = sorted({int(p["step"]) for p in mine})
        lengths = sorted({int(p["length"]) for p in mine if p["length"] != ""}) or [0]
        value = {(int(p["step"]), int(p["length"]) if p["length"] != "" else 0): p for p in mine}
        head = col_heads("step", *(format_length(L) if L else "value" for L in lengths))
        body = "".join(
            f'<tr><th scope="row">{s}</th>'
            + "".join(_trend_td(value.get((s, L)), category) for L in lengths)
            + "</tr>"
            for s in steps
        )
        chart = _trend_svg(category, steps, lengths, value)
        steps_table = table('class="trend"', e(category), head, body)
        parts.append(f"<h3>{e(category)}</h3>{chart}{steps_table}")
    note = (
        "<p>The data of <code>ctxgate trend</code>: each report's step from its checkpoint's "
        "name.</p>"
    )
    return section("trend", "Trend over training steps", note + "".join(parts))


def _trend_td(point: Mapping[str, Any] | None, category: str) -> str:
    if point is None or point.get("score") is None:
        return '<td class="none">—</td>'
    mark = '<span class="partial-mark">*</span>' if point.get("partial") else ""
    if category == "effective length":
        return f"<td>{format_length(int(point['score'])) if point['score'] else '0'}{mark}</td>"
    return score_td(float(point["score"]), f"{float(point['score']):.1f}{mark}")


def _trend_svg(
    category: str, steps: Sequence[int], lengths: Sequence[int], value: Mapping[Any, Any]
) -> str:
    width, height, pad = 640, 220, 36
    top = 100.0
    if category == "effective length":
        top = max([float(p["score"] or 0) for p in value.values()] + [1.0])
    lo, hi = min(steps), max(steps)

    def x(step: int) -> float:
        return pad + (width - 2 * pad) * ((step - lo) / (hi - lo) if hi > lo else 0.5)

    def y(score: float) -> float:
        return height - pad - (height - 2 * pad) * score / top

    lines: list[str] = []
    keys: list[str] = []
    for i, L in enumerate(lengths):
        scored = [s for s in steps if value.get((s, L), {}).get("score") is not None]
        pts = [(x(s), y(float(value[(s, L)]["score"]))) for s in scored]
        if not pts:
            continue
        tint = colour(i / max(1, len(lengths) - 1) * 0.85)
        path = " ".join(f"{a:.1f},{b:.1f}" for a, b in pts)
        label = format_length(L) if L else category
        dash = ("", ' stroke-dasharray="6 3"', ' stroke-dasharray="2 3"')[i % 3]  # not colour alone
        lines.append(
            f'<polyline fill="none" stroke="{tint}" stroke-width="2"{dash} points="{path}">'
            f"<title>{e(label)}</title></polyline>"
        )
        keys.append(f'<li><span style="background:{tint}"></span>{e(label)}</li>')
    bottom = height - pad
    axis = (
        f'<line x1="{pad}" y1="{bottom}" x2="{width - pad}" y2="{bottom}" stroke="#666"/>'
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{bottom}" stroke="#666"/>'
        f'<text x="{pad}" y="{height - 10}" font-size="11">step {lo}</text>'
        f'<text x="{width - pad}" y="{height - 10}" font-size="11" text-anchor="end">'
        f"step {hi}</text>"
        f'<text x="4" y="{pad}" font-size="11">{top:g}</text>'
    )
    return (
        f'<svg class="trend-chart" role="img" aria-label="{e(category)} against the training '
        'step, one line per length (the table below has the numbers)" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}">'
        f'{axis}{"".join(lines)}</svg><ul class="keys" aria-hidden="true">{"".join(keys)}</ul>'
    )
