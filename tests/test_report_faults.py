"""Faults in reading reports: a by_length key that is no length, cases only one of two diffed
reports has, and a case that failed only as a regression counted by the floors gate. Real files and
real ``ctxgate`` processes, or the suite through the scripted backend (plumbing)."""

from __future__ import annotations

import csv
import json
import re
import subprocess
from pathlib import Path

import pytest

from ctxgate.cli import main
from ctxgate.gate.thresholds import Thresholds
from ctxgate.gate.verdicts import floors_gate
from ctxgate.records.case import CaseRecord, Comparison, JudgeRecord
from ctxgate.records.io import ReportFileError, read_report
from tests.conftest import ROOT, call_ctxgate, stored_report

RULER = {"score": 80.0, "members": ["vt"]}
VERBS = {
    "html": ["html", "{report}", "-o", "{tmp}/x.html"],
    "published": ["published", "meta-llama/Llama-3.1-8B-Instruct", "--report", "{report}"],
    "trend": ["trend", "{report}", "--out", "{tmp}/trend"],
    "metrics": ["metrics", "{report}"],
}


def write_report(path: Path, by_length: dict[str, dict]) -> Path:
    cases = [
        {"task": "vt", "length": int(L), "score": 80.0, "n": 4, "ci": [50.0, 100.0]}
        for L in by_length
    ]
    path.write_text(json.dumps(stored_report(cases, by_length=by_length)))
    return path


def ctxgate(*argv: str) -> subprocess.CompletedProcess[str]:
    return call_ctxgate(*argv, cwd=ROOT)


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_a_by_length_key_that_is_no_length_is_refused_in_one_line_by_every_verb(tmp_path, verb):
    report = tmp_path / "r.json"
    report.write_text(
        json.dumps(stored_report([], by_length={"4096": {"ruler": RULER}, "abc": {"ruler": RULER}}))
    )
    done = ctxgate(*[a.format(report=report, tmp=tmp_path) for a in VERBS[verb]])
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"ctxgate {verb}: {report}: by_length key 'abc' is not a length in tokens: the report was "
        "edited or "
        "damaged; re-run the checkpoint with --report to write it again, or restore the file"
    ]
    assert not (tmp_path / "x.html").exists() and not (tmp_path / "trend" / "trend.csv").exists()


@pytest.mark.parametrize("key", ["1024.0", "-4096", "00", "01024", " 512", "", "\u0661\u0662"])
def test_only_a_length_in_plain_digits_is_a_by_length_key(tmp_path, key):
    report = tmp_path / "r.json"
    report.write_text(json.dumps(stored_report([], by_length={key: {"ruler": RULER}})))
    with pytest.raises(
        ReportFileError, match=f"by_length key {re.escape(repr(key))} is not a length in tokens"
    ):
        read_report(report)


def test_length_0_the_bare_form_is_a_by_length_key(tmp_path):
    report = tmp_path / "r.json"
    report.write_text(
        json.dumps(stored_report([], by_length={"0": {"ruler": RULER}, "512": {"ruler": RULER}}))
    )
    assert list(read_report(report).length_summaries) == [0, 512]


def test_lengths_are_read_as_numbers_whatever_their_order_in_the_file(tmp_path):
    """The keys are strings in JSON: 1024 comes after 512 by length, not by text."""
    report = write_report(
        tmp_path / "r.json", {"1024": {"ruler": RULER}, "512": {"ruler": {**RULER, "score": 90.0}}}
    )
    done = ctxgate("published", "meta-llama/Llama-3.1-8B-Instruct", "--report", str(report))
    assert done.returncode == 0, done.stderr
    assert "(it has 512, 1K; RULER's are 4K-128K)" in done.stdout
    assert ctxgate("trend", str(report), "--out", str(tmp_path / "trend")).returncode == 0
    rows = list(csv.DictReader((tmp_path / "trend" / "trend.csv").open()))
    assert [(r["length"], r["score"]) for r in rows if r["category"] == "RULER avg"] == [
        ("1024", "80.0"),
        ("512", "90.0"),
    ]  # the CSV's own order (by the length's text), from integer lengths
    html = tmp_path / "x.html"
    assert ctxgate("html", str(report), "-o", str(html)).returncode == 0
    assert json.loads(report.read_text())["by_length"].keys() == {
        "1024",
        "512",
    }  # the file is left as it was


@pytest.fixture
def run(scripted_suite):
    return lambda name, script, *extra: scripted_suite(
        name, script, "--lengths", "4k", "--samples", "40", "--no-cache", *extra
    )


