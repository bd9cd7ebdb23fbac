"""End to end on the shipped checkpoint: the real suite, a real transformers model, real generations."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import jsonschema

from ctxgate.report.schema import REPORT_SCHEMA
from ctxgate.tasks import all_tasks
from tests.conftest import HELMET_DATA


def test_retrieval_passes_short_and_fails_long_for_real(real_suite, pytester):
    # The shipped model gets 85% at 256 tokens and 0% at 2048 (40 samples; bench/tiny_accuracy.py, README).
    (pytester.path / "thresholds.toml").write_text('[[floor]]\ntask = "niah_single_1"\nfloor = 70\n')
    result = real_suite("-k", "niah_single_1", "--lengths", "256,2k", "--samples", "40", "--report", "r.json")
    result.assert_outcomes(passed=1, failed=1)
    cases = {c["length"]: c for c in json.loads((pytester.path / "r.json").read_text())["cases"]}
    assert cases[256]["verdict"] == "pass" and cases[256]["score"] >= 70
    assert cases[2048]["verdict"] == "fail" and cases[2048]["score"] <= 10
    result.stdout.fnmatch_lines(["*niah_single_1 at 2048 (2K): score * < floor 70.0 (n=40, 95% CI*"])


def test_every_task_and_length_under_xdist_with_all_outputs(real_suite, pytester):
    result = real_suite("--lengths", "512,1k", "--samples", "3", "-n", "2", "--report", "out/run.json",
                        "--junitxml", "out/junit.xml", "--data-dir", str(HELMET_DATA))
    assert result.ret == 0, result.stdout.str()[-3000:]
    report = json.loads((pytester.path / "out" / "run.json").read_text())
    jsonschema.validate(report, REPORT_SCHEMA)
    expected = {(t.name, L) for t in all_tasks() for L in (512, 1024)}
    assert {(c["task"], c["length"]) for c in report["cases"]} == expected
    ran = [c for c in report["cases"] if c["verdict"] == "pass"]
    assert len(ran) >= 40  # a few tasks cannot fit their fixed parts in 512 tokens and are skipped with a reason
    for c in report["cases"]:
        if c["verdict"] == "skip":
            assert "choose a longer --lengths" in c["message"]
    assert report["run"]["model_fingerprint"]["sha256"] and report["run"]["backend"]["backend"] == "hf"
    assert report["by_length"]["512"]["ruler"]["score"] is not None
    names = {c.get("name") for c in ET.parse(pytester.path / "out" / "junit.xml").getroot().iter("testcase")}
    assert "test_ruler[niah_multikey_2-1024]" in names and "test_helmet[json_kv-512]" in names
    at = report["by_length"]["1024"]  # every HELMET category from the fixture data, LongQA partial (NarrativeQA)
    assert all(at[f"helmet_{c}"]["score"] is not None for c in ("recall", "rag", "rerank", "icl", "longqa"))
    assert at["helmet_longqa"]["missing"] == ["narrativeqa"] and not at["helmet_rag"]["partial"]
    md = (pytester.path / "out" / "run.md").read_text()
    assert md.count("|") > 20 and all(f"| HELMET {c} |" in md for c in ("RAG", "Re-rank", "ICL", "LongQA"))
    assert len((pytester.path / "out" / "run.predictions.jsonl").read_text().splitlines()) == 3 * len(ran)


def test_chat_template_on_is_applied_and_recorded(real_suite, pytester):
    result = real_suite("-k", "niah_single_1", "--lengths", "1k", "--samples", "2", "--chat-template", "on",
                        "--report", "r.json")
    result.assert_outcomes(passed=1)
    run = json.loads((pytester.path / "r.json").read_text())["run"]
    assert run["chat_template"] == "on" and len(run["chat_template_sha256"]) == 64
