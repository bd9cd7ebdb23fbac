"""Budget forcing (Muennighoff et al., s1): a reasoning model thinks up to ``--thinking-budget``
tokens, its closing marker included; where it has not closed its thought by then, the marker is
appended for it; then its answer is generated with the task's own budget. Over any backend, as two
requests per sample: the second prompt is the first's ids and the thought's, re-tokenized."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ctxgate.backends.base import Backend, Generation, GenerationParams, Request
from ctxgate.tokens.thinking import ThoughtFormat


class BudgetForcing:
    """``backend`` with each generation split into a thought of at most ``thinking.budget`` tokens
    and an answer of ``max_new_tokens``; every other member is the backend's."""

    def __init__(self, backend: Backend, thinking: ThoughtFormat) -> None:
        assert thinking.end is not None and thinking.budget is not None, "a budget to force"
        self.backend, self.thinking = backend, thinking
        self.end, self.budget = thinking.end, thinking.budget

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)

    def generate(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        encode = self.backend.tokenizer.encode
        # the marker appended to a cut thought fits in the budget too: a case at length L then
        # holds L + budget positions
        marker = self.thinking.marker_tokens
        room = max(1, self.budget - marker)
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
            ids = tuple(encode(thought)[:room]) + tuple(encode(closing))
            text = thought + closing
            follow.append((i, Request(r.input_ids + ids, r.task, r.length, r.index), text))
            tokens = g.output_tokens + (0 if closed else marker)
            out[i] = replace(g, thought_tokens=tokens, forced=not closed)
        if follow:
            answer = replace(params, thinking_budget=None)
            answers = self.backend.generate([r for _, r, _ in follow], answer)
            for (i, _, text), a in zip(follow, answers):
                tokens = out[i].output_tokens + a.output_tokens
                out[i] = replace(
                    out[i], text=text + a.text, output_tokens=tokens, finish_reason=a.finish_reason
                )
        return out

    def _opened(self, text: str) -> bool:
        start = self.thinking.start
        return self.thinking.opened or (start is not None and text.lstrip().startswith(start))


def forcing(backend: Backend, thinking: ThoughtFormat) -> Backend:
    """The backend, with budget forcing where the run sets a thinking budget."""
    if thinking.budget is None or thinking.end is None or thinking.mode == "off":
        return backend
    return BudgetForcing(backend, thinking)
