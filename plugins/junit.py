"""The session's summaries and gates in the junit file (``--junitxml``), where a CI server's test
view shows them. The summaries are ``<testsuite>`` properties, each session gate a testcase that
fails with the gate, both from the report ``reporting.session_report`` made."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from _pytest.junitxml import LogXML, bin_xml_escape, xml_key

from ctxgate.records.schema import Report
from ctxgate.records.summary import Gate
from ctxgate.report.tables import cost_line, gate_line

from .reporting import session_report

GATES = "ctxgate.gates"
_MARKS = {"partial": "partial", "incomplete": "incomplete", "early": "stopped early"}


@pytest.hookimpl(tryfirst=True)  # LogXML's, which writes the file, is a plain one
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    xml = session.config.stash.get(xml_key, None)
    report = session_report(session, exitstatus) if xml is not None else None
    if xml is None or report is None:
        return
    for name, value in properties(report):
        xml.add_global_property(name, value)
    for gate in report.gates:
        _testcase(xml, gate)


def _testcase(xml: LogXML, gate: Gate) -> None:
    # as pytest adds its own "internal" testcase for an internal error: a reporter of no test item
    case = xml.node_reporter(f"{GATES}::{gate.name}")
    case.attrs.update(classname=f"{xml.prefix}.{GATES}" if xml.prefix else GATES, name=gate.name)
    line = bin_xml_escape(gate_line(gate))
    if gate.verdict == "fail":
        element = ET.Element("failure", message=line)  # counted as a failure
    else:
        xml.add_stats("passed")
        element = ET.Element("system-out")  # what the gate checked, for whoever opens a green one
    element.text = line
    case.append(element)


def properties(report: Report) -> list[tuple[str, str]]:
    """(name, value) of every summary at every length, RULER's average over the lengths and its
    weighted forms, the effective lengths and LongScore, each with the report's marks; the costs."""
    out = [
        (f"ctxgate.{'ruler_avg' if key == 'ruler' else key}.{length}", _value(g.score, g))
        for length, groups in report.length_summaries.items()
        for key, g in groups.items()
        if g.score is not None or g.incomplete  # as the tables: no cell for a summary none ran
    ]
    for name in ("ruler_avg", "ruler_wavg_inc", "ruler_wavg_dec"):
        if (score := getattr(report.overall, name)) is not None:
            out.append((f"ctxgate.{name}", _value(score, report.overall)))
    if eff := report.effective_length:
        out.append(("ctxgate.effective_length.ruler", _value(eff.value, eff)))
    # a value, or why there is none, as every form says it
    for key, rel in report.relative_effective_length.items():
        value = _value(rel.value, rel) if rel.why is None else f"n/a: {rel.why}"
        out.append((f"ctxgate.relative_effective_length.{key}", value))
    for key, long in report.long_score.items():
        value = _value(long.value, long) if long.value is not None else f"n/a: {long.why}"
        out.append((f"ctxgate.long_score.{key}", value))
    # the run's and each case's, counts unrounded: the cases' add up to the run's
    costs = [("", report.cost)] + [(f".{c.name}", c.cost) for c in report.cases]
    exact = [(k, cost_line(c, tokens="{:,}".format)) for k, c in costs if c is not None]
    out += [(f"ctxgate.cost{k}", line.removeprefix("Cost: ")) for k, line in exact]
    sections = report.sections  # the extras' named values (``ReportSection.properties``)
    return out + [(f"ctxgate.{k}", v) for s in sections for k, v in s.properties.items()]


def _value(number: float | None, marked: object = None) -> str:
    """The number as the report's JSON writes it, with the marks of ``marked`` (a summary, an
    effective length, LongScore) in words, as the tables' ``*``, ``!``, ``~``: a partial mean is
    never read as the benchmark's score."""
    marks = [word for name, word in _MARKS.items() if getattr(marked, name, False)]
    text = "n/a" if number is None else str(number)
    return f"{text} ({', '.join(marks)})" if marks else text
