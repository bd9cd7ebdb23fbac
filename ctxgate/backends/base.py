"""The backend interface: token ids in, text out. vLLM and OpenAI-compatible backends plug in here later."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ctxgate.textcodec import RawTokenizer

DTYPES = ("auto", "bf16", "fp16", "fp32", "bfloat16", "float16", "float32")  # --dtype's choices


@dataclass(frozen=True)
class GenerationParams:
    """Greedy decoding; stops at EOS or after ``max_new_tokens``."""

    max_new_tokens: int
    stop_strings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Request:
    """One prompt. ``answers`` rides along only for scripted test backends; real backends never read it."""

    input_ids: tuple[int, ...]
    task: str = ""
    length: int = 0
    index: int = 0
    answers: tuple[str, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class Generation:
    text: str
    output_tokens: int
    finish_reason: str  # "stop" (EOS or stop string) or "length"


class Backend(Protocol):
    name: str
    tokenizer: RawTokenizer
    max_positions: int | None  # the model's position limit, None when unknown

    def generate(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]: ...

    def describe(self) -> dict[str, object]: ...
