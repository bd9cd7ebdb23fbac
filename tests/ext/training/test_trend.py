"""ctxgate trend on reports of a pretend training run (scripted backend: plumbing
only)."""

from __future__ import annotations

import csv
import json
import shutil

from ctxgate.cli import main
from tests.conftest import ROOT, SCRIPTED


def test_trend_writes_csv_and_png(pytester, tmp_path):
    shutil.copytree(ROOT / "tests_longctx", pytester.path / "tests_longctx")
    pytester.makeini("[pytest]\ntestpaths = tests_longctx\naddopts = -p no:cacheprovider\n")
    reports = []
    for step, acc in ((100, 1.0), (200, 0.9), (300, 0.4)):
        script = pytester.path / f"checkpoint-{step}.json"
        script.write_text(json.dumps({"default": acc}))
        pytester.runpytest(
            "--backend",
            SCRIPTED,
            "--model",
            script.name,
            "--lengths",
            "4k,8k",
            "--samples",
            "10",
            "-m",
            "recall or niah",
            "--no-cache",
            "--report",
            f"r{step}.json",
        )
        reports.append(str(pytester.path / f"r{step}.json"))
    assert main(["trend", *reports, "--out", str(tmp_path / "trend")]) == 0
    rows = list(csv.DictReader((tmp_path / "trend" / "trend.csv").open()))
    ruler_8k = [
        (int(r["step"]), float(r["score"]))
        for r in rows
        if r["category"] == "RULER avg" and r["length"] == "8192"
    ]
    assert ruler_8k == [(100, 100.0), (200, 90.0), (300, 40.0)]
    assert (tmp_path / "trend" / "trend.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
