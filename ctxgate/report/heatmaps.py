"""The HTML report's heatmaps: tasks x lengths per suite (with RULER's average, threshold and
effective length, and each task family's mean), HELMET's categories per length, and needle depth x
length per NIAH task."""

from __future__ import annotations

from collections.abc import Sequence

from ctxgate.lengths import format_length
from ctxgate.records.schema import EffectiveLength, Prediction, Report
from ctxgate.report.cells import case_cell, col_heads, e, group_td, score_td, section, table
from ctxgate.report.samples import DepthGrid, case_key, depth_grids
from ctxgate.report.tables import chances, effective_lengths, in_registry_order
from ctxgate.tasks.niah import DEPTHS
from ctxgate.tasks.registry import category_label, membership, suite_label


def task_tables(report: Report) -> list[str]:
    cases = report.cases
    lengths = sorted({c.length for c in cases})
    by_key = {(c.task, c.length): c for c in cases}
    eff = report.effective_length
    chance = chances(report)
    out = []
    for suite in ("ruler", "helmet", *membership().families):
        label = suite_label(suite)
        tasks = in_registry_order(c.task for c in cases if c.suite == suite)
        if not tasks:
            continue
        head = col_heads("task")
        head += "".join(_length_th(L, eff if suite == "ruler" else None) for L in lengths)
        head += '<th scope="col" title="a random answer\'s expected score">chance</th>'
        body = "".join(
            f'<tr><th scope="row">{e(t)}</th>'
            + "".join(case_cell(by_key.get((t, L))) for L in lengths)
            + f'<td class="chance">{e(chance[t])}</td></tr>'
            for t in tasks
        )
        foot = "" if suite == "helmet" else _average(report, lengths, suite)
        note = (
            "Score per task and length; follow a cell to its samples. Chance: the score a random "
            "answer gets on average (docs/tasks.md); a floor at or below it gates nothing."
        )
        if suite == "ruler" and eff:
            value = format_length(eff.value) if eff.value else f"below {format_length(lengths[0])}"
            note += (
                f" Effective length <strong>{e(value)}</strong>: the RULER average above "
                f"{e(eff.threshold)} at it and every shorter length"
                + (" (partial: not every RULER task ran)." if eff.partial else ".")
            )
        grid = table('class="heatmap"', f"{label} tasks x lengths", head, body, foot)
        out.append(section(suite, label, f'<p class="note">{note}</p>{grid}'))
    return out


def _length_th(length: int, eff: EffectiveLength | None) -> str:
    if eff and eff.value == length:
        mark = '<span class="eff-mark">◆ effective</span>'
        return f'<th scope="col" class="effective">{format_length(length)} {mark}</th>'
    return col_heads(format_length(length))


def _average(report: Report, lengths: Sequence[int], suite: str) -> str:
    """RULER's average (against its threshold), or a task family's mean, per length."""
    eff = report.effective_length
    threshold = eff.threshold if eff and suite == "ruler" else None
    summaries = report.length_summaries
    cells = "".join(group_td(summaries.get(L, {}).get(suite), threshold) for L in lengths)
    label = f'<th scope="row">{e(suite_label(suite))} average</th>'
    return f"<tfoot><tr>{label}{cells}<td></td></tr></tfoot>"


def helmet_categories(report: Report) -> str:
    by_length = report.length_summaries
    lengths = list(by_length)
    keys = [f"helmet_{c}" for c in membership().helmet] + ["helmet_overall"]
    present = [
        k for k in keys if any((g := by_length[L].get(k)) and g.score is not None for L in lengths)
    ]
    if not present:
        return ""
    body = "".join(
        f'<tr><th scope="row">{_category_name(k)}</th>'
        + "".join(group_td(by_length[L].get(k)) for L in lengths)
        + "</tr>"
        for k in present
    )
    head = col_heads("category", *map(format_length, lengths))
    note = (
        '<p class="note">The mean of each category\'s tasks per length; '
        "* partial (not every task of it ran).</p>"
    )
    grid = table('class="heatmap"', "HELMET categories x lengths", head, body)
    return section("categories", "HELMET categories", note + grid)


def _category_name(key: str) -> str:
    return "Overall average" if key == "helmet_overall" else e(category_label(key[7:]))


def effective_table(report: Report) -> str:
    """The absolute and relative effective lengths and LongScore, side by side."""
    found = effective_lengths(report)
    if not found:
        return ""
    body = "".join(
        f'<tr><th scope="row">{e(row[0])}</th>{"".join(f"<td>{e(c)}</td>" for c in row[1:])}</tr>'
        for row in found
    )
    head = col_heads("summary", "absolute", "relative", "LongScore")
    note = (
        '<p class="note">Absolute: the longest length with RULER\'s average above the bar there '
        "and at every shorter length. Relative: the longest length keeping the share of the "
        "model's own short-context score (its base) there and at every shorter length (NoLiMa's "
        "rule; the base is the mean up to 1K). LongScore: 100-LongBench's, in percent: the mean "
        "over the lengths of 8K or more of 100 x (score - base) / base, its base the mean over "
        "the lengths below 8K.</p>"
    )
    grid = table("", "Effective length, absolute and relative", head, body)
    return section("effective", "Effective length", note + grid)


def depths(rows: Sequence[Prediction]) -> str:
    grids = depth_grids(rows)
    if not grids:
        return ""
    note = (
        '<p class="note">Mean score by needle depth (rows, percent of the context) and length '
        "(columns): each needle of a sample counts the sample's score at its depth; the line "
        "tasks' random positions are rounded to the nearest of RULER's 40 depths.</p>"
    )
    grid = "".join(_depth_table(g) for g in grids)
    return section("depths", "Needle depth x length", note + grid)


def _depth_table(grid: DepthGrid) -> str:
    body = []
    for depth in DEPTHS:
        cells = []
        for L in grid.lengths:
            found = grid.cells.get((depth, L))
            if found is None:
                cells.append('<td class="none">·</td>')
                continue
            mean, n = found
            text = f"{mean:.0f}"
            if grid.task != "all":
                text = f'<a href="#{e(case_key(grid.task, L))}">{text}</a>'
            cells.append(score_td(mean, text, "depth", f"{mean:.1f} over {n} needle(s)"))
        body.append(f'<tr><th scope="row">{depth}%</th>{"".join(cells)}</tr>')
    name = "All NIAH tasks" if grid.task == "all" else grid.task
    head = col_heads("depth", *map(format_length, grid.lengths))
    box = f'class="scroll depth-grid" data-task="{e(grid.task)}"'
    return table('class="heatmap depth"', e(name), head, "".join(body), box=box)
