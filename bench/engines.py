"""The same prompts through the HF backend at batch 1 (the papers' HF path), the HF backend batched
(`--batch-size N`, left padded) and a vLLM server the way `--backend vllm` drives it (all of a case's samples in
flight), in a rotating order, with fresh prompts every round (a new data seed) so vLLM's prefix cache never
answers. Prints the median seconds of each, each one's speed against HF batch 1 measured in the same rounds, and
how many greedy outputs equal HF batch 1's.

    python bench/engines.py [--model fixtures/tiny-llama-niah] [--tasks niah_single_1,vt] [--lengths 1k,4k]
                            [--samples 20] [--rounds 3] [--batch-size 8] [--vllm-python .venv-vllm/bin/python]

On a GPU node: `VLLM_SPEC=vllm bash scripts/vllm_env.sh`, then the same command (bf16 + flash-attention for HF,
vLLM CUDA); the GPU is named in the output.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from ctxgate.backends.base import GenerationParams, Request, stream
from ctxgate.backends.endpoint import EndpointBackend, EndpointSettings
from ctxgate.backends.hf import HFBackend
from ctxgate.backends.vllm_server import EngineSpec, VLLMServer, find_python
from ctxgate.lengths import format_length, parse_lengths
from ctxgate.run.case import build_samples
from ctxgate.tasks import BuildContext, get_task
from ctxgate.textcodec import PieceEncoder


def timed(backend, requests: list[Request], params: GenerationParams) -> tuple[float, dict[int, str]]:
    if isinstance(backend, tuple):  # (the HF backend, the batch size to run it at)
        hf, size = backend
        hf.batch_size = size
        backend = hf
    t0 = time.perf_counter()
    out = {r.index: g.text for r, g in stream(backend, requests, params)}
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="fixtures/tiny-llama-niah")
    ap.add_argument("--tasks", default="niah_single_1,vt,niah_multikey_2")
    ap.add_argument("--lengths", default="1k,4k")
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=8, help="HF batched: prompts per generate call")
    ap.add_argument("--vllm-python", default=None)
    args = ap.parse_args()
    lengths = parse_lengths(args.lengths)
    hf = HFBackend(args.model)
    ctx = BuildContext(PieceEncoder(hf.tokenizer), chat=False)
    budget = max(get_task(t).tokens_to_generate for t in args.tasks.split(","))
    spec = EngineSpec(find_python(args.vllm_python, [Path.cwd()]), args.model, max(lengths) + budget)
    server = VLLMServer(spec, Path(tempfile.mkdtemp()) / "vllm.log")
    server.start()
    try:
        server.wait_ready(900)
        vllm = EndpointBackend(
            EndpointSettings((server.url,), concurrency=args.samples), hf.hf_tokenizer, args.model, name="vllm"
        )
        batched = f"HF batch {args.batch_size}"
        engines = {"HF batch 1": (hf, 1), batched: (hf, args.batch_size), "vLLM": vllm}
        print(
            f"device: {hf.describe()['device']} ({_gpu_name()}); HF {hf.describe()['dtype']} "
            f"{hf.describe()['attn_implementation']}; vLLM {vllm.describe()['server_version']}, "
            f"{args.samples} in flight; {args.samples} prompts per round, median of {args.rounds} rounds; "
            "speed = HF batch 1 time / its time, in the same rounds"
        )
        for task in args.tasks.split(","):
            params = GenerationParams(max_new_tokens=get_task(task).tokens_to_generate)
            for length in lengths:
                times: dict[str, list[float]] = {name: [] for name in engines}
                same = dict.fromkeys(engines, 0)
                total = 0
                for round_ in range(args.rounds):
                    samples = build_samples(get_task(task), ctx, length, args.samples, seed=1000 + round_)
                    requests = [Request(s.input_ids, task, length, s.index) for s in samples]
                    names = list(engines)
                    order = names[round_ % 3 :] + names[: round_ % 3]  # each engine first once every three rounds
                    outputs = {}
                    for name in order:
                        seconds, outputs[name] = timed(engines[name], requests, params)
                        times[name].append(seconds)
                    for name in engines:
                        same[name] += sum(outputs[name][i] == outputs["HF batch 1"][i] for i in outputs[name])
                    total += len(requests)
                base = statistics.median(times["HF batch 1"])
                cells = [
                    f"{name} {statistics.median(times[name]):6.2f} s ({base / statistics.median(times[name]):.2f}x"
                    f", same {same[name]}/{total})"
                    for name in engines
                    if name != "HF batch 1"
                ]
                print(
                    f"{task:<16} {format_length(length):>5}: HF batch 1 {base:6.2f} s; " + "; ".join(cells), flush=True
                )
    finally:
        server.stop()


def _gpu_name() -> str:
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"


if __name__ == "__main__":
    main()
