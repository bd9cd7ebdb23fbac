"""The HTML report: one self-contained file (its CSS, script and data inline; nothing is fetched
when it opens) that shows a run at a glance and every sample on demand. The tables are real
``<table>`` elements, readable without the script; the script (``assets/report.js``) only opens a
case's samples, which travel gzip-compressed in the page (a full 128K run stays a few MB). Its
sections, in the page's order: the run and its gates; the heatmaps (tasks x lengths per suite with
RULER's average, threshold and effective length and each task family's mean, HELMET's categories,
needle depth x length per NIAH task); the effective lengths; each case's cost; the runs side by
side (the paired comparison with a baseline and the samples that flipped, the trend against the
training step)."""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ctxgate.api import (
    COST_NOTE,
    DEPTHS,
    EffectiveLength,
    Prediction,
    Report,
    ReportSection,
    category_label,
    chances,
    cost_line,
    cost_rows,
    effective_lengths,
    format_length,
    in_registry_order,
    membership,
    suite_label,
    to_json,
)
from ctxgate.ext.html.cells import (
    VIRIDIS,
    case_cell,
    col_heads,
    e,
    group_td,
    score_td,
    section,
    table,
    title_attr,
)
from ctxgate.ext.html.samples import DepthGrid, by_case, case_key, depth_grids, page_row
from ctxgate.ext.html.versus import comparison, trend


@dataclass(frozen=True)
class PageInput:
    report: Report
    rows: Sequence[Prediction] = ()  # the run's .predictions.jsonl
    baseline_rows: Sequence[Prediction] = ()  # the baseline's, for the samples that flipped
    baseline_path: str | None = None
    trend: Sequence[Mapping[str, Any]] = ()  # ctxgate trend's points (workflows.trend.load_points)
    report_name: str = ""  # the JSON report's file name, linked from the page


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(f"assets/{name}").read_text("utf-8")


def render(page: PageInput) -> str:
    report = page.report
    title = f"ctxgate: {report.run.model}"
    sections = [
        _header(report, page.report_name),
        _legend(),
        *task_tables(report),
        helmet_categories(report),
        effective_table(report),
        cost_table(report),
        *map(section_table, report.sections),
        depths(page.rows),
        comparison(report, page.rows, page.baseline_rows, page.baseline_path),
        trend(page.trend),
        _DRILL_SHELL,
    ]
    families = [(f, suite_label(f)) for f in membership().families]
    shown = (*_NAV[:3], *families, *_NAV[3:])
    nav = [(i, label) for i, label in shown if any(f'id="{i}"' in s for s in sections)]
    links = "".join(f'<li><a href="#{i}">{e(label)}</a></li>' for i, label in nav)
    main = "\n".join(s for s in sections if s)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        # no request may leave the file: nothing is loaded, not even from the page's own origin
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
        f"<title>{e(title)}</title>\n<style>\n{_asset('report.css')}\n</style>\n</head>\n"
        '<body>\n<a class="skip" href="#main">Skip to the results</a>\n'
        f'<nav aria-label="Sections"><ul>{links}</ul></nav>\n<main id="main">\n{main}\n</main>\n'
        f'<script type="application/octet-stream" id="ctxgate-samples">{_payload(page)}</script>\n'
        f"<script>\n{_asset('report.js')}\n</script>\n</body>\n</html>\n"
    )


_NAV = (
    ("run", "Run"),
    ("ruler", "RULER"),
    ("helmet", "HELMET"),
    ("categories", "HELMET categories"),
    ("effective", "Effective length"),
    ("cost", "Cost"),
    ("depths", "Needle depths"),
    ("comparison", "Against the baseline"),
    ("trend", "Trend"),
)


