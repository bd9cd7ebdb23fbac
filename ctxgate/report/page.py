"""The HTML report: one self-contained file (its CSS, script and data inline; nothing is fetched when it opens)
that shows a run at a glance and every sample on demand.

The tables are real ``<table>`` elements written here, readable without the script (print, a viewer that blocks
scripts); the script (``assets/report.js``) only opens a case's samples, which travel gzip-compressed and base64
encoded in the page and are unpacked by the browser's own ``DecompressionStream``, so a full 128K run stays a few
MB. Scores are coloured on viridis (``colours.py``); a case without a score is marked by what happened to it, never
by a colour of the scale."""

from __future__ import annotations

import base64
import gzip
import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ctxgate.lengths import format_length
from ctxgate.report import colours
from ctxgate.report.samples import DepthGrid, Flip, by_case, case_key, depth_grids, flips, page_row
from ctxgate.report.tables import no_score_word
from ctxgate.tasks.niah import DEPTHS
from ctxgate.tasks.registry import category_label, membership, task_names

FLIPS_SHOWN = 200  # per direction; the count says how many there are


@dataclass(frozen=True)
class PageInput:
    report: Mapping[str, Any]
    rows: Sequence[Mapping[str, Any]] = ()  # the run's .predictions.jsonl
    baseline_rows: Sequence[Mapping[str, Any]] = ()  # the baseline's, for the samples that flipped
    baseline_path: str | None = None
    trend: Sequence[Mapping[str, Any]] = ()  # ctxgate trend's points (workflows.trend.load_points)
    report_name: str = ""  # the JSON report's file name, linked from the page


def e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _asset(name: str) -> str:
    return resources.files("ctxgate.report").joinpath(f"assets/{name}").read_text("utf-8")


def render(page: PageInput) -> str:
    report = page.report
    run = report.get("run", {})
    title = f"ctxgate: {run.get('model', '')}"
    sections = [
        _header(report, page.report_name),
        _legend(),
        *_task_tables(report),
        _helmet_categories(report),
        _depths(page.rows),
        _comparison(page),
        _trend(page.trend),
        _drill_shell(),
    ]
    nav = [(ident, label) for ident, label in _NAV if any(f'id="{ident}"' in s for s in sections)]
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            # no request may leave the file: nothing is loaded from anywhere, not even this page's own origin
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">",
            f"<title>{e(title)}</title>",
            f"<style>\n{_asset('report.css')}\n</style>",
            "</head>",
            "<body>",
            '<a class="skip" href="#main">Skip to the results</a>',
            '<nav aria-label="Sections"><ul>'
            + "".join(f'<li><a href="#{i}">{e(label)}</a></li>' for i, label in nav)
            + "</ul></nav>",
            '<main id="main">',
            *[s for s in sections if s],
            "</main>",
            f'<script type="application/octet-stream" id="ctxgate-samples">{_payload(page)}</script>',
            f"<script>\n{_asset('report.js')}\n</script>",
            "</body>",
            "</html>",
            "",
        ]
    )


_NAV = (
    ("run", "Run"),
    ("ruler", "RULER"),
    ("helmet", "HELMET"),
    ("categories", "HELMET categories"),
    ("depths", "Needle depths"),
    ("comparison", "Against the baseline"),
    ("trend", "Trend"),
)


