"""The junit file as a CI server reads it: every summary as a ``<testsuite>`` property and every
session gate as a testcase of ``ctxgate.gates`` that passes or fails with the gate, its verdict line
(the terminal's) as the failure message. Each file is validated against junit-10.xsd
(fixtures/junit/), the schema Jenkins' xunit plugin checks a JUnit report against and the one
pytest's default ``junit_family``, xunit2, follows; then junitparser reads it.

xunit1 (legacy) files are not checked against it: that family adds ``file`` and ``line`` attributes,
and the cases' own properties, which junit-10.xsd does not have (tests/test_plugins.py reads one).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import xmlschema
from junitparser import Failure, JUnitXml, TestSuite

from ctxgate.tasks import all_tasks
from tests.conftest import ALL_RIGHT, ROOT, interrupt

XSD = ROOT / "fixtures" / "junit" / "junit-10.xsd"
GATES = "ctxgate.gates"
Suite = Callable[..., pytest.RunResult]  # the suite fixture: a run of the suite on a script
# every gate the thresholds can ask for, each met by a model that answers everything right at 1K and
# 4K
ALL_GATES = (
    '[session]\nmin_effective_length = "4k"\n[relative_effective_length.min_length]\nruler = "4k"\n'
)


def read_junit(path: Path) -> TestSuite:
    """The file's one test suite, once the file is valid against the schema (else the first
    violation, located)."""
    xmlschema.XMLSchema(XSD).validate(path)
    (suite,) = JUnitXml.fromfile(str(path))
    return suite


def suite_properties(suite: TestSuite) -> dict[str, str]:
    return {p.name: p.value for p in suite.properties()}


def gate_cases(suite: TestSuite) -> dict[str, Any]:
    return {case.name: case for case in suite if case.classname == GATES}


def assert_the_report_is_in_the_junit(
    junit: TestSuite, report: dict[str, Any], terminal: str
) -> None:
    """Each of the report's gates is a testcase with its verdict and its terminal line; each summary
    with a score, the overall RULER averages and the effective lengths are properties with the
    report's numbers."""
    cases = gate_cases(junit)
    assert list(cases) == [g["name"] for g in report["gates"]]
    for gate in report["gates"]:
        line = f"Gate {gate['name']}: {gate['verdict'].upper()} - {gate['message']}"
        assert line in terminal
        case = cases[gate["name"]]
        if gate["verdict"] == "fail":
            (failure,) = case.result
            assert isinstance(failure, Failure) and failure.message == line and failure.text == line
        else:
            assert case.is_passed and case.system_out == line
    props = suite_properties(junit)
    for length, groups in report["by_length"].items():
        for key, group in groups.items():
            name = f"ctxgate.{'ruler_avg' if key == 'ruler' else key}.{length}"
            if group["score"] is None and not group["incomplete"]:
                assert name not in props
                continue
            number, _, marks = props[name].partition(" ")
            assert number == ("n/a" if group["score"] is None else str(group["score"]))
            assert ("partial" in marks, "incomplete" in marks) == (
                group["partial"],
                group["incomplete"],
            )
    for name in ("ruler_avg", "ruler_wavg_inc", "ruler_wavg_dec"):
        if report["overall"][name] is not None:
            assert props[f"ctxgate.{name}"].split()[0] == str(report["overall"][name])
    if report["effective_length"]:
        assert props["ctxgate.effective_length.ruler"].split()[0] == str(
            report["effective_length"]["value"]
        )
    # a value, or why there is none, as the report's JSON and tables say it
    for key, relative in report["relative_effective_length"].items():
        said = props[f"ctxgate.relative_effective_length.{key}"]
        why = relative["why"]
        assert said == f"n/a: {why}" if why else said.split()[0] == str(relative["value"])
    for key, long in report["long_score"].items():
        said = props[f"ctxgate.long_score.{key}"]
        value = long["value"]
        assert said == f"n/a: {long['why']}" if value is None else said.split()[0] == str(value)


def report_of(pytester: pytest.Pytester, name: str = "out/r.json") -> dict[str, Any]:
    return json.loads((pytester.path / name).read_text())


