"""The sequential stopping rule: it never stops before its minimum, pulls no sample it does not use,
keeps its bounds nested and in range, and claims a side wrongly no more often than alpha (checked by
simulation)."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxgate.ext.search.sequential import Bettor, StopRule, early_stop
from ctxgate.records.case import StopRecord

scores = st.lists(st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0, 1)), min_size=1, max_size=150)


@given(scores, st.floats(0.05, 0.95), st.integers(1, 40))
@settings(max_examples=200, deadline=None)
def test_never_stops_before_its_minimum_and_pulls_only_what_it_uses(xs, floor, minimum):
    rule = StopRule(alpha=0.05, min_samples=minimum, max_samples=100)
    pulled = []

    def source():
        for x in xs:
            pulled.append(x)
            yield x

    v = rule.run(source(), floor)
    assert v.n == len(pulled) <= 100
    if v.decided is not None:
        assert v.n >= minimum
    else:
        assert v.n == min(len(xs), 100)
    assert 0.0 <= v.low <= v.high <= 1.0


@given(scores, st.floats(0.05, 0.95))
@settings(max_examples=100, deadline=None)
def test_the_confidence_sequence_only_narrows(xs, m):
    bettor = Bettor(m, 0.05)
    previous = (0.0, 1.0)
    for x in xs:
        bettor.observe(x)
        assert previous[0] <= bettor.low and bettor.high <= previous[1]
        previous = (bettor.low, bettor.high)
        assert bettor.up >= 0.0 and bettor.down >= 0.0  # capped bets never lose everything


@pytest.mark.parametrize(
    ("p", "claim"), [(0.8, "above"), (0.8, "below"), (0.75, "above"), (0.85, "below")]
)
def test_a_wrong_claim_is_made_at_most_alpha_of_the_time(p, claim):
    """At and beyond the floor (80%), 4,000 simulated Bernoulli cases: the claim that is false is
    made in at most 5% of them (plus sampling slack), whenever the rule chose to stop."""
    rng = random.Random(7)
    rule = StopRule(alpha=0.05, min_samples=10, max_samples=100)
    wrong = sum(
        rule.run((float(rng.random() < p) for _ in range(100)), 0.8).decided == claim
        for _ in range(4000)
    )
    assert wrong / 4000 <= 0.05 + 0.01


def test_clear_cases_stop_early_and_near_ones_may_not():
    rng = random.Random(3)
    rule = StopRule()
    far = [rule.run((float(rng.random() < 0.99) for _ in range(100)), 0.8) for _ in range(200)]
    assert all(v.decided == "above" for v in far) and sum(v.n for v in far) / 200 < 30
    zero = rule.run((0.0 for _ in range(100)), 0.8)
    assert (zero.decided, zero.n) == ("below", 10)  # the minimum, not sooner


def test_paired_differences_ask_whether_it_dropped_by_more_than_the_tolerance():
    rule = StopRule()
    dropped = rule.run((-1.0 for _ in range(100)), -0.05, paired=True)  # every sample lost
    assert dropped.decided == "below" and dropped.low == -1.0
    same = rule.run((0.0 for _ in range(100)), -0.05, paired=True)  # no change at all
    assert same.decided == "above" and same.n > 10  # certain it did not drop by 5 points, later


def test_bad_settings_say_the_fix():
    with pytest.raises(ValueError, match="a floor of 80 is 0.8"):
        Bettor(80, 0.05)
    with pytest.raises(ValueError, match="between 1 and max_samples"):
        StopRule(min_samples=0)


THRESHOLDS = """
[[floor]]
task = "niah_single_1"
length = "*"
floor = 50

