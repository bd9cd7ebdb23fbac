"""The backend interface: token ids in, text out. vLLM and OpenAI-compatible backends plug in here later."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Protocol

from ctxgate.textcodec import RawTokenizer

DTYPES = ("auto", "bf16", "fp16", "fp32", "bfloat16", "float16", "float32")  # --dtype's choices


class BackendDown(RuntimeError):
    """The backend cannot serve any more requests (its server is gone): no later case can run either."""


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
    """``concurrency`` (optional, default 1): how many requests the backend wants in flight at once, e.g. an engine
    that batches whatever it is sent; ``generate`` must then be safe to call from several threads."""

    name: str
    tokenizer: RawTokenizer
    max_positions: int | None  # the model's position limit, None when unknown

    def generate(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]: ...

    def describe(self) -> dict[str, object]: ...


def stream(backend: Backend, requests: Iterable[Request], params: GenerationParams
           ) -> Iterator[tuple[Request, Generation]]:
    """Each request with its generation, as soon as it exists, with at most the backend's ``concurrency`` in
    flight. ``requests`` is pulled lazily, in the caller's thread, only as a slot frees: a caller that builds a
    128K-token prompt per request holds no more of them than are in flight."""
    in_flight = max(1, int(getattr(backend, "concurrency", 1)))
    if in_flight == 1:
        for r in requests:
            (gen,) = backend.generate([r], params)
            yield r, gen
        return
    source = iter(requests)
    pending: dict[Future[list[Generation]], Request] = {}
    with ThreadPoolExecutor(max_workers=in_flight, thread_name_prefix="ctxgate-generate") as pool:
        try:
            while True:
                while len(pending) < in_flight and (r := next(source, None)) is not None:
                    pending[pool.submit(backend.generate, [r], params)] = r
                if not pending:
                    return
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield pending.pop(future), future.result()[0]
        finally:
            for future in pending:  # a failure or an interrupt: start nothing more
                future.cancel()
