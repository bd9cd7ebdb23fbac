"""The HTML report: one self-contained file (its CSS, script and data inline; nothing is fetched
when it opens) that shows a run at a glance and every sample on demand. The tables are real
``<table>`` elements, readable without the script; the script (``assets/report.js``) only opens a
case's samples, which travel gzip-compressed in the page (a full 128K run stays a few MB)."""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ctxgate.lengths import format_length
from ctxgate.records.schema import Prediction, Report, to_json
from ctxgate.report import colours
from ctxgate.report.cells import e, title_attr
from ctxgate.report.heatmaps import depths, effective_table, helmet_categories, task_tables
from ctxgate.report.samples import by_case, case_key, page_row
from ctxgate.report.versus import comparison, trend
from ctxgate.tasks.registry import membership, suite_label


@dataclass(frozen=True)
class PageInput:
    report: Report
    rows: Sequence[Prediction] = ()  # the run's .predictions.jsonl
    baseline_rows: Sequence[Prediction] = ()  # the baseline's, for the samples that flipped
    baseline_path: str | None = None
    trend: Sequence[Mapping[str, Any]] = ()  # ctxgate trend's points (workflows.trend.load_points)
    report_name: str = ""  # the JSON report's file name, linked from the page


def _asset(name: str) -> str:
    return resources.files("ctxgate.report").joinpath(f"assets/{name}").read_text("utf-8")


def render(page: PageInput) -> str:
    report = page.report
    title = f"ctxgate: {report.run.model}"
    sections = [
        _header(report, page.report_name),
        _legend(),
        *task_tables(report),
        helmet_categories(report),
        effective_table(report),
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
    stops = ", ".join(
        f"{c} {100 * i / (len(colours.VIRIDIS) - 1):.0f}%" for i, c in enumerate(colours.VIRIDIS)
    )
    return (
        '<p class="legend"><span class="ramp" style="background: linear-gradient(to right, '
        f'{stops})" aria-hidden="true"></span> score 0 to 100, on {colours.NAME} (perceptually '
        'uniform, readable with colour-vision deficiencies). <span class="status-sample">crash'
        "</span> a case without a score, by what happened to it; "
        '<span class="fail-mark">✗</span> below its floor; <span class="partial-mark">*</span> '
        "partial (not every member ran).</p>"
    )


_DRILL_SHELL = (
    '<section id="drill" aria-labelledby="drill-h" hidden>'
    '<h2 id="drill-h" tabindex="-1">Samples</h2><div id="drill-body" aria-live="polite"></div>'
    "</section>"
)


# the fields of a case's record the page carries for its script
_CASE_FIELDS = tuple(
    "task suite length metric verdict message score ci n floor seconds input_tokens_max fill_min "
    "output_tokens samples_from_cache baseline".split()
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
