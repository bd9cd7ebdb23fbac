"""The search against the full grid: RULER's effective length on the published curves, and every
gate of a thresholds.toml gating RULER, HELMET and the families together over simulated models.

Part 1 (``--sequential``). For every model of the project's published table with a RULER average
per length (ctxgate/ext/published/published.toml: RULER's Tables 3 and 12), each run draws the full
grid: 500 samples a task at each length, each sample a Bernoulli draw at the model's published score
there, per task where the paper's Tables 13-16 give one (the 8 NIAH tasks, vt, cwe and fwe, qa_1 and
qa_2), else at its average. The full grid's effective length is the paper's rule on those means: the
longest length whose average is above the table's bar with every shorter one. The search (``search``
here, the rule of ctxgate/ext/search/rounds.py) runs the lengths shortest first on the same draws,
each length in rounds of one sample a task until its sequential test is certain (or the 500 run out,
judged then as the grid is), and stops at the first failing length.

Part 2 (every gate, without ``--sequential``, which refuses relative gates). A population of
simulated models (monotone and non-monotone curves, tasks at chance, scores near the bar, cases
without a score) over RULER's, HELMET's and the families' tasks at 512 to 128K; thresholds.toml
gates RULER's effective length, the relative effective lengths of RULER, HELMET's RAG and overall
score and each family, and floors on a few cases. The grid's records are replayed through the search
as the run plugin does it (``replay``: a case a floor expects runs; others once ``Searching`` skips
them), and ``judge_session`` judges both: the same verdict per gate, and the prompt tokens of what
ran.

Prompt tokens weigh each sample by its length, as a GPU's prefill does.

    python bench/length_search.py [--runs 200] [--models 60] [--alpha 0.05] [--min-samples 10]
        [--seed 0]

Prints a line per published model, ``length search: M models x R runs; same effective length as the
full grid in A%; prompt tokens G x the full grid's``, then ``gate search: ...`` for part 2.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import arguments  # noqa: E402
from ctxgate.ext.published.scores import Published, all_published  # noqa: E402
from ctxgate.ext.search.records import LengthVerdict  # noqa: E402
from ctxgate.ext.search.searching import Searching  # noqa: E402
from ctxgate.ext.search.sequential import StopRule, judge_length  # noqa: E402
from ctxgate.gate.session import judge_session  # noqa: E402
from ctxgate.gate.thresholds import Thresholds  # noqa: E402
from ctxgate.gate.thresholds_schema import Rule  # noqa: E402
from ctxgate.gate.verdicts import floor_failure, score_expected  # noqa: E402
from ctxgate.lengths import format_length  # noqa: E402
from ctxgate.records.case import CaseRecord  # noqa: E402
from ctxgate.stats.intervals import interval  # noqa: E402
from ctxgate.tasks.chance import chance_at  # noqa: E402
from ctxgate.tasks.registry import get_task, membership  # noqa: E402

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


# --- Part 2: every gate of thresholds.toml, over simulated models

GATE_LENGTHS = tuple(512 << i for i in range(9))  # 512 to 128K
GATE_SAMPLES = 50  # a case's samples in the grid (the search runs a case whole, or not at all)
FAMILIES = ("mrcr", "babilong", "nolima")  # the families the bench gates
GATES = Thresholds(
    "bench",
    rule="upper",
    min_effective_length=32768,
    relative_base_up_to=1024,
    relative_min_length=(
        ("ruler", 32768),
        ("helmet_rag", 16384),
        ("helmet_overall", 16384),
        ("mrcr", 8192),
        ("babilong", 16384),
        ("nolima", 8192),
    ),
    floors=(Rule("niah_single_*", "<=8k", 80.0), Rule("json_kv", "<=2k", 60.0)),
)


def gate_tasks() -> list[str]:
    """RULER's 13, HELMET's own tasks, and the gated families'."""
    tasks = membership()
    helmet = [t for members in tasks.helmet.values() for t in members if t not in tasks.ruler]
    return [*tasks.ruler, *helmet, *(t for f in FAMILIES for t in tasks.families[f])]


def case_record(task: str, length: int, right: int, thresholds: Thresholds) -> CaseRecord:
    """A finished case of ``GATE_SAMPLES`` 0/1 samples, ``right`` of them right, or ``right`` < 0:
    one that errored (no score); its verdict by its floor, as the spine's."""
    spec = get_task(task)
    floor = thresholds.floor_for(task, length)
    base = CaseRecord(task, spec.suite, length, spec.category, spec.metric.name, floor=floor)
    if right < 0:
        return replace(base, verdict="error", error_kind="error", message="simulated")
    outcomes = [1.0] * right + [0.0] * (GATE_SAMPLES - right)
    score = round(100 * right / GATE_SAMPLES, 2)
    chance = chance_at(spec, length).score
    record = replace(base, score=score, n=GATE_SAMPLES, chance=chance, ci=interval(outcomes))
    failed = floor > 0 and floor_failure(record, thresholds) is not None
    return replace(record, verdict="fail" if failed else "pass")