def test_diff_names_the_cases_only_the_new_report_scored(run, pytester, capsys):
    run("base", {"default": 0.8}, "-k", "niah_single_1").assert_outcomes(passed=1)
    run("new", {"default": 0.8}, "-k", "niah_single_1 or niah_single_2 or vt").assert_outcomes(
        passed=3
    )
    capsys.readouterr()
    base, new = str(pytester.path / "base.json"), str(pytester.path / "new.json")
    assert main(["diff", base, new]) == 0  # nothing to pair them with: named, not failed
    out = capsys.readouterr().out
    assert (
        "NEW: 2 scored case(s) have no score in the baseline, e.g. niah_single_2-4096, vt-4096: "
        "not compared; run the "
        "baseline with them to compare\n"
    ) in out
    assert "niah_single_1" in out and "same" in out
    assert (
        main(["diff", new, base]) == 1
    )  # the other way round they are lost: MISSING rows, and no note
    out = capsys.readouterr().out
    assert "MISSING (not in the new run)" in out and "no score in the baseline" not in out


def gate_lines(result: pytest.RunResult) -> dict[str, str]:
    return {
        line.split(":", 1)[0].removeprefix("Gate "): line.split(":", 1)[1].strip()
        for line in result.outlines
        if line.startswith("Gate ")
    }


def test_a_case_that_only_regressed_fails_the_baseline_gate_not_the_floors(run, pytester):
    run("base", {"default": 0.8}, "-k", "niah_single_1 or vt").assert_outcomes(passed=2)
    # vt drops from 80 to 0: a regression, at its floor of 0 (no thresholds file: every floor is 0)
    dropped = run("drop", {"default": 0.8, "accuracy": {"vt": {"*": 0.0}}}, "-k", "niah_single_1 "
                                                                                  "or vt",
                  "--baseline", "base.json")  # fmt: skip
    dropped.assert_outcomes(passed=1, failed=1)
    assert dropped.ret == 1
    gates = gate_lines(dropped)
    assert gates["floors"] == (
        "PASS - 0 of 2 cases below their floor, 1 at or above it that regressed (the baseline "
        "gate fails them)"
    )
    assert gates["baseline"].startswith(
        "FAIL - 1 case(s) dropped by more than their tolerance: vt-4096"
    )
    report = json.loads((pytester.path / "drop.json").read_text())
    assert {g["name"]: g["verdict"] for g in report["gates"]} == {
        "cases": "pass",
        "floors": "pass",
        "baseline": "fail",
    }

    # below its floor as well: the floors gate counts it too
    (pytester.path / "thresholds.toml").write_text('[[floor]]\ntask = "vt"\nfloor = 50\n')
    both = run("both", {"default": 0.8, "accuracy": {"vt": {"*": 0.0}}}, "-k", "niah_single_1 or "
                                                                               "vt",
               "--baseline", "base.json")  # fmt: skip
    gates = gate_lines(both)
    assert gates["floors"] == "FAIL - 1 of 2 cases below their floor"
    assert gates["baseline"].startswith("FAIL - 1 case(s) dropped")


def test_without_the_baseline_gate_every_failed_case_counts_against_the_floors():
    """No gate may pass over a failed case: one that regressed is the floors gate's when no baseline
    gate runs, and a case whose judge failed too many verdicts counts as failing whatever its score.
    """
    regressed = Comparison(
        80.0, -80.0, (-95.0, -65.0), "tango-score", 40, 2.0, 0.95, True, "dropped"
    )
    case = CaseRecord(
        "vt",
        "ruler",
        4096,
        verdict="fail",
        score=0.0,
        n=40,
        floor=0.0,
        ci=(0.0, 8.8),
        baseline=regressed,
    )
    thresholds = Thresholds(path="(none)")
    assert floors_gate([case], thresholds, baseline_gated=True).verdict == "pass"
    assert floors_gate([case], thresholds).message == "1 of 1 cases below their floor"
    assert floors_gate([case], thresholds).verdict == "fail"
    judged = CaseRecord(
        "qa_1", "helmet", 4096, verdict="fail", score=90.0, n=10, floor=0.0, ci=(70.0, 100.0),
        judge=JudgeRecord("failed"),
    )  # fmt: skip
    gate = floors_gate([judged], thresholds, baseline_gated=True)
    assert gate.verdict == "fail"
    assert (
        gate.message
        == "0 of 1 cases below their floor, 1 with too many failed judge verdicts (counted as "
        "failing)"
    )
