"""HELMET application metrics, table-driven. Every expected value was worked out by hand; the
arithmetic is written out where it is not obvious (trec_eval NDCG: gain = label, discount log2(rank
+ 1))."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxgate.metrics import score_prediction
from ctxgate.metrics.helmet import ndcg_at, parse_rankings, qrels_from_references
from ctxgate.metrics.registry import resolve

L3 = math.log2(3)

CASES = [
    # metric, prediction, references, prefix, expected score
    (
        "helmet_subem",
        " Answer is 10",
        ["1"],
        "Answer:",
        1.0,
    ),  # "1" is a substring of "10": HELMET's SubEM
    (
        "helmet_subem",
        " The Eiffel Tower.",
        ["eiffel tower"],
        "Answer:",
        1.0,
    ),  # case, article, punctuation
    (
        "helmet_subem",
        " Lyon\nParis",
        ["Paris"],
        "Answer:",
        1.0,
    ),  # the raw output counts, not only line one
    ("helmet_subem", "", ["Paris"], "Answer:", 0.0),
    ("helmet_subem", " the Big Apple", ["New York", "Big Apple"], "Answer:", 1.0),  # any reference
    ("label_em", " 1", ["1"], "label:", 1.0),
    ("label_em", " 10", ["1"], "label:", 0.0),  # EM, not substring
    ("label_em", " 1\nlabel: 10", ["1"], "label:", 1.0),  # the first line after the prefix
    ("label_em", " label: 7", ["7"], "label:", 1.0),  # an echoed prefix is dropped
    ("label_em", "", ["1"], "label:", 0.0),
    ("rouge_l_f1", " Paris", ["Paris"], "Answer:", 1.0),
    (
        "rouge_l_f1",
        " the cats ran",
        ["cat running"],
        "Answer:",
        0.4,
    ),  # stems cat|ran vs cat|run: P 1/3, R 1/2
    (
        "rouge_l_f1",
        " John Smith",
        ["Smith", "Jane Doe"],
        "Answer:",
        2 / 3,
    ),  # best reference: P 1/2, R 1
    (
        "rouge_l_f1",
        " Paris\nand more words here",
        ["Paris"],
        "Answer:",
        1.0,
    ),  # the parsed first line wins
    ("rouge_l_f1", "", ["Paris"], "Answer:", 0.0),
    (
        "ndcg_at_10",
        " [3] > [1] > [2]",
        ["1:3", "2:0", "3:2"],
        "Ranking:",
        (2 + 3 / L3) / (3 + 2 / L3),
    ),  # DCG 2/1 + 3/log2 3; ideal 3/1 + 2/log2 3
    (
        "ndcg_at_10",
        " 1 > 2 > 1 > 3",
        ["1:0", "2:0", "3:3"],
        "Ranking:",
        0.5,
    ),  # duplicate keeps rank 1; 3 at rank 3
    (
        "ndcg_at_10",
        " ID: 5 is best. Ranking: 2 > 3",
        ["5:3", "2:1", "3:0"],
        "Ranking:",
        1 / (3 + 1 / L3),
    ),  # the longest chain (2 > 3) wins over the lone 5
    (
        "ndcg_at_10",
        " 10 > 1",
        ["1:3", "10:0"],
        "Ranking:",
        (3 / L3) / 3,
    ),  # "1" and "10" are different ids
    ("ndcg_at_10", "", ["1:3", "2:1"], "Ranking:", 0.0),
    ("ndcg_at_10", " I cannot rank these.", ["1:3"], "Ranking:", 0.0),
    ("ndcg_at_10", " 1 > 2", ["1:0", "2:0"], "Ranking:", 0.0),  # nothing relevant: 0, as trec_eval
    ("mc_accuracy", " B", ["B", "B. Paris"], "Answer:", 1.0),
    ("mc_accuracy", " b.", ["B", "B. Paris"], "Answer:", 1.0),
    ("mc_accuracy", " The answer is B. Paris", ["B", "B. Paris"], "Answer:", 1.0),
    ("mc_accuracy", " C", ["B", "B. Paris"], "Answer:", 0.0),
    ("mc_accuracy", "", ["A", "A. Lyon"], "Answer:", 0.0),  # fixed: empty is wrong
    ("mc_accuracy", " the", ["A", "A. Lyon"], "Answer:", 0.0),
    ("mc_accuracy", " A", ["A", "A. Lyon"], "Answer:", 1.0),
    (
        "mc_accuracy_helmet",
        "",
        ["A", "A. Lyon"],
        "Answer:",
        1.0,
    ),  # the reference's bug: "a" is an article
    ("mc_accuracy_helmet", " the", ["A", "A. Lyon"], "Answer:", 1.0),
    ("mc_accuracy_helmet", "", ["B", "B. Paris"], "Answer:", 0.0),
    ("mc_accuracy_helmet", " B", ["B", "B. Paris"], "Answer:", 1.0),
]


@pytest.mark.parametrize(("metric", "prediction", "references", "prefix", "expected"), CASES)
def test_metric_table(metric, prediction, references, prefix, expected):
    score, _ = score_prediction(metric, prediction, references, prefix)
    assert score == pytest.approx(expected, abs=1e-9)


def test_ranking_parser_keeps_first_mentions_and_falling_scores():
    assert parse_rankings("[ID: 4] > [ID: 2] > [ID: 4] > [ID: 9]") == {"4": 4, "2": 3, "9": 1}
    assert parse_rankings("nothing") == {"nothing": 1}


def test_compat_switch_swaps_only_multiple_choice():
    assert resolve("mc_accuracy", True) == "mc_accuracy_helmet"
    assert resolve("mc_accuracy", False) == "mc_accuracy"
    assert resolve("helmet_subem", True) == "helmet_subem"


def test_bad_judgment_reference_names_the_format():
    with pytest.raises(ValueError, match="ID:LABEL"):
        qrels_from_references(["7-2"])


@given(
    st.dictionaries(
        st.from_regex(r"[0-9]{1,3}", fullmatch=True), st.integers(0, 3), min_size=1, max_size=15
    ),
    st.randoms(),
)
def test_ndcg_is_one_for_the_ideal_order_and_within_bounds(qrels, rnd):
    ideal = sorted(qrels, key=lambda pid: -qrels[pid])
    shuffled = list(qrels)
    rnd.shuffle(shuffled)
    text = " > ".join(shuffled)
    score = ndcg_at(parse_rankings(text), qrels)
    assert 0.0 <= score <= 1.0 + 1e-12
    if any(qrels.values()):
        assert ndcg_at(parse_rankings(" > ".join(ideal)), qrels) == pytest.approx(1.0)


@settings(deadline=None)  # the first call imports rouge and nltk: a timing, not a behaviour
@given(st.text(max_size=80))
def test_parsers_never_crash(text):
    for metric, refs, prefix in (
        ("label_em", ["3"], "label:"),
        ("ndcg_at_10", ["1:2"], "Ranking:"),
        ("mc_accuracy", ["A", "A. x"], "Answer:"),
        ("rouge_l_f1", ["x"], "Answer:"),
    ):
        score, _ = score_prediction(metric, text, refs, prefix)
        assert 0.0 <= score <= 1.0


def test_completion_outputs_are_scored_behind_the_prefix_chat_outputs_as_they_are():
    """HELMET (eval.py): without the chat template, `system_template + output`, no space added, is
    what the metric and the parser see; with it, the output alone, parsed after the prefix when the
    model wrote one, else its first line."""
    assert score_prediction("helmet_subem", "x", ["answer"], "Answer:") == (
        1.0,
        "x",
    )  # "Answer:x" contains it
    assert score_prediction("helmet_subem", "x", ["answer"], "Answer:", chat=True) == (0.0, "x")
    assert (
        score_prediction("helmet_subem", "Paris\nRome", ["rome"], "Answer:", chat=True)[1]
        == "Paris"
    )
    score, parsed = score_prediction(
        "rouge_l_f1", "Intro.\nAnswer: the cat sat", ["the cat sat"], "Answer:", chat=True
    )
    assert (score, parsed) == (1.0, "the cat sat")
