"""The effective-length search (ctxgate/ext/search/searching.py): on simulated scores, the effective
length of the full grid on the same samples, its error rate at the bar under alpha, and the bench
that measures it on the published curves."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.length_search import gate_tasks, replay, search
from ctxgate.ext.search.sequential import StopRule, judge_length
from ctxgate.gate.session import judge_session
from ctxgate.gate.thresholds import Thresholds
from ctxgate.gate.thresholds_schema import Rule
from ctxgate.records.case import CaseRecord
from ctxgate.tasks.registry import get_task, membership
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
        [sys.executable, "bench/length_search.py", "--runs", "2", "--models", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    ruler = next(line for line in lines if line.startswith("length search: "))
    assert "models x 2 runs; same effective length" in ruler
    assert lines[-1].startswith("gate search: 2 models x 1 runs") and "prompt tokens" in lines[-1]


GATED = ("ruler", "helmet_rag", "helmet_recall", "helmet_overall", "mrcr", "babilong", "nolima")


@st.composite
def runs(draw: st.DrawFn) -> tuple[Thresholds, list[CaseRecord]]:
    """A run's case records: RULER's, HELMET's and the families' tasks (any subset) at lengths
    from 1 token up, scores anywhere in [0, 100] with a chance and an interval, a member that
    errored now and then; a bar, a required length or none, relative gates on any summaries, and
    floors on some tasks (their cases run whatever the search decided)."""
    tasks = draw(st.lists(st.sampled_from(gate_tasks()), min_size=1, max_size=16, unique=True))
    lengths = sorted(draw(st.sets(st.integers(1, 1 << 20), min_size=1, max_size=5)))
    floors = draw(st.lists(st.sampled_from(tasks), max_size=2, unique=True))
    rules = tuple(Rule(t, draw(st.sampled_from(["*", f"<={lengths[0]}"])), 50.0) for t in floors)
    records = []
    for L in lengths:
        for task in tasks:
            spec = get_task(task)
            record = CaseRecord(task, spec.suite, L, spec.category, spec.metric.name, n=10)
            if draw(st.integers(0, 20)) == 0:
                records.append(replace(record, verdict="error"))  # no score
                continue
            score = round(draw(st.sampled_from([0.0, 100.0]) | st.floats(0, 100)), 2)
            wide, chance = draw(st.floats(0, 30)), draw(st.sampled_from([None, 0.0, 25.0, 50.0]))
            ci = (max(0.0, score - wide), min(100.0, score + wide))
            verdict = "fail" if any(r.matches(task, L) for r in rules) and ci[1] < 50 else "pass"
            records.append(replace(record, score=score, verdict=verdict, chance=chance, ci=ci))
    need = st.sampled_from([0, *lengths])  # a gate's required length: none, or one of the run's
    relative = tuple((n, draw(need) or lengths[-1]) for n in draw(st.sets(st.sampled_from(GATED))))
    thresholds = Thresholds(
        "thresholds.toml",
        rule="upper",
        effective_threshold=draw(st.floats(0, 99.9)),
        min_effective_length=draw(need),
        relative_min_length=relative,
        relative_base_up_to=draw(st.sampled_from([0, lengths[0], lengths[-1]])),
        relative_share=draw(st.floats(0.01, 1)),
        floors=rules,
    )
    return thresholds, records


@settings(max_examples=120, deadline=None)
@given(runs())
def test_the_search_in_a_run_reaches_the_full_grids_verdict_on_every_gate(run):
    """Cases fed shortest length first as the run plugin feeds them (a case a floor expects runs;
    those the search skips left out): every gate's verdict is the full grid's (floors: unless a
    case the search skipped had no score, which only running finds), and so is every effective
    length (absolute, and relative for each summary) where short of what a gate requires; a case
    is skipped only past the length that decided every summary it counts in."""
    thresholds, records = run
    ran, searching = replay(thresholds, records)
    left_out = [c for c in ran if c.skip_kind == "search_stopped"]
    found = judge_session(ran, thresholds, True, decided=searching.summary().decided)
    grid = judge_session(records, thresholds, True)
    unseen = {(c.task, c.length) for c in left_out} & {
        (c.task, c.length) for c in records if c.verdict == "error"
    }
    verdicts = {g.name: g.verdict for g in found.gates if g.name != "cases"}
    expected = {g.name: g.verdict for g in grid.gates if g.name != "cases"}
    if unseen:  # a skipped case that errored fails the grid's floors; the search never built it
        verdicts.pop("floors"), expected.pop("floors")
    assert verdicts == expected
    need = thresholds.min_effective_length
    value, full = (v.effective_length and v.effective_length.value for v in (found, grid))
    assert value == full or (need and value and full and min(value, full) >= need)
    required = dict(thresholds.relative_min_length)
    gated = [searching.followed[n] for n in searching.gated if n in searching.followed]
    gate_cases = frozenset().union(*gated)
    assert found.relative_effective_length.keys() <= grid.relative_effective_length.keys()
    for name, full_length in grid.relative_effective_length.items():
        if not (
            {name} & searching.gated
            or searching.followed.get(name, gate_cases).isdisjoint(gate_cases)
        ):
            continue  # a summary no gate asks for, its members left out past the gates' decisions
        mine = found.relative_effective_length.get(name)
        value = mine.value if mine else None
        assert value == full_length.value or (
            name in required
            and value is not None
            and min(value, full_length.value) >= required[name]
        ), name
    record = searching.summary()
    assert record.ran == tuple(sorted({c.length for c in ran if c.skip_kind is None}))
    for c in left_out:  # past the decision of every summary it counts in
        goals = [n for n, members in searching.followed.items() if c.task in members]
        goals = [n for n in goals if n in searching.gated] or goals
        assert goals and all(searching.decided_at[n][0] < c.length for n in goals)
        assert thresholds.floor_for(c.task, c.length) == 0
    if left_out:  # what spans the lengths lacks those it skipped
        assert record.why and found.overall.partial
        assert all(r.partial for r in found.relative_effective_length.values())
    assert set(record.decided) >= {c.length for c in left_out if c.task in membership().ruler}


@pytest.fixture
def two_niah(pytester: pytest.Pytester) -> tuple[str, ...]:
    """niah_single_1 and _2 on the shipped checkpoint: their mean 70% at 512 tokens, 25% at 1K,
    0% at 2K (10 samples); the bar at 50 passes the first length only."""
    (pytester.path / "thresholds.toml").write_text("[effective_length]\nthreshold = 50\n")
    return ("-k", "niah_single_1 or niah_single_2", "--lengths", "512,1k,2k", "--samples", "10")


def test_on_the_tiny_checkpoint_the_search_is_the_grid_where_it_ran(real_suite, pytester, two_niah):
    """The grid, then the search on the same samples (the generation cache): the same cases and
    effective length where the search ran, 2K skipped with why, its generations saved."""
    real_suite(*two_niah, "--report", "grid.json").assert_outcomes(passed=6)
    result = real_suite(*two_niah, "--search-effective-length", "--report", "search.json")
    result.assert_outcomes(passed=4, skipped=2)
    grid, found = (
        json.loads((pytester.path / f"{name}.json").read_text()) for name in ("grid", "search")
    )
    same = ("score", "n", "verdict", "data_sha256")
    ran = {(c["task"], c["length"]): c for c in found["cases"] if c["verdict"] != "skip"}
    assert {k: [c[f] for f in same] for k, c in ran.items()} == {
        (c["task"], c["length"]): [c[f] for f in same] for c in grid["cases"] if c["length"] < 2048
    }
    assert found["effective_length"]["value"] == grid["effective_length"]["value"] == 512
    assert found["extras"]["search"]["ran"] == [512, 1024]
    assert found["extras"]["search"]["skipped"] == [2048]
    skipped = [c for c in found["cases"] if c["length"] == 2048]
    assert {c["skip_kind"] for c in skipped} == {"search_stopped"}
    assert sum(c["cost"]["saved_generations"] for c in skipped) == 20
    result.stdout.fnmatch_lines(
        ["Search: every task ran 512, 1K, skipped 2K: RULER's average 25* is not above 50 at 10*"]
    )
    # a gate that requires 512 is decided at 512; a case with a floor runs all the same (from the
    # cache: the grid drew it)
    (pytester.path / "thresholds.toml").write_text(
        "[effective_length]\nthreshold = 50\n[session]\nmin_effective_length = 512\n"
        '[[floor]]\ntask = "niah_single_1"\nlength = "2k"\nfloor = 1\n'
    )
    result = real_suite(*two_niah, "--search-effective-length", "--report", "gated.json")
    result.assert_outcomes(passed=2, failed=1, skipped=3)
    # per task: 2K ran for niah_single_1's floor, and was left out for niah_single_2
    line = (
        "Search: niah_single_1 ran 512, 2K, skipped 1K; niah_single_2 ran 512, skipped 1K, 2K: "
        "RULER's effective length reached 512 >= 512 required: longer lengths cannot fail its gate"
    )
    result.stdout.fnmatch_lines([line])
    assert line in (pytester.path / "gated.md").read_text()
    gated = json.loads((pytester.path / "gated.json").read_text())
    ran = sorted((c["task"], c["length"]) for c in gated["cases"] if c["verdict"] != "skip")
    assert ran == [("niah_single_1", 512), ("niah_single_1", 2048), ("niah_single_2", 512)]
    gates = {g["name"]: g["verdict"] for g in gated["gates"]}
    assert gates["min_effective_length"] == "pass" and gates["floors"] == "fail"


def test_under_sequential_the_average_stops_a_length_and_gates_min_effective_length(
    real_suite, pytester, two_niah
):
    """--sequential: the two cases at 512 are drawn in rounds and stop when RULER's average is
    certain; a [session] min_effective_length gate, refused under --sequential alone, is
    checked."""
    (pytester.path / "thresholds.toml").write_text(
        "[effective_length]\nthreshold = 95\n[session]\nmin_effective_length = 1024\n"
    )
    sequential = (*two_niah[:4], "--samples", "40", "--sequential", "--sequential-min", "5")
    refused = real_suite(*sequential)
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*--sequential cannot check min_effective_length*"])
    result = real_suite(*sequential, "--search-effective-length", "--report", "r.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the session gate: 0 < 1024
    report = json.loads((pytester.path / "r.json").read_text())
    (verdict,) = report["extras"]["search"]["ruler"]
    assert verdict["length"] == 512 and verdict["certain"] and not verdict["passed"]
    at_512 = [c for c in report["cases"] if c["length"] == 512 and c["verdict"] != "skip"]
    assert at_512 and all(c["n"] == verdict["rounds"] < 40 for c in at_512)
    assert all(c["stop"]["by_summary"] for c in at_512)
    assert report["effective_length"]["value"] == 0 and report["effective_length"]["early"] == []
    assert report["extras"]["search"]["skipped"] == [1024, 2048]
    gate = {g["name"]: g for g in report["gates"]}["min_effective_length"]
    assert gate["verdict"] == "fail"


def test_the_search_refuses_xdist(real_suite):
    result = real_suite("--search-effective-length", "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--search-effective-length runs the lengths in order*drop -n*"])