[[floor]]
task = "vt"
length = "*"
floor = 30
"""


def test_sequential_gives_the_fixed_n_verdicts_with_fewer_generations(real_suite, pytester):
    """The shipped checkpoint: niah_single_1 passes 50 at 512 tokens and fails it at 2K, vt fails 30
    at both. Under --sequential every verdict is the fixed-n one, fewer samples are generated, the
    report says why each case stopped, and a re-run with the cache generates nothing (it draws the
    same samples in the same order)."""
    pytester.makefile(".toml", thresholds=THRESHOLDS)
    select = (
        "-k",
        "niah_single_1 or vt",
        "--lengths",
        "512,2k",
        "--samples",
        "24",
        "--thresholds",
        "thresholds.toml",
    )
    fixed = real_suite(*select, "--report", "fixed.json", "--no-cache")
    seq = real_suite(*select, "--sequential", "--report", "seq.json", "--cache-dir", "cache")

    def cases(name: str) -> dict[tuple[str, int], dict]:
        return {
            (c["task"], c["length"]): c
            for c in json.loads((pytester.path / name).read_text())["cases"]
        }

    a, b = cases("fixed.json"), cases("seq.json")
    assert {k: c["verdict"] for k, c in a.items()} == {k: c["verdict"] for k, c in b.items()}
    assert {k: c["verdict"] for k, c in a.items()} == {
        ("niah_single_1", 512): "pass",
        ("niah_single_1", 2048): "fail",
        ("vt", 512): "fail",
        ("vt", 2048): "fail",
    }
    assert sum(c["n"] for c in b.values()) < sum(c["n"] for c in a.values())
    assert all(c["stop"]["used"] >= 10 and c["stop"]["budget"] == 24 for c in b.values())
    assert b[("vt", 512)]["stop"]["stopped"] == "certain it fails" and b[("vt", 512)]["n"] < 20
    assert b[("vt", 512)]["stop"]["floor"]["decided"] == "below"
    seq.stdout.fnmatch_lines(["*Sequential (error rate 0.05 per case)*saved*"])
    fixed.assert_outcomes(passed=1, failed=3)
    real_suite(*select, "--sequential", "--report", "again.json", "--cache-dir", "cache")
    c = cases("again.json")
    assert all(
        x["samples_from_cache"] == x["n"] == b[k]["n"] for k, x in c.items()
    )  # the same samples, all cached
    assert json.loads((pytester.path / "seq.json").read_text())["run"]["extras"]["sequential"] == {
        "alpha": 0.05,
        "min_samples": 10,
    }


def test_a_case_fails_on_the_first_certain_failure_and_passes_only_when_every_question_passes():
    from types import SimpleNamespace

    from ctxgate.ext.search.sequential import CaseTest, Questions

    def feed(test: CaseTest, scores: list[float]) -> None:
        test.feed({i: SimpleNamespace(score=x) for i, x in enumerate(scores)})

    rule = StopRule(alpha=0.05, min_samples=10)
    same = {i: 1.0 for i in range(100)}
    both = CaseTest(rule, Questions(floor=0.5, baseline=same, tolerance=0.05))
    feed(both, [1.0] * 100)  # far above the floor, and no drop: both claims needed
    assert both.verdict == "pass" and both.used > 10
    record = both.record(100)
    assert (
        record.floor
        and record.floor.decided == "above"
        and record.baseline
        and record.baseline.decided == "above"
    )
    dropped = CaseTest(rule, Questions(floor=0.5, baseline=same, tolerance=0.05))
    feed(dropped, [0.0] * 100)  # below the floor and dropped: fails at the minimum
    assert (dropped.verdict, dropped.used) == ("fail", 10)
    gap = CaseTest(rule, Questions(baseline={i: 1.0 for i in range(5)}, tolerance=0.05))
    feed(
        gap, [1.0] * 100
    )  # the baseline has 5 samples only: nothing more to pair, the case runs its budget
    assert gap.verdict is None and gap.used == 100 and gap.record(100).baseline is None


def _judged_case(tmp_path, accuracy: float, judges, n: int = 6, stop=None):  # noqa: ANN001, ANN202
    """alce_asqa at 8K on the fixture data (a pool of 6 questions), the outputs scripted."""
    from ctxgate.run.case import Session, run_case
    from ctxgate.run.loading import ModelSpec
    from ctxgate.tasks import BuildContext, get_task
    from ctxgate.tokens.codec import PieceEncoder
    from tests.conftest import HELMET_DATA
    from tests.scripted import ByteTokenizer, ScriptedBackend

    (tmp_path / "s.json").write_text(json.dumps({"default": accuracy, "max_positions": 100000}))
    ctx = BuildContext(encoder=PieceEncoder(ByteTokenizer()), chat=False, data_dir=str(HELMET_DATA))
    backend = ScriptedBackend(ModelSpec(str(tmp_path / "s.json")), ctx)
    return run_case(get_task("alce_asqa"), Session(backend, ctx, judges=judges), 8192, n, stop)


def test_a_judged_case_without_its_judge_runs_its_full_count_and_says_why(tmp_path):
    """No judge in the run: no scores to test while it generates, so --sequential cannot stop it
    early; the record says so instead of leaving the case silent."""
    from ctxgate.ext.search.sequential import Questions

    stop = early_stop(StopRule(alpha=0.05, min_samples=2), Questions(floor=0.5))
    result = _judged_case(tmp_path, 0.0, None, n=4, stop=stop)
    assert len(result.samples) == 4 and result.judge and result.judge.status == "pending"
    why = "judged, with no judge in this run: no scores to test, so it runs its full count"
    assert result.stop == StopRecord(
        alpha=0.05, min_samples=2, used=4, budget=4, decided=None, stopped=why
    )


@pytest.mark.parametrize(
    ("accuracy", "floor", "verdict"), [(0.0, 0.5, "fail"), (1.0, 0.05, "pass")]
)
def test_a_judged_case_is_judged_as_it_generates_and_stops_once_certain(
    tmp_path, judge_server, accuracy, floor, verdict
):
    """With its judge (a real OpenAI-compatible server), each output is judged as it arrives: the
    case stops once certain, with the verdict and the per-sample verdicts of the fixed-n run on the
    same samples, and no sample is judged twice."""
    from ctxgate.ext.search.sequential import Questions
    from ctxgate.judge.client import JudgeSettings
    from ctxgate.judge.score import build_judges

    url, stats = judge_server

    def judges(name: str):  # noqa: ANN202
        settings = JudgeSettings(
            model="ctxgate-lexical-judge", base_url=url, cache_dir=str(tmp_path / name)
        )
        return build_judges(settings, None, 0.05)

    fixed = _judged_case(tmp_path, accuracy, judges("fixed"))
    before = stats()["requests"]
    # the fixture's pool is 6 samples: a lenient rate and minimum, so that a certain verdict can
    # come before the end
    seq = _judged_case(
        tmp_path, accuracy, judges("seq"), stop=early_stop(StopRule(0.2, 2), Questions(floor=floor))
    )
    assert seq.stop and seq.stop.decided == verdict and seq.stop.used < len(fixed.samples)
    assert len(seq.samples) < len(fixed.samples) and seq.judge and seq.judge.status == "judged"
    # the cost says what stopping saved against the fixed plan: together, the plan's samples
    assert fixed.cost and (fixed.cost.generations, fixed.cost.saved_generations) == (6, 0)
    assert seq.cost and seq.cost.saved_generations > 0 and seq.cost.saved_prompt_tokens > 0
    assert seq.cost.generations + seq.cost.saved_generations == len(fixed.samples)
    assert [o.score for o in seq.samples] == [o.score for o in fixed.samples[: len(seq.samples)]]
    per_sample = before / len(fixed.samples)  # the judge requests one verdict costs here
    assert stats()["requests"] - before == per_sample * len(
        seq.samples
    )  # each judged once, as it arrived


def test_a_sequential_run_cannot_pass_min_effective_length(real_suite, pytester):
    """The effective length averages RULER's tasks; --sequential stops clear cases early, whose
    means the stopping biases (10 of 10 right reads 100%). So the two together are refused before
    anything runs, and a report whose RULER average holds an early-stopped case never counts that
    length as effective when it is gated again."""
    pytester.makefile(".toml", thresholds='[session]\nmin_effective_length = "512"\n')
    refused = real_suite(
        "-k",
        "niah_single_1",
        "--lengths",
        "512",
        "--sequential",
        "--thresholds",
        "thresholds.toml",
    )
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(
        ["*--sequential cannot check min_effective_length*--search-effective-length*drop*"]
    )

    from ctxgate.gate.session import judge_session
    from ctxgate.gate.thresholds import Thresholds
    from ctxgate.records.case import CaseRecord, StopRecord
    from ctxgate.tasks.registry import membership

    early = StopRecord(
        alpha=0.05, min_samples=10, used=10, budget=100, decided="pass", stopped="certain it passes"
    )
    cases = [
        CaseRecord(t, "ruler", 512, score=100.0, verdict="pass", stop=early)
        for t in membership().ruler
    ]
    verdict = judge_session(cases, Thresholds(path="t.toml", min_effective_length=512), True)
    gate = next(g for g in verdict.gates if g.name == "min_effective_length")
    eff = verdict.effective_length
    assert (
        verdict.by_length["512"]["ruler"].score == 100.0 and eff is not None and eff.early == (512,)
    )
    assert gate.verdict == "fail" and "stopped a RULER task there early" in gate.message


def test_the_search_section_follows_the_cost_line_with_the_note_on_cases_stopped_early():
    """The search's section is the report's notes right after the cost line: the search line, then
    what cases stopped early are; the effective lengths, the marks and the gates follow."""
    from dataclasses import replace

    from ctxgate.ext.search.records import SEARCH_SLOT, SearchRecord
    from ctxgate.gate.session import judge_session
    from ctxgate.gate.thresholds import Thresholds
    from ctxgate.records.case import CaseRecord
    from ctxgate.records.cost import Cost
    from ctxgate.records.schema import RunInfo
    from ctxgate.report.build import build_report, with_sections
    from ctxgate.report.tables import rows

    early = StopRecord(0.05, 10, 12, 100, "pass", "certain it passes")
    cases = [
        CaseRecord("niah_single_1", "ruler", 4096, "niah", "string_match_all", "pass", score=90.0,
                   n=12, ci=(80.0, 99.0), stop=early, cost=Cost(generations=12)),
        CaseRecord("vt", "ruler", 4096, "vt", "string_match_all", "pass", score=70.0, n=5,
                   ci=(50.0, 90.0), sample_cap={"requested": 10, "pool": 5}),
    ]  # fmt: skip
    search = SearchRecord((4096,), (8192,), "decided at 4K")
    verdict = judge_session(cases, Thresholds("t"), True, decided=search.decided)
    report = build_report(cases, RunInfo("m", None, 42, 12, (4096,), "task"), verdict)
    notes = rows(with_sections(replace(report, extras={SEARCH_SLOT: search})))[2]
    at = {
        what: next(i for i, note in enumerate(notes) if note.startswith(what))
        for what in ("Cost:", "Search:", "Effective length", "Sequential", "Fewer samples", "Gate")
    }
    assert at["Search:"] == at["Cost:"] + 1 and at["Sequential"] == at["Search:"] + 1
    assert at["Sequential"] < at["Effective length"] < at["Fewer samples"] < at["Gate"]
