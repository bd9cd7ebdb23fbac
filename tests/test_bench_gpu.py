"""bench/gpu.py's CPU smoke mode: every path the GPU run takes (build, save, load through the HF
backend, prefill rate, both batch modes, the pytest -n 1 case), on a tiny shape at 512 tokens, so
a lent GPU's first run of it is not the script's first."""

from __future__ import annotations

import json
from pathlib import Path

from bench.gpu import main
from tests.conftest import engine_in_its_server


def test_the_smoke_mode_measures_every_figure_the_gpu_run_prints(tmp_path: Path) -> None:
    assert main(["--smoke", "--out", str(tmp_path)]) == 0
    records = [json.loads(line) for line in (tmp_path / "gpu.jsonl").read_text().splitlines()]
    cases = [r for r in records if "mode" in r]
    assert {(r["task"], r["mode"]) for r in cases} == {
        (task, mode) for task in ("niah_single_1", "vt") for mode in ("batch 1", "auto")
    }
    for r in cases:  # these random weights never stop early: each sample writes its whole budget
        assert sum(r["batches"]) == 2 and not r["oom"], r
        assert r["mode"] == "auto" or r["batches"] == [1, 1], r
        assert r["generated_tokens"] == 2 * {"niah_single_1": 128, "vt": 30}[r["task"]], r
        assert r["prompt_tokens"] <= 2 * 512 and r["seconds"] > 0
    assert any("prefill_tflops" in r for r in records)
    suite = next(r for r in records if "pytest_s" in r)
    assert suite["verdict"] != "no case" and suite["exit"] in (0, 1), suite
    assert suite["cost"]["total"]["generations"] == 1 and suite["cost"]["device"] == "cpu"
    assert records[-1]["skipped"] == [] and not [r for r in records if "error" in r]


def test_the_ruler_mode_runs_the_suites_command_and_counts_its_flops(tmp_path: Path) -> None:
    assert main(["--smoke", "--ruler", "512", "--out", str(tmp_path)]) == 0
    lines = [json.loads(line) for line in (tmp_path / "gpu.jsonl").read_text().splitlines()]
    ruler_adds_up(lines, json.loads((tmp_path / "ruler-tiny.json").read_text()))
    assert lines[-1]["skipped"] == []


def ruler_adds_up(lines: list[dict], report: dict) -> None:
    """RULER's line: its 13 tasks ran, and its tokens are the report's (all at the length)."""
    ruler = next(r for r in lines if "ruler_cases" in r)
    total = report["cost"]["total"]
    assert ruler["ruler_cases"] == 13 and ruler["exit"] == 0, ruler
    assert (ruler["prompt_tokens"], ruler["generated_tokens"]) == (
        total["prompt_tokens"],
        total["generated_tokens"],
    )
    assert ruler["tflops"] > 0 and ruler["full_run_gpu_hours"] > 0


def test_the_vllm_mode_runs_the_suites_command_on_vllms_cpu_build(tmp_path: Path) -> None:
    """``--backend vllm`` on vLLM's CPU build: one server, the tasks at the length and RULER's 13,
    every figure printed from the run's own report."""
    with engine_in_its_server():  # the server's processes are not what is measured
        assert main(["--smoke", "--backend", "vllm", "--out", str(tmp_path)]) == 0
    lines = [json.loads(line) for line in (tmp_path / "gpu.jsonl").read_text().splitlines()]
    assert not [r for r in lines if "error" in r] and lines[-1]["skipped"] == [], lines
    report = json.loads((tmp_path / "vllm-tiny-tp1.json").read_text())
    assert report["run"]["backend"]["backend"] == "vllm"
    cases = {(c["task"], c["length"]): c for c in report["cases"]}
    figures = [r for r in lines if "task" in r]
    assert {(r["task"], r["length"]) for r in figures} == {("niah_single_1", 512), ("vt", 512)}
    for r in figures:  # random weights never stop early: each sample writes its whole budget
        cost = cases[(r["task"], 512)]["cost"]
        assert (
            r["samples"] == 2
            and r["generated_tokens"] == 2 * {"niah_single_1": 128, "vt": 30}[r["task"]]
        ), r
        assert (r["prompt_tokens"], r["engine_s"]) == (
            cost["prompt_tokens"],
            cost["engine_seconds"],
        )
        assert r["tflops"] > 0, r
    run = next(r for r in lines if "cases" in r and "tp" in r)
    assert run["exit"] == 0 and run["tp"] == 1 and run["pytest_s"] > 0, run
    ruler_adds_up(lines, report)
