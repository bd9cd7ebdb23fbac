"""The same prompts through the HF backend at batch 1 (the papers' HF path), the HF backend batched
(`--batch-size N`, left padded) and a vLLM server the way `--backend vllm` drives it (all of a
case's samples in flight), in a rotating order, with fresh prompts every round (a new data seed) so
vLLM's prefix cache never answers. Prints the median seconds of each, each one's speed against HF
batch 1 measured in the same rounds, and how many greedy outputs equal HF batch 1's.

    python bench/engines.py [--model fixtures/tiny-llama-niah] [--tasks niah_single_1,vt] [--lengths
    1k,4k]
                            [--samples 20] [--rounds 3] [--batch-size 8] [--vllm-python
                            .venv-vllm/bin/python]

On a GPU node: `VLLM_SPEC=vllm bash scripts/vllm_env.sh`, then the same command (bf16 +
flash-attention for HF, vLLM CUDA); the GPU is named in the output.

``--suite`` (or ``--suite-only``) adds the suite against the engine: the demo's RULER cases (13
tasks at 256-2K, 20 samples) run by the suite as users run it (``--backend vllm`` at its defaults,
the server the suite starts, no cache), timed from its first case's start to its last case's end,
against the same prompts given to the engine all at once. Each runs on a server of its own, one
after the other, both without the prefix cache (the demo's prompts share long prefixes, which would
flatter whichever side kept it). The ratio is the suite's samples per second over the engine's: how
full the suite keeps the engine's batch across cases (the next cases' requests go in while one is
scored).

    python bench/engines.py --suite-only [--suite-concurrency N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import arguments  # noqa: E402
from ctxgate.backends.base import GenerationParams, Request, stream  # noqa: E402
from ctxgate.backends.checkpoint import resolve_model  # noqa: E402
from ctxgate.backends.endpoint import EndpointBackend  # noqa: E402
from ctxgate.backends.formats import locate  # noqa: E402
from ctxgate.backends.hf import HFBackend  # noqa: E402
from ctxgate.backends.servers import EndpointSettings, Known  # noqa: E402
from ctxgate.backends.vllm_server import (  # noqa: E402
    NO_PREFIX_CACHE,
    EngineSpec,
    VLLMServer,
    find_python,
)
from ctxgate.lengths import format_length, parse_lengths  # noqa: E402
from ctxgate.run.samples import build_samples  # noqa: E402
from ctxgate.tasks import BuildContext, get_task  # noqa: E402
from ctxgate.tokens.codec import PieceEncoder  # noqa: E402


def timed(
    backend, requests: list[Request], params: GenerationParams
) -> tuple[float, dict[int, str]]:
    if isinstance(backend, tuple):  # (the HF backend, the batch size to run it at)
        hf, size = backend
        hf.batch_size = size
        backend = hf
    t0 = time.perf_counter()
    out = {r.index: g.text for r, g in stream(backend, requests, params)}
    return time.perf_counter() - t0, out


def parser() -> arguments.Parser:
    ap = arguments.Parser(
        __file__, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model", type=arguments.checkpoint, default="fixtures/tiny-llama-niah")
    ap.add_argument("--tasks", type=arguments.tasks, default="niah_single_1,vt,niah_multikey_2")
    ap.add_argument("--lengths", type=arguments.lengths, default="1k,4k")
    ap.add_argument("--samples", type=arguments.whole(1, example=20), default=20)
    ap.add_argument("--rounds", type=arguments.whole(1, example=3), default=3)
    ap.add_argument(
        "--batch-size",
        type=arguments.whole(1, example=8),
        default=8,
        help="HF batched: prompts per generate call",
    )
    ap.add_argument("--vllm-python", type=arguments.python_file, default=None)
    ap.add_argument(
        "--suite",
        action="store_true",
        help="also: the suite on the demo's cases against the engine",
    )
    ap.add_argument("--suite-only", action="store_true", help="only that (no per-engine rounds)")
    ap.add_argument(
        "--suite-concurrency",
        type=arguments.whole(1, example=64),
        default=None,
        help="the suite's --concurrency (default: the suite's own, the engine's batch)",
    )
    return ap


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    args.suite = args.suite or args.suite_only
    lengths = args.lengths
    hf = HFBackend(locate(resolve_model(args.model)))
    ctx = BuildContext(PieceEncoder(hf.tokenizer), chat=False)
    budget = max(get_task(t).tokens_to_generate for t in args.tasks)
    spec = EngineSpec(
        find_python(args.vllm_python, [Path.cwd()]), args.model, max(lengths) + budget
    )
    server = VLLMServer(spec, Path(tempfile.mkdtemp()) / "vllm.log")
    if not args.suite_only:
        rounds(args, lengths, hf, ctx, server)
    if args.suite:
        suite_against_engine(args, hf)


def rounds(
    args: argparse.Namespace,
    lengths: list[int],
    hf: HFBackend,
    ctx: BuildContext,
    server: VLLMServer,
) -> None:
    """The per-engine rounds: the same prompts through each engine, fresh prompts every round."""
    server.start()
    try:
        server.wait_ready(900)
        vllm = EndpointBackend(
            EndpointSettings((server.url,), concurrency=args.samples),
            hf.hf_tokenizer,
            args.model,
            Known("vllm"),
        )
        batched = f"HF batch {args.batch_size}"
        engines = {"HF batch 1": (hf, 1), batched: (hf, args.batch_size), "vLLM": vllm}
        print(
            f"device: {hf.describe()['device']} ({_gpu_name()}); HF {hf.describe()['dtype']} "
            f"{hf.describe()['attn_implementation']}; vLLM {vllm.describe()['server_version']}, "
            f"{args.samples} in flight; {args.samples} prompts per round, median of {args.rounds} "
            "rounds; "
            "speed = HF batch 1 time / its time, in the same rounds"
        )
        for task in [] if args.suite_only else args.tasks:
            params = GenerationParams(max_new_tokens=get_task(task).tokens_to_generate)
            for length in lengths:
                times: dict[str, list[float]] = {name: [] for name in engines}
                same = dict.fromkeys(engines, 0)
                total = 0
                for round_ in range(args.rounds):
                    samples = build_samples(
                        get_task(task), ctx, length, args.samples, seed=1000 + round_
                    )
                    requests = [Request(s.input_ids, task, length, s.index) for s in samples]
                    names = list(engines)
                    order = (
                        names[round_ % 3 :] + names[: round_ % 3]
                    )  # each engine first once every three rounds
                    outputs = {}
                    for name in order:
                        seconds, outputs[name] = timed(engines[name], requests, params)
                        times[name].append(seconds)
                    for name in engines:
                        same[name] += sum(
                            outputs[name][i] == outputs["HF batch 1"][i] for i in outputs[name]
                        )
                    total += len(requests)
                base = statistics.median(times["HF batch 1"])
                cells = [
                    f"{name} {statistics.median(times[name]):6.2f} s "
                    f"({base / statistics.median(times[name]):.2f}x"
                    f", same {same[name]}/{total})"
                    for name in engines
                    if name != "HF batch 1"
                ]
                print(
                    f"{task:<16} {format_length(length):>5}: HF batch 1 {base:6.2f} s; "
                    + "; ".join(cells),
                    flush=True,
                )
    finally:
        server.stop()


DEMO_LENGTHS = "256,512,1k,2k"  # scripts/demo.sh's lengths and samples; its RULER cases
DEMO_SAMPLES = 20


def suite_against_engine(args: argparse.Namespace, hf: HFBackend) -> None:
    """The demo's RULER cases given to the engine all at once (every one in flight), then through
    the suite as users run it (``--backend vllm``, no cache), timed from its first case's start to
    its last case's end: the suite's samples per second over the engine's."""
    import json
    import os
    import subprocess
    import sys

    from ctxgate.refusal import Refusal
    from ctxgate.tasks.registry import all_tasks

    root = Path(__file__).resolve().parent.parent
    model = str(Path(args.model).resolve())  # the suite runs in a scratch folder
    python = find_python(args.vllm_python, [Path.cwd()])
    squad = root / "fixtures" / "data" / "squad_v2_validation_tiny.jsonl"
    hotpot = root / "fixtures" / "data" / "hotpotqa_distractor_validation_tiny.jsonl"
    ctx = BuildContext(
        PieceEncoder(hf.tokenizer), chat=False, squad_source=str(squad), hotpotqa_source=str(hotpot)
    )
    lengths = parse_lengths(DEMO_LENGTHS)
    by_budget: dict[int, list[Request]] = {}
    for spec in all_tasks("ruler"):
        for length in lengths:
            try:
                built = build_samples(spec, ctx, length, DEMO_SAMPLES, seed=42)
            except Refusal:  # too short to build at this length: the suite skips it too
                continue
            batch = by_budget.setdefault(spec.tokens_to_generate, [])
            batch += [Request(s.input_ids, spec.name, length, s.index) for s in built]
    count = sum(len(r) for r in by_budget.values())
    longest = lengths[-1] + max(
        t.tokens_to_generate for t in all_tasks()
    )  # the window the suite's server gets
    server = VLLMServer(
        EngineSpec(python, model, longest, extra_args=(NO_PREFIX_CACHE,)),
        Path(tempfile.mkdtemp()) / "vllm.log",
    )
    server.start()
    try:
        server.wait_ready(900)
        settings = EndpointSettings((server.url,), concurrency=count)
        engine = EndpointBackend(settings, hf.hf_tokenizer, model, Known("vllm"))
        started = time.perf_counter()
        for (
            budget,
            requests,
        ) in by_budget.items():  # every prompt of a generation budget in flight at once
            for _ in stream(engine, requests, GenerationParams(max_new_tokens=budget)):
                pass
        alone = time.perf_counter() - started
    finally:
        server.stop()
    concurrency = (
        [] if args.suite_concurrency is None else ["--concurrency", str(args.suite_concurrency)]
    )
    with tempfile.TemporaryDirectory() as scratch:
        span = Path(scratch) / "span.json"
        command = [
            sys.executable, "-m", "pytest", str(root / "tests_longctx" / "test_suites.py"), "-m",
            "ruler",
            f"--model={model}", "--backend", "vllm", "--vllm-python", python,
            f"--vllm-arg={NO_PREFIX_CACHE}", *concurrency, "--lengths", DEMO_LENGTHS,
            "--samples", str(DEMO_SAMPLES), "--squad", str(squad), "--hotpotqa", str(hotpot),
            "--no-cache", "-p", "bench.suite_span", "-p", "no:cacheprovider", "-q",
        ]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(root), "CTXGATE_SPAN_FILE": str(span)}
        done = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True)
        if not span.exists():
            raise SystemExit(
                "the suite did not run "
                f"({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
            )
        suite = json.loads(span.read_text())["seconds"]
    how = (
        "its defaults"
        if args.suite_concurrency is None
        else f"--concurrency {args.suite_concurrency}"
    )
    print(
        f"the demo's RULER cases ({count} samples at {DEMO_LENGTHS}): the engine given them all "
        "at once "
        f"{count / alone:.1f} samples/s ({alone:.1f} s); the suite (--backend vllm, {how}) "
        f"{count / suite:.1f} samples/s ({suite:.1f} s); suite / engine {alone / suite:.2f}x",
        flush=True,
    )


def _gpu_name() -> str:
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"


if __name__ == "__main__":
    main()
