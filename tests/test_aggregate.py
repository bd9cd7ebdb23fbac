import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxgate.gate.session import judge_session, summary_inputs
from ctxgate.gate.summaries import (
    GroupScore,
    effective_length,
    helmet_recall,
    ruler_average,
    weighted_average,
)
from ctxgate.gate.thresholds import Thresholds
from ctxgate.records.case import CaseRecord
from ctxgate.records.schema import RunInfo, to_json
from ctxgate.report.build import build_report
from ctxgate.report.tables import markdown, terminal
from ctxgate.stats.intervals import interval
from ctxgate.tasks.registry import membership
from ctxgate_plugins.junit import properties


def full(score: float) -> dict[str, float]:
    return {t: score for t in membership().ruler}


def test_ruler_average_is_plain_mean_and_partial_is_marked():
    scores = full(90.0) | {"vt": 77.0}
    g = ruler_average(scores)
    assert g.score == pytest.approx((12 * 90 + 77) / 13, abs=0.01) and not g.partial
    part = ruler_average({"vt": 50.0})
    assert part.partial and "niah_single_1" in part.missing and part.score == 50.0


def test_helmet_recall_members():
    g = helmet_recall(
        {
            "json_kv": 40.0,
            "niah_multikey_2": 60.0,
            "niah_multikey_3": 80.0,
            "niah_multivalue": 100.0,
        }
    )
    assert g.score == 70.0 and not g.partial


def test_effective_length_needs_every_shorter_length():
    by_length = {
        4096: GroupScore(90.0, ()),
        8192: GroupScore(85.6, ()),
        16384: GroupScore(95.0, ()),
    }
    eff = effective_length(by_length)
    assert eff.value == 4096  # 85.6 is not strictly above 85.6, so 8K fails and 16K does not count
    assert eff.max_passing == 16384


def test_effective_length_zero_when_shortest_fails():
    eff = effective_length({512: GroupScore(10.0, ()), 1024: GroupScore(99.0, ())})
    assert eff.value == 0 and eff.max_passing == 1024


def test_weighted_averages_match_ruler_definition():
    scores = {
        4096: 96.6,
        8192: 96.3,
        16384: 95.2,
        32768: 93.2,
        65536: 87.0,
        131072: 81.2,
    }  # GPT-4, Table 3
    assert weighted_average(scores, True) == pytest.approx(89.0, abs=0.05)
    assert weighted_average(scores, False) == pytest.approx(94.1, abs=0.05)


def test_wilson_interval_brackets_the_mean():
    low, high = interval([1.0] * 100)
    assert high == 100.0 and 95 < low < 97
    low, high = interval([0.0] * 50 + [1.0] * 50)
    assert 39 < low < 41 and 59 < high < 61
    low, high = interval([0.5, 0.25, 1.0, 0.75])
    assert low < 62.5 < high


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=50))
def test_a_fractional_interval_is_never_a_point(scores):
    # one sample, or every score equal, is no certainty about the mean: rule "upper" must not gate
    # on a point
    low, high = interval(scores)
    assert 0.0 <= low < high <= 100.0


def test_a_fractional_interval_narrows_towards_the_mean_as_samples_grow():
    widths = [interval([0.25, 0.5, 0.75] * k) for k in (1, 10, 100)]
    assert all(low < 50 < high for low, high in widths)
    assert [h - lo for lo, h in widths] == sorted((h - lo for lo, h in widths), reverse=True)


def test_rulers_average_is_its_thirteen_tasks_and_helmets_recall_takes_three_of_them():
    tasks = membership()
    assert len(tasks.ruler) == 13 and "vt" in tasks.ruler and "json_kv" not in tasks.ruler
    assert set(tasks.helmet["recall"]) == {
        "json_kv",
        "niah_multikey_2",
        "niah_multikey_3",
        "niah_multivalue",
    }
    assert list(tasks.helmet) == [
        "recall",
        "rag",
        "rerank",
        "cite",
        "longqa",
        "summ",
        "icl",
    ]  # the paper's order


def test_a_length_with_an_early_stopped_ruler_task_never_counts_as_effective():
    early = ruler_average(full(99.0), early={"vt"})
    assert early.score == 99.0 and early.early == ("vt",)
    eff = effective_length(
        {4096: ruler_average(full(99.0)), 8192: early, 16384: ruler_average(full(99.0))}
    )
    assert eff.value == 4096 and eff.early == (8192,) and eff.per_length[8192] is False


