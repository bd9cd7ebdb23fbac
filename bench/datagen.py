"""Data-generation speed: ctxgate's token-level builders against a naive re-tokenizing build, same run.

    python bench/datagen.py [--tokenizer fixtures/tiny-llama-niah] [--samples 100] [--lengths 32k,128k]

For every task and length it prints the seconds to build the samples (a fresh tokenizer cache per length, so the
one-off haystack tokenization is included). Then two ratios, each against a baseline timed in the same run:
- niah_multikey_2 (fresh random text every sample) tokenized through the transformers wrapper alone against the
  verified encode_batch_fast path;
- a naive build, what the RULER reference does per sample: search the haystack size by building the full prompt
  text and tokenizing all of it at each probe. It is timed on a few samples of niah_single_2 and scaled to the
  sample count; the ratio compares it with ctxgate on the same task.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from transformers import AutoTokenizer

from ctxgate.data.haystacks import load_essay
from ctxgate.lengths import format_length, parse_lengths
from ctxgate.run.case import build_samples, samples_to_run
from ctxgate.seeding import sample_rng
from ctxgate.sources.errors import DataUnavailable
from ctxgate.tasks import BuildContext, all_tasks, get_task, niah
from ctxgate.tasks.base import TaskTooShort
from ctxgate.textcodec import HFTokenizer, PieceEncoder

SQUAD = "fixtures/data/squad_v2_validation_tiny.jsonl"
HOTPOT = "fixtures/data/hotpotqa_distractor_validation_tiny.jsonl"


def naive_niah_single_2(tok, length: int, index: int, seed: int) -> int:
    """Reference-style: binary search over the essay size, re-tokenizing the whole prompt at every probe."""
    rng = sample_rng("naive", length, index, seed)
    sentences = load_essay(None).sentences
    key, value = niah.make_key(rng, "words"), niah.make_value(rng, "numbers")
    needle = niah.NEEDLE.format(type_needle_v="numbers", key=key, value=value)
    head = niah.singular(niah.TEMPLATE_HEAD).format(type_needle_v="number")
    tail = niah.singular(niah.TEMPLATE_TAIL).format(type_needle_v="number", query=key)
    prefix = niah.singular(niah.ANSWER_PREFIX).format(type_needle_v="number", query=key)

    def prompt(n: int) -> str:
        body = [sentences[i % len(sentences)] for i in range(n)]
        body.insert(int(n * rng.choice(niah.DEPTHS) / 100), needle)
        return head + " ".join(body) + tail + prefix

    lo, hi = 1, length
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(tok(prompt(mid), add_special_tokens=False)["input_ids"]) + 128 <= length:
            lo = mid
        else:
            hi = mid - 1
    return len(tok(prompt(lo), add_special_tokens=False)["input_ids"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizer", default="fixtures/tiny-llama-niah")
    ap.add_argument(
        "--data-dir",
        default=None,
        help="HELMET data folder (default: a copy of the fixtures with long NarrativeQA / Multi-LexSum "
        "documents, written to a temporary folder)",
    )
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--lengths", default="32k,128k")
    ap.add_argument("--naive-samples", type=int, default=3)
    ap.add_argument("--wrapper-samples", type=int, default=10)
    args = ap.parse_args()
    data_dir = args.data_dir
    if data_dir is None:  # HELMET's length selection needs long documents, which the committed fixtures lack
        import sys
        import tempfile

        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from fixtures.helmet_released import long_documents

        data_dir = str(Path(tempfile.mkdtemp()) / "helmet_data")
        long_documents(Path(data_dir))
    tok = AutoTokenizer.from_pretrained(args.tokenizer)
    print(f"tokenizer {args.tokenizer} ({type(tok).__name__}, vocab {len(tok)}), {args.samples} samples per case")
    for length in parse_lengths(args.lengths):
        enc = PieceEncoder(HFTokenizer(tok))  # fresh cache: the one-off haystack tokenization is counted
        ctx = BuildContext(encoder=enc, chat=False, squad_source=SQUAD, hotpotqa_source=HOTPOT, data_dir=data_dir)
        total, per_task = 0.0, {}
        for spec in all_tasks():
            t0 = time.perf_counter()
            try:  # as the suite builds a case: never more samples than the data holds
                build_samples(spec, ctx, length, samples_to_run(spec, ctx, length, args.samples), 42)
            except (DataUnavailable, TaskTooShort) as exc:
                print(f"  {format_length(length):>5} {spec.name:<16} skipped: {str(exc)[:90]}", flush=True)
                continue
            per_task[spec.name] = time.perf_counter() - t0
            total += per_task[spec.name]
            print(f"  {format_length(length):>5} {spec.name:<16} {per_task[spec.name]:7.2f} s", flush=True)
        # The same fresh-content task through the transformers wrapper only (no encode_batch_fast path).
        slow_ctx = BuildContext(encoder=PieceEncoder(HFTokenizer(tok, use_backend=False)), chat=False)
        timings = []
        for c in (slow_ctx, ctx):
            build_samples(get_task("niah_multikey_2"), c, length, 1, 7)  # haystack pieces cached first
            t0 = time.perf_counter()
            build_samples(get_task("niah_multikey_2"), c, length, args.wrapper_samples, 42)
            timings.append(time.perf_counter() - t0)
        print(
            f"{format_length(length)}: niah_multikey_2 x {args.wrapper_samples}: wrapper-only tokenization "
            f"{timings[0]:.2f} s vs encode_batch_fast {timings[1]:.2f} s -> {timings[0] / timings[1]:.1f}x faster",
            flush=True,
        )
        t0 = time.perf_counter()
        for i in range(args.naive_samples):
            naive_niah_single_2(tok, length, i, 42)
        naive = (time.perf_counter() - t0) / args.naive_samples * args.samples
        ratio = naive / per_task["niah_single_2"]
        print(
            f"{format_length(length)}: all {len(per_task)} tasks x {args.samples} samples in {total:.1f} s; "
            f"niah_single_2: ctxgate {per_task['niah_single_2']:.2f} s vs naive re-tokenizing "
            f"{naive:.1f} s (from {args.naive_samples} samples) -> {ratio:.0f}x faster",
            flush=True,
        )


if __name__ == "__main__":
    main()
