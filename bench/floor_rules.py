"""How often a floor fails a case whose true score is at or above it, per rule, computed exactly
(binomial sums over every outcome, no simulation), for 0/1-scored cases.

python bench/floor_rules.py [--confidence 0.95]

``rule = "score"`` fails a case whenever the observed mean is below the floor: at a true score equal
to the floor that is about half the time, and a few points above it still often, so a run of ~65
gated cases almost always has a red case. ``rule = "upper"`` fails only when the whole interval lies
below the floor, which at a true score equal to the floor happens at most about (1 - confidence) / 2
of the time, and above it less. docs/gates.md quotes these figures.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import arguments  # noqa: E402
from ctxgate.stats.intervals import interval  # noqa: E402


def fail_rate(n: int, true: float, floor: float, rule: str, confidence: float) -> float:
    """P(the case fails) for n samples each right with probability ``true`` (fractions; floor in
    percent)."""
    total = 0.0
    for k in range(n + 1):
        score = 100 * k / n
        judged = interval([1.0] * k + [0.0] * (n - k), confidence)[1] if rule == "upper" else score
        if judged < floor:
            total += math.comb(n, k) * true**k * (1 - true) ** (n - k)
    return total


def parser() -> arguments.Parser:
    ap = arguments.Parser(__file__, description=__doc__.splitlines()[0])
    ap.add_argument("--confidence", type=arguments.number(0, 1, example=0.95), default=0.95)
    return ap


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    print(
        f"{'n':>4} {'floor':>5} {'true':>5} {'score':>7} {'upper':>7}   (share of runs in which "
        "the case fails)"
    )
    for n in (100, 500):
        for floor, trues in ((90, (0.90, 0.92, 0.95)), (50, (0.50, 0.55, 0.60))):
            for true in trues:
                rates = [
                    fail_rate(n, true, floor, rule, args.confidence) for rule in ("score", "upper")
                ]
                print(f"{n:>4} {floor:>5} {true * 100:>5.0f} {rates[0]:>7.1%} {rates[1]:>7.1%}")
    cases = 65
    at = fail_rate(100, 0.92, 90, "score", args.confidence)
    print(
        f"\n{cases} cases each 2 points above a floor of 90 (n=100): rule 'score' has at least "
        "one red case in "
        f"{1 - (1 - at) ** cases:.0%} of runs; rule 'upper' in "
        f"{1 - (1 - fail_rate(100, 0.92, 90, 'upper', args.confidence)) ** cases:.0%}"
    )


if __name__ == "__main__":
    main()
