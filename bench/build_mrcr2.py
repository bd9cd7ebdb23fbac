"""Times building the MRCR v2 tasks' samples with a tokenizer, per task and length, and scores a
random guesser on them (one of the asked request's writings, drawn uniformly, with the string).

``python bench/build_mrcr2.py --tokenizer fixtures/tiny-llama-niah --lengths 128k --samples 100``
builds each sample as a run does (the prompt alone fills the length, the whole text's ids) from
the texts under ``--data-dir`` (default: ctxgate's stand-in set) and prints the seconds per task
and length, the guesser's mean score beside the README's noise rate per needle count, and the
process's peak memory."""

from __future__ import annotations

import random
import resource
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import arguments  # noqa: E402

NEEDLES = (2, 4, 8)


def parser() -> arguments.Parser:
    ap = arguments.builds(__file__, __doc__)
    ap.add_argument("--data-dir", default=None, help="the texts' --data-dir (default: the sample)")
    return ap


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    from transformers import AutoTokenizer

    from ctxgate.api import BuildContext, HFTokenizer, Job, PieceEncoder, get_task
    from ctxgate.ext.mrcr2.corpus import sample_dir
    from ctxgate.ext.mrcr2.noise import noise_rate
    from ctxgate.ext.mrcr2.tasks import PUBLISHED_NOISE, case_bucket

    enc = PieceEncoder(HFTokenizer(AutoTokenizer.from_pretrained(args.tokenizer)))
    ctx = BuildContext(enc, chat=False, seed=args.seed, data_dir=args.data_dir or sample_dir())
    for length in args.lengths:
        for n in NEEDLES:
            spec = get_task(f"mrcr2_{n}needle")
            start = time.perf_counter()
            for index in range(args.samples):
                job = Job(spec.name, length, index, spec.held_in_length, random.Random(index))
                sample = spec.build(ctx, job)
                ids = enc.whole(sample.text, sample.bos)
            took = time.perf_counter() - start
            gen, bucket, _ = case_bucket(n, ctx, job)
            mean, error = noise_rate(gen, bucket.asked[: args.samples])
            print(
                f"{spec.name} at {length}: {args.samples} samples in {took:.1f} s "
                f"({took / args.samples * 1000:.0f} ms each), {len(ids):,} tokens last; random "
                f"guesser {mean:.1f} +- {2 * error:.1f} (README's noise rate: "
                f"{PUBLISHED_NOISE[n]:.0f})"
            )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory: {peak:.0f} MB")


if __name__ == "__main__":
    main()
