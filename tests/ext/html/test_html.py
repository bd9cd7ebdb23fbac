"""The HTML report: drawn by the plugin beside --report and by ``ctxgate html`` from stored reports,
opened in a real headless Chromium (the system's, driven by playwright): no console error, no
request leaving the file, a failing case's cell with its score linking to its samples, RULER's 40
depth rows, the samples that flipped against a baseline, a walk through the drill-down by keyboard
alone, the print stylesheet. Each view's screenshot is written under the test's folder
(tests/browsing.py)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxgate.ext.html.cells import colour
from ctxgate.ext.html.page import PageInput, render
from ctxgate.ext.html.samples import depth_grids, flips, nearest_depth
from ctxgate.tasks.niah import DEPTHS
from tests.browsing import Opened, launch
from tests.conftest import TINY, call_ctxgate, prediction, suite_here, typed_report

SELECT = "niah_single_1 or niah_multikey_2 or vt"
LENGTHS = "256,512,1k"
FLOOR = 50.0  # niah_single_1's floor in the test's thresholds: the broken checkpoint fails it


# the real runs
# --------------------------------------------------------------------------------------------------
def _suite(model: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return suite_here(
        out, "-k", SELECT, "--lengths", LENGTHS, "--samples", "6", "--no-cache", "-q", *args,
        model=model,
    )  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``base.json``: the tiny checkpoint; ``run.json`` (+ the plugin's ``run.html``): a checkpoint
    whose retrieval is broken, against that baseline, with niah_single_1's floor at 50 so it fails.
    """
    from fixtures.checkpoint_sequence import build_sequence

    out = tmp_path_factory.mktemp("html")
    (broken,) = build_sequence(out / "ckpts", count=1, break_at=0)
    base = _suite(TINY, out, "--report", str(out / "base.json"))  # with no thresholds
    assert base.returncode == 0, base.stdout[-3000:]
    (out / "thresholds.toml").write_text(
        f'[[floor]]\ntask = "niah_single_1"\nlength = "*"\nfloor = {FLOOR}\n'
    )
    run = _suite(
        broken,
        out,
        "--report",
        str(out / "run.json"),
        "--baseline",
        str(out / "base.json"),
        "--thresholds",
        str(out / "thresholds.toml"),
    )
    assert run.returncode == 1, run.stdout[
        -3000:
    ]  # the floor (and the baseline gate) failed, as meant
    assert "report: " in run.stdout and ".html)" in run.stdout
    return out