def test_a_passing_run_has_every_summary_as_a_property_and_every_gate_as_a_passing_testcase(
    suite: Suite, pytester: pytest.Pytester
) -> None:
    result = suite(
        ALL_RIGHT,
        "--report",
        "out/r.json",
        "--junitxml",
        "out/junit.xml",
        thresholds=ALL_GATES,
        lengths="1k,4k",
    )
    assert result.ret == 0, result.stdout.str()[-3000:]
    junit, report = read_junit(pytester.path / "out" / "junit.xml"), report_of(pytester)
    assert_the_report_is_in_the_junit(junit, report, result.stdout.str())
    assert list(gate_cases(junit)) == [
        "cases",
        "floors",
        "min_effective_length",
        "min_relative_effective_length.ruler",
    ]
    props = suite_properties(junit)
    # the names docs/reports.md gives, one of each kind
    assert props["ctxgate.ruler_avg.1024"] == "100.0"
    assert props["ctxgate.ruler_avg"].startswith("100.0") and props[
        "ctxgate.ruler_wavg_dec"
    ].startswith("100.0")
    assert (
        props["ctxgate.helmet_recall.4096"] == "100.0"
        and props["ctxgate.helmet_rag.4096"] == "100.0"
    )
    assert (
        props["ctxgate.helmet_overall.4096"] == "100.0 (partial)"
    )  # HELMET's judged categories need a judge
    assert props["ctxgate.mrcr.4096"] == "100.0" and props["ctxgate.nolima.1024"] == "100.0"
    assert props["ctxgate.effective_length.ruler"].startswith("4096")
    assert (
        props["ctxgate.relative_effective_length.ruler"] == "4096 (partial)"
    )  # as the effective length: a RULER task missing at a length
    # no length of 8K or more: 100-LongBench's LongScore has none, and says why
    assert props["ctxgate.long_score.ruler"] == "n/a: no length of 8K or more"
    assert junit.failures == 0 and junit.errors == 0


def test_a_failing_gate_is_a_failed_testcase_with_its_verdict_line(
    suite: Suite, pytester: pytest.Pytester
) -> None:
    two = ("-k", "niah_single_1 or vt")
    suite(
        ALL_RIGHT, *two, "--report", "base.json", thresholds=ALL_GATES, lengths="1k,4k"
    ).assert_outcomes(passed=4)
    broken = {**ALL_RIGHT, "accuracy": {"niah_single_1": {"4096": 0.0}}}
    result = suite(
        broken, *two, "--baseline", "base.json", "--report", "out/r.json",
        "--junitxml", "out/junit.xml",
        thresholds=ALL_GATES, lengths="1k,4k",
    )  # fmt: skip
    assert result.ret == 1
    junit, report = read_junit(pytester.path / "out" / "junit.xml"), report_of(pytester)
    assert_the_report_is_in_the_junit(junit, report, result.stdout.str())
    verdicts = {name: case.is_passed for name, case in gate_cases(junit).items()}
    assert verdicts == {
        "cases": True,
        "floors": True,  # no floor here: the drop is the baseline gate's
        "min_effective_length": False,
        "min_relative_effective_length.ruler": False,
        "baseline": False,
    }
    failure = gate_cases(junit)["min_effective_length"].result[0]
    assert failure.message.startswith(
        "Gate min_effective_length: FAIL - effective length 1K < required 4K"
    )
    assert suite_properties(junit)["ctxgate.ruler_avg.4096"] == "50.0 (partial)"
    assert junit.failures == 3 + 1  # the three gates and the case that regressed


def test_under_xdist_the_controller_writes_the_gates_and_summaries(
    suite: Suite, pytester: pytest.Pytester
) -> None:
    result = suite(
        ALL_RIGHT, "-n", "2", "-m", "ruler", "--report", "out/r.json",
        "--junitxml", "out/junit.xml",
        thresholds='[session]\nmin_effective_length = "8k"\n', lengths="1k,4k",
    )  # fmt: skip
    assert result.ret == 1
    junit, report = read_junit(pytester.path / "out" / "junit.xml"), report_of(pytester)
    assert_the_report_is_in_the_junit(junit, report, result.stdout.str())
    assert not gate_cases(junit)["min_effective_length"].is_passed
    assert suite_properties(junit)["ctxgate.ruler_avg.1024"] == "100.0"
    ruler = [c for c in junit if c.classname == "tests_longctx.test_suites"]
    assert sum(c.name.startswith("test_ruler[") for c in ruler) == 2 * len(all_tasks("ruler"))


def test_an_interrupted_run_writes_its_gates_as_they_stand(
    suite: Suite, pytester: pytest.Pytester
) -> None:
    suite(ALL_RIGHT, "--co")  # writes the suite's copy and ini; nothing runs
    code, out = interrupt(pytester, "--junitxml", "out/junit.xml")
    assert code == 2, out[-3000:]
    junit, report = read_junit(pytester.path / "out" / "junit.xml"), report_of(pytester)
    assert_the_report_is_in_the_junit(junit, report, out)
    assert report["complete"] is False
    cases = gate_cases(junit)
    assert not cases["cases"].is_passed and not cases["floors"].is_passed
