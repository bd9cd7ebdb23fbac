"""A thinking budget: a reasoning model thinks up to ``--thinking-budget`` tokens, its markers
included, then answers with the task's own budget. Budget forcing (Muennighoff et al., s1)
over any backend, as two requests per sample: where the model has not closed its thought by the
budget, the marker is appended for it, and the second prompt is the first's ids and the thought's,
re-tokenized. Or the engine's own budget (vLLM's ``thinking_token_budget``), in one request whose
answer is then held to the task's budget."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from ctxgate.backends.base import Backend, Generation, GenerationParams, Request
from ctxgate.retrying import Refused

from .formats import ThoughtFormat


class Holding:
    """``backend`` holding each thought to ``thinking.budget``; every other member is the
    backend's."""

    def __init__(self, backend: Backend, thinking: ThoughtFormat) -> None:
        assert thinking.end is not None and thinking.budget is not None, "a budget to hold"
        self.backend, self.thinking = backend, thinking
        self.end, self.budget = thinking.end, thinking.budget

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)


class BudgetForcing(Holding):
    """Each generation split into a thought of at most ``thinking.budget`` tokens and an answer of
    ``max_new_tokens``."""

    def generate(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        encode = self.backend.tokenizer.encode
        # the marker appended to a cut thought fits in the budget too: a case at length L then
        # holds L + budget positions
        room = max(1, self.budget - self.thinking.marker_tokens)
        first = replace(params, max_new_tokens=room, stop_strings=(self.end,), thinking_budget=None)
        thoughts = self.backend.generate(requests, first)
        follow: list[tuple[int, Request, str]] = []
        out: list[Generation] = list(thoughts)
        for i, (r, g) in enumerate(zip(requests, thoughts)):
            closed = self.end in g.text
            if not closed and (g.finish_reason != "length" or not self._opened(g.text)):
                # it stopped inside its thought (nothing to answer), or wrote an answer with no
                # thought, cut at the budget: too rare in a thinking run to continue
                continue
            thought = g.text[: g.text.index(self.end)] if closed else g.text
            closing = self.end if closed else self.thinking.closing(thought)
            # re-tokenized, a thought may take more ids than the engine generated: never past room
            marked = tuple(encode(closing))
            ids = tuple(encode(thought)[:room]) + marked
            text = thought + closing
            follow.append((i, Request(r.input_ids + ids, r.task, r.length, r.index), text))
            out[i] = replace(g, forced=not closed)
        if follow:
            answer = replace(params, thinking_budget=None)
            answers = self.backend.generate([r for _, r, _ in follow], answer)
            for (i, second, text), a in zip(follow, answers):
                tokens = out[i].output_tokens + a.output_tokens
                # the second request prefills the prompt again, with the thought: both are paid
                prefilled = out[i].prefilled(requests[i]) + a.prefilled(second)
                out[i] = replace(
                    out[i],
                    text=text + a.text,
                    output_tokens=tokens,
                    finish_reason=a.finish_reason,
                    prompt_tokens=prefilled,
                )
        return out

    def _opened(self, text: str) -> bool:
        start = self.thinking.start
        return self.thinking.opened or (start is not None and text.lstrip().startswith(start))


class EngineBudget(Holding):
    """``backend``, a server that closes a thought at a budget itself, asked for the thought and
    the answer in one request of ``thinking.budget`` + ``max_new_tokens``; an answer that ran into
    what the thought left unused is cut back to ``max_new_tokens``, as the references hold it."""

    def __init__(self, backend: Backend, thinking: ThoughtFormat) -> None:
        super().__init__(backend, thinking)
        # the engine counts the tokens after the opening marker, a prompt's that opens the thought
        # included, and closes the thought with the marker alone: sent the budget less both
        # markers, plus the prompt's share, it lets the model write what budget forcing lets it
        start = thinking.start if thinking.start and not thinking.opened else ""
        opening = len(backend.tokenizer.encode(start)) if start else 0
        self.room = max(1, self.budget - thinking.marker_tokens - opening)

    def generate(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        asked = replace(
            params,
            max_new_tokens=self.budget + params.max_new_tokens,
            thinking_budget=self.room + self.thinking.prompt_thought,
        )
        outs = self.backend.generate(requests, asked)
        return [self._held(g, params.max_new_tokens) for g in outs]

    def _held(self, g: Generation, answer_budget: int) -> Generation:
        fmt, tok = self.thinking, self.backend.tokenizer
        if g.thought is None:
            _, _, ended, at = fmt.split(g.text)
            # what the engine counted: the model's text after the opening marker, up to the first
            # closing one, which it forces at the budget (the answer is split at the last)
            thought = g.text[: g.text.find(self.end)]
            if fmt.start and not fmt.opened:
                thought = thought.partition(fmt.start)[2]
        else:  # a reasoning parser split them
            thought, ended, at = g.thought, "model", 0
        if ended == "never":
            return g  # the model stopped inside its thought: no answer to hold
        first = g.text.find(self.end) if g.thought is None else -1
        # the answer's budget runs from the first marker, as forcing's second request's does
        at = first + len(self.end) if first >= 0 else at
        ids = tok.encode(g.text[at:])  # an output with no thought is all answer
        cut = len(ids) > answer_budget
        return replace(
            g,
            text=g.text[:at] + tok.decode(ids[:answer_budget]) if cut else g.text,
            finish_reason="length" if cut else g.finish_reason,
            forced=ended == "model" and self._spent(g, thought) >= self.room,
        )

    def _spent(self, g: Generation, thought: str) -> int:
        """The thought's tokens as the engine counted them, from each generated token's text where
        it gave them (re-encoded, a thought may merge into fewer), up to the first closing marker
        and after the opening one."""
        if g.pieces is None:
            return len(self.backend.tokenizer.encode(thought))
        start = self.thinking.start if not self.thinking.opened else None
        opening = g.text.find(start) + len(start) if start and start in g.text else 0
        ends = list(itertools.accumulate(map(len, g.pieces)))
        return bisect.bisect_right(ends, g.text.find(self.end)) - bisect.bisect_right(ends, opening)


def forcing(backend: Backend, thinking: ThoughtFormat) -> Backend:
    """The backend, holding each thought to the run's thinking budget where it sets one."""
    if thinking.budget is None or thinking.end is None or thinking.mode == "off":
        return backend
    if thinking.budget_by == "engine":
        return EngineBudget(backend, thinking)
    return BudgetForcing(backend, thinking)


def has_own_budget(backend: object) -> bool:
    """Whether the backend's engine closes a thought at a budget itself: its own answer (a
    cluster's replicas answered where they loaded), else each of its servers is asked."""
    own = getattr(backend, "has_thinking_budget", None)
    if own is not None:
        return bool(own())
    probes = getattr(backend, "probes", None)
    if probes is None:
        return False
    asked = probes("a request with a thinking budget")
    return all(reads_thinking_budget(partial(_with_budget, ask)) for ask in asked)


def _with_budget(ask: Callable[[GenerationParams], None], budget: int) -> None:
    ask(GenerationParams(1, thinking_budget=budget, by_engine=True))


def reads_thinking_budget(send: Callable[[int], None]) -> bool:
    """Whether a server closes a thought at a budget itself (vLLM's ``thinking_token_budget``,
    which it takes only when started with a reasoning parser that names the thought's markers).
    ``send`` asks it for a token with that budget and raises Refused where it refuses the request:
    a server that reads the field refuses a negative one; one that ignores it takes anything."""

    def takes(budget: int) -> bool:
        try:
            send(budget)
        except Refused:
            return False
        return True

    return not takes(-2) and takes(1)