def curve(rng: np.random.Generator, chance: float, kind: int) -> np.ndarray:
    """A task's true score (fraction) at each of ``GATE_LENGTHS``: ``kind`` 0 a monotone decline
    (logistic in log-length), 1 the same with a dip and a recovery, 2 at chance, 3 near RULER's bar
    (85.6) across the lengths."""
    x = np.arange(len(GATE_LENGTHS), dtype=float)
    if kind == 2:
        return np.full(len(x), chance)
    if kind == 3:
        return np.clip(0.856 + rng.normal(0, 0.02, len(x)), 0, 1)
    top, mid, slope = rng.uniform(0.7, 1.0), rng.uniform(1, 11), rng.uniform(0.5, 3)
    p = chance + (top - chance) / (1 + np.exp(slope * (x - mid)))
    if kind == 1:
        dip = int(rng.integers(1, len(x) - 1))
        p[dip] = max(chance, p[dip] - rng.uniform(0.1, 0.4))
    return np.clip(p, 0, 1)


def simulated_grid(rng: np.random.Generator, tasks: Sequence[str]) -> list[CaseRecord]:
    """One model's full grid: a kind per task (mostly monotone), a case in 200 without a score."""
    records = []
    for task in tasks:
        chance = chance_at(get_task(task), GATE_LENGTHS[0]).score / 100
        p = curve(rng, chance, int(rng.choice(4, p=[0.6, 0.2, 0.1, 0.1])))
        for length, truth in zip(GATE_LENGTHS, p):
            right = int(rng.binomial(GATE_SAMPLES, truth))
            records.append(case_record(task, length, -1 if rng.random() < 0.005 else right, GATES))
    return records


def replay(
    thresholds: Thresholds, records: Sequence[CaseRecord]
) -> tuple[list[CaseRecord], Searching]:
    """The grid's records as ``--search-effective-length`` would have run them (the run plugin's
    rule): shortest length first; a case a floor expects runs; another runs unless ``Searching``
    skips it, then it is recorded as skipped (``search_stopped``)."""
    ordered = sorted(records, key=lambda c: c.length)
    searching = Searching(thresholds, [(c.task, c.length) for c in ordered])
    out = []
    for c in ordered:
        expected = score_expected(thresholds.floor_for(c.task, c.length), False)
        if not expected and (why := searching.skip(c.task, c.length)):
            c = CaseRecord(c.task, c.suite, c.length, c.category, c.metric, "skip", why)
            c = replace(c, skip_kind="search_stopped")
        out.append(c)
        searching.record(c)
    return out, searching


def gate_verdicts(records: Sequence[CaseRecord], searched: Searching | None = None) -> dict:
    decided = searched.summary().decided if searched else None
    verdict = judge_session(records, GATES, True, decided=decided)
    return {g.name: g.verdict for g in verdict.gates}


def gates_bench(models: int, runs: int, seed: int) -> None:
    """Part 2's lines: per gate, how often the search's verdict is the grid's, then in all."""
    rng, tasks = np.random.default_rng(seed), gate_tasks()
    same: dict[str, int] = {}
    total = spent = 0.0
    for _ in range(models * runs):
        grid = simulated_grid(rng, tasks)
        ran, searching = replay(GATES, grid)
        full, found = gate_verdicts(grid), gate_verdicts(ran, searching)
        for name, verdict in full.items():
            same[name] = same.get(name, 0) + (found.get(name) == verdict)
        total += sum(c.length for c in grid)
        spent += sum(c.length for c in ran if c.skip_kind != "search_stopped")
    count = models * runs
    for name, agree in same.items():
        print(f"  gate {name:<44} same as the full grid in {100 * agree / count:5.1f}%")
    toml = [n for n in same if n != "cases"]  # "cases" is every run's, not thresholds.toml's
    agreement = 100 * sum(same[n] for n in toml) / (len(toml) * count)
    print(
        f"gate search: {models} models x {runs} runs, {len(tasks)} tasks at "
        f"{format_length(GATE_LENGTHS[0])}-{format_length(GATE_LENGTHS[-1])}; the verdict of "
        f"thresholds.toml's {len(toml)} gates as the full grid's in {agreement:.1f}%; prompt "
        f"tokens {spent / total:.2f} x the full grid's (without --sequential; floors decided only "
        "by running their cases)"
    )


def parser() -> arguments.Parser:
    ap = arguments.Parser(__file__, description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=arguments.whole(1, example=200), default=200)
    # part 2: simulated models, each with --runs // 50 + 1 grids
    ap.add_argument("--models", type=arguments.whole(1, example=60), default=60)
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
    gates_bench(args.models, args.runs // 50 + 1, args.seed)


if __name__ == "__main__":
    main()
