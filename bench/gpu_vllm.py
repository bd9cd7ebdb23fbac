"""The engine path users run at scale, in bench/gpu.py's ``--backend vllm``: the suite's own command
with ``--backend vllm`` on a checkpoint bench/gpu.py built, one server sized for the longest length
(its KV cache holds a 128K prompt and its answer), the tasks at every length and RULER's 13 tasks
at the longest; tensor parallel 2 beside 1 where two GPUs are visible."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from bench.gpu_common import Clock, Shape
from bench.gpu_suite import How, measured, ruler_line, suite_run
from ctxgate.lengths import format_length

SAMPLES = 2  # a case's, at every length: RULER's at the longest too


def gpus() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES names them."""
    import torch

    if not torch.cuda.is_available():
        return []
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    names = visible.split(",") if visible else [str(i) for i in range(torch.cuda.device_count())]
    return names[: torch.cuda.device_count()]


def vllm_runs(shape: Shape, folder: Path, tasks: tuple[str, ...], clock: Clock, work: Path) -> None:
    """Tensor parallel 1 on one GPU, then 2 on two where there are (none on a CPU: vLLM's CPU
    build)."""
    for tp in (1, 2) if len(gpus()) >= 2 else (1,):
        vllm_run(shape, folder, tasks, clock, work, tp)


def vllm_run(
    shape: Shape, folder: Path, tasks: tuple[str, ...], clock: Clock, work: Path, tp: int
) -> None:
    how, limit, found = f"pytest --backend vllm --tp {tp} -n 1", clock.limit, gpus()
    if not clock.left(f"{shape.name} {how}"):
        return
    env = {"CUDA_VISIBLE_DEVICES": ",".join(found[:tp])} if found else {}
    run = How(("--backend", "vllm", "--tp", str(tp), "-m", "ruler"), env, SAMPLES)
    lengths = [length for length, _ in shape.lengths]
    longest = format_length(max(lengths))
    sizes = ",".join(format_length(length) for length in lengths)
    # ids hold the length in tokens: the tasks at every length, all of RULER's at the longest
    select = f"test_ruler and ({' or '.join(tasks)} or -{max(lengths)}])"
    done = suite_run(folder, sizes, select, clock, work, run)
    cases = done.get("cases", [])
    for case in sorted(cases, key=lambda c: (c["length"], c["task"])):
        if case["task"] in tasks:
            case_line(shape, tp, case, limit, clock)
    started = server_start(done)
    clock.emit(
        f"{shape.name} {how} --lengths {sizes}: {done['s']:.0f} s from launch to exit, exit "
        f"{done['exit']}, {started}",
        shape=shape.name,
        tp=tp,
        pytest_s=done["s"],
        exit=done["exit"],
        cases=len(cases),
        backend=(done.get("run") or {}).get("backend"),
    )
    ruler_line(shape, longest, how, done, limit, clock)
    if not cases:
        print(done["stdout"][-3000:], done["stderr"][-3000:], sep="\n", flush=True)
    if done["report_path"].exists():
        shutil.copy(done["report_path"], clock.out.parent / f"vllm-{shape.name}-tp{tp}.json")


def case_line(shape: Shape, tp: int, case: dict[str, Any], limit: float, clock: Clock) -> None:
    m = measured(shape, [case])
    if not m["cases"]:
        clock.emit(
            f"{shape.name} vLLM tp{tp} {format_length(case['length']):>5} {case['task']}: "
            f"{case['verdict']} ({case.get('message') or 'no generation'})",
            shape=shape.name,
            tp=tp,
            task=case["task"],
            length=case["length"],
            error=case.get("message") or case["verdict"],
        )
        return
    seconds, generated = m["engine_s"], m["generated_tokens"]
    tokens = m["prompt_tokens"] + generated
    clock.emit(
        f"{shape.name} vLLM tp{tp} {format_length(case['length']):>5} {case['task']:<13}: "
        f"{seconds:7.2f} engine-s for {case['n']} samples, {tokens / seconds:9.0f} tokens/s "
        f"({generated / seconds:6.1f} generated/s), {m['tflops']:.3g} TFLOP/s "
        f"({m['tflops'] / limit:.0%} of {limit:.3g})",
        shape=shape.name,
        tp=tp,
        task=case["task"],
        length=case["length"],
        samples=case["n"],
        engine_s=seconds,
        prompt_tokens=m["prompt_tokens"],
        generated_tokens=generated,
        tflops=m["tflops"],
    )


def server_start(done: dict[str, Any]) -> str:
    """What the run's record says of the server it started."""
    backend = (done.get("run") or {}).get("backend") or {}
    if not isinstance(backend, dict) or "max_model_len" not in backend:
        return "no server record"
    engine = backend.get("engine") or {}
    return (
        f"vLLM {backend.get('server_version')}, max_model_len {backend['max_model_len']}, "
        f"{engine.get('dtype')}, tensor parallel {engine.get('tensor_parallel')}, "
        f"{len(backend.get('endpoints') or [])} server(s)"
    )
