"""Pieces of the report pipeline that need no pytest session: crash safety, tables, the pickle
guard."""

from __future__ import annotations

import json

import pytest

from ctxgate.gate.session import judge_session
from ctxgate.gate.thresholds import Thresholds
from ctxgate.records.case import CaseRecord, SampleOutcome
from ctxgate.records.schema import Report, RunInfo, to_json
from ctxgate.report.build import build_report
from ctxgate.report.tables import markdown, terminal
from ctxgate_plugins.cases import CaseState
from ctxgate_plugins.reporting import Collector


def record(task: str, length: int, score: float, verdict: str = "pass") -> CaseRecord:
    suite = "helmet" if task == "json_kv" else "ruler"
    return CaseRecord(
        task, suite, length, "x", "m", verdict, score=score, n=10, floor=0.0, ci=(0.0, 100.0)
    )


def _report(cases: list[CaseRecord]) -> Report:
    run = RunInfo("tiny", None, 42, None, (), "off")
    return build_report(cases, run, judge_session(cases, Thresholds(path="(none)"), True))


def test_each_case_is_on_disk_as_soon_as_it_arrives(tmp_path):
    c = Collector(str(tmp_path / "r.json"))
    sample = SampleOutcome(0, 1.0, "x", "x", ("x",), 512, 1, "stop", "d")
    c.add(CaseState(record("vt", 512, 50.0), (sample,), run_meta={"model": "m"}).to_wire())
    c.add(CaseState(record("cwe", 512, 10.0)).to_wire())
    lines = (tmp_path / "r.partial.jsonl").read_text().splitlines()
    assert [json.loads(x)["task"] for x in lines] == ["vt", "cwe"]
    assert c.run_meta == {"model": "m"} and "run_meta" not in json.loads(lines[0])
    assert json.loads(lines[0])["samples"] == [to_json(sample)]  # the outputs survive a crash too


def test_tables_mark_failures_partials_and_effective_length():
    cases = [
        record("niah_single_1", 512, 100.0),
        record("niah_single_1", 2048, 5.0, "fail"),
        record("json_kv", 512, 0.0, "skip"),
    ]
    report = _report(cases)
    text = terminal(report)
    assert "5.0 ✗" in text and "skip" in text and "100.0*" in text
    assert "Effective length" in text and "512" in text.replace("K", "")
    md = markdown(report)
    assert md.startswith("### ctxgate: tiny") and "| niah_single_1 | 100.0 |" in md


def test_pickle_weights_are_refused_without_the_flag(tmp_path):
    from ctxgate.backends.checkpoint import CheckpointError
    from ctxgate.backends.formats import locate

    (tmp_path / "config.json").write_text('{"model_type": "llama"}')
    (tmp_path / "tokenizer.json").write_text("{}")
    (tmp_path / "pytorch_model.bin").write_bytes(b"not really")
    with pytest.raises(CheckpointError, match="--allow-pickle"):
        locate(tmp_path)


def test_helmet_categories_are_plain_means_and_partial_when_a_member_is_missing():
    scores = {
        "kilt_nq": 40.0,
        "kilt_triviaqa": 60.0,
        "kilt_popqa": 20.0,
        "kilt_hotpotqa": 0.0,
        "msmarco_rerank": 33.3,
        "icl_trec_coarse": 50.0,
        "infbench_qa": 10.0,
        "infbench_mc": 30.0,
    }
    cases = [record(t, 1024, s) for t, s in scores.items()]
    report = _report(cases)
    at = to_json(report)["by_length"]["1024"]
    assert at["helmet_rag"] == {
        "score": 30.0,
        "partial": False,
        "members": ["kilt_nq", "kilt_triviaqa", "kilt_popqa", "kilt_hotpotqa"],
        "missing": [],
        "incomplete": False,
        "errored": [],
        "early": [],
    }
    assert at["helmet_rerank"]["score"] == 33.3 and not at["helmet_rerank"]["partial"]
    assert at["helmet_icl"]["score"] == 50.0 and at["helmet_icl"]["partial"]
    assert at["helmet_icl"]["missing"] == [
        "icl_trec_fine",
        "icl_banking77",
        "icl_clinic150",
        "icl_nlu",
    ]
    assert at["helmet_longqa"]["score"] == 20.0 and at["helmet_longqa"]["missing"] == [
        "narrativeqa"
    ]
    assert at["helmet_recall"]["score"] is None  # no recall member ran: no row, no number
    text = terminal(report)
    assert "HELMET RAG" in text and "30.0" in text and "HELMET LongQA" in text and "20.0*" in text
    assert "HELMET Recall" not in text
    assert "LongQA lacks narrativeqa" in text and "not the category score" in text
    assert "| HELMET ICL | 50.0* |" in markdown(report)
