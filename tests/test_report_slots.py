"""An extra's data in the report's typed slots: written with the extra present, a report reads
back where it is absent (its slots kept as the JSON they were, and said to be an absent extra's)
and with it again (each slot read into its model); a report of schema version 1, which kept the
search, the published numbers and ``--sequential``'s settings in fields of their own, reads as
version 2."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pluggy
import pytest

from ctxgate import hooks, hookspec
from ctxgate.ext.search.records import LengthVerdict, SearchRecord, SequentialSettings
from ctxgate.gate.session import judge_session
from ctxgate.gate.thresholds import Thresholds
from ctxgate.records.case import CaseRecord, StopRecord
from ctxgate.records.io import read_report, report_text
from ctxgate.records.schema import Report, ReportSection, RunInfo, to_json
from ctxgate.report.build import build_report
from ctxgate.report.tables import markdown


def _report() -> Report:
    stop = StopRecord(0.05, 10, 12, 100, "pass", "certain it passes")
    cases = [CaseRecord("vt", "ruler", 4096, "vt", "string_match_all", "pass", score=90.0, n=12)]
    cases = [replace(cases[0], stop=stop)]
    search = SearchRecord((4096,), (8192,), "decided", (LengthVerdict(4096, True, 4, True, 90.0),))
    run = RunInfo("m", None, 42, 4, (4096, 8192), "task")
    run = replace(run, extras={"sequential": SequentialSettings(0.05, 10)})
    verdict = judge_session(cases, Thresholds("t"), True, decided=search.decided)
    section = ReportSection("search", "Search", ("Search: every task ran 4K",))
    report = build_report(cases, run, verdict)
    return replace(report, extras={"search": search}, sections=(section,))


@pytest.fixture
def without_extras(monkeypatch: pytest.MonkeyPatch) -> None:
    """The spine alone, as a wheel without ctxgate/ext has it."""
    bare = pluggy.PluginManager(hookspec.PROJECT)
    bare.add_hookspecs(hookspec)
    monkeypatch.setattr(hooks, "manager", lambda: bare)


def _written(tmp_path: Path, report: Report) -> Path:
    path = tmp_path / "r.json"
    path.write_text(report_text(report))
    return path


def test_a_report_reads_back_without_the_extra_that_wrote_its_slots(tmp_path, without_extras):
    path = _written(tmp_path, _report())
    kept = read_report(path)
    assert kept.extras["search"] == to_json(_report().extras["search"])  # as written
    assert kept.run.extras["sequential"] == {"alpha": 0.05, "min_samples": 10}
    shown = markdown(kept)
    assert "- Search: every task ran 4K" in shown  # its section, as the report kept it
    assert "from extras not installed here: report's search, run's sequential" in shown


def test_and_with_the_extra_each_slot_is_its_model_again(tmp_path):
    report = read_report(_written(tmp_path, _report()))
    assert report.extras["search"] == _report().extras["search"]
    assert report.run.extras["sequential"] == SequentialSettings(0.05, 10)
    assert report.effective_length is not None and report.effective_length.decided == {4096: True}


def test_a_report_without_a_slot_reads_where_its_extra_is_installed(tmp_path):
    bare = replace(_report(), extras={})
    assert read_report(_written(tmp_path, bare)).extras == {}


def test_a_version_1_report_reads_as_version_2(tmp_path):
    """Version 1 kept ``search``, ``reference`` and the run's ``sequential`` in fields of their
    own, a case's stop as its ``sequential``, and the lengths the search decided only in its
    record."""
    new = to_json(_report())
    old = {k: v for k, v in new.items() if k not in ("extras", "sections")}
    old |= {"schema_version": 1, "search": new["extras"]["search"], "reference": None}
    run = {k: v for k, v in new["run"].items() if k != "extras"}
    old["run"] = run | {"sequential": new["run"]["extras"]["sequential"]}
    old["cases"] = [
        {("sequential" if k == "stop" else k): v for k, v in c.items() if k != "extras"}
        for c in new["cases"]
    ]
    effective = dict(new["effective_length"])
    effective.pop("decided")
    old["effective_length"] = effective
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    read = read_report(path)
    assert read.schema_version == 2 and read.extras["search"] == _report().extras["search"]
    assert read.run.extras["sequential"] == SequentialSettings(0.05, 10)
    assert read.effective_length is not None
    assert read.effective_length.decided == {4096: True, 8192: False}  # the skipped: failing
    assert read.cases == _report().cases  # a case's sequential is its stop
