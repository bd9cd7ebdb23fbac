"""Hashes of every sample a task builds, per task and length: proof that a change to the builders
kept the data.

    python scripts/sample_hashes.py [--lengths 4k,8k,16k,32k,64k,128k] [--samples 100] [--suite
    ruler] PYTHONPATH=/path/to/other/checkout python scripts/sample_hashes.py ...   # the same lines
    from another version

One line per task and length: the samples built, the smallest fill ((input + generation budget) /
length) and ``data_sha256``, the hash the report gives a case (over each sample's task, length,
index, answers, answer prefix and input ids). Prompts are built as the suite builds them by default:
the shipped tokenizer, seed 42, each task's chat-template policy, the fixture QA files. The last
line hashes all lines, so two versions compare in one value. It uses only the builders' public entry
points, which older versions have too.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SQUAD = ROOT / "fixtures/data/squad_v2_validation_tiny.jsonl"
HOTPOT = ROOT / "fixtures/data/hotpotqa_distractor_validation_tiny.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--tokenizer", default=str(ROOT / "fixtures/tiny-llama-niah"))
    ap.add_argument("--lengths", default="4k,8k,16k,32k,64k,128k")
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--suite", default="ruler", help="ruler, helmet, or all")
    ap.add_argument(
        "--tasks", default="", help="comma-separated task names (default: the whole suite)"
    )
    ap.add_argument(
        "--data-dir",
        default=None,
        help="HELMET's data folder (default: none; HELMET tasks then skip)",
    )
    args = ap.parse_args()

    from transformers import AutoTokenizer

    import ctxgate
    from ctxgate.lengths import format_length, parse_lengths
    from ctxgate.run.samples import build_samples, data_hash, samples_to_run
    from ctxgate.tasks import BuildContext, all_tasks
    from ctxgate.tokens.codec import PieceEncoder
    from ctxgate.tokens.tokenizers import HFTokenizer

    print(f"# ctxgate from {Path(ctxgate.__file__).resolve().parent.parent}", file=sys.stderr)
    enc = PieceEncoder(HFTokenizer(AutoTokenizer.from_pretrained(args.tokenizer)))
    ctx = BuildContext(
        encoder=enc,
        chat=enc.has_chat_template,
        chat_by_task=enc.has_chat_template,
        squad_source=str(SQUAD),
        hotpotqa_source=str(HOTPOT),
        data_dir=args.data_dir,
    )
    wanted = set(filter(None, args.tasks.split(",")))
    specs = [
        s
        for s in all_tasks(None if args.suite == "all" else args.suite)
        if not wanted or s.name in wanted
    ]
    lines = []
    for length in parse_lengths(args.lengths):
        for spec in specs:
            try:
                n = samples_to_run(spec, ctx, length, args.samples)
                samples = build_samples(spec, ctx, length, n, 42)
            # a task that cannot be built is a line of its own
            except Exception as exc:  # noqa: BLE001
                said = f"{type(exc).__name__}: {str(exc)[:80]}"
                line = f"{spec.name:<16} {format_length(length):>5} refused {said}"
            else:
                gen = spec.tokens_to_generate
                fill = min((len(s.input_ids) + gen) / length for s in samples)
                digest = data_hash([s.digest() for s in samples])
                line = f"{spec.name:<16} {format_length(length):>5} n={len(samples):<4} "
                line += f"fill={fill:.4f} {digest}"
            lines.append(line)
            print(line, flush=True)
    print(f"all: {hashlib.sha256(chr(10).join(lines).encode()).hexdigest()}")


if __name__ == "__main__":
    main()
