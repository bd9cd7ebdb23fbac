"""The cells of the HTML report's tables: a score on the colour scale, a case (its score or what
happened to it, linked to its samples), a summary with its marks; and the boxes around them
(``table``, ``section``), so every table and section of the page is marked up alike. Every text is
escaped here (``e``).

The colour scale is viridis (van der Walt and Smith, matplotlib's default since 2.0, released CC0),
perceptually uniform and readable with the common colour-vision deficiencies and in greyscale. 33
evenly spaced anchors of matplotlib's 256-entry table, interpolated linearly in sRGB: at most 3/255
from the full table in a channel (tests check it)."""

from __future__ import annotations

import html
from typing import Any

from ctxgate.api import CaseRecord, GroupScore, no_score_word
from ctxgate.ext.html.samples import case_key

VIRIDIS = tuple(
    "#440154 #470d60 #48186a #482374 #472d7b #453781 #424086 #3e4989 #3b528b #375b8d #33638d "
    "#2f6b8e #2c728e #297a8e #26828e #23898e #21918c #1f988b #1fa088 #22a785 #28ae80 #32b67a "
    "#3fbc73 #4ec36b #5ec962 #70cf57 "
    "#84d44b #98d83e #addc30 #c2df23 #d8e219 #ece51b #fde725".split()
)


def colour(fraction: float) -> str:
    """The scale's colour at ``fraction`` (clamped to 0..1) as ``#rrggbb``."""
    t = min(1.0, max(0.0, fraction)) * (len(VIRIDIS) - 1)
    i = min(int(t), len(VIRIDIS) - 2)
    low, high = bytes.fromhex(VIRIDIS[i][1:]), bytes.fromhex(VIRIDIS[i + 1][1:])
    mixed = (round(a + (b - a) * (t - i)) for a, b in zip(low, high, strict=True))
    return "#" + "".join(f"{c:02x}" for c in mixed)


def e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def score_td(score: float | None, inner: str, extra_class: str = "", title: str = "") -> str:
    if score is None:
        return f'<td class="status {extra_class}"{title_attr(title)}>{inner}</td>'
    fraction = score / 100
    ink = (
        "#ffffff" if fraction < 0.6 else "#000000"
    )  # enough contrast: white on dark, black on light
    return (
        f'<td class="score {extra_class}" '
        f'style="background:{colour(fraction)};color:{ink}"'
        f' data-score="{score:.2f}"{title_attr(title)}>{inner}</td>'
    )


def title_attr(text: str) -> str:
    return f' title="{e(text)}"' if text else ""


def table(
    attrs: str, caption: str, head: str, body: str, foot: str = "", box: str = 'class="scroll"'
) -> str:
    """A table in a box that scrolls sideways: ``head`` its heading cells, ``body`` its rows."""
    inner = f"<caption>{caption}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
    return f"<div {box}><table {attrs}>{inner}{foot}</table></div>"


def col_heads(*names: str) -> str:
    return "".join(f'<th scope="col">{name}</th>' for name in names)


def section(ident: str, title: str, inner: str) -> str:
    """A section of the page under its heading; the page's navigation links to it by ``ident``."""
    heading = f'<h2 id="{ident}-h">{title}</h2>'
    return f'<section id="{ident}" aria-labelledby="{ident}-h">{heading}{inner}</section>'


def case_cell(case: CaseRecord | None) -> str:
    """A case in a tasks x lengths table: its coloured score or what happened, linked to it."""
    if case is None:
        return '<td class="none">not selected</td>'
    link = f'<a href="#{e(case_key(case.task, case.length))}">'
    if case.verdict in ("skip", "error") or case.score is None:
        pending = case.judge_status == "pending"
        word = "judge pending" if pending else "no score"
        word = no_score_word(case) if case.verdict in ("skip", "error") else word
        kind = case.error_kind or case.skip_kind or ("pending" if pending else case.verdict)
        return score_td(None, f"{link}{e(word)}</a>", f"status-{e(kind)}", case.message)
    failed = case.verdict == "fail"
    mark = '<span class="fail-mark" aria-label="failed">✗</span>' if failed else ""
    chance = "" if case.chance is None else f"chance {case.chance:.1f}"
    title = "; ".join(t for t in (case.message, chance) if t)
    score = float(case.score)
    return score_td(score, f"{link}{score:.1f}</a>{mark}", "failed" if failed else "", title)


def group_td(group: GroupScore | None, threshold: float | None = None) -> str:
    if group is None or (group.score is None and not group.incomplete):
        return '<td class="none">—</td>'
    score = None if group.score is None else float(group.score)
    marks, why = [], []
    if group.partial:
        marks.append('<span class="partial-mark" aria-label="partial">*</span>')
        why.append("partial: lacks " + ", ".join(group.missing))
    if group.incomplete:
        marks.append('<span class="partial-mark" aria-label="incomplete">!</span>')
        why.append("incomplete: no score for " + ", ".join(group.errored))
    if threshold is not None and score is not None:
        side, sign = ("above", "≥") if score > threshold else ("below", "<")
        marks.append(f'<span class="{side}-mark">{sign} {threshold:g}</span>')
    text = "n/a" if score is None else f"{score:.1f}"
    return score_td(score, text + "".join(marks), "group", "; ".join(why))


def num(value: Any, signed: bool = False) -> str:
    return "" if value is None else format(float(value), "+.1f" if signed else ".1f")