def _ruler_case(task: str, length: int, score: float) -> CaseRecord:
    return CaseRecord(task, "ruler", length, "niah", "string_match_all", "pass", score=score, n=10)


def test_a_subsets_summaries_are_marked_partial_in_every_form_and_average_the_same_tasks():
    """2 of RULER's 13 tasks, the second too short for 1K: the base and each length average the
    first alone, and every summary and effective length says partial wherever it is shown."""
    one, two = membership().ruler[:2]
    cases = [_ruler_case(one, L, s) for L, s in ((1024, 90.0), (2048, 80.0), (8192, 60.0))]
    cases += [_ruler_case(two, L, 20.0) for L in (2048, 8192)]
    verdict = judge_session(cases, Thresholds("t"), True)
    assert verdict.by_length["2048"]["ruler"].score == 50.0  # the table's mean: both tasks
    rel, long = verdict.relative_effective_length["ruler"], verdict.long_score["ruler"]
    # against its own base (1K: the first task alone), each length counts the first task alone
    assert rel.base == 90.0 and rel.partial and rel.value == 2048  # 80 >= 85% of 90, not 60
    assert long.base == 80.0 and long.per_length == {8192: -25.0} and long.partial
    assert verdict.overall.partial and verdict.effective_length.partial
    report = build_report(cases, RunInfo("m", None, 42, 10, (1024, 2048, 8192), "task"), verdict)
    props = dict(properties(report))
    for name in ("ruler_avg", "long_score.ruler", "relative_effective_length.ruler"):
        assert props[f"ctxgate.{name}"].endswith("(partial)"), (name, props)
    assert props["ctxgate.ruler_avg.2048"] == "50.0 (partial)"
    for text in (markdown(report), terminal(report)):  # the HTML page's table is these rows
        line = next(x for x in text.splitlines() if "LongScore" in x and "RULER" in x)
        assert line.count("(partial: a member missing at a length)") == 3, line
    raw = to_json(report)
    assert raw["long_score"]["ruler"]["partial"] and raw["overall"]["partial"]


RULER_TASKS = membership().ruler
LENGTHS = (256, 512, 1024, 4096)


@given(
    st.dictionaries(
        st.tuples(st.sampled_from(RULER_TASKS[:4]), st.sampled_from(LENGTHS)),
        st.one_of(st.none(), st.floats(0, 100)),
        min_size=1,
    )
)
def test_the_relative_summaries_average_the_same_tasks_at_every_complete_length(scores):
    """Whatever ran where: at every length without an unscored member, RULER's inputs to the
    relative effective length and LongScore average the same tasks, partial where that left one
    out, and there are none where no task ran at every such length; with every task everywhere,
    they are the table's own means."""
    cases = [
        _ruler_case(t, L, s) if s is not None else CaseRecord(t, "ruler", L, "niah", "m", "error")
        for (t, L), s in scores.items()
    ]
    verdict = judge_session(cases, Thresholds("t"), True)
    ran = [{c.task for c in cases if c.length == L and c.score is not None} for L in LENGTHS]
    failed = {c.length for c in cases if c.score is None}
    ran = [r for L, r in zip(LENGTHS, ran) if r and L not in failed]
    inputs = summary_inputs(cases, verdict.by_length)
    if ran and not set.intersection(*ran):
        assert "ruler" not in inputs and "ruler" not in verdict.relative_effective_length
        return
    groups, chances = inputs["ruler"]
    whole = {L: g for L, g in groups.items() if not g.incomplete and g.score is not None}
    assert len({g.members for g in whole.values()}) <= 1
    for L, g in whole.items():
        table = verdict.by_length[str(L)]["ruler"]
        assert set(g.members) <= set(table.members) and L in chances
        assert g.partial == (table.partial or g.members != table.members)
        if g.members == table.members:
            assert g.score == table.score


def test_a_long_score_without_a_base_says_why_in_the_tables():
    cases = [_ruler_case(RULER_TASKS[0], L, 50.0) for L in (1024, 8192)]
    report = build_report(
        cases,
        RunInfo("m", None, 42, 10, (1024, 8192), "task"),
        judge_session(cases, Thresholds("t"), True),
    )
    assert report.long_score["ruler"].base is None
    for text in (markdown(report), terminal(report)):
        assert "LongScore — (no length of 2K, 4K or 6K, its base)" in text
