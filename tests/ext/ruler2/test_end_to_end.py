"""RULERv2 run end to end on the tiny checkpoint: its option, its budget past the length, its
summaries (overall and per level) in the report."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest


def test_a_short_run_reports_the_ruler2_summary(
    real_suite: Callable[..., pytest.RunResult], pytester: pytest.Pytester
) -> None:
    """At 1K the MMLU tasks' fewest questions (10) do not fit: a skip; the others run with a
    budget of 16 tokens past the 1K prompt, recorded in the run."""
    some = "mk_niah_basic or mk_niah_easy or qa_hard"
    args = ("-m", "ruler2", "-k", some, "--lengths", "1k", "--samples", "1")
    result = real_suite(*args, "--ruler2-tokens-to-generate", "16", "--report", "out/r.json")
    assert result.ret == 0, result.stdout.str()[-3000:]
    report = json.loads((pytester.path / "out" / "r.json").read_text())
    cases = {c["task"]: c for c in report["cases"]}
    assert cases["mk_niah_easy"]["skip_kind"] == "too_short"
    assert cases["qa_hard"]["score"] is not None and cases["qa_hard"]["chance"] > 40
    assert 900 < cases["mk_niah_basic"]["input_tokens_max"] <= 1024
    summary = report["by_length"]["1024"]["ruler2"]
    assert summary["members"] == ["mk_niah_basic", "qa_hard"] and summary["missing"]
    # a summary per level too (register_suite's by_category), each with what ran of its members
    assert report["by_length"]["1024"]["ruler2_basic"]["members"] == ["mk_niah_basic"]
    assert report["by_length"]["1024"]["ruler2_hard"]["members"] == ["qa_hard"]
    assert report["run"]["extras"]["ruler2"] == {"tokens_to_generate": 16}
    table = (pytester.path / "out" / "r.md").read_text()
    assert "RULERv2 avg" in table and "RULERv2 basic avg" in table and "RULERv2 hard avg" in table
