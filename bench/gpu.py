"""The suite's HF path on a GPU, ready the moment one is lent: Llama-shaped models with random bf16
weights built on the GPU (1B and 8B shapes, 128K positions, no download), saved and loaded the way
``--model`` loads a checkpoint, then niah_single_1 and vt at 4K, 32K and 128K through the HF backend
at batch 1 and at ``--batch-size auto``, and one case through ``pytest --model ... -n 1``.

    python bench/gpu.py [--out DIR] [--deadline 420]     # one H100 or H200, under 8 minutes
    python bench/gpu.py --smoke                          # CPU: a tiny shape at 512 tokens
    python bench/gpu.py --shapes 8B --ruler 128k         # RULER's 13 tasks through pytest -n 1
    python bench/gpu.py --backend vllm                   # the same shapes through vLLM's server
    python bench/gpu.py --smoke --backend vllm           # CPU: vLLM's CPU build, the tiny shape

Prints, per shape, length, task and batch mode: the case's seconds, tokens per second (prompt and
generated), peak GPU memory, the batch sizes the backend ran and any out-of-memory halvings; per
shape and length, one prefill's rate against the bf16 matrix-product rate measured first (the
practical FLOP limit of this GPU). Random weights never emit EOS, so every sample generates its
task's whole budget: the decode figures are the worst case. ``--deadline`` seconds after the start,
what is left is skipped and named, so a lease's time limit still returns every figure measured; a
step that fails (out of memory at batch 1) is printed and the others go on.
``--ruler LENGTH`` instead runs RULER's 13 tasks at that length, one sample each, through the
suite's own command, and prints the FLOP/s reached (prefill and decode counted from the config) and
what 100 samples a task would take. ``--backend vllm`` runs the suite's command with ``--backend
vllm`` instead (bench/gpu_vllm.py): one server per shape sized for the longest length, the tasks at
every length and RULER's 13 at the longest, two samples a case, each case's engine seconds, tokens
and FLOP/s; with two GPUs visible, ``--tp 2`` beside ``--tp 1``. Each line also goes to
``DIR/gpu.jsonl``.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import arguments  # noqa: E402
from bench.gpu_common import Clock, Shape, prefill_flops  # noqa: E402
from bench.gpu_suite import ruler_run, suite_case  # noqa: E402
from bench.gpu_vllm import vllm_runs  # noqa: E402
from ctxgate.backends.base import GenerationParams, Request, stream  # noqa: E402
from ctxgate.backends.checkpoint import resolve_model  # noqa: E402
from ctxgate.backends.formats import locate  # noqa: E402
from ctxgate.backends.hf import HFBackend, HFSettings  # noqa: E402
from ctxgate.lengths import format_length  # noqa: E402
from ctxgate.run.samples import build_samples  # noqa: E402
from ctxgate.tasks import BuildContext, get_task  # noqa: E402
from ctxgate.tokens.codec import PieceEncoder  # noqa: E402

TOKENIZER = ROOT / "fixtures" / "tiny-llama-niah"  # its ids fit any vocabulary below
TASKS = ("niah_single_1", "vt")


GPU_LENGTHS = ((4096, 4), (32768, 2), (131072, 2))
SHAPES = (  # Llama-3.2-1B's and Llama-3.1-8B's shapes
    Shape("1B", 2048, 16, 32, 8, 8192, 128256, 131072, GPU_LENGTHS),
    Shape("8B", 4096, 32, 32, 8, 14336, 128256, 131072, GPU_LENGTHS),
)
# head_dim 32: the smallest vLLM's CPU attention takes (16 is refused)
SMOKE = (Shape("tiny", 128, 2, 4, 2, 256, 4096, 1024, ((512, 2),)),)


def matmul_rate(torch: Any, device: Any) -> float:
    """TFLOP/s of a bf16 8192-cube product (float32 512-cube on CPU), mean of ten after warm-ups."""
    n, dtype = (8192, torch.bfloat16) if device.type == "cuda" else (512, torch.float32)
    a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
    for _ in range(3):
        a @ b
    sync(torch, device)
    t0 = time.perf_counter()
    for _ in range(10):
        a @ b
    sync(torch, device)
    return 10 * 2 * n**3 / (time.perf_counter() - t0) / 1e12


def sync(torch: Any, device: Any) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def build(shape: Shape, folder: Path, torch: Any, device: Any) -> float:
    """The model with random bf16 weights, made on the device and saved as a checkpoint folder."""
    from transformers import AutoModelForCausalLM

    t0 = time.perf_counter()
    torch.manual_seed(0)  # the same weights every run: the same greedy outputs
    with device:
        model = AutoModelForCausalLM.from_config(shape.config(), dtype=torch.bfloat16)
    model.save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(TOKENIZER / name, folder / name)
    del model
    release(torch, device)
    return time.perf_counter() - t0


def release(torch: Any, device: Any) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


class Spy:
    """The batch sizes the backend generated and the ones that ran out of memory (then halved)."""

    def __init__(self, hf: HFBackend, torch: Any) -> None:
        self.ran: list[int] = []
        self.oom: list[int] = []
        inner: Callable[..., Any] = hf._generate_batch

        def counted(requests: Any, params: GenerationParams) -> Any:
            try:
                out = inner(requests, params)
            except torch.cuda.OutOfMemoryError:
                self.oom.append(len(requests))
                raise
            self.ran.append(len(requests))
            return out

        hf._generate_batch = counted  # type: ignore[method-assign]


def run_shape(
    shape: Shape, tasks: tuple[str, ...], clock: Clock, limit: float, work: Path, torch: Any
) -> Path | None:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if not clock.left(f"{shape.name}: everything"):
        return None
    folder = work / shape.name
    built = build(shape, folder, torch, device)
    t0 = time.perf_counter()
    hf = HFBackend(locate(resolve_model(str(folder))), HFSettings(dtype="bfloat16", batch_size=1))
    loaded = time.perf_counter() - t0
    params_b = sum(p.numel() for p in hf.model.parameters()) / 1e9
    clock.emit(
        f"{shape.name}: {params_b:.2f}B parameters, built and saved in {built:.1f} s, loaded by "
        f"the HF backend in {loaded:.1f} s ({hf.describe()['dtype']}, {hf.attn})",
        shape=shape.name,
        built_s=built,
        loaded_s=loaded,
        params_b=params_b,
    )
    ctx = BuildContext(PieceEncoder(hf.tokenizer), chat=False)
    spy = Spy(hf, torch)
    for length, n in shape.lengths:
        size = format_length(length)
        if not clock.left(f"{shape.name} {size}"):
            continue
        one = build_samples(get_task("niah_single_1"), ctx, length, 1, seed=7)[0]
        ids = torch.tensor([list(one.input_ids)], device=hf.input_device)
        with torch.inference_mode():
            hf.model(ids, logits_to_keep=1)  # warm-up: kernels chosen, memory laid out
            sync(torch, device)
            t0 = time.perf_counter()
            hf.model(ids, logits_to_keep=1)
            sync(torch, device)
        rate = prefill_flops(shape, ids.shape[1]) / (time.perf_counter() - t0) / 1e12
        del ids
        clock.emit(
            f"{shape.name} {size:>5} prefill: {rate:6.3g} TFLOP/s, {rate / limit:.0%} of the "
            f"measured matrix-product limit ({limit:.3g})",
            shape=shape.name,
            length=length,
            prefill_tflops=rate,
            limit_tflops=limit,
        )
        for task in tasks:
            spec = get_task(task)
            samples = build_samples(spec, ctx, length, n, seed=42)
            requests = [Request(s.input_ids, task, length, s.index) for s in samples]
            params = GenerationParams(max_new_tokens=spec.tokens_to_generate)
            for mode, batch in (("batch 1", 1), ("auto", None)):
                if not clock.left(f"{shape.name} {size} {task} {mode}"):
                    continue
                hf.batch_size, hf.token_cap = batch, None
                spy.ran.clear()
                spy.oom.clear()
                release(torch, device)
                if device.type == "cuda":
                    torch.cuda.reset_peak_memory_stats()
                t0 = time.perf_counter()
                try:
                    gens = [g for _, g in stream(hf, requests, params)]
                except Exception as exc:  # noqa: BLE001 (one OOM at batch 1 ends this cell only)
                    where = f"{shape.name} {size} {task} {mode}"
                    clock.emit(f"{where}: failed: {exc}", shape=shape.name, error=str(exc))
                    continue
                seconds = time.perf_counter() - t0
                prompt = sum(len(r.input_ids) for r in requests)
                generated = sum(g.output_tokens for g in gens)
                peak = torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else 0.0
                halved = f", out of memory at {spy.oom} then halved" if spy.oom else ""
                clock.emit(
                    f"{shape.name} {size:>5} {task:<13} {mode:<7}: {seconds:7.2f} s for {n} "
                    f"samples, {(prompt + generated) / seconds:9.0f} tokens/s "
                    f"({generated / seconds:6.1f} generated/s), peak {peak:5.1f} GiB, "
                    f"batches {spy.ran}{halved}",
                    shape=shape.name,
                    length=length,
                    task=task,
                    mode=mode,
                    seconds=seconds,
                    samples=n,
                    prompt_tokens=prompt,
                    generated_tokens=generated,
                    peak_gib=peak,
                    batches=list(spy.ran),
                    oom=list(spy.oom),
                )
    del hf, spy
    release(torch, device)
    return folder


def parser() -> arguments.Parser:
    ap = arguments.Parser(
        __file__, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--smoke", action="store_true", help="a tiny shape at 512 tokens (CPU)")
    ap.add_argument("--out", type=arguments.out_folder, default=None, help="folder for gpu.jsonl")
    ap.add_argument(
        "--deadline", type=arguments.seconds, default=420.0, help="seconds; then skip the rest"
    )
    ap.add_argument("--shapes", default=None, help="comma-separated subset, e.g. 1B")
    ap.add_argument(
        "--lengths",
        type=arguments.lengths,
        default=None,
        help="instead of 4K,32K,128K, e.g. 64k,128k",
    )
    ap.add_argument(
        "--tasks", type=arguments.tasks, default=",".join(TASKS), help="a subset of %(default)s"
    )
    ap.add_argument(
        "--ruler",
        type=arguments.length,
        default=None,
        help="only RULER's 13 tasks at this length, e.g. 128k",
    )
    ap.add_argument("--backend", choices=["hf", "vllm"], default="hf", help="the engine measured")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    if args.backend == "vllm" and args.ruler:
        ap.error(
            f"--ruler {format_length(args.ruler)} runs the HF path, not --backend vllm: drop one "
            "(--backend vllm runs RULER's 13 tasks at the longest length)"
        )
    known = [s.name for s in (SMOKE if args.smoke else SHAPES)]
    if args.shapes and (unknown := [n for n in args.shapes.split(",") if n and n not in known]):
        ap.error(
            f"--shapes {args.shapes} holds {', '.join(unknown)}, not a shape of this run"
            f"{' (--smoke)' if args.smoke else ''}: choose from {', '.join(known)}"
        )
    import torch
    from transformers.utils import logging

    logging.disable_progress_bar()  # a bar per shard and per load: the figures are the output
    try:
        return _run(args, torch)
    finally:
        logging.enable_progress_bar()


def _run(args: argparse.Namespace, torch: Any) -> int:
    shapes = SMOKE if args.smoke else SHAPES
    if args.shapes:
        shapes = tuple(s for s in shapes if s.name in args.shapes.split(","))
    if args.lengths:  # four samples a case where batching is cheap, two past 4K
        chosen = tuple((n, 4 if n <= 4096 else 2) for n in args.lengths)
        shapes = tuple(replace(s, lengths=chosen) for s in shapes)
    tasks = args.tasks
    # the checkpoints in memory where it holds an 8B one twice over: saved and loaded at RAM speed
    shm = Path("/dev/shm")
    space = shm if shm.is_dir() and shutil.disk_usage(shm).free > 40 * 2**30 else None
    with tempfile.TemporaryDirectory(dir=space) as tmp:
        work = Path(tmp)
        out = args.out or work
        out.mkdir(parents=True, exist_ok=True)
        clock = Clock(args.deadline, out / "gpu.jsonl")
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        name = torch.cuda.get_device_name() if device.type == "cuda" else "CPU"
        limit = clock.limit = matmul_rate(torch, device)
        clock.emit(
            f"device: {name}; torch {torch.__version__}; matrix-product limit measured "
            f"{limit:.3g} TFLOP/s ({'bf16 8192-cube' if device.type == 'cuda' else 'fp32'})",
            device=name,
            limit_tflops=limit,
        )
        if args.backend == "vllm":
            for shape in shapes:
                folder = work / shape.name
                build(shape, folder, torch, device)
                vllm_runs(shape, folder, tasks, clock, work)
                shutil.rmtree(folder)
            shapes = ()
        if args.ruler:
            for shape in shapes:
                folder = work / shape.name
                build(shape, folder, torch, device)
                ruler_run(shape, folder, format_length(args.ruler), clock, work, limit)
                shutil.rmtree(folder)
            shapes = ()
        first: Path | None = None
        for shape in shapes:
            try:
                folder = run_shape(shape, tasks, clock, limit, work, torch)
            except Exception as exc:  # noqa: BLE001 (a shape that cannot build or load: the next)
                clock.emit(f"{shape.name}: failed: {exc}", shape=shape.name, error=str(exc))
                release(torch, device)
                continue
            if first is None and folder is not None:
                first = folder
                suite_case(folder, shape.lengths[0][0], clock, work)
            elif folder is not None:
                shutil.rmtree(folder)
        total = time.monotonic() - clock.start
        skipped = f"; skipped at the deadline: {', '.join(clock.skipped)}" if clock.skipped else ""
        clock.emit(f"gpu bench: {total:.0f} s{skipped}", total_s=total, skipped=clock.skipped)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
