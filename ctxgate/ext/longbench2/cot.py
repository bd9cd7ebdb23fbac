"""pred.py's chain of thought (``--cot``) as two requests per question: the 0shot_cot prompt with
1,024 new tokens, then 0shot_cot_ans (no text, the thought in it) with 128, whose answer is scored.
The builder leaves each sample's second prompt here (``remember``); the reading's backend sends
both and returns one output, the thought ahead of the answer behind a header, which its ``read``
splits off again: the cache keeps both, and the thought reaches the sample's record."""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ctxgate.api import (
    Backend,
    Generation,
    GenerationParams,
    Job,
    PieceEncoder,
    RawTokenizer,
    Reading,
    Request,
)

from .cutting import truncated
from .prompts import COT_TOKENS

_HEADER = re.compile(r"\x1elongbench2-cot (\d+) (\d+)\x1e")
_KEPT = 1 << 16  # second prompts held at most (small: no context in them)
Key = tuple[str, int, int]


@dataclass(frozen=True)
class StepTwo:
    """A sample's second prompt: ``text`` is 0shot_cot_ans filled but for ``$COT$``, cut as the
    first to ``budget``, between the chat template's ``pre`` and ``post``."""

    text: str
    budget: int
    pre: str
    post: str
    encoder: PieceEncoder

    def prompt(self, cot: str) -> str:
        """The user message pred.py sends second, cut as it cuts every prompt."""
        return truncated(self.encoder, self.text.replace("$COT$", cot), self.budget)

    def ids(self, cot: str) -> tuple[int, ...]:
        return self.encoder.whole(self.pre + self.prompt(cot) + self.post)


_WAITING: dict[Key, StepTwo] = {}
_LOCK = threading.Lock()


def remember(job: Job, step: StepTwo) -> None:
    with _LOCK:
        if len(_WAITING) >= _KEPT:
            _WAITING.clear()
        _WAITING[job.task, job.length, job.index] = step


def waiting(request: Request) -> StepTwo | None:
    with _LOCK:
        return _WAITING.get((request.task, request.length, request.index))


def joined(thought: str, thought_tokens: int, answer: str) -> str:
    return f"\x1elongbench2-cot {len(thought)} {thought_tokens}\x1e{thought}{answer}"


def split(text: str) -> tuple[str, str | None, int]:
    """``joined``'s answer, thought and the thought's tokens; a text without the header as it is."""
    found = _HEADER.match(text)
    if found is None:
        return text, None, 0
    size, rest = int(found.group(1)), text[found.end() :]
    return rest[size:], rest[:size], int(found.group(2))


class TwoSteps:
    """``backend`` with each chain-of-thought request answered in two; every other request, and
    every other member, is the backend's."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.name, self.max_positions = backend.name, backend.max_positions

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)

    @property
    def tokenizer(self) -> RawTokenizer:
        return self.backend.tokenizer

    def describe(self) -> dict[str, object]:
        return self.backend.describe()

    def generate(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        steps = [(i, waiting(r)) for i, r in enumerate(requests)]
        out: dict[int, Generation] = {}
        plain = [i for i, s in steps if s is None]
        if plain:
            out |= zip(plain, self.backend.generate([requests[i] for i in plain], params))
        cot = [(i, s) for i, s in steps if s is not None]
        if cot:
            out |= zip([i for i, _ in cot], self._two([(requests[i], s) for i, s in cot], params))
        return [out[i] for i in range(len(requests))]

    def _two(
        self, asked: list[tuple[Request, StepTwo]], params: GenerationParams
    ) -> list[Generation]:
        firsts = self.backend.generate(
            [r for r, _ in asked], replace(params, max_new_tokens=COT_TOKENS)
        )
        thoughts = [g.text.strip() for g in firsts]  # pred.py: response_cot = output.strip()
        # an empty thought gets no second request (pred.py drops the question; here it scores 0)
        again = [k for k, t in enumerate(thoughts) if t]
        seconds = [
            Request(asked[k][1].ids(thoughts[k]), r.task, r.length, r.index)
            for k, r in ((k, asked[k][0]) for k in again)
        ]
        answers = self.backend.generate(seconds, params) if seconds else []
        pairs = {k: (g, r) for k, g, r in zip(again, answers, seconds)}
        return [
            _together(first, asked[k][0], thoughts[k], pairs.get(k))
            for k, first in enumerate(firsts)
        ]


def _together(
    first: Generation, request: Request, thought: str, second: tuple[Generation, Request] | None
) -> Generation:
    tokens = first.output_tokens
    if second is None:
        return Generation(joined(thought, tokens, ""), tokens, first.finish_reason)
    answer, asked = second
    both = (first.reported, answer.reported)
    return Generation(
        joined(thought, tokens, answer.text),
        tokens + answer.output_tokens,
        answer.finish_reason,
        prompt_tokens=first.prefilled(request) + answer.prefilled(asked),
        reported=None if None in both else sum(r or 0 for r in both),
        overrun=first.overrun + answer.overrun,
    )


class CotReading(Reading):
    """Holds the backend to two requests per chain-of-thought sample, and reads the answer (what
    is scored) apart from the thought (the sample's ``thought``)."""

    def hold(self, backend: Backend) -> Backend:
        return TwoSteps(backend)

    def read(self, gen: Generation) -> tuple[str, dict[str, Any]]:
        answer, thought, tokens = split(gen.text)
        if thought is None:
            return gen.text, {}
        return answer, {"thought": thought, "thought_tokens": tokens}
