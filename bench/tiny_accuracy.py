"""niah_single_1 accuracy of a checkpoint at several lengths (how the shipped tiny model was
measured).

python bench/tiny_accuracy.py fixtures/tiny-llama-niah --lengths 256,384,512,2048 --samples 40
"""

from __future__ import annotations

import argparse
import time

from ctxgate.backends.checkpoint import resolve_model
from ctxgate.backends.formats import locate
from ctxgate.backends.hf import HFBackend, HFSettings
from ctxgate.lengths import parse_lengths
from ctxgate.run.case import Session, run_case
from ctxgate.tasks import BuildContext, get_task
from ctxgate.tokens.codec import PieceEncoder


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--lengths", default="256,512,1k,2k")
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--task", default="niah_single_1")
    args = ap.parse_args()
    backend = HFBackend(locate(resolve_model(args.model)), HFSettings(threads=2))
    ctx = BuildContext(PieceEncoder(backend.tokenizer), chat=False)
    for length in parse_lengths(args.lengths):
        t0 = time.perf_counter()
        r = run_case(get_task(args.task), Session(backend, ctx), length, args.samples)
        print(
            f"{args.task} @ {length}: {r.score:.1f} (95% CI {r.ci[0]}-{r.ci[1]}, n={r.n}) "
            f"in {time.perf_counter() - t0:.1f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
