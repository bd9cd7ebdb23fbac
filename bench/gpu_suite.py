"""The suite's own command on a checkpoint bench/gpu.py built (``pytest --model ... -n 1``), and
the tokens, engine seconds and FLOP/s its cases reached, read from its report."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.gpu_common import Clock, Shape, flops
from ctxgate.lengths import format_length

ROOT = Path(__file__).resolve().parent.parent
QA = ROOT / "fixtures" / "data"  # the shipped SQuAD and HotpotQA files, for RULER's qa_1 and qa_2


@dataclass(frozen=True)
class How:
    """How the suite's command runs beyond its defaults: more arguments, the environment added,
    samples a case."""

    extra: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    samples: int = 1


def suite_run(
    folder: Path, size: str, select: str, clock: Clock, work: Path, how: How = How()
) -> dict[str, Any]:
    """The suite as users run it: a pytest process with one xdist worker loading the checkpoint,
    ``how.samples`` a case. At the deadline it gets SIGTERM, as a lease's end would send, so the
    report keeps what ran."""
    report = work / f"suite-{len(list(work.glob('suite-*.json')))}.json"
    report.unlink(missing_ok=True)  # a run that dies before writing its own reads none
    cmd = [
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--model", str(folder),
        "-n", "1", "--lengths", size, "--samples", str(how.samples), "-k", select, "--no-cache",
        "--report", str(report), "--squad", str(QA / "squad_v2_validation_tiny.jsonl"),
        "--hotpotqa", str(QA / "hotpotqa_distractor_validation_tiny.jsonl"), *how.extra,
    ]  # fmt: skip
    t0 = time.perf_counter()
    environ = {**os.environ, **how.env}
    with subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environ
    ) as run:
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
    done = {"s": seconds, "exit": run.returncode, "stdout": text, "stderr": err.decode(), **found}
    return done | {"report_path": report}


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


def measured(shape: Shape, cases: Sequence[dict[str, Any]]) -> dict[str, float]:
    """The cases' tokens, engine seconds and matrix-product FLOPs, and the rate they reached."""
    ran = [c for c in cases if (c.get("cost") or {}).get("generations")]
    work_flops = sum(
        c["cost"]["generations"]
        * flops(
            shape,
            c["cost"]["prompt_tokens"] / c["cost"]["generations"],
            c["cost"]["generated_tokens"] / c["cost"]["generations"],
        )
        for c in ran
    )
    engine = sum(c["cost"]["engine_seconds"] for c in ran)
    return {
        "cases": len(ran),
        "prompt_tokens": sum(c["cost"]["prompt_tokens"] for c in ran),
        "generated_tokens": sum(c["cost"]["generated_tokens"] for c in ran),
        "engine_s": engine,
        "flops": work_flops,
        "tflops": work_flops / engine / 1e12 if engine else 0.0,
        # each case at 100 samples, at the rate its own samples ran
        "full_s": sum(c["cost"]["engine_seconds"] / c["cost"]["generations"] * 100 for c in ran),
    }


def ruler_line(
    shape: Shape, size: str, how: str, done: dict[str, Any], limit: float, clock: Clock
) -> None:
    """RULER's 13 tasks at ``size`` as one run ``done`` ran them: the wall time, the tokens, the
    FLOP/s reached against the matrix-product limit, and what 100 samples a task would take."""
    at = [c for c in done.get("cases", []) if format_length(c.get("length", 0)) == size]
    m = measured(shape, [c for c in at if c.get("suite") == "ruler"])
    rate, n = m["tflops"], int(m["cases"])
    clock.emit(
        f"{shape.name} RULER at {size} through {how} ({n} of 13 tasks ran): {done['s']:.0f} s "
        f"from launch to exit, exit {done['exit']}; {m['prompt_tokens']:.0f} prompt and "
        f"{m['generated_tokens']:.0f} generated tokens in {m['engine_s']:.0f} engine s, "
        f"{rate:.3g} TFLOP/s ({rate / limit:.0%} of {limit:.3g}); 100 samples a task at this "
        f"rate: {m['full_s'] / 3600:.2f} GPU-hours, the FLOPs alone at the limit "
        f"{m['flops'] * 100 / limit / 1e12 / 3600:.2f}",
        shape=shape.name,
        how=how,
        ruler_length=size,
        ruler_cases=n,
        pytest_s=done["s"],
        exit=done["exit"],
        prompt_tokens=m["prompt_tokens"],
        generated_tokens=m["generated_tokens"],
        engine_s=m["engine_s"],
        tflops=rate,
        full_run_gpu_hours=m["full_s"] / 3600,
    )


def ruler_run(
    shape: Shape, folder: Path, size: str, clock: Clock, work: Path, limit: float
) -> None:
    """RULER's 13 tasks at one length, one sample each, through the suite's own command."""
    if not clock.left(f"{shape.name} RULER at {size}"):
        return
    # by RULER's marker: a -k of test_ruler alone also matches RULERv2's test_ruler2
    done = suite_run(folder, size, "test_ruler", clock, work, How(("-m", "ruler")))
    ruler_line(shape, size, "pytest -n 1", done, limit, clock)
    print(
        done["stdout"][-3000:],
        done["stderr"][-3000:] if not done.get("cases") else "",
        sep="\n",
        flush=True,
    )
    if done["report_path"].exists():
        shutil.copy(done["report_path"], clock.out.parent / f"ruler-{shape.name}.json")