# header -----------------------------------------------------------------------------------------------------------
def _header(report: Mapping[str, Any], report_name: str) -> str:
    run = report.get("run", {})
    gates = report.get("gates", [])
    complete = bool(report.get("complete", True))
    passed = complete and all(g.get("verdict") == "pass" for g in gates)
    backend = run.get("backend") or {}
    fingerprint = (run.get("model_fingerprint") or {}).get("sha256")
    lengths = ", ".join(format_length(int(L)) for L in run.get("lengths", []))
    facts = [
        ("Checkpoint", run.get("model")),
        ("Fingerprint", (fingerprint or "")[:16] + ("…" if fingerprint else "")),
        ("Backend", " ".join(str(backend.get(k)) for k in ("backend", "device", "dtype") if backend.get(k))),
        ("Lengths", lengths),
        ("Samples per case", run.get("samples")),
        ("Seed", run.get("seed")),
        ("Chat template", run.get("chat_template")),
        ("Overrides", json.dumps(run["model_overrides"]) if run.get("model_overrides") else None),
        ("Created", report.get("created")),
        ("ctxgate", report.get("ctxgate_version")),
    ]
    if report_name:
        facts.append(("JSON report", f'<a href="{e(report_name)}">{e(report_name)}</a>'))
    banner = (
        '<p class="banner complete" role="status">COMPLETE: every selected case finished</p>'
        if complete
        else '<p class="banner incomplete" role="alert">INCOMPLETE: not every selected case finished; this run '
        "cannot pass</p>"
    )
    error = (report.get("error") or {}).get("message")
    rows = "".join(
        f'<tr class="{e(g.get("verdict"))}"><th scope="row">{e(g.get("name"))}</th>'
        f'<td class="verdict">{e(str(g.get("verdict", "")).upper())}</td><td>{e(g.get("message"))}</td></tr>'
        for g in gates
    )
    return (
        '<section id="run" aria-labelledby="run-h">'
        f'<h1 id="run-h">ctxgate <span class="overall {"pass" if passed else "fail"}">'
        f"{'PASS' if passed else 'FAIL'}</span> {e(run.get('model'))}</h1>"
        + banner
        + (f'<p class="banner incomplete" role="alert">Run error: {e(error)}</p>' if error else "")
        + '<dl class="facts">'
        + "".join(
            f"<div><dt>{e(k)}</dt><dd{' title=' + chr(34) + e(fingerprint) + chr(34) if k == 'Fingerprint' else ''}>"
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
    stops = ", ".join(f"{c} {100 * i / (len(colours.VIRIDIS) - 1):.0f}%" for i, c in enumerate(colours.VIRIDIS))
    return (
        '<p class="legend"><span class="ramp" style="background: linear-gradient(to right, '
        f'{stops})" aria-hidden="true"></span> score 0 to 100, on {colours.NAME} (perceptually uniform, readable '
        'with colour-vision deficiencies). <span class="status-sample">crash</span> a case without a score, by what '
        'happened to it; <span class="fail-mark">✗</span> below its floor; <span class="partial-mark">*</span> '
        "partial (not every member ran).</p>"
    )


# tasks x lengths ----------------------------------------------------------------------------------------------------
def _score_td(score: float | None, inner: str, extra_class: str = "", title: str = "") -> str:
    if score is None:
        return f'<td class="status {extra_class}"{_title(title)}>{inner}</td>'
    fraction = score / 100
    return (
        f'<td class="score {extra_class}" style="background:{colours.colour(fraction)};color:{colours.ink(fraction)}"'
        f' data-score="{score:.2f}"{_title(title)}>{inner}</td>'
    )


def _title(text: str) -> str:
    return f' title="{e(text)}"' if text else ""


def case_cell(case: Mapping[str, Any] | None) -> str:
    """A case in a tasks x lengths table: its score on the colour scale, or what happened to it; a link to it."""
    if case is None:
        return '<td class="none">not selected</td>'
    link = f'<a href="#{e(case_key(case["task"], int(case["length"])))}">'
    if case["verdict"] in ("skip", "error") or case.get("score") is None:
        pending = (case.get("judge") or {}).get("status") == "pending"
        word = "judge pending" if pending else "no score"
        word = no_score_word(case) if case["verdict"] in ("skip", "error") else word
        kind = case.get("error_kind") or case.get("skip_kind") or ("pending" if pending else case["verdict"])
        return _score_td(None, f"{link}{e(word)}</a>", f"status-{e(kind)}", str(case.get("message", "")))
    failed = case["verdict"] == "fail"
    mark = '<span class="fail-mark" aria-label="failed">✗</span>' if failed else ""
    return _score_td(
        float(case["score"]),
        f"{link}{float(case['score']):.1f}</a>{mark}",
        "failed" if failed else "",
        str(case.get("message", "")),
    )


def _task_tables(report: Mapping[str, Any]) -> list[str]:
    cases = report.get("cases", [])
    lengths = sorted({int(c["length"]) for c in cases})
    by_key = {(c["task"], int(c["length"])): c for c in cases}
    known = task_names()
    eff = report.get("effective_length") or {}
    out = []
    for suite, label in (("ruler", "RULER"), ("helmet", "HELMET")):
        tasks = sorted(
            {c["task"] for c in cases if c["suite"] == suite},
            key=lambda t: (t not in known, known.index(t) if t in known else 0, t),
        )
        if not tasks:
            continue
        head = "".join(_length_th(L, eff if suite == "ruler" else {}) for L in lengths)
        body = "".join(
            f'<tr><th scope="row">{e(t)}</th>{"".join(case_cell(by_key.get((t, L))) for L in lengths)}</tr>'
            for t in tasks
        )
        foot = _ruler_average(report, lengths) if suite == "ruler" else ""
        note = "Score per task and length; follow a cell to its samples."
        if suite == "ruler" and eff:
            value = format_length(int(eff["value"])) if eff.get("value") else f"below {format_length(lengths[0])}"
            note += (
                f" Effective length <strong>{e(value)}</strong>: the RULER average above {e(eff.get('threshold'))} "
                "at it and every shorter length"
                + (" (partial: not every RULER task ran)." if eff.get("partial") else ".")
            )
        out.append(
            f'<section id="{suite}" aria-labelledby="{suite}-h"><h2 id="{suite}-h">{label}</h2>'
            f'<p class="note">{note}</p>'
            f'<div class="scroll"><table class="heatmap"><caption>{label} tasks x lengths</caption>'
            f'<thead><tr><th scope="col">task</th>{head}</tr></thead><tbody>{body}</tbody>{foot}</table></div>'
            "</section>"
        )
    return out


def _registry_order(task: str, known: Sequence[str]) -> tuple[int, str]:
    return (known.index(task) if task in known else len(known), task)


def _length_th(length: int, eff: Mapping[str, Any]) -> str:
    if bool(eff.get("value")) and int(eff["value"]) == length:
        return (
            f'<th scope="col" class="effective">{format_length(length)} <span class="eff-mark">◆ effective</span></th>'
        )
    return f'<th scope="col">{format_length(length)}</th>'


def _group_td(group: Mapping[str, Any] | None, threshold: float | None = None) -> str:
    if not group or (group.get("score") is None and not group.get("incomplete")):
        return '<td class="none">—</td>'
    score = group.get("score")
    marks = []
    why = []
    if group.get("partial"):
        marks.append('<span class="partial-mark" aria-label="partial">*</span>')
        why.append("partial: lacks " + ", ".join(group.get("missing", [])))
    if group.get("incomplete"):
        marks.append('<span class="partial-mark" aria-label="incomplete">!</span>')
        why.append("incomplete: no score for " + ", ".join(group.get("errored", [])))
    if threshold is not None and score is not None:
        above = score > threshold
        marks.append(f'<span class="{"above" if above else "below"}-mark">{"≥" if above else "<"} {threshold:g}</span>')
    text = "n/a" if score is None else f"{float(score):.1f}"
    return _score_td(None if score is None else float(score), text + "".join(marks), "group", "; ".join(why))


def _ruler_average(report: Mapping[str, Any], lengths: Sequence[int]) -> str:
    threshold = (report.get("effective_length") or {}).get("threshold")
    cells = "".join(_group_td(report.get("by_length", {}).get(str(L), {}).get("ruler"), threshold) for L in lengths)
    return f'<tfoot><tr><th scope="row">RULER average</th>{cells}</tr></tfoot>'


def _helmet_categories(report: Mapping[str, Any]) -> str:
    by_length = report.get("by_length", {})
    lengths = sorted(int(L) for L in by_length)
    keys = [f"helmet_{c}" for c in membership().helmet] + ["helmet_overall"]
    present = [k for k in keys if any((by_length[str(L)].get(k) or {}).get("score") is not None for L in lengths)]
    if not present:
        return ""
    body = "".join(
        f'<tr><th scope="row">{"Overall average" if k == "helmet_overall" else e(category_label(k[7:]))}</th>'
        + "".join(_group_td(by_length[str(L)].get(k)) for L in lengths)
        + "</tr>"
        for k in present
    )
    head = "".join(f'<th scope="col">{format_length(L)}</th>' for L in lengths)
    return (
        '<section id="categories" aria-labelledby="categories-h"><h2 id="categories-h">HELMET categories</h2>'
        '<p class="note">The mean of each category\'s tasks per length; * partial (not every task of it ran).</p>'
        '<div class="scroll"><table class="heatmap"><caption>HELMET categories x lengths</caption>'
        f'<thead><tr><th scope="col">category</th>{head}</tr></thead><tbody>{body}</tbody></table></div></section>'
    )


# needle depths ------------------------------------------------------------------------------------------------------
def _depths(rows: Sequence[Mapping[str, Any]]) -> str:
    grids = depth_grids(rows)
    if not grids:
        return ""
    return (
        '<section id="depths" aria-labelledby="depths-h"><h2 id="depths-h">Needle depth x length</h2>'
        '<p class="note">Mean score by needle depth (rows, percent of the context) and length (columns): each '
        "needle of a sample counts the sample's score at its depth; the line tasks' random positions are rounded to "
        "the nearest of RULER's 40 depths.</p>" + "".join(_depth_table(g) for g in grids) + "</section>"
    )


def _depth_table(grid: DepthGrid) -> str:
    head = "".join(f'<th scope="col">{format_length(L)}</th>' for L in grid.lengths)
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
            cells.append(_score_td(mean, text, "depth", f"{mean:.1f} over {n} needle(s)"))
        body.append(f'<tr><th scope="row">{depth}%</th>{"".join(cells)}</tr>')
    name = "All NIAH tasks" if grid.task == "all" else grid.task
    return (
        f'<div class="scroll depth-grid" data-task="{e(grid.task)}"><table class="heatmap depth">'
        f"<caption>{e(name)}</caption>"
        f'<thead><tr><th scope="col">depth</th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'
    )


# against a baseline -------------------------------------------------------------------------------------------------
def _comparison(page: PageInput) -> str:
    compared = [c for c in page.report.get("cases", []) if c.get("baseline")]
    if not compared and not page.baseline_rows:
        return ""
    rows = []
    for c in compared:
        b = c["baseline"]
        low, high = b.get("interval") or (None, None)
        verdict = (
            "regressed"
            if b.get("regressed")
            else ("improved" if low is not None and low > b.get("tolerance", 0) else "same")
        )
        rows.append(
            f'<tr class="{verdict}"><th scope="row"><a href="#{e(case_key(c["task"], int(c["length"])))}">'
            f"{e(c['task'])}</a></th><td>{format_length(int(c['length']))}</td>"
            f"<td>{_num(b.get('score'))}</td><td>{_num(c.get('score'))}</td><td>{_num(b.get('delta'), True)}</td>"
            f"<td>{_num(low, True)} .. {_num(high, True)}</td><td>{e(b.get('n'))}</td>"
            f'<td>{_num(b.get("tolerance"))}</td><td class="verdict">{verdict.upper()}</td></tr>'
        )
    where = f" ({e(page.baseline_path)})" if page.baseline_path else ""
    table = (
        '<p class="note">Paired per case: the same samples in both runs, the score change with its interval, and '
        "the baseline gate's verdict.</p>"
        '<div class="scroll"><table class="comparison"><caption>Cases against the baseline</caption><thead><tr>'
        + "".join(
            f'<th scope="col">{h}</th>'
            for h in ("task", "length", "baseline", "now", "change", "interval", "n", "tolerance", "verdict")
        )
        + f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
        if rows
        else "<p>No case was compared (none of the baseline's cases ran with the same samples).</p>"
    )
    changed = flips(page.rows, page.baseline_rows) if page.baseline_rows else []
    lost = [f for f in changed if f.lost]
    gained = [f for f in changed if not f.lost]
    return (
        f'<section id="comparison" aria-labelledby="comparison-h"><h2 id="comparison-h">Against the baseline{where}'
        f"</h2>{table}"
        + (_flip_table("Right in the baseline, wrong now", "lost", lost) if page.baseline_rows else "")
        + (_flip_table("Wrong in the baseline, right now", "gained", gained) if page.baseline_rows else "")
        + "</section>"
    )


def _num(value: Any, signed: bool = False) -> str:
    if value is None:
        return ""
    return f"{float(value):+.1f}" if signed else f"{float(value):.1f}"


def _flip_table(title: str, ident: str, found: Sequence[Flip]) -> str:
    if not found:
        return f'<h3 id="flips-{ident}">{e(title)}: none</h3>'
    rows = "".join(
        f'<tr><th scope="row"><a href="#{e(case_key(f.task, f.length))}">{e(f.task)}</a> '
        f"{format_length(f.length)} #{f.index}</th>"
        f"<td>{e(_answers(f.after))}</td>"
        f'<td class="before">{e(f.before.get("prediction"))} <span class="sc">({100 * float(f.before["score"]):.0f})'
        f"</span></td>"
        f'<td class="after">{e(f.after.get("prediction"))} <span class="sc">({100 * float(f.after["score"]):.0f})'
        "</span></td></tr>"
        for f in found[:FLIPS_SHOWN]
    )
    more = f"<p>… and {len(found) - FLIPS_SHOWN} more in the predictions files.</p>" if len(found) > FLIPS_SHOWN else ""
    return (
        f'<h3 id="flips-{ident}">{e(title)}: {len(found)} sample(s)</h3><div class="scroll"><table class="flips" '
        f'data-flips="{ident}"><caption>{e(title)}</caption><thead><tr><th scope="col">sample</th>'
        '<th scope="col">answer(s)</th><th scope="col">baseline said (score)</th><th scope="col">now says '
        f"(score)</th></tr></thead><tbody>{rows}</tbody></table></div>{more}"
    )


def _answers(row: Mapping[str, Any]) -> str:
    answers = [str(a) for a in row.get("answers") or ()]
    return " | ".join(answers[:4]) + (f" (+{len(answers) - 4})" if len(answers) > 4 else "")


# trend --------------------------------------------------------------------------------------------------------------
def _trend(points: Sequence[Mapping[str, Any]]) -> str:
    if not points:
        return ""
    parts = []
    for category in dict.fromkeys(str(p["category"]) for p in points):
        mine = [p for p in points if p["category"] == category]
        steps = sorted({int(p["step"]) for p in mine})
        lengths = sorted({int(p["length"]) for p in mine if p["length"] != ""}) or [0]
        value = {(int(p["step"]), int(p["length"]) if p["length"] != "" else 0): p for p in mine}
        head = "".join(f'<th scope="col">{format_length(L) if L else "value"}</th>' for L in lengths)
        body = "".join(
            f'<tr><th scope="row">{s}</th>' + "".join(_trend_td(value.get((s, L)), category) for L in lengths) + "</tr>"
            for s in steps
        )
        parts.append(
            f"<h3>{e(category)}</h3>{_trend_svg(category, steps, lengths, value)}"
            f'<div class="scroll"><table class="trend"><caption>{e(category)}</caption>'
            f'<thead><tr><th scope="col">step</th>{head}</tr></thead><tbody>{body}</tbody></table></div>'
        )
    return (
        '<section id="trend" aria-labelledby="trend-h"><h2 id="trend-h">Trend over training steps</h2>'
        "<p>The data of <code>ctxgate trend</code>: each report's step from its checkpoint's name.</p>"
        + "".join(parts)
        + "</section>"
    )


def _trend_td(point: Mapping[str, Any] | None, category: str) -> str:
    if point is None or point.get("score") is None:
        return '<td class="none">—</td>'
    mark = '<span class="partial-mark">*</span>' if point.get("partial") else ""
    if category == "effective length":
        return f"<td>{format_length(int(point['score'])) if point['score'] else '0'}{mark}</td>"
    return _score_td(float(point["score"]), f"{float(point['score']):.1f}{mark}")


def _trend_svg(category: str, steps: Sequence[int], lengths: Sequence[int], value: Mapping[Any, Any]) -> str:
    width, height, pad = 640, 220, 36
    top = max([float(p["score"] or 0) for p in value.values()] + [1.0]) if category == "effective length" else 100.0
    lo, hi = min(steps), max(steps)

    def x(step: int) -> float:
        return pad + (width - 2 * pad) * ((step - lo) / (hi - lo) if hi > lo else 0.5)

    def y(score: float) -> float:
        return height - pad - (height - 2 * pad) * score / top

    lines: list[str] = []
    keys: list[str] = []
    for i, L in enumerate(lengths):
        pts = [
            (x(s), y(float(value[(s, L)]["score"]))) for s in steps if value.get((s, L), {}).get("score") is not None
        ]
        if not pts:
            continue
        tint = colours.colour(i / max(1, len(lengths) - 1) * 0.85)
        path = " ".join(f"{a:.1f},{b:.1f}" for a, b in pts)
        label = format_length(L) if L else category
        dash = ("", ' stroke-dasharray="6 3"', ' stroke-dasharray="2 3"')[i % 3]  # not by colour alone
        lines.append(
            f'<polyline fill="none" stroke="{tint}" stroke-width="2"{dash} points="{path}"><title>{e(label)}</title>'
            "</polyline>"
        )
        keys.append(f'<li><span style="background:{tint}"></span>{e(label)}</li>')
    axis = (
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#666"/>'
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="#666"/>'
        f'<text x="{pad}" y="{height - 10}" font-size="11">step {lo}</text>'
        f'<text x="{width - pad}" y="{height - 10}" font-size="11" text-anchor="end">step {hi}</text>'
        f'<text x="4" y="{pad}" font-size="11">{top:g}</text>'
    )
    return (
        f'<svg class="trend-chart" role="img" aria-label="{e(category)} against the training step, one line per '
        f'length (the table below has the numbers)" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}">{axis}{"".join(lines)}</svg><ul class="keys" aria-hidden="true">{"".join(keys)}</ul>'
    )


# the samples --------------------------------------------------------------------------------------------------------
def _drill_shell() -> str:
    return (
        '<section id="drill" aria-labelledby="drill-h" hidden><h2 id="drill-h" tabindex="-1">Samples</h2>'
        '<div id="drill-body" aria-live="polite"></div></section>'
    )


def _payload(page: PageInput) -> str:
    """Every case's record and samples, as the script reads them: gzip-compressed JSON in base64."""
    rows = by_case(page.rows)
    cases = {}
    for c in page.report.get("cases", []):
        key = (c["task"], int(c["length"]))
        cases[case_key(*key)] = {
            "case": {
                k: c.get(k)
                for k in (
                    "task",
                    "suite",
                    "length",
                    "metric",
                    "verdict",
                    "message",
                    "score",
                    "ci",
                    "n",
                    "floor",
                    "seconds",
                    "input_tokens_max",
                    "fill_min",
                    "output_tokens",
                    "samples_from_cache",
                    "baseline",
                )
            },
            "rows": [page_row(r) for r in rows.get(key, [])],
        }
    text = json.dumps({"cases": cases}, separators=(",", ":"), ensure_ascii=False)
    return base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)).decode("ascii")
