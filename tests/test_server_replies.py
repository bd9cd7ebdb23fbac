"""A server's reply is held to the request it answers (``backends/replies.py``): for any text,
finish reason and usage numbers, impossible ones included, the text scored never exceeds the
request's budget, a usage that cannot be right is refused naming the server, and the run's cost is
the sum of what its cases report."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ctxgate.backends.base import Generation
from ctxgate.backends.replies import ImpossibleUsage, as_given, checked, slack
from ctxgate.records.case import CaseRecord
from ctxgate.records.cost import Cost
from ctxgate.report.build import run_cost
from ctxgate.report.tables import cost_line
from ctxgate.retrying import Completion, PromptDetails, TextChoice, Usage
from ctxgate.tokens.tokenizers import HFTokenizer

URL = "http://127.0.0.1:9/v1"
WORDS = st.sampled_from(["the", "needle", " 4242", "haystack", "é", "\n", "<think>", "answer:"])


@pytest.fixture(scope="module")
def tok(hf_tokenizer) -> HFTokenizer:
    return HFTokenizer(hf_tokenizer)


@settings(max_examples=150)
@given(
    words=st.lists(WORDS, max_size=300),
    budget=st.integers(1, 200),
    usage=st.none() | st.integers(-5, 10**6),
    finish=st.sampled_from(["stop", "length"]),
    with_ids=st.booleans(),
)
@example(words=["needle"] * 250, budget=128, usage=5000, finish="stop", with_ids=False)
@example(words=["needle"] * 3, budget=128, usage=-1, finish="stop", with_ids=True)
@example(words=[], budget=1, usage=2, finish="stop", with_ids=False)  # a count past the budget
# vLLM's 30 tokens of a random model, whose text re-tokenizes to one more: within its budget
@example(words=["the"], budget=1, usage=1, finish="length", with_ids=False)
def test_the_scored_text_never_exceeds_the_budget_and_impossible_usage_is_refused(
    tok, words, budget, usage, finish, with_ids
):
    text = "".join(words)
    ids = tuple(tok.encode(text)) if with_ids else None
    counted = len(ids) if ids is not None else len(tok.encode(text))
    given = Generation(text, 0, finish, ids=ids, reported=usage)
    loose = 0 if with_ids else slack(counted)
    # a text whose server says it kept to the budget may re-tokenize a few tokens past it
    kept_to = not with_ids and usage is not None and 0 <= usage <= budget
    over = counted > budget + (loose if kept_to else 0)
    impossible = usage is not None and (
        usage < 0 or (not over and (usage > budget or usage < counted - loose))
    )
    if impossible:
        with pytest.raises(ImpossibleUsage, match=r"^http://127\.0\.0\.1:9/v1 reported"):
            checked(given, budget, tok, URL)
        return
    got = checked(given, budget, tok, URL)
    assert len(tok.encode(got.text)) <= budget + (loose if kept_to else 0)
    assert got.output_tokens <= budget
    if over:  # the server ignored the budget: cut to it, named, counted here
        assert got.finish_reason == "length" and got.overrun == counted - got.output_tokens > 0
        assert got.reported is None and text.startswith(got.text.rstrip("\ufffd"))
    else:
        assert got.text == text and got.overrun == 0 and got.reported == usage
        assert got.output_tokens == (usage if usage is not None else counted)


@given(
    costs=st.lists(
        st.tuples(st.sampled_from([256, 512, 1024]), st.lists(st.integers(0, 10**6), min_size=9)),
        max_size=12,
    )
)
def test_the_runs_cost_is_the_sum_of_its_cases(costs):
    """Every count the cases report adds up to the run's, in all and per length."""
    names = [f.name for f in fields(Cost) if f.name != "engine_seconds"]
    cases = [
        CaseRecord(f"t{i}", "ruler", length, cost=Cost(**dict(zip(names, counts))))
        for i, (length, counts) in enumerate(costs)
    ]
    run = run_cost(cases, None)
    for name in names:
        assert getattr(run.total, name) == sum(getattr(c.cost, name) for c in cases if c.cost)
        for length, cost in run.by_length.items():
            at = [c.cost for c in cases if c.cost and str(c.length) == length]
            assert getattr(cost, name) == sum(getattr(c, name) for c in at)


def _completion(prompt: int | None, cached: int | None) -> Completion:
    details = PromptDetails(cached) if cached is not None else None
    usage = Usage(prompt_tokens=prompt, completion_tokens=1, prompt_tokens_details=details)
    return Completion((TextChoice("x", "stop"),), usage)


@given(prompt=st.none() | st.integers(0, 10**6), cached=st.none() | st.integers(-5, 10**6 + 5))
def test_the_cached_prompt_tokens_a_server_reports_are_kept_when_they_can_be_right(prompt, cached):
    """None where it reports none; refused, naming the server, below 0 or past its own prompt."""
    if cached is not None and (cached < 0 or (prompt is not None and cached > prompt)):
        with pytest.raises(ImpossibleUsage, match=r"^http://127\.0\.0\.1:9/v1 reported .* cached"):
            as_given(_completion(prompt, cached), URL)
        return
    assert as_given(_completion(prompt, cached), URL).cached == cached


@pytest.mark.parametrize(
    ("reported", "cached", "says"),
    [
        (4, 300, "1,000 prompt tokens prefilled (700 computed, 300 cached)"),
        (0, 0, "1,000 prompt tokens prefilled (the engine reports no cached tokens)"),
        (3, 300, "(300 cached in the 3 generations whose engine reported its cache)"),
    ],
)
def test_the_cost_line_splits_the_prefill_as_far_as_the_engine_said(reported, cached, says):
    cost = Cost(generations=4, prompt_tokens=1000, cached_prompt_tokens=cached)
    assert says in cost_line(replace(cost, cache_reported=reported))
