"""The effective-length search (ctxgate/gate/search.py): on simulated scores, the effective
length of the full grid on the same samples, its error rate at the bar under alpha, and the bench
that measures it on the published curves."""

from __future__ import annotations

import random
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxgate.gate.search import judge_length, search
from ctxgate.stats.sequential import StopRule
from tests.conftest import ROOT

MEMBERS = 13


@st.composite
def grids(draw: st.DrawFn) -> tuple[list[int], dict[int, list[list[float]]], float]:
    """Lengths from 1 token up, each with rounds of one score a member (exact-match 0/1, or
    partial credit), and a bar anywhere in [0, 1)."""
    lengths = sorted(draw(st.sets(st.integers(1, 1 << 20), min_size=1, max_size=6)))
    rounds = draw(st.integers(1, 30))
    score = st.sampled_from([0.0, 1.0]) | st.floats(0, 1)
    at = {L: [[draw(score) for _ in range(MEMBERS)] for _ in range(rounds)] for L in lengths}
    return lengths, at, draw(st.floats(0, 0.999))


def full_grid(lengths: list[int], at: dict[int, list[list[float]]], bar: float) -> int:
    """The paper's rule on every sample: the longest length above the bar with every shorter."""
    effective = 0
    for L in lengths:
        if not sum(map(sum, at[L])) / (len(at[L]) * MEMBERS) > bar:
            break
        effective = L
    return effective


@settings(max_examples=100, deadline=None)
@given(grids())
def test_without_stopping_early_the_search_is_the_full_grid_on_the_same_samples(grid):
    lengths, at, bar = grid
    rounds = len(at[lengths[0]])
    found, ran = search(lengths, lambda L: iter(at[L]), bar, StopRule(0.05, rounds, rounds))
    assert found == full_grid(lengths, at, bar)
    # shortest first, and nothing past the first length that fails
    assert [v.length for v in ran] == lengths[: len(ran)]
    assert all(v.passed for v in ran[:-1]) and (ran[-1].passed or len(ran) <= len(lengths))
    assert len(ran) == len(lengths) or not ran[-1].passed


@settings(max_examples=100, deadline=None)
@given(grids(), st.integers(1, 12))
def test_a_search_that_stops_early_answers_from_the_verdicts_it_reached(grid, min_samples):
    """Where the test is certain before the end, the effective length follows from the lengths'
    verdicts, each length judged on no more rounds than it has, and an uncertain one on all."""
    lengths, at, bar = grid
    rounds = len(at[lengths[0]])
    rule = StopRule(0.05, min(min_samples, rounds), rounds)
    found, ran = search(lengths, lambda L: iter(at[L]), bar, rule)
    passing = [v.length for v in ran if v.passed]
    assert (
        found == (passing[-1] if passing else 0)
        and passing == [v.length for v in ran][: len(passing)]
    )
    for v in ran:
        assert 1 <= v.rounds <= rounds and (v.certain or v.rounds == rounds)
        if not v.certain:  # judged as the full grid judges it
            assert v.passed == (sum(map(sum, at[v.length])) / (rounds * MEMBERS) > bar)


def test_at_the_bar_a_certain_pass_is_wrong_under_alpha_of_the_time():
    """Members whose true mean sits exactly on the bar: the test claims a pass (wrongly) in at
    most alpha of many lengths, however early it stops."""
    rng, alpha, bar = random.Random(7), 0.05, 0.85
    truths = [0.85] * 8 + [0.95, 0.75, 0.9, 0.8, 0.85]  # their mean is the bar
    wrong = 0
    for _ in range(400):
        rounds = ([float(rng.random() < p) for p in truths] for _ in range(300))
        verdict = judge_length(4096, rounds, bar, StopRule(alpha, 10, 300))
        wrong += verdict.certain and verdict.passed
    assert wrong / 400 <= alpha


def test_the_bench_prints_its_figures_on_the_published_curves():
    done = subprocess.run(
        [sys.executable, "bench/length_search.py", "--runs", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("length search: ") and "models x 2 runs; same effective length" in last
