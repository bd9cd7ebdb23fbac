"""Times building RULERv2's sets with every draw's whole text tokenized (the baseline: the
reference's way) and with each draw counted from its parts (ctxgate/ext/ruler2/counting.py), in
the same run, and checks that both give the same set.

    python bench/ruler2_build.py --lengths 128k --tasks mk_niah_basic,mk_niah_easy,qa_basic
    python bench/ruler2_build.py --smoke        # one task of each kind at 4K, 10 samples (tests)

For each task and length it builds the set as a case does (seed 42, ``--samples`` samples, the
question's length the length itself: no chat template), from the data under ``--data-dir``
(default: the samples shipped with ctxgate, 30 MMLU and 20 HotpotQA test records, so at most that
many samples; the data are read before either build), first from whole texts, then from parts,
and prints both times, their ratio, and whether the two sets' texts, answers and counts are the
same. The counts from parts are kept for the tokenizer, as a run's worker keeps them: the first
task of a kind pays for its words once. A tokenizer whose pipeline the parts cannot be counted for
(counting.py) builds both ways from whole texts. Peak memory is the process's, both builds'."""

from __future__ import annotations

import functools
import resource
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import arguments  # noqa: E402

KINDS = ("mk_niah_basic", "mk_niah_easy", "qa_basic")  # one of each builder
SMOKE = (KINDS, (4096,), 10)
TASKS_FIX = "write a comma list such as mk_niah_basic,qa_basic (RULERv2's twelve tasks)"


def ruler2_tasks(text: str) -> tuple[str, ...]:
    """A comma list of RULERv2's tasks, in the order written."""
    from ctxgate.ext.ruler2.tasks import MAKERS

    return arguments.names(text, MAKERS, "RULERv2 task", TASKS_FIX)


def parser() -> arguments.Parser:
    ap = arguments.builds(__file__, __doc__)
    ap.add_argument(
        "--tasks",
        type=ruler2_tasks,
        default=None,
        help="a comma list of RULERv2's tasks (default: all twelve)",
    )
    ap.add_argument("--data-dir", default=None, help="the MMLU and HotpotQA files' --data-dir")
    ap.add_argument("--smoke", action="store_true", help="one task of each kind at 4K, 10 samples")
    return ap


def timed(make: Callable[[], Iterable[object]]) -> tuple[Sequence[object] | str, float]:
    """What ``make`` built (or why the length is too short for it) and its seconds."""
    from ctxgate.ext.ruler2.fitting import TooShort

    start = time.perf_counter()
    made: Sequence[object] | str
    try:
        made = list(make())
    except TooShort:
        made = "too short"
    return made, time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from transformers import AutoTokenizer

    from ctxgate.api import BuildContext, HFTokenizer, PieceEncoder
    from ctxgate.ext.ruler2.counting import tally_for
    from ctxgate.ext.ruler2.files import load_hotpotqa, load_mmlu
    from ctxgate.ext.ruler2.tasks import MAKERS

    tasks, lengths, samples = SMOKE if args.smoke else (args.tasks, args.lengths, args.samples)
    enc = PieceEncoder(HFTokenizer(AutoTokenizer.from_pretrained(args.tokenizer)))
    ctx = BuildContext(enc, chat=False, seed=args.seed, data_dir=args.data_dir)
    load_mmlu(args.data_dir), load_hotpotqa(args.data_dir)  # read once, before either build
    enc.raw.encode("warm " * 64)  # the tokenizer's first call checks its fast path
    way = "from parts" if tally_for(enc.raw) is not None else "from whole texts (not countable)"
    print(f"tokenizer {args.tokenizer}: the second build counts {way}")
    totals = [0.0, 0.0]
    same_all = True
    for length in lengths:
        for task in tasks or tuple(MAKERS):
            build = functools.partial(MAKERS[task], ctx, length, samples)
            whole, a = timed(functools.partial(build, fast=False))
            parts, b = timed(functools.partial(build, fast=True))
            same = whole == parts
            same_all &= same
            totals[0] += a
            totals[1] += b
            size = whole if isinstance(whole, str) else f"{len(whole)} samples"
            print(
                f"{task} at {length}: whole texts {a:.2f} s, from parts {b:.2f} s, "
                f"{a / b:.1f}x; {size}, {'the same' if same else 'DIFFERENT'}"
            )
    print(
        f"all: whole texts {totals[0]:.1f} s, from parts {totals[1]:.1f} s, "
        f"{totals[0] / totals[1]:.1f}x; sets {'the same' if same_all else 'DIFFERENT'}"
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory: {peak:.0f} MB")
    return 0 if same_all else 1


if __name__ == "__main__":
    sys.exit(main())
