"""``ctxgate metrics REPORT``: a report on disk, read back and printed as OpenMetrics text."""

from __future__ import annotations

from ctxgate.cli import main
from ctxgate.gate.session import judge_session
from ctxgate.gate.thresholds import Thresholds
from ctxgate.records.case import CaseRecord
from ctxgate.records.io import report_text
from ctxgate.records.schema import RunInfo
from ctxgate.report.build import build_report


def test_metrics_prints_each_case_and_summary_as_an_openmetrics_gauge(tmp_path, capsys):
    cases = [
        CaseRecord("json_kv", "ruler", 4096, "niah", "string_match_all", "pass", score=40.0, n=5),
        CaseRecord("vt", "ruler", 4096, "vt", "string_match_all", "error"),
    ]
    run = RunInfo("checkpoint-300", None, 42, 5, (4096,), "task")
    report = build_report(cases, run, judge_session(cases, Thresholds("t"), True))
    (tmp_path / "r.json").write_text(report_text(report))
    assert main(["metrics", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert 'ctxgate_case_score{model="checkpoint-300",task="json_kv",length="4096"} 40.0' in out
    assert 'task="vt"' not in out  # no score, no sample
    assert 'ctxgate_unscored_cases{model="checkpoint-300"} 1' in out
    assert out.startswith("# TYPE ctxgate_case_score gauge\n# UNIT ctxgate_case_score percent\n")
    assert out.rstrip().endswith("# EOF")
