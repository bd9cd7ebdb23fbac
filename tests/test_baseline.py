"""--baseline and ctxgate diff through the real plugins, with the scripted backend (plumbing)."""

from __future__ import annotations

import json

import pytest

from ctxgate.cli import main
from tests.conftest import SCRIPTED

ARGS = ["--lengths", "4k", "--samples", "40", "-k", "niah_single_1 or vt", "--no-cache"]


@pytest.fixture
def run(scripted_suite):
    return lambda name, script, *extra: scripted_suite(name, script, *ARGS, *extra)


def test_noise_passes_and_a_real_drop_fails_with_the_statistics(run, pytester):
    run("base", {"default": 0.8}).assert_outcomes(passed=2)
    noisy = run("noisy", {"default": 0.8, "offset": 3}, "--baseline", "base.json")
    noisy.assert_outcomes(passed=2)
    case = json.loads((pytester.path / "noisy.json").read_text())["cases"][0]
    assert case["baseline"]["delta"] == 0.0 and not case["baseline"]["regressed"]
    assert case["baseline"]["method"] == "tango-score"
    dropped = run(
        "drop", {"default": 0.8, "accuracy": {"vt": {"*": 0.4}}}, "--baseline", "base.json"
    )
    dropped.assert_outcomes(passed=1, failed=1)
    dropped.stdout.fnmatch_lines(
        [
            "*vt at 4096 regressed: 40.0 vs baseline 80.0: delta -40.0 points (interval "
            "-* to -*, tango-score, n=40), tolerance 2.0*"
        ]
    )


def test_tolerance_comes_from_thresholds(run, pytester):
    run("base", {"default": 0.8}).assert_outcomes(passed=2)
    (pytester.path / "thresholds.toml").write_text('[[tolerance]]\ntask = "vt"\npoints = 60\n')
    run(
        "drop", {"default": 0.8, "accuracy": {"vt": {"*": 0.4}}}, "--baseline", "base.json"
    ).assert_outcomes(passed=2)


def test_different_prompts_are_an_error_naming_what_differs(run):
    run("base", {"default": 1.0}).assert_outcomes(passed=2)
    result = run("other", {"default": 1.0}, "--baseline", "base.json", "--chat-template", "on")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        ["*the prompts differ in chat-template setting ('task' in the baseline, 'on' now)*"]
    )
    result = run("seed", {"default": 1.0}, "--baseline", "base.json", "--seed", "7")
    result.stdout.fnmatch_lines(["*data seed (42 in the baseline, 7 now)*"])


def test_unreadable_baseline_is_a_usage_error(run, pytester):
    (pytester.path / "nope.json").write_text("{}")
    result = pytester.runpytest(
        "--backend", SCRIPTED, "--model", "x.json", "--baseline", "missing.json"
    )
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--baseline missing.json: cannot read the report*"])


def test_diff_prints_the_same_comparison(run, pytester, capsys):
    run("base", {"default": 0.8}).assert_outcomes(passed=2)
    run("new", {"default": 0.8, "accuracy": {"vt": {"*": 0.4}}}).assert_outcomes(passed=2)
    capsys.readouterr()
    code = main(
        ["diff", str(pytester.path / "base.json"), str(pytester.path / "new.json"), "--markdown"]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "| vt | 4K | 80.0 | 40.0 | -40.0 |" in out and "REGRESSED" in out
    assert "| niah_single_1 | 4K | 80.0 | 80.0 | +0.0 |" in out


def test_a_case_the_baseline_has_no_score_for_is_named_in_the_gate():
    """Such a case is gated by its floor alone: the baseline gate says which, instead of passing it
    without a word."""
    from ctxgate.gate.verdicts import baseline_gate
    from ctxgate.records.case import CaseRecord, Comparison
    from ctxgate.records.schema import BaselineRun

    same = Comparison(80.0, 0.0, (-1.0, 1.0), "paired", 10, 5.0, 0.95, False, "same")
    cases = [
        CaseRecord("vt", "ruler", 4096, score=80.0, verdict="pass", baseline=same),
        CaseRecord("cwe", "ruler", 4096, score=60.0, verdict="pass"),
    ]
    gate = baseline_gate(cases, BaselineRun("base.json", ("vt-4096",)))
    assert gate.verdict == "pass"
    assert (
        "1 scored case(s) have no score in the baseline, e.g. cwe-4096: gated by their floors alone"
        in gate.message
    )
    assert (
        "no score in the baseline"
        not in baseline_gate(cases[:1], BaselineRun("b", ("vt-4096",))).message
    )
