"""Metric edge cases, worked out by hand from the definitions in the reference notes."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxgate.metrics import get_metric, score_prediction
from ctxgate.metrics.text import helmet_normalize, parse_output, ruler_clean

CASES = [
    # metric, prediction, references, prefix, expected
    ("string_match_all", "", ["1234567"], None, 0.0),
    ("string_match_all", " 1234567.", ["1234567"], None, 1.0),
    ("string_match_all", "ABC-def", ["abc-DEF"], None, 1.0),  # case-insensitive
    ("string_match_all", "10", ["1"], None, 1.0),  # substring: "1" is in "10"
    ("string_match_all", "1", ["10"], None, 0.0),
    ("string_match_all", "a b", ["a", "b", "c", "d"], None, 0.5),  # fraction of references
    ("string_match_all", "x\x00y", ["x\ny"], None, 1.0),  # control chars become newlines
    ("string_match_part", "only b here", ["a1", "b"], None, 1.0),
    ("string_match_part", "", ["a1", "b"], None, 0.0),
    (
        "helmet_subem",
        "The Answer: 10",
        ["1"],
        "Answer:",
        1.0,
    ),  # "1" is a substring of "10" (HELMET)
    ("helmet_subem", "", ["x"], "Answer:", 0.0),
    (
        "helmet_subem",
        "  ",
        ["the"],
        "Answer:",
        1.0,
    ),  # "the" normalizes to "", which every string contains
    (
        "helmet_subem",
        "New-York!",
        ["new york"],
        None,
        0.0,
    ),  # punctuation is deleted, not spaced: "newyork"
    ("helmet_subem", "NewYork", ["New-York"], None, 1.0),
    ("helmet_subem", "it is Paris", ["London", "paris"], None, 1.0),  # max over references
    ("helmet_subem", "An apple", ["the apple"], None, 1.0),  # articles dropped
]


@pytest.mark.parametrize(("metric", "prediction", "refs", "prefix", "expected"), CASES)
def test_metric_table(metric, prediction, refs, prefix, expected):
    assert score_prediction(metric, prediction, refs, prefix)[0] == expected


def test_parse_output_takes_rest_of_line_after_prefix():
    assert parse_output("blah\nAnswer: Paris\nmore", "Answer:") == "Paris"
    assert parse_output("answer: answer: x", "Answer:") == "x"  # a repeated prefix is dropped
    assert parse_output("first line\nsecond", "Answer:") == "first line"
    assert parse_output("", "Answer:") == ""


def test_helmet_normalize():
    assert helmet_normalize("  The  Quick, brown fox!! ") == "quick brown fox"


def test_no_reference_is_an_error():
    with pytest.raises(ValueError, match="at least one reference"):
        score_prediction("string_match_all", "x", [])


def test_unknown_metric_names_choices():
    with pytest.raises(KeyError, match="string_match_all"):
        get_metric("exact")


@given(st.text(), st.lists(st.text(min_size=1), min_size=1, max_size=4))
def test_scores_are_probabilities(pred, refs):
    for metric in ("string_match_all", "string_match_part", "helmet_subem"):
        assert 0.0 <= score_prediction(metric, pred, refs, "Answer:")[0] <= 1.0


@given(
    st.text(alphabet=st.characters(codec="ascii"), max_size=30),
    st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=10),
)
def test_reference_inside_prediction_always_matches(noise, ref):
    # any ASCII around it, control characters and whitespace included (what RULER's cleaning
    # rewrites); the reference itself printable, so the cleaning cannot touch it
    assert score_prediction("string_match_all", noise + ref + noise, [ref])[0] == 1.0


@given(st.text(max_size=40))
def test_ruler_clean_is_idempotent(text):
    assert ruler_clean(ruler_clean(text)) == ruler_clean(text)


def test_every_judged_metric_has_its_judge_and_every_task_names_a_known_metric():
    from ctxgate.judge.score import JUDGED
    from ctxgate.metrics.registry import _METRICS, get_metric
    from ctxgate.tasks import all_tasks

    judged = [m for m in _METRICS.values() if m.judged]
    assert set(judged) == set(JUDGED)
    assert all(m.judge in ("llm", "entailment") for m in judged)
    for task in all_tasks():  # one registry: a judged metric is found by its name as any other
        assert task.metric.judged == (task.metric in JUDGED)
        assert get_metric(task.metric.name) is task.metric
