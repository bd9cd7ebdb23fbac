"""The effective length by search against the full grid, on the published RULER curves.

For every model of the project's published table with a RULER average per length
(ctxgate/ext/published/published.toml: RULER's Tables 3 and 12), each run draws the full grid: 500
samples a task at each length, each sample a Bernoulli draw at the model's published score there,
per task where the paper's Tables 13-16 give one (the 8 NIAH tasks, vt, cwe and fwe, qa_1 and qa_2),
else at its average. The full grid's effective length is the paper's rule on those means: the
longest length whose average is above the table's bar with every shorter one. The search (``search``
here, the rule of ctxgate/ext/search/rounds.py) runs the lengths shortest first on the same draws,
each length in rounds of one sample a task until its sequential test is certain (or the 500 run out,
judged then as the grid is), and stops at the first failing length. Prompt tokens weigh each sample
by its length, as a GPU's prefill does.

    python bench/length_search.py [--runs 200] [--alpha 0.05] [--min-samples 10] [--seed 0]

Prints a line per model, then ``length search: M models x R runs; same effective length as the full
grid in A%; prompt tokens G x the full grid's``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import arguments  # noqa: E402
from ctxgate.ext.published.scores import Published, all_published  # noqa: E402
from ctxgate.ext.search.records import LengthVerdict  # noqa: E402
from ctxgate.ext.search.sequential import StopRule, judge_length  # noqa: E402
from ctxgate.lengths import format_length  # noqa: E402

SAMPLES = 500
# RULER's 13 tasks by the paper's per-category tables
SPLIT = {"ruler_niah": 8, "ruler_vt": 1, "ruler_aggregation": 2, "ruler_qa": 2}


def search(
    lengths: Iterable[int],
    rounds_at: Callable[[int], Iterable[Sequence[float]]],
    bar: float,
    rule: StopRule,
) -> tuple[int, list[LengthVerdict]]:
    """The effective length (0: the shortest fails) and each length run, shortest first, up to
    the first that fails: the rule ``--search-effective-length --sequential`` applies to RULER's
    average (``run.rounds``), whose batching does not change a verdict, without floors or a
    required length."""
    ran: list[LengthVerdict] = []
    for length in sorted(lengths):
        ran.append(judge_length(length, rounds_at(length), bar, rule))
        if not ran[-1].passed:
            break
    passing = [v.length for v in ran if v.passed]
    return (passing[-1] if passing else 0), ran


def curves() -> list[tuple[Published, np.ndarray, float]]:
    """Each model's per-task scores, lengths x 13 (fractions), and its table's bar."""
    rows = all_published()
    found = []
    for avg in (p for p in rows if p.measure == "ruler" and p.effective_bar):
        parts = {
            p.measure: p.scores
            for p in rows
            if p.model == avg.model and p.measure in SPLIT and p.source.key != avg.source.key
        }
        lengths = sorted(avg.scores)
        per_task = [
            parts[m][L] if m in parts and L in parts[m] else avg.scores[L]
            for L in lengths
            for m, count in SPLIT.items()
            for _ in range(count)
        ]
        grid = np.array(per_task, dtype=float).reshape(len(lengths), 13) / 100
        bar = float(re.match(r"[\d.]+", avg.effective_bar or "").group())  # type: ignore[union-attr]
        found.append((avg, grid, bar))
    return found


def full_grid_length(lengths: list[int], means: np.ndarray, bar: float) -> int:
    effective = 0
    for L, m in zip(lengths, means):
        if not m * 100 > bar:
            break
        effective = L
    return effective


def parser() -> arguments.Parser:
    ap = arguments.Parser(__file__, description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=arguments.whole(1, example=200), default=200)
    ap.add_argument("--alpha", type=arguments.number(0, 1, example=0.05), default=0.05)
    # a sequential test's first samples: at most the grid's SAMPLES a task at a length
    ap.add_argument("--min-samples", type=arguments.whole(1, SAMPLES, example=10), default=10)
    ap.add_argument("--seed", type=arguments.whole(0, example=0), default=0)  # numpy's: from 0
    return ap


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    rng = np.random.default_rng(args.seed)
    rule = StopRule(args.alpha, args.min_samples, SAMPLES)
    models = curves()
    same = runs = 0
    grid_tokens = search_tokens = 0.0
    for avg, grid, bar in models:
        lengths = sorted(avg.scores)
        agree, spent = 0, 0.0
        full = 13 * SAMPLES * sum(lengths)
        for _ in range(args.runs):
            draws = rng.random((len(lengths), 13, SAMPLES)) < grid[:, :, None]  # one grid's samples
            expected = full_grid_length(lengths, draws.mean(axis=(1, 2)), bar)
            at = {L: draws[i].T.astype(float) for i, L in enumerate(lengths)}  # rounds x tasks
            found, ran = search(lengths, lambda L, at=at: iter(at[L]), bar / 100, rule)
            agree += found == expected
            spent += sum(13 * v.rounds * v.length for v in ran)
        same, runs = same + agree, runs + args.runs
        grid_tokens += full * args.runs
        search_tokens += spent
        print(
            f"{avg.label:<28} {avg.source.table:<9} bar {bar:5.1f}  published "
            f"{avg.effective or '?':>6}  same {100 * agree / args.runs:5.1f}%  prompt tokens "
            f"{spent / (full * args.runs):.3f} x  (lengths {format_length(lengths[0])}-"
            f"{format_length(lengths[-1])})"
        )
    print(
        f"length search: {len(models)} models x {args.runs} runs; same effective length as the "
        f"full grid in {100 * same / runs:.1f}%; prompt tokens {search_tokens / grid_tokens:.2f} x "
        "the full grid's"
    )


if __name__ == "__main__":
    main()
