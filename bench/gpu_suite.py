"""The suite's own command on a checkpoint bench/gpu.py built (``pytest --model ... -n 1``), and
the matrix-product FLOPs a Llama-shaped model does, counted from its shape."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxgate.lengths import format_length

if TYPE_CHECKING:
    from bench.gpu import Clock, Shape

ROOT = Path(__file__).resolve().parent.parent
QA = ROOT / "fixtures" / "data"  # the shipped SQuAD and HotpotQA files, for RULER's qa_1 and qa_2


def prefill_flops(shape: Shape, tokens: int) -> float:
    """Matrix-product FLOPs of one causal prefill: the layers' weights, and attention's scores and
    values over the causal half of the square."""
    head = shape.hidden // shape.heads
    per_layer = (
        shape.hidden * shape.hidden * 2  # q and o
        + 2 * shape.hidden * shape.kv_heads * head  # k and v
        + 3 * shape.hidden * shape.intermediate
    )
    weights = 2 * shape.layers * per_layer * tokens
    attention = 2 * shape.layers * shape.hidden * tokens * tokens  # 2 products x 2n²d / 2
    return float(weights + attention)


def suite_run(folder: Path, size: str, select: str, clock: Clock, work: Path) -> dict[str, Any]:
    """The suite as users run it: a pytest process with one xdist worker loading the checkpoint.
    At the deadline it gets SIGTERM, as a lease's end would send, so the report keeps what ran."""
    report = work / f"suite-{select}.json"  # kept in --out when given
    cmd = [
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--model", str(folder),
        "-n", "1", "--lengths", size, "--samples", "1", "-k", select, "--no-cache",
        "--report", str(report), "--squad", str(QA / "squad_v2_validation_tiny.jsonl"),
        "--hotpotqa", str(QA / "hotpotqa_distractor_validation_tiny.jsonl"),
    ]  # fmt: skip
    t0 = time.perf_counter()
    with subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as run:
        try:
            out, err = run.communicate(timeout=clock.remaining())
        except subprocess.TimeoutExpired:
            clock.skipped.append(f"pytest -k {select} (stopped at the deadline)")
            run.terminate()
            try:
                out, err = run.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                run.kill()
                out, err = run.communicate()
    seconds = time.perf_counter() - t0
    text = out.decode(errors="replace")
    found = json.loads(report.read_text()) if report.exists() else {}
    return {"s": seconds, "exit": run.returncode, "stdout": text, "stderr": err.decode(), **found}


def suite_case(folder: Path, length: int, clock: Clock, work: Path) -> None:
    if not clock.left("pytest -n 1"):
        return
    size = format_length(length)
    done = suite_run(folder, size, "niah_single_1", clock, work)
    cases = [c for c in done.get("cases", []) if c.get("task") == "niah_single_1"]
    ran = cases[0].get("verdict") if cases else "no case"
    last = (done["stdout"].strip().splitlines() or [""])[-1]
    cost = next((x for x in done["stdout"].splitlines() if x.startswith("Cost: ")), "no cost line")
    clock.emit(
        f"pytest --model {folder.name} -n 1 --lengths {size} -k niah_single_1: {done['s']:.1f} s "
        f"from launch to exit, exit {done['exit']}, case {ran} ({last}); {cost}",
        pytest_s=done["s"],
        exit=done["exit"],
        verdict=ran,
        cost=done.get("cost"),
    )
    if ran == "no case":
        print(done["stdout"][-3000:], done["stderr"][-3000:], sep="\n", flush=True)


def flops(shape: Shape, prompt: float, generated: float) -> float:
    """Matrix-product FLOPs of one sample: its prefill, then each generated token's step over the
    context so far (weights, attention over every earlier token, and the output projection)."""
    step = (
        prefill_flops(shape, 1) - 2 * shape.layers * shape.hidden + 2 * shape.hidden * shape.vocab
    )
    context = 4 * shape.layers * shape.hidden * (generated * prompt + generated**2 / 2)
    return prefill_flops(shape, round(prompt)) + generated * step + context


def ruler_run(
    shape: Shape, folder: Path, size: str, clock: Clock, work: Path, limit: float
) -> None:
    """RULER's 13 tasks at one length, one sample each, through the suite's own command: the wall
    time, the tokens, the FLOP/s reached against the matrix-product limit, and what a full run at
    the suite's default sample counts would take at this rate."""
    if not clock.left(f"{shape.name} RULER at {size}"):
        return
    done = suite_run(folder, size, "test_ruler", clock, work)
    cases = [c for c in done.get("cases", []) if (c.get("cost") or {}).get("generations")]
    work_flops = sum(
        c["cost"]["generations"]
        * flops(
            shape,
            c["cost"]["prompt_tokens"] / c["cost"]["generations"],
            c["cost"]["generated_tokens"] / c["cost"]["generations"],
        )
        for c in cases
    )
    engine = sum(c["cost"]["engine_seconds"] for c in cases)
    prompt = sum(c["cost"]["prompt_tokens"] for c in cases)
    generated = sum(c["cost"]["generated_tokens"] for c in cases)
    rate = work_flops / engine / 1e12 if engine else 0.0
    full = sum(c["cost"]["engine_seconds"] / c["cost"]["generations"] * 100 for c in cases)
    clock.emit(
        f"{shape.name} RULER at {size} through pytest -n 1 ({len(cases)} of 13 tasks ran, 1 sample "
        f"each): {done['s']:.0f} s from launch to exit, exit {done['exit']}; {prompt} prompt and "
        f"{generated} generated tokens in {engine:.0f} engine s, {rate:.3g} TFLOP/s "
        f"({rate / limit:.0%} of {limit:.3g}); 100 samples a task at this rate: {full / 3600:.2f} "
        f"GPU-hours, the FLOPs alone at the limit {work_flops * 100 / limit / 1e12 / 3600:.2f}",
        shape=shape.name,
        ruler_length=size,
        ruler_cases=len(cases),
        pytest_s=done["s"],
        exit=done["exit"],
        prompt_tokens=prompt,
        generated_tokens=generated,
        engine_s=engine,
        tflops=rate,
        full_run_gpu_hours=full / 3600,
    )
    print(done["stdout"][-3000:], done["stderr"][-3000:] if not cases else "", sep="\n", flush=True)
    if (work / "suite-test_ruler.json").exists():
        shutil.copy(work / "suite-test_ruler.json", clock.out.parent / f"ruler-{shape.name}.json")
