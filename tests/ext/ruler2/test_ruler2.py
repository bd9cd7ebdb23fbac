"""RULERv2: the reference's scorer rules, word list, fitting, builders and refusals."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxgate.api import TaskTooShort, task_samples
from ctxgate.ext.ruler2 import metrics
from ctxgate.ext.ruler2.fitting import Repeated, ordinal
from ctxgate.ext.ruler2.mmlu import collapse
from ctxgate.ext.ruler2.settings import TOKENS_TO_GENERATE
from ctxgate.ext.ruler2.tasks import specs
from ctxgate.ext.ruler2.words import KeyWords

MODEL = "fixtures/tiny-llama-niah"
FEW = settings(max_examples=25, deadline=None)


def test_twelve_tasks_by_level() -> None:
    got = {s.name: (s.category, s.metric.name) for s in specs()}
    assert len(got) == 12
    assert got["mk_niah_medium"] == ("medium", "ruler2_multichoice")
    assert got["mv_niah_medium"] == ("medium", "ruler2_2steps")
    assert got["qa_basic"] == ("basic", "ruler2_part")
    assert got["mv_niah_hard"] == ("hard", "ruler2_all")


def test_match_types() -> None:
    assert metrics.match_all("x </think> the numbers are 12 and 34", ["12", "34"])[0] == 1.0
    assert metrics.match_all("12", ["12", "99"])[0] == 0.5
    assert metrics.match_2steps("Q 1\n\nQ 2\n\nthe final", ["the final"])[0] == 1.0
    assert metrics.match_part("Document 12:\nFencas here\n\nUxon", ["Fencas", "Uxon"])[0] == 1.0
    assert metrics.match_part("Document 12:\nFencas here\n\nno", ["Fencas"])[0] == 0.0
    assert metrics.one_less_wer("a b c", "a b d") == pytest.approx(2 / 3)


def test_multichoice_letter() -> None:
    assert metrics.multichoice("so \\boxed{B}", ["B"])[0] == 1.0
    assert metrics.multichoice("\\boxed{\\text{C}}", ["C"])[0] == 1.0
    assert metrics.multichoice("**Answer:** D", ["D"])[0] == 1.0
    assert metrics.multichoice("\\boxed{}", ["A"])[0] == 0.0


@FEW
@given(st.text(max_size=60), st.lists(st.text(max_size=20), min_size=1, max_size=4))
def test_scores_bounded(prediction: str, references: list[str]) -> None:
    for metric in metrics.METRICS:
        assert metric.fn is not None
        score, _ = metric.fn(prediction, references, None)
        assert score <= 1.0


@FEW
@given(st.lists(st.sampled_from(["a", "b", "ad hoc", "a-b", "a-b-c", "B", "x"]), min_size=1))
def test_key_words_are_the_sorted_product(adjectives: list[str]) -> None:
    nouns = ["b", "c-d", "A", "zz"]
    words = KeyWords(adjectives, nouns)
    assert list(words) == sorted({f"{a}-{n}" for a in adjectives for n in nouns})


@FEW
@given(st.integers(1, 50), st.integers(1, 5))
def test_repeated_draws_as_the_list(items: int, times: int) -> None:
    full = [x for x in range(items) for _ in range(times)]
    k = len(full) // 2
    assert random.Random(1).sample(Repeated(range(items), times), k) == random.Random(1).sample(
        full, k
    )


# every character Python counts as whitespace (str.isspace), and some that are not
SPACES = [chr(c) for c in range(0x3001) if chr(c).isspace()]


@given(st.text(st.sampled_from([*SPACES, "a", "b", "\u200b", "\ufeff", "."])) | st.text())
def test_whitespace_collapses_as_the_references_regex(text: str) -> None:
    assert collapse(text) == re.sub(r"\s+", " ", text)


def test_ordinals() -> None:
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 112)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "112th",
    ]  # fmt: skip


def test_the_prompt_alone_fills_the_length() -> None:
    """The reference's rule: the budget (16384, its README's) comes on top of the length."""
    for spec in specs():
        assert (spec.tokens_to_generate, spec.held_in_length) == (TOKENS_TO_GENERATE, 0)
        assert spec.past_length == TOKENS_TO_GENERATE


@FEW
@given(st.integers(1, 400), st.sampled_from(["mk_niah_basic", "mv_niah_basic", "qa_basic"]))
def test_any_length_builds_or_skips(length: int, task: str) -> None:
    """Too short for the fewest units is a skip, never a crash; else within the length."""
    try:
        s = task_samples(task, MODEL, length)[0]
    except TaskTooShort:
        return
    assert len(s.input_ids) <= length


@pytest.mark.parametrize("task", [s.name for s in specs()])
def test_builds_within_the_length(task: str) -> None:
    length = 4000
    s = task_samples(task, MODEL, length, 2)[1]
    assert length // 2 < len(s.input_ids) <= length  # the reference drops 5 or 10 units at a time
    assert s.answers and all(s.answers)


def test_the_pinned_chances_are_what_guessing_on_the_shipped_samples_scores() -> None:
    """Registering the tasks reads no data: their chance is written down, and is the measure's."""
    from ctxgate.ext.ruler2.chance import PINNED, measure_all

    assert measure_all() == PINNED
