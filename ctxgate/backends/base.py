"""The backend interface: token ids in, text out, whatever runs the model (transformers, a vLLM
server, any OpenAI-compatible endpoint)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from itertools import islice
from typing import Protocol

from ctxgate.tokens.tokenizers import RawTokenizer

DTYPES = ("auto", "bf16", "fp16", "fp32", "bfloat16", "float16", "float32")  # --dtype's choices
_DTYPE_NAMES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def engine_dtype(dtype: str, on_gpu: bool) -> str:
    """--dtype as engines spell it (vLLM accepts only the long names, torch has them as attributes):
    bf16 -> bfloat16; auto is bfloat16 on GPUs, float32 on the CPU."""
    if dtype == "auto":
        return "bfloat16" if on_gpu else "float32"
    return _DTYPE_NAMES.get(dtype, dtype)


class BackendDown(RuntimeError):
    """The backend cannot serve any more requests (its server is gone): no later case can run
    either."""


class Withdrawn(Exception):
    """A request taken back before it ran (``withdraw``: its case was decided); ``stream`` passes
    over it."""


@dataclass(frozen=True)
class GenerationParams:
    """Greedy decoding; stops at EOS or after ``max_new_tokens``."""

    max_new_tokens: int
    stop_strings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Request:
    """One prompt, and which sample it is."""

    input_ids: tuple[int, ...]
    task: str = ""
    length: int = 0
    index: int = 0


@dataclass(frozen=True)
class Generation:
    text: str
    output_tokens: int
    finish_reason: str  # "stop" (EOS or stop string) or "length"


# Prompt tokens one case keeps in flight per server replica. The request count that fills an
# engine's batch of short prompts would, at 1M tokens a prompt, hold about 9 GB of token ids in the
# session; an engine cannot batch more than its KV cache holds anyway (a few 128K-token sequences on
# one GPU), and 4M tokens is 32 of them.
TOKENS_IN_FLIGHT = 1 << 22


class Backend(Protocol):
    """``concurrency`` (optional, default 1): how many requests the backend wants in flight at once,
    e.g. an engine that batches whatever it is sent; ``generate`` must then be safe to call from
    several threads. ``batch_limit(prompt_tokens, max_new_tokens)`` (optional, default 1): how many
    prompts of about that length one ``generate`` call should get, for a backend that batches them
    itself (HF on a GPU). ``window_of`` (optional, default ``model_window``): what ``max_positions``
    is and how to get past it, for the one line a case beyond it gets. ``tokens_in_flight``
    (optional, default no limit): at most this many prompt tokens in flight at once (one request
    always goes, however long). ``withdraw(task, length)`` (optional): the case is decided, so its
    requests not yet started need not run; each one's ``generate`` then raises ``Withdrawn``.
    ``cases_at_once`` (optional, default 1): how many cases the session should have in flight
    together, for a backend that serves several at once (replicas on a cluster): the next case's
    requests queue while the current one's last samples finish. ``close()`` (optional): release what
    the backend holds (processes, actors) at the end of the run."""

    name: str
    max_positions: int | None  # the model's position limit, None when unknown

    @property
    def tokenizer(self) -> RawTokenizer: ...

    def generate(
        self, requests: Sequence[Request], params: GenerationParams
    ) -> list[Generation]: ...

    def describe(self) -> dict[str, object]: ...


def stream(
    backend: Backend,
    requests: Iterable[Request],
    params: GenerationParams,
    held: Callable[[], int] = lambda: 0,
) -> Iterator[tuple[Request, Generation]]:
    """Each request with its generation, as soon as it exists, with at most the backend's
    ``concurrency`` in flight, and their prompts at most its ``tokens_in_flight`` tokens.
    ``requests`` is pulled lazily, in the caller's thread, only as a slot frees: a caller that
    builds a 128K-token prompt per request holds no more of them than are in flight, and one more.
    ``held()``: generations the caller has but cannot use yet (a sequential test's samples that
    came back before an earlier one); they fill slots too, so however the replicas' speeds differ,
    a case that decides has at most ``concurrency`` generations it does not use.
    """
    in_flight = max(1, int(getattr(backend, "concurrency", 1)))
    if in_flight == 1:
        yield from _batches(backend, iter(requests), params)
        return
    budget = getattr(backend, "tokens_in_flight", None)
    source = iter(requests)
    pending: dict[Future[list[Generation]], Request] = {}
    waiting: Request | None = None  # pulled, waiting for tokens in flight to finish
    tokens = 0
    with ThreadPoolExecutor(max_workers=in_flight, thread_name_prefix="ctxgate-generate") as pool:
        try:
            while True:
                while (not pending or len(pending) + held() < in_flight) and (
                    r := waiting or next(source, None)
                ) is not None:
                    waiting = None
                    if pending and budget is not None and tokens + len(r.input_ids) > budget:
                        waiting = r
                        break
                    pending[pool.submit(backend.generate, [r], params)] = r
                    tokens += len(r.input_ids)
                if not pending:
                    return
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    request = pending.pop(future)
                    tokens -= len(request.input_ids)
                    try:
                        generation = future.result()[0]
                    except Withdrawn:
                        continue
                    yield request, generation
        finally:
            for future in pending:  # a failure or an interrupt: start nothing more
                future.cancel()


def _batches(
    backend: Backend, source: Iterator[Request], params: GenerationParams
) -> Iterator[tuple[Request, Generation]]:
    """In order, as many at a time as the backend's ``batch_limit`` says for the first of them. A
    stream is one case, so its prompts are all about one length: a batch wastes little on padding.
    """
    limit = getattr(backend, "batch_limit", None)
    while (first := next(source, None)) is not None:
        size = limit(len(first.input_ids), params.max_new_tokens) if limit else 1
        batch = [first, *islice(source, max(0, size - 1))]
        gens = backend.generate(batch, params)
        if len(gens) != len(batch):
            raise RuntimeError(
                f"backend {backend.name} returned {len(gens)} generations for {len(batch)} prompts"
            )
        yield from zip(batch, gens)


@dataclass(frozen=True)
class Window:
    """What a backend's ``max_positions`` is, for the message of a case beyond it. ``forceable``:
    --force-lengths runs the case anyway (positions past the model's are only a risk); a server's
    max model length is a limit the server enforces, so the fix is to restart it with a longer one.
    """

    what: str
    fix: str
    forceable: bool = True


def model_window(limit: int) -> Window:
    return Window(
        f"the model's max_position_embeddings ({limit})",
        "pass --force-lengths to run it beyond the window anyway",
    )


def window_of(backend: Backend) -> Window | None:
    limit = backend.max_positions
    if limit is None:
        return None
    return getattr(backend, "window_of", model_window)(limit)