def _header(report: Report, report_name: str) -> str:
    run = report.run
    passed = report.complete and all(g.verdict == "pass" for g in report.gates)
    backend = run.backend or {}
    engine = " ".join(str(backend.get(k)) for k in ("backend", "device", "dtype") if backend.get(k))
    fingerprint = str((run.model_fingerprint or {}).get("sha256") or "")
    facts = [
        ("Checkpoint", run.model),
        ("Fingerprint", fingerprint[:16] + ("…" if fingerprint else "")),
        ("Backend", engine),
        ("Lengths", ", ".join(format_length(L) for L in run.lengths)),
        ("Samples per case", run.samples),
        ("Seed", run.seed),
        ("Cost", cost_line(report.cost).removeprefix("Cost: ") if report.cost else None),
        *((s.title, " ".join(s.lines)) for s in report.sections if s.lines),
        ("Chat template", run.chat_template),
        ("Overrides", json.dumps(run.model_overrides) if run.model_overrides else None),
        ("Created", report.created),
        ("ctxgate", report.ctxgate_version),
    ]
    if report_name:
        facts.append(("JSON report", f'<a href="{e(report_name)}">{e(report_name)}</a>'))
    alert = '<p class="banner incomplete" role="alert">'
    banner = '<p class="banner complete" role="status">COMPLETE: every selected case finished</p>'
    if not report.complete:
        banner = f"{alert}INCOMPLETE: not every selected case finished; this run cannot pass</p>"
    if report.error:
        banner += f"{alert}Run error: {e(report.error.message)}</p>"
    rows = "".join(
        f'<tr class="{e(g.verdict)}"><th scope="row">{e(g.name)}</th>'
        f'<td class="verdict">{e(g.verdict.upper())}</td><td>{e(g.message)}</td></tr>'
        for g in report.gates
    )
    return (
        '<section id="run" aria-labelledby="run-h">'
        f'<h1 id="run-h">ctxgate <span class="overall {"pass" if passed else "fail"}">'
        f"{'PASS' if passed else 'FAIL'}</span> {e(run.model)}</h1>"
        + banner
        + '<dl class="facts">'
        + "".join(
            f"<div><dt>{e(k)}</dt><dd{title_attr(fingerprint) if k == 'Fingerprint' else ''}>"
            f"{v if k == 'JSON report' else e(v)}</dd></div>"
            for k, v in facts
            if v not in (None, "")
        )
        + "</dl>"
        + '<table class="gates"><caption>Gates</caption><thead><tr><th scope="col">gate</th>'
        '<th scope="col">verdict</th><th scope="col">reason</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></section>"
    )


def _legend() -> str:
    stops = ", ".join(f"{c} {100 * i / (len(VIRIDIS) - 1):.0f}%" for i, c in enumerate(VIRIDIS))
    return (
        '<p class="legend"><span class="ramp" style="background: linear-gradient(to right, '
        f'{stops})" aria-hidden="true"></span> score 0 to 100, on viridis (perceptually '
        'uniform, readable with colour-vision deficiencies). <span class="status-sample">crash'
        "</span> a case without a score, by what happened to it; "
        '<span class="fail-mark">✗</span> below its floor; <span class="partial-mark">*</span> '
        "partial (not every member ran).</p>"
    )


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
        "rule; the base is the mean up to 1K), each counting what it scores above chance: none "
        "where the base is not above chance. LongScore: 100-LongBench's, in percent: the mean "
        "over the lengths of 8K or more of 100 x (score - base) / base, its base the mean at "
        "those of 2K, 4K and 6K that ran (its 0-8K bucket), above chance as well.</p>"
    )
    grid = table("", "Effective length, absolute and relative", head, body)
    return section("effective", "Effective length", note + grid)


def cost_table(report: Report) -> str:
    """Each case's cost, as the terminal and the Markdown show it."""
    if not (found := cost_rows(report)):
        return ""
    (head, rows), note = found[0], COST_NOTE.removeprefix("cost: per case, ")
    cells = ["".join(f"<td>{e(c)}</td>" for c in row[1:]) for row in rows]
    body = "".join(f'<tr><th scope="row">{e(r[0])}</th>{c}</tr>' for r, c in zip(rows, cells))
    grid = table("", "Cost per case and length", col_heads(*map(e, head)), body)
    return section("cost", "Cost", f'<p class="note">Per case: {e(note)}.</p>{grid}')


def section_table(part: ReportSection) -> str:
    """An extra's table (``Report.sections``), under its title."""
    if not part.table:
        return ""
    head, *rows = part.table
    body = "".join(
        f'<tr><th scope="row">{e(r[0])}</th>{"".join(f"<td>{e(c)}</td>" for c in r[1:])}</tr>'
        for r in rows
    )
    grid = table("", part.title, col_heads(*map(e, head)), body)
    return section(f"extra-{part.extra}", part.title, grid)


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


_DRILL_SHELL = (
    '<section id="drill" aria-labelledby="drill-h" hidden>'
    '<h2 id="drill-h" tabindex="-1">Samples</h2><div id="drill-body" aria-live="polite"></div>'
    "</section>"
)


# the fields of a case's record the page carries for its script
_CASE_FIELDS = tuple(
    "task suite length metric verdict message score ci n floor seconds input_tokens_max fill_min "
    "output_tokens samples_from_cache baseline thinking".split()
)


def _payload(page: PageInput) -> str:
    """Every case's record and samples, as the script reads them: gzip-compressed JSON in base64."""
    rows = by_case(page.rows)
    cases = {}
    for c in page.report.cases:
        key, record = (c.task, c.length), to_json(c)
        cases[case_key(*key)] = {
            "case": {k: record[k] for k in _CASE_FIELDS},
            "rows": [page_row(r) for r in rows.get(key, [])],
        }
    text = json.dumps({"cases": cases}, separators=(",", ":"), ensure_ascii=False)
    packed = gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)
    return base64.b64encode(packed).decode("ascii")
