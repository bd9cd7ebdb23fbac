"""Times building the generated GraphWalks tasks' samples with a tokenizer, per task and length.

``python bench/build_graphwalks.py --tokenizer fixtures/tiny-llama-niah --lengths 128k --samples
100`` builds each sample as a run does (the spine's ``build_sample``, the whole text's ids) and
prints the seconds per task and length, and the graph each built last."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import arguments  # noqa: E402

TASKS = ("ctx_graphwalks_bfs", "ctx_graphwalks_parents")


def parser() -> arguments.Parser:
    return arguments.builds(__file__, __doc__)


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    from transformers import AutoTokenizer

    from ctxgate.api import BuildContext, HFTokenizer, PieceEncoder, get_task
    from ctxgate.tasks.build import build_sample

    enc = PieceEncoder(HFTokenizer(AutoTokenizer.from_pretrained(args.tokenizer)))
    ctx = BuildContext(enc, chat=False, seed=args.seed)
    for length in args.lengths:
        for name in TASKS:
            spec = get_task(name)
            start = time.perf_counter()
            for index in range(args.samples):
                sample = build_sample(spec, ctx, length, index, args.seed)
            took = time.perf_counter() - start
            print(
                f"{name} at {length}: {args.samples} samples in {took:.1f} s "
                f"({took / args.samples * 1000:.0f} ms each); last: {dict(sample.meta)}"
            )


if __name__ == "__main__":
    main()
