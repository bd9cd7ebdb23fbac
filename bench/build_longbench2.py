"""Times building LongBench v2 samples the old way (each context tokenized whole, then cut in its
middle, as pred.py does) and the new (only the context's two ends tokenized), in one run.

``python bench/build_longbench2.py --samples 100 --length 128k`` writes ``--records`` made-up
questions in the hub dataset's schema (the fixture maker's records, each context ``--words`` random
words) into a temporary folder, builds ``--samples`` samples at ``--length`` each way (the spine's
``build_sample``), checks the two ways' prompts are the same, and prints both times and their ratio.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import arguments  # noqa: E402

WORDS = ("alpha", "beta", "gamma", "delta", "river", "stone", "market", "banner", "town", "winter")


def parser() -> arguments.Parser:
    ap = arguments.builds(__file__, __doc__, one_length=True)
    ap.add_argument("--records", type=arguments.whole(1, example=100), default=100)
    ap.add_argument("--words", type=arguments.whole(1, example=250000), default=250_000)
    return ap


def write_records(root: Path, count: int, words: int, seed: int) -> Path:
    """``count`` questions of the fixture maker's, each with a context of ``words`` random words."""
    from fixtures.make_longbench2_fixture import records

    rng, base = random.Random(seed), records()
    out = []
    for i in range(count):
        record = dict(base[i % len(base)], _id=f"bench-{i}")
        record["context"] = " ".join(rng.choices(WORDS, k=words))
        out.append(record)
    target = root / "longbench2" / "data.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(out), "utf-8")
    return target


def timed(build: Callable[[int], str], samples: int) -> tuple[float, float, list[str]]:
    """Wall and CPU seconds (the CPU's tell on a shared machine) and the prompts."""
    start, cpu = time.perf_counter(), time.process_time()
    texts = [build(i) for i in range(samples)]
    return time.perf_counter() - start, time.process_time() - cpu, texts


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    from transformers import AutoTokenizer

    from ctxgate.api import BuildContext, HFTokenizer, PieceEncoder, get_task
    from ctxgate.ext.longbench2 import cutting, tasks
    from ctxgate.ext.longbench2.records import load
    from ctxgate.tasks.build import build_sample

    enc = PieceEncoder(HFTokenizer(AutoTokenizer.from_pretrained(args.tokenizer)))
    spec = get_task(tasks.TASK)
    with tempfile.TemporaryDirectory(prefix="lb2-bench-") as root:
        start = time.perf_counter()
        write_records(Path(root), args.records, args.words, args.seed)
        load(root)  # read once (memoized): the timings are the builds'
        print(f"{args.records} records of {args.words:,} words written and read in "
              f"{time.perf_counter() - start:.1f} s")  # fmt: skip
        ctx = BuildContext(enc, chat=False, seed=args.seed, data_dir=root)

        def build(index: int) -> str:
            return build_sample(spec, ctx, args.length, index, args.seed).text

        build(0)  # the tokenizer's first-call checks, outside both timings
        new, new_cpu, new_texts = timed(build, args.samples)

        def whole_text(
            enc: PieceEncoder, text: str, budget: int, scale: cutting.Scale = cutting.WHOLE
        ) -> str:
            return cutting.truncated(enc, text, budget, cutting.WHOLE)

        tasks.truncated = whole_text  # the builder's cut, as it was before the ends
        try:
            old, old_cpu, old_texts = timed(build, args.samples)
        finally:
            tasks.truncated = cutting.truncated
    same = old_texts == new_texts
    print(
        f"{args.samples} samples at {args.length}: whole text {old:.1f} s ({old_cpu:.1f} s CPU), "
        f"ends {new:.1f} s ({new_cpu:.1f} s CPU): {old / new:.1f}x faster "
        f"({old_cpu / new_cpu:.1f}x in CPU); prompts identical: {same}"
    )
    if not same:
        raise SystemExit("the two ways' prompts differ")


if __name__ == "__main__":
    main()
