"""The HTML report: drawn by the plugin beside --report and by ``ctxgate html`` from stored reports, opened in a
real headless Chromium (the system's, driven by playwright): no console error, no request leaving the file, a
failing case's cell with its score linking to its samples, RULER's 40 depth rows, the samples that flipped against
a baseline. Each view's screenshot is written under the test's folder (and, with CTXGATE_SCREENSHOTS=DIR, there:
the README's images come from it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxgate.report import colours
from ctxgate.report.page import PageInput, render
from ctxgate.report.samples import depth_grids, flips, nearest_depth
from ctxgate.tasks.niah import DEPTHS
from tests.conftest import ROOT, TINY

SELECT = "niah_single_1 or niah_multikey_2 or vt"
LENGTHS = "256,512,1k"
FLOOR = 50.0  # niah_single_1's floor in the test's thresholds: the broken checkpoint fails it


# the real runs -------------------------------------------------------------------------------------------------------
def _suite(model: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--model", str(model), "-k", SELECT, "--lengths", LENGTHS, "--samples", "6"]
        + ["--no-cache", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``base.json``: the tiny checkpoint; ``run.json`` (+ the plugin's ``run.html``): a checkpoint whose retrieval
    is broken, against that baseline, with niah_single_1's floor at 50 so it fails."""
    from fixtures.checkpoint_sequence import build_sequence

    out = tmp_path_factory.mktemp("html")
    (broken,) = build_sequence(out / "ckpts", count=1, break_at=0)
    (out / "thresholds.toml").write_text(f'[[floor]]\ntask = "niah_single_1"\nlength = "*"\nfloor = {FLOOR}\n')
    base = _suite(TINY, out, "--report", str(out / "base.json"))
    assert base.returncode == 0, base.stdout[-3000:]
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
    assert run.returncode == 1, run.stdout[-3000:]  # the floor (and the baseline gate) failed, as meant
    assert "report: " in run.stdout and ".html)" in run.stdout
    return out


def _report(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


# the browser ---------------------------------------------------------------------------------------------------------
def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("no Chromium: bash scripts/browser.sh (apt-get install chromium) installs it")
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = _chromium()
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the dev extra)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield b
        b.close()


class Opened:
    """A page opened from disk, with what it said on its console and every request it made."""

    def __init__(self, browser: Any, path: Path, shots: Path) -> None:
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.shots = shots
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.url = path.resolve().as_uri()
        self.page.goto(self.url)

    def shot(self, name: str, selector: str | None = None) -> None:
        target = self.shots / f"{name}.png"
        if selector:
            self.page.locator(selector).first.screenshot(path=str(target))
        else:
            self.page.screenshot(path=str(target))
        keep = os.environ.get("CTXGATE_SCREENSHOTS")
        if keep:  # for the README: small, 256 colours
            from PIL import Image

            Path(keep).mkdir(parents=True, exist_ok=True)
            Image.open(target).convert("RGB").quantize(256).save(Path(keep) / target.name, optimize=True)

    def clean(self) -> None:
        assert self.errors == []
        assert {r.split("#")[0] for r in self.requests} == {self.url}  # nothing but the file itself


def test_the_run_page_links_a_failing_cell_to_its_samples(runs, browser, tmp_path):
    report = _report(runs / "run.json")
    failing = next(c for c in report["cases"] if c["task"] == "niah_single_1" and c["verdict"] == "fail")
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
    assert page.locator("#drill-h").inner_text() == f"Samples of niah_single_1 at {failing['length']} tokens"
    rows = page.locator("table.samples tbody tr")
    assert rows.count() == failing["n"]
    assert page.locator("table.samples mark").count() >= 1  # the needle, marked in its excerpt
    opened.shot("samples")  # the view, scrolled to the samples
    page.select_option("#drill-show", "wrong")
    scores = [int(t or 0) for t in page.locator("table.samples tbody tr td.num:nth-of-type(1)").all_inner_texts()]
    assert all(s < 50 for s in scores)
    page.locator('button[data-sort="s"]').click()
    assert page.locator('th[aria-sort="ascending"] button[data-sort="s"]').count() == 1
    opened.clean()


