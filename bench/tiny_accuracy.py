"""niah_single_1 accuracy of a checkpoint at several lengths (how the shipped tiny model was
measured).

python bench/tiny_accuracy.py fixtures/tiny-llama-niah --lengths 256,384,512,2048 --samples 40
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import arguments  # noqa: E402
from ctxgate.backends.checkpoint import resolve_model  # noqa: E402
from ctxgate.backends.formats import locate  # noqa: E402
from ctxgate.backends.hf import HFBackend, HFSettings  # noqa: E402
from ctxgate.run.case import Session, run_case  # noqa: E402
from ctxgate.tasks import BuildContext, get_task  # noqa: E402
from ctxgate.tokens.codec import PieceEncoder  # noqa: E402


def parser() -> arguments.Parser:
    ap = arguments.Parser(__file__)
    ap.add_argument("model", type=arguments.checkpoint)
    ap.add_argument("--lengths", type=arguments.lengths, default="256,512,1k,2k")
    ap.add_argument("--samples", type=arguments.whole(1, example=40), default=40)
    ap.add_argument("--task", type=arguments.task, default="niah_single_1")
    return ap


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    backend = HFBackend(locate(resolve_model(args.model)), HFSettings(threads=2))
    ctx = BuildContext(PieceEncoder(backend.tokenizer), chat=False)
    for length in args.lengths:
        t0 = time.perf_counter()
        r = run_case(get_task(args.task), Session(backend, ctx), length, args.samples)
        print(
            f"{args.task} @ {length}: {r.score:.1f} (95% CI {r.ci[0]}-{r.ci[1]}, n={r.n}) "
            f"in {time.perf_counter() - t0:.1f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
