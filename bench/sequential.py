"""Sequential gating against fixed n, by simulation: cases with known true scores, near and far from
the floor, Bernoulli (exact-match tasks) and bounded continuous (partial-credit tasks,
Beta-distributed scores).

For each setting it runs ``--cases`` simulated cases (default 10,000) through both rules and prints,
side by side: the share of wrong verdicts (a pass when the true score is below the floor, a fail
when above), and the mean number of samples generated. Fixed n decides by the point estimate after
``--max-samples``; ``--sequential`` stops as soon as its betting test is certain at ``--alpha``
(ctxgate/ext/search/sequential.py), or falls back to the fixed-n rule on the same samples when the
budget ends undecided. The last line averages the samples over the clear cases (true score at least
10 points from the floor) against fixed n's.

    python bench/sequential.py [--cases 10000] [--floor 0.8] [--alpha 0.05] [--max-samples 100]
    python bench/sequential.py --replay [--samples 24]

``--replay`` runs real generations instead, on the shipped checkpoint and its damaged sequence
(``fixtures/checkpoint_sequence.py``): every case of the demo (each RULER and HELMET task at
256/512/1K/2K, the shipped data with HELMET's long documents, the judged tasks judged by
``fixtures/judge_server.py``) with a floor of 50 on every case (60 on msmarco_rerank, whose chance
score is 50), fixed n then ``--sequential``; the baseline gate of a damaged checkpoint against a
good one, both ways; and ``ctxgate bisect`` both ways. It prints each pair's verdicts, whether they
agree, and the samples generated.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import arguments  # noqa: E402
from ctxgate.ext.search.sequential import StopRule  # noqa: E402


def verdict(rule: StopRule, scores: list[float], floor: float) -> tuple[bool, int, bool]:
    """(passes, samples used, claimed) under --sequential: the test's claim when it made one, else
    the fixed-n rule on what was drawn."""
    v = rule.run(iter(scores), floor)
    if v.decided is not None:
        return v.decided == "above", v.n, True
    drawn = scores[: v.n]
    return sum(drawn) / len(drawn) >= floor, v.n, False


ROOT = Path(__file__).resolve().parent.parent
# floor 50 on every case but those whose chance score reaches it (a floor at or below it is
# refused): re-rank's is 50, so 60 there; CWE's and FWE's short lists under 1K, no floor
FLOORS = (
    '[[floor]]\ntask = "*"\nlength = "*"\nfloor = 50\n[[floor]]\ntask = "msmarco_rerank"\nlength '
    '= "*"\nfloor = 60\n[[floor]]\ntask = "[cf]we"\nlength = "<1k"\nfloor = 0\n'
    "[regression]\ntolerance = 5\n"
)


def suite(model: Path, out: Path, name: str, *args: str) -> dict[tuple[str, int], dict]:
    """The demo's cases in a subprocess (every task, demo lengths, the judge server); its cases by
    (task, length)."""
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        f"--model={model}",
        "--lengths",
        "256,512,1k,2k",
        "--thresholds",
        str(out / "thresholds.toml"),
        "--report",
        str(out / f"{name}.json"),
        "--no-cache",
        "--squad",
        str(ROOT / "fixtures/data/squad_v2_validation_tiny.jsonl"),
        "--hotpotqa",
        str(ROOT / "fixtures/data/hotpotqa_distractor_validation_tiny.jsonl"),
        "--data-dir",
        str(out / "helmet_data"),
        "--judge-model",
        "ctxgate-lexical-judge",
        "--judge-base-url",
        (out / "judge.url").read_text(),
        "-q",
        "-n",
        "2",
        "-p",
        "no:cacheprovider",
        *args,
    ]
    subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    report = json.loads((out / f"{name}.json").read_text())
    cases = {(c["task"], c["length"]): {**c, "generated": 0} for c in report["cases"]}
    for line in (out / f"{name}.predictions.jsonl").read_text().splitlines():
        row = json.loads(line)
        cases[(row["task"], row["length"])]["generated"] += 1
    return cases


def compare_runs(title: str, fixed: dict, seq: dict) -> None:
    same = sum(fixed[k]["verdict"] == seq[k]["verdict"] for k in fixed)
    a, b = sum(c["generated"] for c in fixed.values()), sum(c["generated"] for c in seq.values())
    judged = [c for c in seq.values() if c.get("judge")]
    early = sum(1 for c in judged if (c.get("sequential") or {}).get("decided"))
    print(
        f"{title}: verdicts equal in {same}/{len(fixed)} cases ({len(judged)} judged, {early} of "
        "them stopped "
        f"early); generations {a} fixed, {b} sequential ({b / max(a, 1):.2f}x)",
        flush=True,
    )
    for k in sorted(fixed):
        if fixed[k]["verdict"] != seq[k]["verdict"]:
            print(
                f"  differs: {k[0]}@{k[1]}: fixed {fixed[k]['verdict']} ({fixed[k]['score']}), "
                "sequential "
                f"{seq[k]['verdict']} ({seq[k]['score']}, {seq[k].get('sequential')})"
            )


def replay(samples: int) -> None:
    sys.path.insert(0, str(ROOT))
    from fixtures.checkpoint_sequence import TINY, build_sequence
    from fixtures.judge_server import start

    out = Path(tempfile.mkdtemp(prefix="ctxgate-seq-"))
    (out / "thresholds.toml").write_text(FLOORS)
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "fixtures/make_helmet_fixtures.py"),
            "--long-documents",
            str(out / "helmet_data"),
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    url, judge = start()
    (out / "judge.url").write_text(url)
    try:
        _replay(out, samples, TINY, build_sequence)
    finally:
        judge.shutdown()


def _replay(out: Path, samples: int, tiny: Path, build_sequence: Any) -> None:
    print(
        "replay on real generations: the demo's cases (every task at 256/512/1K/2K), --samples "
        f"{samples}, "
        "floor 50, tolerance 5"
    )
    n = ("--samples", str(samples))
    compare_runs(
        "floors, shipped checkpoint",
        suite(tiny, out, "fixed", *n),
        suite(tiny, out, "seq", *n, "--sequential"),
    )
    run = out / "run"
    build_sequence(run, count=8, break_at=5)
    suite(run / "checkpoint-100", out, "base", *n)
    base = ("--baseline", str(out / "base.json"))
    compare_runs(
        "baseline gate, checkpoint-600 (damaged) vs checkpoint-100",
        suite(run / "checkpoint-600", out, "bfixed", *n, *base),
        suite(run / "checkpoint-600", out, "bseq", *n, *base, "--sequential"),
    )
    bisect = [
        sys.executable,
        "-m",
        "ctxgate.cli",
        "bisect",
        str(run),
        "-k",
        "niah_single_1",
        "--lengths",
        "256",
        "--samples",
        str(samples),
        "--no-cache",
        "--tolerance",
        "5",
    ]
    for mode in ((), ("--sequential",)):
        path = out / f"bisect{len(mode)}.json"
        subprocess.run(
            [*bisect, *mode, "--json", str(path)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        result = json.loads(path.read_text())
        print(
            f"bisect {'--sequential' if mode else 'fixed n'}: first bad "
            f"{Path(result['first_bad']).name} "
            f"(index {result['first_bad_index']}), {result['evaluations']} evaluations, "
            f"{sum(p['samples'] for p in result['path'])} samples",
            flush=True,
        )


def parser() -> arguments.Parser:
    ap = arguments.Parser(
        __file__, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--cases", type=arguments.whole(1, example=10_000), default=10_000)
    floor = arguments.number(0, 1, example=0.8, closed=True)  # a fraction: 80% is 0.8
    ap.add_argument("--floor", type=floor, default=0.8)
    ap.add_argument("--alpha", type=arguments.number(0, 1, example=0.05), default=0.05)
    # the rule's min_samples is 10: its fixed-n budget no fewer
    ap.add_argument("--max-samples", type=arguments.whole(10, example=100), default=100)
    ap.add_argument("--seed", type=arguments.integer, default=1)
    ap.add_argument(
        "--replay", action="store_true", help="real generations on the shipped checkpoint sequence"
    )
    ap.add_argument(
        "--samples",
        type=arguments.whole(1, example=24),
        default=24,
        help="--replay: samples per case",
    )
    return ap


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    if args.replay:
        replay(args.samples)
        return
    rule = StopRule(alpha=args.alpha, min_samples=10, max_samples=args.max_samples)
    rng = random.Random(args.seed)
    n, floor = args.max_samples, args.floor
    truths = (0.0, 0.3, 0.5, 0.7, 0.75, 0.78, 0.8, 0.82, 0.85, 0.9, 0.95, 1.0)
    print(
        f"floor {floor:.0%}, alpha {args.alpha}, fixed n = {n}, {args.cases:,} cases per row; "
        "wrong = a pass "
        "below the floor or a fail above it (on the floor: a pass is not wrong). 'claims wrong': "
        "the sequential "
        "test's own early claims that were wrong (the rate it guarantees <= alpha); 'verdict "
        "wrong': its verdicts, "
        "the undecided ones by the fixed-n rule on the same samples"
    )
    print(
        f"{'kind':<10} {'true':>5} {'fixed wrong':>12} {'claims wrong':>13} {'verdict wrong':>14} "
        f"{'seq samples':>12} {'saved':>7}"
    )
    clear: list[float] = []
    for kind in ("bernoulli", "beta"):
        for p in truths:
            if kind == "beta" and p in (0.0, 1.0):
                continue  # a Beta needs a mean strictly inside (0, 1)

            def draw() -> float:
                if kind == "bernoulli":
                    return float(rng.random() < p)
                return (
                    rng.betavariate(4 * p / (1 - p), 4) if p < 1 else 1.0
                )  # mean p, bounded in [0, 1]

            fixed_wrong = seq_wrong = claims_wrong = 0
            used = []
            for _ in range(args.cases):
                scores = [draw() for _ in range(n)]
                truth_passes = p >= floor
                fixed_wrong += (sum(scores) / n >= floor) != truth_passes and not (p == floor)
                passes, k, claimed = verdict(rule, scores, floor)
                seq_wrong += passes != truth_passes and not (p == floor)
                claims_wrong += claimed and passes != truth_passes and not (p == floor)
                used.append(k)
            mean_used = statistics.fmean(used)
            if abs(p - floor) >= 0.1 - 1e-9:
                clear.append(mean_used)
            print(
                f"{kind:<10} {p:>5.2f} {fixed_wrong / args.cases:>12.2%} "
                f"{claims_wrong / args.cases:>13.2%} "
                f"{seq_wrong / args.cases:>14.2%} {mean_used:>12.1f} {1 - mean_used / n:>7.0%}",
                flush=True,
            )
    print(
        f"clear cases (true score >= 10 points from the floor), mean over {len(clear)} rows: "
        f"{statistics.fmean(clear):.1f} samples against {n} ({statistics.fmean(clear) / n:.2f}x "
        "fixed n)"
    )


if __name__ == "__main__":
    main()