def test_the_depth_heatmap_has_rulers_forty_depths(runs, browser, tmp_path):
    opened = Opened(browser, runs / "run.html", tmp_path)
    grid = opened.page.locator('.depth-grid[data-task="niah_single_1"] table tbody tr')
    assert grid.count() == 40
    assert opened.page.locator('.depth-grid[data-task="niah_single_1"] tbody th').all_inner_texts()[:3] == [
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


def test_ctxgate_html_draws_the_comparison_and_the_trend_from_stored_reports(runs, browser, tmp_path):
    plain = runs / "plain.json"  # the broken run's report without its comparison: the command adds it
    report = _report(runs / "run.json")
    for case in report["cases"]:
        case.pop("baseline", None)
    report.pop("baseline", None)
    plain.write_text(json.dumps(report))
    out = tmp_path / "page.html"
    done = subprocess.run(
        [sys.executable, "-m", "ctxgate.cli", "html", str(plain), "--baseline", str(runs / "base.json")]
        + ["--trend", str(runs / "base.json"), str(runs / "run.json"), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out)
    opened = Opened(browser, out, tmp_path)
    page = opened.page
    assert page.locator("table.comparison tr.regressed").count() >= 1
    assert page.locator('table.flips[data-flips="lost"] tbody tr').count() >= 1
    assert page.locator("#trend table.trend").count() == 3  # RULER avg, HELMET Recall, effective length
    opened.shot("trend", "#trend")
    opened.clean()


def test_ctxgate_html_refuses_a_missing_report_in_one_line(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "ctxgate.cli", "html", str(tmp_path / "nope.json")], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "nope.json does not exist" in done.stderr


# pure parts ----------------------------------------------------------------------------------------------------------
def test_the_colour_scale_is_matplotlibs_viridis():
    matplotlib = pytest.importorskip("matplotlib")
    table = matplotlib.colormaps["viridis"]
    for i in range(101):
        want = [round(255 * c) for c in table(i / 100)[:3]]
        got = colours.colour(i / 100)
        have = [int(got[k : k + 2], 16) for k in (1, 3, 5)]
        assert max(abs(a - b) for a, b in zip(want, have)) <= 3, (i, want, have)


def _row(task: str, length: int, index: int, score: float | None, depth: float | None = None, digest: str = "d"):
    needles = [] if depth is None else [{"needle": "N", "depth": depth, "text": "a N b"}]
    return {
        "task": task,
        "length": length,
        "index": index,
        "score": score,
        "sample_sha256": digest,
        "prediction": "p",
        "answers": ["a"],
        "excerpts": {"needles": needles, "end": "e"},
    }


@given(st.lists(st.tuples(st.floats(0, 100), st.sampled_from([0.0, 1.0])), min_size=1, max_size=30))
def test_every_needle_counts_at_one_of_rulers_depths(needles):
    rows = [_row("niah_single_1", 256, i, s, d) for i, (d, s) in enumerate(needles)]
    (grid,) = depth_grids(rows)
    assert {d for d, _ in grid.cells} <= set(DEPTHS)
    assert sum(n for _, n in grid.cells.values()) == len(needles)
    assert all(nearest_depth(d) in DEPTHS for d, _ in needles)


def test_flips_pair_the_same_sample_only():
    before = [_row("vt", 256, 0, 1.0), _row("vt", 256, 1, 0.0), _row("vt", 256, 2, 1.0, digest="other")]
    after = [_row("vt", 256, 0, 0.0), _row("vt", 256, 1, 1.0), _row("vt", 256, 2, 0.0)]
    found = flips(after, before)
    assert [(f.index, f.lost) for f in found] == [(0, True), (1, False)]  # sample 2 is another sample


TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=40) | st.sampled_from(
    ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "</script><script>x()</script>"]
)


@settings(max_examples=40, deadline=None)
@given(model=TEXT, message=TEXT, prediction=TEXT)
def test_no_text_of_a_run_reaches_the_page_as_markup(model, message, prediction):
    report = {
        "complete": True,
        "run": {"model": model, "lengths": [256]},
        "cases": [
            {
                "task": "vt",
                "suite": "ruler",
                "length": 256,
                "verdict": "fail",
                "score": 10.0,
                "n": 1,
                "floor": 50.0,
                "message": message,
            }
        ],
        "by_length": {"256": {}},
        "gates": [{"name": "floors", "verdict": "fail", "message": message}],
    }
    row = {**_row("vt", 256, 0, 0.1), "prediction": prediction}
    page = render(PageInput(report, [row]))
    # the page's own elements only: the run's texts are escaped in the markup and encoded in the data
    assert page.count("<script") == 2 and page.count("<img") == 0
