"""The backend interface: token ids in, text out, whatever runs the model (transformers, a vLLM
server, any OpenAI-compatible endpoint)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from itertools import chain, islice
from typing import Any, Protocol

from ctxgate.tokens.tokenizers import RawTokenizer

DTYPES = ("auto", "bf16", "fp16", "fp32", "bfloat16", "float16", "float32")  # --dtype's choices
_DTYPE_NAMES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def engine_dtype(dtype: str, on_gpu: bool) -> str:
    """--dtype as engines spell it (vLLM takes only long names); auto: bf16 on GPU, fp32 on CPU."""
    if dtype == "auto":
        return "bfloat16" if on_gpu else "float32"
    return _DTYPE_NAMES.get(dtype, dtype)


class BackendDown(RuntimeError):
    """The backend can serve no more requests (its server is gone): no later case can run."""


class Withdrawn(Exception):
    """A request taken back before it ran (its case was decided); ``stream`` passes over it."""


@dataclass(frozen=True)
class GenerationParams:
    """Greedy decoding; stops at EOS, after ``max_new_tokens``, or at a stop string, which ends the
    text. ``keep_special``: special tokens stay in the text (a thought's closing marker may be one).
    ``thinking_budget``: a reasoning model's thought is closed after this many tokens, then its
    answer gets ``max_new_tokens`` (a reading holds it: ``run.case.Reading``); ``by_engine``: the
    engine closes it (a server's own budget for a thought), not budget forcing."""

    max_new_tokens: int
    stop_strings: tuple[str, ...] = ()
    keep_special: bool = False
    thinking_budget: int | None = None
    by_engine: bool = False
    token_ids: bool = False  # the generated ids asked back: a second request continues from them

    def decides(self, prompt_sha256: str) -> list[object]:
        """What decides a generation of the prompt with these params, as the cache keys it: the
        budgets and stops; a thinking budget, and who holds it: the engine closes a thought its
        own way, and forcing continues from the ids it was given back."""
        found: list[object] = [self.max_new_tokens, list(self.stop_strings), prompt_sha256]
        if self.keep_special or self.thinking_budget is not None:
            found += [self.keep_special, self.thinking_budget]
        if self.by_engine:
            found.append("engine")
        elif self.thinking_budget is not None:
            found.append("ids")
        return found


@dataclass(frozen=True)
class Request:
    """One prompt, and which sample it is."""

    input_ids: tuple[int, ...]
    task: str = ""
    length: int = 0
    index: int = 0
    after_thought: tuple[
        int, ...
    ] = ()  # to follow the model's thought: the answer prefix held for it


@dataclass(frozen=True)
class Generation:
    text: str
    output_tokens: int
    finish_reason: str  # "stop" (EOS or stop string) or "length"
    thought: str | None = None  # what a server's reasoning parser split off; else it is in text
    forced: bool = False  # the budget closed the thought
    prompt_tokens: int | None = None  # prefilled in all it took (forcing takes two); None: its own
    pieces: tuple[str, ...] | None = None  # each generated token's text, where the engine gave it
    ids: tuple[int, ...] | None = None  # the generated token ids, where the engine gave them
    # the completion tokens a server's usage reported, checked (backends/replies.py); None: counted
    # here, from the ids or the text
    reported: int | None = None
    overrun: int = 0  # tokens past the request's budget the server gave, cut here
    # of the prompt, the tokens the engine served from its prefix cache, as it reported them
    # (checked: backends/replies.py); None: it reports none
    cached: int | None = None

    def prefilled(self, request: Request) -> int:
        return len(request.input_ids) if self.prompt_tokens is None else self.prompt_tokens


# Prompt tokens one case keeps in flight per replica: an engine's batch of 1M-token prompts would
# hold ~9 GB of ids in the session, and no engine batches more than its KV cache holds (a few
# 128K-token sequences on one GPU); 4M tokens is 32 of them.
TOKENS_IN_FLIGHT = 1 << 22


class Backend(Protocol):
    """Optional members: ``concurrency`` (default 1: requests in flight at once; above 1,
    ``generate`` must be thread-safe), ``batch_limit(prompt_tokens, max_new_tokens)`` (default 1:
    prompts per ``generate`` call), ``window_of`` (default ``model_window``), ``tokens_in_flight``
    (default no limit; one request always goes), ``withdraw(task, length)`` (the case is decided:
    its requests not yet started raise ``Withdrawn``), ``cases_at_once`` (default 1: cases in flight
    together), ``own_thinking_budget()`` (default False: whether its engine closes a reasoning
    model's thought at ``GenerationParams.thinking_budget`` itself, ``own_thinking_budget``),
    ``chat_api`` (default False: it takes messages, not token ids, ``takes_messages``),
    ``shares_prefixes`` (default False: its engine serves a prompt's prefix from what it computed
    for an earlier one; ``stream`` then orders what it sends by the prefixes they share) and
    ``close()`` (release processes, actors at the end of the run)."""

    name: str
    max_positions: int | None  # the model's position limit, None when unknown

    @property
    def tokenizer(self) -> RawTokenizer: ...

    def generate(
        self, requests: Sequence[Request], params: GenerationParams
    ) -> list[Generation]: ...

    def describe(self) -> dict[str, object]: ...


def takes_messages(backend: Backend) -> bool:
    """Whether the backend's server takes each prompt as a user message (a chat API): it renders
    the template itself, and cannot continue a prompt's ids (after a thought)."""
    return bool(getattr(backend, "chat_api", False))


def own_thinking_budget(backend: Backend) -> bool:
    """Whether the backend's engine closes a thought at a thinking budget itself (vLLM's
    ``thinking_token_budget``); else the budget is held by forcing it (an extra's technique)."""
    own = getattr(backend, "own_thinking_budget", None)
    return bool(own()) if own is not None else False


def stream(
    backend: Backend,
    requests: Iterable[Request],
    params: GenerationParams,
    held: Callable[[], int] = lambda: 0,
) -> Iterator[tuple[Request, Generation]]:
    """Each request with its generation as soon as it exists, within the backend's ``concurrency``
    and ``tokens_in_flight``; ``requests`` is pulled lazily in the caller's thread as a slot frees,
    so a caller building a 128K-token prompt per request holds only those in flight, and one (an
    engine that shares prefixes gets the first of them ordered by it, ``by_shared_prefix``).
    ``held()``: generations the caller cannot use yet (a sequential test's samples back before an
    earlier one) fill slots too, so a case that decides has at most ``concurrency`` left unused."""
    in_flight = max(1, int(getattr(backend, "concurrency", 1)))
    if in_flight == 1:
        yield from _batches(backend, iter(requests), params)
        return
    budget = getattr(backend, "tokens_in_flight", None)
    source = iter(requests)
    if getattr(backend, "shares_prefixes", False):
        source = chain(by_shared_prefix(source, in_flight, budget), source)
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


def by_shared_prefix(
    source: Iterator[Request], in_flight: int, budget: int | None
) -> list[Request]:
    """The first requests a case sends together, each after the one it shares the most leading ids
    with, from the one the others share most with: a haystack's samples by the depth of their
    first needle, deepest first. A prefix cache that holds fewer prompts than are sent then still
    holds, for each, the one before it, whose prefix it shares."""
    window: list[Request] = []
    tokens = 0
    while len(window) < in_flight and (budget is None or tokens < budget):
        if (r := next(source, None)) is None:
            break
        window.append(r)
        tokens += len(r.input_ids)
    if len(window) < 3:
        return window
    shared = common_prefixes([r.input_ids for r in window])
    left = set(range(len(window)))
    last = max(left, key=lambda i: (sum(shared[i]), -i))
    order = [last]
    left.remove(last)
    while left:
        last = max(left, key=lambda i: (shared[last][i], -i))
        order.append(last)
        left.remove(last)
    return [window[i] for i in order]


def common_prefixes(prompts: Sequence[Sequence[int]]) -> list[list[int]]:
    """How many leading ids each pair of prompts has in common (0 with itself)."""
    import numpy as np

    arrays = [np.asarray(p, dtype=np.int64) for p in prompts]
    found = [[0] * len(arrays) for _ in arrays]
    for i, a in enumerate(arrays):
        for j in range(i + 1, len(arrays)):
            b = arrays[j]
            n = min(len(a), len(b))
            differ = np.flatnonzero(a[:n] != b[:n])
            found[i][j] = found[j][i] = int(differ[0]) if len(differ) else n
    return found


def _batches(
    backend: Backend, source: Iterator[Request], params: GenerationParams
) -> Iterator[tuple[Request, Generation]]:
    """In order, ``batch_limit`` of the first at a time (one case, one length: little padding)."""
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
    """What ``max_positions`` is, for a case beyond it. ``forceable``: --force-lengths may run it
    (a server's max model length is enforced by the server: the fix is a restart)."""

    what: str
    fix: str
    forceable: bool = True


KV_FIELDS = (
    "num_attention_heads",
    "num_hidden_layers",
    "hidden_size",
    "head_dim",
    "num_key_value_heads",
)


def kv_bytes_per_token(config: Mapping[str, Any], element_size: int) -> int:
    """The KV cache one token of one sequence takes in every layer, by a config.json's fields (a
    multimodal model's ``text_config``)."""
    cfg = config.get("text_config") or config
    heads = int(cfg["num_attention_heads"])
    head_dim = int(cfg.get("head_dim") or int(cfg["hidden_size"]) // heads)
    kv_heads = int(cfg.get("num_key_value_heads") or heads)
    return 2 * int(cfg["num_hidden_layers"]) * kv_heads * head_dim * element_size


def model_window(limit: int) -> Window:
    fix = "pass --force-lengths to run it beyond the window anyway"
    return Window(f"the model's max_position_embeddings ({limit})", fix)


def window_of(backend: Backend) -> Window | None:
    limit = backend.max_positions
    return None if limit is None else getattr(backend, "window_of", model_window)(limit)
