"""What a session keeps in flight: requests and prompt tokens per stream, the engine's batch for
``--backend vllm``, and requests a decided case takes back before a server sees them."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxgate.backends.base import (
    Generation,
    GenerationParams,
    Request,
    Withdrawn,
    by_shared_prefix,
    stream,
)
from ctxgate.backends.vllm_server import ENGINE_BATCH, EngineSpec, engine_batch
from ctxgate_plugins.engine import worker_share

TINY = Path(__file__).resolve().parent.parent / "fixtures" / "tiny-llama-niah"


class Watching:
    """Answers each prompt with its length after a pause, noting the requests and prompt tokens in
    flight whenever one starts (a plumbing backend: what is under test is the stream around it)."""

    name = "watching"
    max_positions = None
    tokenizer = None

    def __init__(self, concurrency: int, budget: int | None) -> None:
        self.concurrency = concurrency
        self.tokens_in_flight = budget
        self._lock = threading.Lock()
        self._now = (0, 0)
        self.seen: list[tuple[int, int]] = []

    def generate(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        [r] = requests
        with self._lock:
            self._now = (self._now[0] + 1, self._now[1] + len(r.input_ids))
            self.seen.append(self._now)
        time.sleep(0.001)
        with self._lock:
            self._now = (self._now[0] - 1, self._now[1] - len(r.input_ids))
        return [Generation(str(len(r.input_ids)), 1, "stop")]

    def describe(self) -> dict[str, object]:
        return {}


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 200), min_size=1, max_size=40),
    concurrency=st.integers(2, 8),
    budget=st.one_of(st.none(), st.integers(1, 400)),
)
def test_a_stream_keeps_its_requests_and_tokens_in_flight_within_the_backends_limits(
    sizes, concurrency, budget
):
    """Every prompt from one token up, every budget down to one token (below a single prompt: that
    prompt still goes, alone): each request is answered once, never more than ``concurrency`` at
    once, and more than one at once only within the budget."""
    backend = Watching(concurrency, budget)
    requests = [Request(tuple(range(n)), index=i) for i, n in enumerate(sizes)]
    answered = Counter(r.index for r, _ in stream(backend, requests, GenerationParams(1)))
    assert answered == Counter(range(len(sizes)))
    for count, tokens in backend.seen:
        assert count <= concurrency
        assert count == 1 or budget is None or tokens <= budget


def test_a_stream_pulls_no_prompt_past_the_one_waiting_for_tokens():
    """The prompts are built lazily: with a budget of one prompt, the stream holds the one in flight
    and at most one more."""
    pulled: list[int] = []
    backend = Watching(8, 100)

    def requests():
        for i in range(6):
            pulled.append(i)
            yield Request(tuple(range(100)), index=i)

    got = stream(backend, requests(), GenerationParams(1))
    next(got)
    assert len(pulled) <= 2
    assert len(list(got)) == 5
    assert max(count for count, _ in backend.seen) == 1


def test_a_stream_counts_what_its_caller_holds_unused_against_its_slots():
    """A sequential case uses its samples in index order. While the first is slow, what the other
    slot answers waits with the case and fills that slot: however the replicas' speeds differ, a
    case that decides has at most ``concurrency`` generations it does not use."""
    release = threading.Event()
    started_while_slow: list[int] = []

    class SlowFirst(Watching):
        def generate(self, requests, params):
            if requests[0].index == 0:
                release.wait(30)
            elif not release.is_set():
                started_while_slow.append(requests[0].index)
            return super().generate(requests, params)

    threading.Timer(0.5, release.set).start()
    unused: list[int] = []
    used: list[int] = []
    requests = (Request((1, 2, 3), index=i) for i in range(6))
    for r, _ in stream(SlowFirst(2, None), requests, GenerationParams(1), lambda: len(unused)):
        unused.append(r.index)
        while len(used) in unused:
            unused.remove(len(used))
            used.append(len(used))
    assert used == list(range(6))
    assert len(started_while_slow) <= 1


class Sharing(Watching):
    """An engine with a prefix cache: the stream orders what it sends by the prefixes shared."""

    shares_prefixes = True


def _shared(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


haystack_prompts = st.tuples(
    st.lists(st.integers(0, 3), min_size=0, max_size=60),
    st.lists(
        st.tuples(st.integers(0, 60), st.lists(st.integers(0, 3), min_size=0, max_size=4)),
        min_size=1,
        max_size=12,
    ),
).map(lambda h: [tuple(h[0][:d] + needle + h[0][d:]) for d, needle in h[1]])


@settings(max_examples=100, deadline=None)
@given(
    prompts=haystack_prompts,
    concurrency=st.integers(2, 6),
    budget=st.one_of(st.none(), st.integers(1, 300)),
)
def test_a_case_sends_its_first_requests_each_after_the_one_it_shares_most_with(
    prompts, concurrency, budget
):
    """Prompts of a haystack with a needle at some depth, from the empty prompt up (any ids: a
    needle may equal the haystack it goes into): of those a case sends together, the first is one
    the others share the most leading ids with, and each next one of those left that shares the
    most with the one before it; the rest follow as built; every request is answered once, within
    the backend's limits."""
    requests = [Request(p, index=i) for i, p in enumerate(prompts)]
    source = iter(requests)
    ordered = by_shared_prefix(source, concurrency, budget)
    window, tokens = [], 0
    for r in requests:  # what the stream pulls before it sends anything
        if len(window) == concurrency or (budget is not None and tokens >= budget):
            break
        window.append(r)
        tokens += len(r.input_ids)
    assert sorted(r.index for r in ordered) == [r.index for r in window]
    assert [r.index for r in source] == [r.index for r in requests[len(window) :]]
    if len(window) > 2:
        ids = [r.input_ids for r in window]
        most = max(sum(_shared(a, b) for b in ids) - len(a) for a in ids)
        first = ordered[0].input_ids
        assert sum(_shared(first, b) for b in ids) - len(first) == most
        for k in range(1, len(ordered)):
            best = max(_shared(ordered[k - 1].input_ids, r.input_ids) for r in ordered[k:])
            assert _shared(ordered[k - 1].input_ids, ordered[k].input_ids) == best
    backend = Sharing(concurrency, budget)
    answered = Counter(r.index for r, _ in stream(backend, requests, GenerationParams(1)))
    assert answered == Counter(range(len(prompts)))
    for count, in_flight in backend.seen:
        assert count <= concurrency
        assert count == 1 or budget is None or in_flight <= budget


