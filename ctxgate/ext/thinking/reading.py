"""A reasoning model's output read before scoring: its thought split off and counted, the engine
asked to keep a closing marker that is a special token, and the backend held to the thinking
budget (``forcing.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ctxgate.api import (
    Backend,
    Generation,
    GenerationParams,
    RawTokenizer,
    Reading,
    SampleOutcome,
    ThinkingRecord,
    own_thinking_budget,
    takes_messages,
)

from .forcing import forcing
from .formats import ThinkingError, ThoughtFormat


class ThoughtReading(Reading):
    """``fmt``: the model's thought format, resolved once (``formats.prepare``) with who holds its
    budget; ``tokenizer``: the one its thought tokens are counted in; ``max_cut_share``: past this
    share of cut samples the case fails (``[thinking] max_cut_share``)."""

    def __init__(self, fmt: ThoughtFormat, tokenizer: RawTokenizer, max_cut_share: float) -> None:
        self.fmt, self.tokenizer, self.max_cut_share = fmt, tokenizer, max_cut_share
        # a thought's budget comes on top of the length's prompt and answer
        self.positions = fmt.budget or 0
        self.beyond = f" with --thinking-budget {fmt.budget}" if fmt.budget else ""
        self.lower = ", lower the budget" if fmt.budget else ""
        self.holds_prefix = fmt.answer_prefix is not None

    def params(self, params: GenerationParams) -> GenerationParams:
        fmt = self.fmt
        return replace(
            params,
            keep_special=fmt.special,
            thinking_budget=fmt.budget if fmt.thinks else None,
            by_engine=fmt.budget_by == "engine",
        )

    def hold(self, backend: Backend) -> Backend:
        return forcing(backend, self.fmt)

    def read(self, gen: Generation) -> tuple[str, dict[str, Any]]:
        """The answer to score, and the thought's fields of the outcome (none without one). A
        thought a server's reasoning parser split off is joined back at the closing marker and
        split as every output is, so that each engine reports the same answer and count."""
        fmt, text = self.fmt, gen.text
        if gen.thought is not None and fmt.closed and not gen.text:
            # the prompt closed the thought, and the parser, seeing no marker, filed the answer as
            # one; with an answer beside it, the model thought anyway: a thought, never scored
            text = gen.thought
        elif gen.thought is not None and fmt.end is not None:
            closed = bool(gen.text) or gen.finish_reason != "length"
            opening = fmt.start if fmt.start and not fmt.opened else ""
            text = opening + gen.thought + (fmt.end if closed else "") + gen.text
        thought, answer, ended, at = fmt.split(text)
        if gen.thought is not None and fmt.end is None:  # a parser's markers this run cannot see
            thought, ended, at = gen.thought, "model", len(gen.thought)
            text = gen.thought
        if thought is None:
            return answer, {}
        forced_end = fmt.end if gen.forced else None
        first = text.find(forced_end) if forced_end else -1
        if forced_end and first >= 0:  # a forced thought ends at the marker forced
            thought, _, _, at = fmt.split(text[: first + len(forced_end)])
        tokens = len(self.tokenizer.encode(text[:at]))
        ended = "forced" if gen.forced else ended
        return answer, {"thought": thought, "thought_tokens": tokens, "thought_end": ended}

    def fields(self, outcomes: Sequence[SampleOutcome], answer_budget: int) -> dict[str, Any]:
        found = thinking_record(outcomes, answer_budget, self.fmt.budget)
        if found is None:
            return {}
        fmt, share = self.fmt, self.max_cut_share
        return {
            "thinking": replace(found, max_cut_share=share, end=fmt.end, end_given=fmt.end_given)
        }

    def record(self) -> dict[str, Any]:
        # a model that writes no thought records none
        return {"thinking": self.fmt.describe() if self.fmt.thinks else None}


def thinking_record(
    outcomes: Sequence[SampleOutcome], answer_budget: int, budget: int | None
) -> ThinkingRecord | None:
    """The thought over a case's samples: its tokens, and what each budget cut."""
    thought = [o for o in outcomes if o.thought_end is not None]
    if not thought:
        return None
    tokens = [o.thought_tokens for o in thought]
    cut_thought = [
        o.thought_end == "forced" or (o.thought_end == "never" and o.finish_reason == "length")
        for o in thought
    ]
    cut_answer = [o.finish_reason == "length" and o.thought_end != "never" for o in thought]
    return ThinkingRecord(
        samples=len(thought),
        tokens_mean=round(sum(tokens) / len(tokens), 1),
        tokens_max=max(tokens),
        thought_cut=sum(cut_thought),
        answer_cut=sum(cut_answer),
        never_ended=sum(o.thought_end == "never" for o in thought),
        unclosed=sum(o.thought_end == "never" and o.finish_reason != "length" for o in thought),
        cut=sum(a or b for a, b in zip(cut_thought, cut_answer)),
        answer_budget=answer_budget,
        budget=budget,
    )


def budget_holder(forced: bool, backend: Backend, fmt: ThoughtFormat) -> ThoughtFormat:
    """Who holds each thought to --thinking-budget: the engine, where it has a budget of its own
    and --budget-forcing (``forced``) is not given, else budget forcing, which a chat API cannot
    take."""
    if fmt.budget is None or not fmt.thinks or fmt.mode == "off":
        return fmt
    engine = not forced and own_thinking_budget(backend)
    if not engine and takes_messages(backend):
        raise ThinkingError(
            "--thinking-budget with --endpoint-api chat: the server has no thinking budget of its "
            "own (vLLM's thinking_token_budget, which it takes with a --reasoning-parser that "
            "names the thought's markers, or with --reasoning-config's reasoning_start_str and "
            "reasoning_end_str), and budget forcing continues the prompt's ids, which a chat API "
            "cannot take: give the server those markers, or use --endpoint-api completions"
        )
    return replace(fmt, budget_by="engine" if engine else "forcing")