def _report(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


# the browser
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch()


def test_the_run_page_links_a_failing_cell_to_its_samples(runs, browser, tmp_path):
    report = _report(runs / "run.json")
    failing = next(
        c for c in report["cases"] if c["task"] == "niah_single_1" and c["verdict"] == "fail"
    )
    opened = Opened(browser, runs / "run.html", tmp_path)
    page = opened.page
    assert page.locator("h1 .overall").inner_text() == "FAIL"
    link = page.locator(f'a[href="#case/niah_single_1/{failing["length"]}"]').first
    assert link.inner_text() == f"{failing['score']:.1f}"
    cell = page.locator(f'td:has(> a[href="#case/niah_single_1/{failing["length"]}"])').first
    assert "failed" in (cell.get_attribute("class") or "")
    opened.shot("overview")
    link.click()
    page.wait_for_selector("#drill:not([hidden]) table.samples")
    assert (
        page.locator("#drill-h").inner_text()
        == f"Samples of niah_single_1 at {failing['length']} tokens"
    )
    rows = page.locator("table.samples tbody tr")
    assert rows.count() == failing["n"]
    assert page.locator("table.samples mark").count() >= 1  # the needle, marked in its excerpt
    opened.shot("samples")  # the view, scrolled to the samples
    page.select_option("#drill-show", "wrong")
    scores = [
        int(t or 0)
        for t in page.locator("table.samples tbody tr td.num:nth-of-type(1)").all_inner_texts()
    ]
    assert all(s < 50 for s in scores)
    page.locator('button[data-sort="s"]').click()
    assert page.locator('th[aria-sort="ascending"] button[data-sort="s"]').count() == 1
    opened.clean()


def test_the_depth_heatmap_has_rulers_forty_depths(runs, browser, tmp_path):
    opened = Opened(browser, runs / "run.html", tmp_path)
    grid = opened.page.locator('.depth-grid[data-task="niah_single_1"] table tbody tr')
    assert grid.count() == 40
    assert opened.page.locator('.depth-grid[data-task="niah_single_1"] tbody th').all_inner_texts()[
        :3
    ] == [
        "0%",
        "3%",
        "5%",
    ]
    opened.shot("depths", '.depth-grid[data-task="niah_single_1"]')
    opened.clean()


def test_the_comparison_shows_the_samples_that_flipped(runs, browser, tmp_path):
    opened = Opened(browser, runs / "run.html", tmp_path)
    page = opened.page
    regressed = page.locator("table.comparison tr.regressed")
    assert regressed.count() >= 1
    lost = page.locator('table.flips[data-flips="lost"] tbody tr')
    assert lost.count() >= 1 and "niah_single_1" in " ".join(lost.all_inner_texts())
    opened.shot("comparison", "#comparison")
    opened.clean()


def test_the_drill_down_works_by_keyboard_alone(runs, browser, tmp_path):
    """Tab to the failing cell's link, Enter opens its samples with the focus on their heading, Tab
    reaches the filter (arrow keys choose) and the sort buttons (Enter sorts)."""
    report = _report(runs / "run.json")
    failing = next(
        c for c in report["cases"] if c["task"] == "niah_single_1" and c["verdict"] == "fail"
    )
    target = f"#case/niah_single_1/{failing['length']}"
    opened = Opened(browser, runs / "run.html", tmp_path)
    page = opened.page
    focused = ""
    for _ in range(400):
        page.keyboard.press("Tab")
        focused = page.evaluate("document.activeElement.getAttribute('href') || ''")
        if focused == target:
            break
    assert focused == target, "the failing cell's link is never reached by Tab"
    page.keyboard.press("Enter")
    page.wait_for_selector("#drill:not([hidden]) table.samples")
    assert page.evaluate("document.activeElement.id") == "drill-h"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "drill-show"
    page.keyboard.press("ArrowDown")  # all -> wrong
    page.wait_for_function("document.getElementById('drill-show').value === 'wrong'")
    assert page.evaluate("document.activeElement.id") == "drill-show"
    shown = page.locator("table.samples tbody tr").count()
    assert 1 <= shown <= failing["n"]
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")  # past "#" to "score"
    assert page.evaluate("document.activeElement.dataset.sort") == "s"
    page.keyboard.press("Enter")
    assert page.locator('th[aria-sort="ascending"] button[data-sort="s"]').count() == 1
    assert (
        page.evaluate("document.activeElement.dataset.sort") == "s"
    )  # the redraw keeps the focus where it was
    opened.clean()


def test_the_print_stylesheet_hides_the_controls(runs, browser, tmp_path):
    opened = Opened(browser, runs / "run.html", tmp_path)
    page = opened.page
    page.emulate_media(media="print")
    assert page.evaluate("getComputedStyle(document.querySelector('nav')).display") == "none"
    heat = page.locator("table.heatmap td.score").first
    assert (
        heat.evaluate("n => getComputedStyle(n).printColorAdjust") == "exact"
    )  # the colours survive printing
    opened.clean()


def test_ctxgate_html_draws_the_comparison_and_the_trend_from_stored_reports(
    runs, browser, tmp_path
):
    plain = (
        runs / "plain.json"
    )  # the broken run's report without its comparison: the command adds it
    report = _report(runs / "run.json")
    for case in report["cases"]:
        case.pop("baseline", None)
    report.pop("baseline", None)
    plain.write_text(json.dumps(report))
    out = tmp_path / "page.html"
    done = call_ctxgate(
        "html", str(plain), "--baseline", str(runs / "base.json"),
        "--trend", str(runs / "base.json"), str(runs / "run.json"), "-o", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out)
    opened = Opened(browser, out, tmp_path)
    page = opened.page
    assert page.locator("table.comparison tr.regressed").count() >= 1
    assert page.locator('table.flips[data-flips="lost"] tbody tr').count() >= 1
    assert (
        page.locator("#trend table.trend").count() == 3
    )  # RULER avg, HELMET Recall, effective length
    opened.shot("trend", "#trend")
    opened.clean()


def test_ctxgate_html_refuses_a_missing_report_in_one_line(tmp_path):
    done = call_ctxgate("html", str(tmp_path / "nope.json"))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "nope.json does not exist" in done.stderr


# pure parts
# --------------------------------------------------------------------------------------------------
def test_the_colour_scale_is_matplotlibs_viridis():
    matplotlib = pytest.importorskip("matplotlib")
    table = matplotlib.colormaps["viridis"]
    for i in range(101):
        want = [round(255 * c) for c in table(i / 100)[:3]]
        got = colour(i / 100)
        have = [int(got[k : k + 2], 16) for k in (1, 3, 5)]
        assert max(abs(a - b) for a, b in zip(want, have)) <= 3, (i, want, have)


def _row(
    task: str,
    length: int,
    index: int,
    score: float | None,
    depth: float | None = None,
    digest: str = "d",
):
    needles = [] if depth is None else [{"needle": "N", "depth": depth, "text": "a N b"}]
    return prediction(
        task, length, index, score, sample_sha256=digest, excerpts={"needles": needles, "end": "e"}
    )


@given(st.lists(st.tuples(st.floats(0, 100), st.sampled_from([0.0, 1.0])), min_size=1, max_size=30))
def test_every_needle_counts_at_one_of_rulers_depths(needles):
    rows = [_row("niah_single_1", 256, i, s, d) for i, (d, s) in enumerate(needles)]
    (grid,) = depth_grids(rows)
    assert {d for d, _ in grid.cells} <= set(DEPTHS)
    assert sum(n for _, n in grid.cells.values()) == len(needles)
    assert all(nearest_depth(d) in DEPTHS for d, _ in needles)


def test_flips_pair_the_same_sample_only():
    before = [
        _row("vt", 256, 0, 1.0),
        _row("vt", 256, 1, 0.0),
        _row("vt", 256, 2, 1.0, digest="other"),
    ]
    after = [_row("vt", 256, 0, 0.0), _row("vt", 256, 1, 1.0), _row("vt", 256, 2, 0.0)]
    found = flips(after, before)
    assert [(f.index, f.lost) for f in found] == [
        (0, True),
        (1, False),
    ]  # sample 2 is another sample


TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=40) | st.sampled_from(
    ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "</script><script>x()</script>"]
)


