"""Long prompts end to end: the suite run on the tiny checkpoint at a long length, against a shorter
one in the same run.

python bench/long_prompts.py [--lengths 32k,256k] [--backends hf,vllm] [--task niah_single_1]

Each backend x length is one real run of the suite: ``pytest --model fixtures/tiny-llama-niah
--backend B --lengths L --samples 1 --model-override max_position_embeddings=N -k TASK`` with a
fresh cache, so the sample is built, sent to the model (for ``vllm`` a vLLM server the suite starts
from .venv-vllm, ``scripts/vllm_env.sh``) and its output scored. A line per run gives the wall time,
the peak memory of the run's whole process tree (the suite and, for vllm, the server and its engine;
sampled every 100 ms), the prompt's length in tokens as the report records it, the output, and the
exit status; each backend closes with the time and memory ratio of its longest length to its first,
against the ratio of the lengths. The tiny checkpoint's 8K positions are extended to the longest
length by the override (for HF the same as --force-lengths; vLLM builds its RoPE table that long,
and cannot run past it): the point is the plumbing and the cost at the length, not the answer.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import arguments  # noqa: E402
from ctxgate.lengths import format_length  # noqa: E402


def tree_rss(root: psutil.Process) -> int:
    total = 0
    for p in [root, *root.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def run_one(
    backend: str,
    length: int,
    task: str,
    model: str,
    request_timeout: float,
    keep: Path | None = None,
) -> dict[str, object]:
    with contextlib.ExitStack() as stack:
        if keep is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory())
        else:
            tmp = str(keep / f"{backend}-{format_length(length)}")
            Path(tmp).mkdir(parents=True, exist_ok=True)
        report = Path(tmp) / "report.json"
        argv = [sys.executable, "-m", "pytest", "--model", model, "--backend", backend]
        # the length, its output and the chat frame
        positions = f"max_position_embeddings={length + 4096}"
        argv += [
            "--lengths",
            str(length),
            "--samples",
            "1",
            "--model-override",
            positions,
            "-k",
            task,
            "-q",
        ]
        argv += [
            "--cache-dir",
            str(Path(tmp) / "cache"),
            "--report",
            str(report),
            "-p",
            "no:cacheprovider",
        ]
        if backend != "hf":
            argv += ["--request-timeout", str(request_timeout)]
        t0 = time.time()
        proc = subprocess.Popen(
            argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        peak = [0]
        watched = psutil.Process(proc.pid)

        def watch() -> None:
            while proc.poll() is None:
                try:
                    peak[0] = max(peak[0], tree_rss(watched))
                except psutil.NoSuchProcess:
                    return
                time.sleep(0.1)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        out, _ = proc.communicate()
        wall = time.time() - t0
        watcher.join()
        case: dict[str, object] = {}
        if report.exists():
            cases = json.loads(report.read_text())["cases"]
            case = next((c for c in cases if c.get("task") == task), {})
        predictions = Path(str(report).removesuffix(".json") + ".predictions.jsonl")
        output = ""
        if predictions.exists():
            rows = [
                json.loads(line) for line in predictions.read_text().splitlines() if line.strip()
            ]
            output = str(rows[0].get("prediction", "")) if rows else ""
    return {
        "backend": backend,
        "length": length,
        "wall_s": wall,
        "peak_mb": peak[0] / 2**20,
        "prompt_tokens": case.get("input_tokens_max") or case.get("fill_min"),
        "verdict": case.get("verdict"),
        "output": output[:40],
        "exit": proc.returncode,
        "tail": "" if case.get("score") is not None else out[-1500:],
    }


def parser() -> arguments.Parser:
    ap = arguments.Parser(
        __file__, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--lengths", type=arguments.lengths, default="32k,256k")
    ap.add_argument(
        "--backends", type=arguments.words("hf", "vllm", what="backend"), default="hf,vllm"
    )
    ap.add_argument("--task", type=arguments.task, default="niah_single_1")
    # the suite runs in the checkout: a relative --model is the checkout's
    ap.add_argument(
        "--model", type=arguments.checkpoint_in(ROOT), default="fixtures/tiny-llama-niah"
    )
    ap.add_argument(
        "--request-timeout",
        type=arguments.seconds,
        default=3600.0,
        help="seconds per request up to 128K tokens (scaled beyond): vLLM on 2 CPU cores takes "
        "about 45 minutes "
        "for a 256K prefill of the tiny checkpoint",
    )
    ap.add_argument(
        "--keep",
        type=arguments.out_folder,
        default=None,
        help="keep each run's folder (report, cache, the vLLM server's log) under this folder",
    )
    return ap


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    lengths = args.lengths
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    for backend in args.backends:
        rows = []
        for length in lengths:
            row = run_one(backend, length, args.task, args.model, args.request_timeout, args.keep)
            rows.append(row)
            print(
                f"{backend:5} {format_length(length):>5}: {row['wall_s']:7.1f} s, peak "
                f"{row['peak_mb']:7.0f} MB "
                f"(process tree), prompt {row['prompt_tokens']} tokens, {row['verdict']}, output "
                f"{row['output']!r}, exit {row['exit']}",
                flush=True,
            )
            if row["tail"]:  # the case has no score: what the run said
                print(row["tail"])
        first, last = rows[0], rows[-1]
        if len(rows) > 1:
            ends = [format_length(r["length"]) for r in (last, first)]  # type: ignore[arg-type]
            print(
                f"{backend:5} {'/'.join(ends)}: "
                f"{last['length'] / first['length']:.0f}x the length, "  # type: ignore[operator]
                f"{last['wall_s'] / first['wall_s']:.2f}x the time, "  # type: ignore[operator]
                f"{last['peak_mb'] / first['peak_mb']:.2f}x the peak "
                "memory",  # type: ignore[operator]
                flush=True,
            )


if __name__ == "__main__":
    main()
