"""A gate that cannot pass by accident: every selected case that produced no score (an error, a
crashed worker, an interrupted run) is in the report with its reason, the report says it is
incomplete, and the session fails.

These use the scripted backend (plumbing); tests/test_e2e_failures.py does the same to the real
checkpoint."""

from __future__ import annotations

import json

import jsonschema
import pytest

from ctxgate.cli import main
from ctxgate.records.io import report_schema
from tests.conftest import ALL_RIGHT, interrupt

TWO = ("-k", "niah_single_1 or vt")
NEED_4K = '[session]\nmin_effective_length = "4k"\n'


def read(pytester: pytest.Pytester, name: str = "out/r.json") -> dict:
    report = json.loads((pytester.path / name).read_text())
    jsonschema.validate(report, report_schema())
    return report


def gates(report: dict) -> dict[str, str]:
    return {g["name"]: g["verdict"] for g in report["gates"]}


def test_an_errored_case_is_reported_and_fails_every_gate_it_touches(suite, pytester):
    script = {**ALL_RIGHT, "raise": {"vt": {"*": "backend exploded"}}}
    result = suite(script, *TWO, "--report", "out/r.json", thresholds=NEED_4K, lengths="4k")
    assert result.ret == 1
    report = read(pytester)
    cases = {c["task"]: c for c in report["cases"]}
    assert cases["vt"]["verdict"] == "error" and cases["vt"]["error_kind"] == "error"
    assert "backend exploded" in cases["vt"]["message"]
    assert report["complete"] is False
    ruler = report["by_length"]["4096"]["ruler"]
    assert (
        ruler["incomplete"] and ruler["errored"] == ["vt"] and ruler["members"] == ["niah_single_1"]
    )
    assert report["effective_length"]["value"] == 0 and report["effective_length"][
        "incomplete"
    ] == [4096]
    assert gates(report) == {"cases": "fail", "floors": "fail", "min_effective_length": "fail"}
    result.stdout.fnmatch_lines(
        [
            "*INCOMPLETE: not every selected case finished*",
            "*Gate cases: FAIL - 1 of 2 selected cases produced no score: vt-4096 (error)*",
        ]
    )


def test_a_killed_worker_leaves_its_case_in_the_report_as_a_crash(suite, pytester):
    script = {**ALL_RIGHT, "kill": {"vt": {"*": True}}}
    result = suite(
        script,
        *TWO,
        "-n",
        "2",
        "--report",
        "out/r.json",
        thresholds=NEED_4K,
        lengths="4k",
    )
    assert result.ret == 1
    report = read(pytester)
    cases = {c["task"]: c for c in report["cases"]}
    assert set(cases) == {"niah_single_1", "vt"}
    assert cases["vt"]["error_kind"] == "crash" and "worker process died" in cases["vt"]["message"]
    assert cases["niah_single_1"]["verdict"] == "pass"
    assert (
        report["complete"] is False and report["by_length"]["4096"]["ruler"]["score"] == 100.0
    )  # of the rest
    assert gates(report) == {"cases": "fail", "floors": "fail", "min_effective_length": "fail"}
    assert "crash" in (pytester.path / "out" / "r.md").read_text()


def test_a_run_where_every_case_is_skipped_fails_saying_why(suite):
    """Skipped by design (no task fits 64 tokens): not a failure of any case, but a run that ran
    nothing fails."""
    result = suite(ALL_RIGHT, "-k", "niah_single_1 or vt or cwe", lengths="64")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "*Gate cases: FAIL - no case ran: all 3 selected cases were skipped; the first "
            "said: *cannot be built at length 64*",
            "*Gate floors: FAIL - no case was scored, so no floor was checked*",
        ]
    )


def test_a_run_that_selects_nothing_fails(suite, pytester):
    result = suite(ALL_RIGHT, "-k", "no_such_task", "--report", "out/r.json")
    assert result.ret == 1
    assert gates(read(pytester))["cases"] == "fail"


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_an_interrupted_run_is_incomplete_and_cannot_pass(suite, pytester, workers):
    suite(ALL_RIGHT, "--co")  # writes the suite's copy and ini; nothing runs
    code, out = interrupt(pytester, *workers)
    assert code == 2, out[-3000:]
    report = read(pytester)
    assert report["complete"] is False
    assert len(report["cases"]) == 9  # all 9 selected cases, finished or not
    unrun = [c for c in report["cases"] if c["verdict"] == "error"]
    assert unrun and all(
        "interrupted" in c["message"] for c in unrun if c["error_kind"] == "not_run"
    )
    assert gates(report)["cases"] == "fail" and gates(report)["floors"] == "fail"
    assert "INCOMPLETE" in out and "Gate floors: PASS" not in out


def test_diff_marks_a_case_the_new_run_lost_and_fails(suite, pytester, capsys):
    suite(ALL_RIGHT, *TWO, "--report", "base.json", lengths="4k").assert_outcomes(passed=2)
    suite({**ALL_RIGHT, "raise": {"vt": {"*": "boom"}}}, *TWO, "--report", "new.json", lengths="4k")
    capsys.readouterr()
    base, new = str(pytester.path / "base.json"), str(pytester.path / "new.json")
    assert main(["diff", base, new]) == 1
    out = capsys.readouterr().out
    assert "MISSING (error)" in out and "niah_single_1" in out and "same" in out
    assert "is incomplete: no score for vt-4096 (error): it cannot pass" in out
    assert (
        main(["diff", new, base]) == 0
    )  # the new side is whole; the baseline's hole is said, not compared
    assert "BASE" in capsys.readouterr().out


def test_a_session_interrupted_after_its_last_case_still_cannot_pass():
    from ctxgate.gate.verdicts import cases_gate
    from ctxgate.records.case import CaseRecord
    from ctxgate.records.summary import Gate

    finished = [CaseRecord("vt", "ruler", 4096, verdict="pass", score=100.0)]
    assert cases_gate(finished).verdict == "pass"
    assert cases_gate(finished, complete=False) == Gate(
        "cases", "fail", "the session did not finish (it was interrupted)"
    )