@pytest.mark.parametrize(
    ("args", "batch"),
    [
        ((), ENGINE_BATCH),
        (("--max-num-seqs=64",), 64),
        (("--max-num-seqs", "32"), 32),
        (("--max-num-seqs=64", "--max-num-seqs", "16"), 16),  # the last one, as vLLM reads them
        (("--max-model-len=64",), ENGINE_BATCH),
    ],
)
def test_the_engines_batch_is_the_one_its_server_is_started_with(args, batch):
    assert engine_batch(args) == batch
    command = EngineSpec("python", "ckpt", 4096, extra_args=args).command(8000)
    sets_it = [a for a in args if a.startswith("--max-num-seqs")]
    if sets_it:  # the user's arguments, unchanged and alone
        assert [a for a in command if a.startswith("--max-num-seqs")] == sets_it
    else:
        assert command[command.index("--max-num-seqs") + 1] == str(ENGINE_BATCH)
        assert command.count("--max-num-seqs") == 1


@pytest.mark.parametrize("value", ["abc", "0", "-3", "", "2.5"])
def test_a_bad_batch_is_named_with_its_fix(value):
    with pytest.raises(
        ValueError, match=f"--max-num-seqs {value!r} is not a positive whole number: e.g."
    ):
        engine_batch((f"--max-num-seqs={value}",))


@pytest.mark.parametrize(
    ("workers", "servers"), [(w, s) for w in range(1, 10) for s in range(1, 5)]
)
def test_the_workers_on_a_server_together_fill_its_batch_and_no_more_than_one_request_each_over(
    workers, servers
):
    for batch in (1, 7, 256):
        for server in range(min(workers, servers)):
            shares = [
                worker_share(batch, i, workers, servers) for i in range(server, workers, servers)
            ]
            assert sum(shares) >= batch and all(s >= 1 for s in shares)
            assert sum(shares) < batch + len(shares)


