"""A reasoning model's generation held apart from its thought. A thinking budget: the model thinks
up to ``--thinking-budget`` tokens, its markers included, then answers with the task's own budget.
Budget forcing (Muennighoff et al., s1) over any backend, as two requests per sample: where the
model has not closed its thought by the budget, the marker is appended for it, and the second
prompt is the first's ids and the thought's as generated (re-tokenized where the engine gives text
alone). Or the engine's own budget (vLLM's ``thinking_token_budget``), in one request whose answer
is then held to the task's budget. And with or without a budget, an answer prefix held out of the
prompt (``Request.after_thought``) goes between the thought and the answer, in a second request."""

from __future__ import annotations

import bisect
import itertools
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from ctxgate.api import Backend, Generation, GenerationParams, Request

from .formats import ThoughtFormat


class Follow(NamedTuple):
    """A thought to answer in a second request: which output, the thought's ids and text, and the
    answer's own limit in tokens (None: the request's)."""

    at: int
    ids: tuple[int, ...]
    text: str
    limit: int | None = None


class Holding(ABC):
    """``backend`` with the thought held apart; every other member is the backend's. A request's
    ``after_thought`` (the answer prefix held out of its prompt) follows the thought where the run
    puts it there (``answer_prefix``): the answer is a second request, continued from the prompt,
    the thought's ids and it. A chat API cannot be continued: there the run leaves it out."""

    def __init__(self, backend: Backend, thinking: ThoughtFormat) -> None:
        assert thinking.end is not None, "a thought to hold"
        self.backend, self.thinking, self.end = backend, thinking, thinking.end
        self.budget = thinking.budget or 0
        self.after = thinking.answer_prefix == "after the thought"

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)

    def generate(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        """Those with a prefix to follow their thought continued, the others as the holder does
        without one (a batch is one case's, so it is mostly all one or the other)."""
        held = [i for i, r in enumerate(requests) if r.after_thought and self.after]
        rest = [i for i, r in enumerate(requests) if not (r.after_thought and self.after)]
        out: dict[int, Generation] = {}
        for picked, run in ((held, self.continued), (rest, self.plain)):
            if picked:
                out |= zip(picked, run([requests[i] for i in picked], params))
        return [out[i] for i in range(len(requests))]

    def plain(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        return self.continued(requests, params)

    @abstractmethod
    def continued(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        """The thought, then the answer after each request's ``after_thought``."""

    def thought_ids(self, g: Generation, thought: str, closed: bool) -> tuple[int, ...]:
        """The thought as the next prompt continues it, its closing marker last: as generated (a
        closed one ends in the tokens that wrote the marker), else re-tokenized, never past what
        was generated."""
        encode = self.backend.tokenizer.encode
        if g.ids is not None:  # continued from what the model wrote, as an engine's budget is
            return g.ids if closed else g.ids + tuple(encode(self.end))
        return tuple(encode(thought)[: g.output_tokens]) + tuple(encode(self.end))

    def answer(
        self,
        requests: Sequence[Request],
        out: list[Generation],
        follow: Sequence[Follow],
        params: GenerationParams,
    ) -> None:
        """Each of ``follow`` answered by a second request: the prompt, the thought and the
        request's ``after_thought``; an answer past its own limit cut back to it."""
        if not follow:
            return
        seconds = [
            replace(
                requests[f.at],
                input_ids=requests[f.at].input_ids + f.ids + requests[f.at].after_thought,
            )
            for f in follow
        ]
        answers = self.backend.generate(seconds, params)
        for f, second, a in zip(follow, seconds, answers):
            a = self._cut(a, f.limit)
            out[f.at] = replace(
                out[f.at],
                text=f.text + a.text,
                output_tokens=out[f.at].output_tokens + a.output_tokens,
                finish_reason=a.finish_reason,
                # the second request prefills the prompt again, with the thought: both are paid
                prompt_tokens=out[f.at].prefilled(requests[f.at]) + a.prefilled(second),
                ids=None,
                pieces=None,
                # a server's count of both requests, where it gave both; else counted here
                reported=None
                if None in (out[f.at].reported, a.reported)
                else a.output_tokens + out[f.at].output_tokens,
                overrun=out[f.at].overrun + a.overrun,
            )

    def _cut(self, a: Generation, limit: int | None) -> Generation:
        if limit is None or a.output_tokens <= limit:
            return a
        tok = self.backend.tokenizer
        ids = a.ids if a.ids is not None else tuple(tok.encode(a.text))
        text = tok.decode(list(ids[:limit]))
        return replace(a, text=text, output_tokens=limit, finish_reason="length", reported=None)


class AfterThought(Holding):
    """No budget: thought and answer share the task's, and a request's ``after_thought`` is put
    after the thought the model closed, for what the thought left of the budget."""

    def plain(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        return self.backend.generate(requests, params)

    def continued(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        first = replace(params, stop_strings=(self.end,), token_ids=True)
        out = list(self.backend.generate(requests, first))
        follow = []
        for i, g in enumerate(out):
            if self.end not in g.text:
                continue  # it stopped inside its thought, or wrote none, within the budget
            left = params.max_new_tokens - g.output_tokens
            if left <= 0:  # the thought took the whole budget: no room for an answer
                out[i] = replace(g, finish_reason="length")
                continue
            thought = g.text[: g.text.index(self.end)]
            follow.append(Follow(i, self.thought_ids(g, thought, True), thought + self.end, left))
        # one batch, as long as the longest answer left; each cut back to its own
        longest = max((f.limit or 0 for f in follow), default=0)
        self.answer(requests, out, follow, replace(params, max_new_tokens=longest, token_ids=True))
        return out


class BudgetForcing(Holding):
    """Each generation split into a thought of at most ``thinking.budget`` tokens and an answer of
    ``max_new_tokens``; a request's ``after_thought`` between them."""

    def continued(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        assert self.budget, "a budget to force"
        # the marker appended to a cut thought fits in the budget too: a case at length L then
        # holds L + budget positions
        room = max(1, self.budget - self.thinking.marker_tokens)
        first = replace(
            params,
            max_new_tokens=room,
            stop_strings=(self.end,),
            thinking_budget=None,
            token_ids=True,
        )
        out = list(self.backend.generate(requests, first))
        follow = []
        for i, g in enumerate(out):
            closed = self.end in g.text
            if not closed and (g.finish_reason != "length" or not self._opened(g.text)):
                # it stopped inside its thought (nothing to answer), or wrote an answer with no
                # thought, cut at the budget: too rare in a thinking run to continue
                continue
            thought = g.text[: g.text.index(self.end)] if closed else g.text
            follow.append(Follow(i, self.thought_ids(g, thought, closed), thought + self.end))
            out[i] = replace(g, forced=not closed)
        self.answer(requests, out, follow, replace(params, thinking_budget=None))
        return out

    def _opened(self, text: str) -> bool:
        start = self.thinking.start
        return self.thinking.opened or (start is not None and text.lstrip().startswith(start))


class EngineBudget(Holding):
    """``backend``, a server that closes a thought at a budget itself, asked for the thought and
    the answer in one request of ``thinking.budget`` + ``max_new_tokens``; an answer that ran into
    what the thought left unused is cut back to ``max_new_tokens``, as the references hold it.
    Where a request's ``after_thought`` follows the thought, the answer is a second request."""

    def __init__(self, backend: Backend, thinking: ThoughtFormat) -> None:
        super().__init__(backend, thinking)
        # the engine counts the tokens after the opening marker, a prompt's that opens the thought
        # included, and closes the thought with the marker alone: sent the budget less both
        # markers, plus the prompt's share, it lets the model write what budget forcing lets it
        start = thinking.start if thinking.start and not thinking.opened else ""
        opening = len(backend.tokenizer.encode(start)) if start else 0
        self.room = max(1, self.budget - thinking.marker_tokens - opening)

    def asked(self, params: GenerationParams) -> GenerationParams:
        return replace(
            params,
            max_new_tokens=self.budget + params.max_new_tokens,
            thinking_budget=self.room + self.thinking.prompt_thought,
        )

    def plain(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        outs = self.backend.generate(requests, self.asked(params))
        return [self._held(g, params.max_new_tokens) for g in outs]

    def continued(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        """The thought to the marker, which the engine forces at its budget, then the answer
        after ``after_thought``."""
        first = replace(
            self.asked(params), max_new_tokens=self.budget, stop_strings=(self.end,), token_ids=True
        )
        out = list(self.backend.generate(requests, first))
        follow = []
        for i, g in enumerate(out):
            if self.end not in g.text:  # it stopped inside its thought, or answered with none
                out[i] = self._held(g, params.max_new_tokens)
                continue
            thought = g.text[: g.text.index(self.end)]
            follow.append(Follow(i, self.thought_ids(g, thought, True), thought + self.end))
            out[i] = replace(g, forced=self._spent(g, self._counted(g.text)) >= self.room)
        # the answer's request carries the budget too, though its prompt closed the thought: vLLM
        # (0.32) keeps a budget's state per batch row, and a request without one that took a
        # budgeted request's row was forced to close a thought mid-answer
        self.answer(
            requests, out, follow, replace(self.asked(params), max_new_tokens=params.max_new_tokens)
        )
        return out

    def _counted(self, text: str) -> str:
        """What the engine counted: the text after the opening marker, up to the first closing
        one, which it forces at the budget (the answer is split at the last)."""
        fmt = self.thinking
        thought = text[: text.find(self.end)]
        return thought.partition(fmt.start)[2] if fmt.start and not fmt.opened else thought

    def _held(self, g: Generation, answer_budget: int) -> Generation:
        fmt, tok = self.thinking, self.backend.tokenizer
        if g.thought is None:
            _, _, ended, at = fmt.split(g.text)
            thought = self._counted(g.text)
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
    """The backend, holding each thought to the run's thinking budget where it sets one, and
    putting a held answer prefix after it."""
    if thinking.end is None or thinking.mode == "off":
        return backend
    if thinking.budget is None:
        return AfterThought(backend, thinking)
    if thinking.budget_by == "engine":
        return EngineBudget(backend, thinking)
    return BudgetForcing(backend, thinking)