@settings(max_examples=40, deadline=None)
@given(model=TEXT, message=TEXT, prediction=TEXT)
def test_no_text_of_a_run_reaches_the_page_as_markup(model, message, prediction):
    case = {
        "task": "vt",
        "length": 256,
        "verdict": "fail",
        "score": 10.0,
        "n": 1,
        "floor": 50.0,
        "message": message,
    }
    gates = [{"name": "floors", "verdict": "fail", "message": message}]
    report = typed_report([case], gates=gates, run={"model": model})
    row = replace(_row("vt", 256, 0, 0.1), prediction=prediction)
    page = render(PageInput(report, [row]))
    # the page's own elements only: the run's texts are escaped in the markup and encoded in the
    # data
    assert page.count("<script") == 2 and page.count("<img") == 0


def test_the_page_gives_each_case_its_chance_beside_its_score():
    from ctxgate.gate.session import judge_session
    from ctxgate.gate.thresholds import Thresholds
    from ctxgate.records.case import CaseRecord
    from ctxgate.records.schema import RunInfo
    from ctxgate.report.build import build_report

    cases = [
        CaseRecord("infbench_mc", "helmet", 2048, "longqa", "mc_accuracy", "pass", score=40.0, n=5),
        CaseRecord("vt", "ruler", 2048, "vt", "string_match_all", "pass", score=90.0, n=5),
    ]
    cases[0] = replace(cases[0], chance=25.0)
    verdict = judge_session(cases, Thresholds("t"), True)
    report = build_report(cases, RunInfo("m", None, 42, 5, (2048,), "task"), verdict)
    page = render(PageInput(report))
    assert '<td class="chance">25.0</td>' in page and 'title="chance 25.0"' in page