def test_the_vllm_concurrency_defaults_to_the_engines_batch(pytester: pytest.Pytester):
    """Resolved once while the options are read: the engine's batch for --backend vllm (or
    --max-num-seqs), --backend openai's own default otherwise, and a bad --max-num-seqs is one usage
    line."""
    pytester.makeconftest(
        """
from ctxgate_plugins.options import PLAN_KEY

def pytest_collection_finish(session):
    print("CONCURRENCY", session.config.stash[PLAN_KEY].engine.concurrency)
"""
    )
    pytester.makepyfile("def test_x(): pass")
    model = f"--model={TINY}"
    for extra, expected in [
        ((), ENGINE_BATCH),
        (("--vllm-arg=--max-num-seqs=48",), 48),
        (("--concurrency", "5"), 5),
    ]:
        result = pytester.runpytest(model, "--backend", "vllm", "--collect-only", *extra)
        assert f"CONCURRENCY {expected}" in result.stdout.str(), result.stdout.str()[-2000:]
    bad = pytester.runpytest(
        model, "--backend", "vllm", "--collect-only", "--vllm-arg=--max-num-seqs=lots"
    )
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "--vllm-arg --max-num-seqs 'lots' is not a positive whole number: e.g. --max-num-seqs=256"
        in (bad.stderr.str())
    )


def test_a_decided_case_takes_back_its_requests_still_waiting_for_a_server():
    """A real local HTTP server, one request at a time: of six requests sent together, the ones
    still waiting when their case is decided never reach the server; another case's requests still
    go."""
    import json
    import urllib.request

    import transformers

    from ctxgate.backends.endpoint import EndpointBackend
    from ctxgate.backends.servers import EndpointSettings
    from fixtures.completions_server import start

    url, httpd = start()
    try:
        plan = json.dumps({"delay_s": 2.0}).encode()
        urllib.request.urlopen(
            urllib.request.Request(url.removesuffix("/v1") + "/_script", data=plan), timeout=10
        )
        tok = transformers.AutoTokenizer.from_pretrained(str(TINY))
        backend = EndpointBackend(EndpointSettings((url,), "tiny", concurrency=1), tok, str(TINY))
        outcomes: list[str] = []

        def send(task: str, index: int) -> None:
            try:
                backend.generate([Request((1, 2, 3), task, 1024, index)], GenerationParams(4))
                outcomes.append(f"{task} answered")
            except Withdrawn:
                outcomes.append(f"{task} withdrawn")

        threads = [threading.Thread(target=send, args=("decided", i)) for i in range(6)]
        for t in threads:
            t.start()
        stats = httpd.RequestHandlerClass.state.stats
        deadline = time.monotonic() + 30
        while (
            stats["completions"] < 1 and time.monotonic() < deadline
        ):  # one is at the server, five wait for it
            time.sleep(0.01)
        assert (
            stats["completions"] == 1 and stats["answered"] == 0
        )  # withdrawn while the first is still answered
        backend.withdraw("decided", 1024)
        threads.append(threading.Thread(target=send, args=("open", 0)))
        threads[-1].start()
        for t in threads:
            t.join(timeout=30)
        counts = Counter(outcomes)
        assert counts["decided answered"] == 1 and counts["decided withdrawn"] == 5, counts
        assert counts["open answered"] == 1
        assert httpd.RequestHandlerClass.state.stats["answered"] == 2
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_requests_time_limit_counts_the_prompts_sent_to_its_server_before_it():
    """Two 100K-token prompts sent together to one real local server: the first has
    --request-timeout, the second, queued in the engine behind the first, has it for the 200K tokens
    the server works through before answering."""
    import json
    import urllib.request

    import transformers

    from ctxgate.backends.endpoint import EndpointBackend
    from ctxgate.backends.servers import TIMEOUT_UNIT_TOKENS, EndpointSettings
    from fixtures.completions_server import start

    url, httpd = start()
    try:
        plan = json.dumps({"delay_s": 3.0, "max_model_len": 300_000}).encode()
        urllib.request.urlopen(
            urllib.request.Request(url.removesuffix("/v1") + "/_script", data=plan), timeout=10
        )
        tok = transformers.AutoTokenizer.from_pretrained(str(TINY))
        backend = EndpointBackend(
            EndpointSettings((url,), "tiny", concurrency=2, timeout_s=100.0), tok, str(TINY)
        )
        prompt = tuple([5] * 100_000)
        requests = [Request(prompt, "vt", 131072, i) for i in range(2)]
        assert len(list(stream(backend, requests, GenerationParams(4)))) == 2
        limits = sorted(timeout for _, timeout in httpd.RequestHandlerClass.state.stats["requests"])
        assert limits == [
            pytest.approx(100.0),
            pytest.approx(100.0 * 200_000 / TIMEOUT_UNIT_TOKENS),
        ]
    finally:
        httpd.shutdown()
        httpd.server_close()
