"""``--backend openai`` against a server that misbehaves (fixtures/completions_server.py, a real
HTTP server playing scripted faults): each fault is one line naming the server and the fix, and only
transient ones are retried."""

from __future__ import annotations

import json
import sqlite3
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ctxgate.tasks.registry import all_tasks
from tests.conftest import TINY


@pytest.fixture
def server() -> Iterator[
    tuple[str, Callable[[dict[str, Any]], None], Callable[[], dict[str, int]]]
]:
    from fixtures.completions_server import start

    url, httpd = start()
    # a request its client gave up on (a timeout) fails to write its reply: that is the client's
    # doing, and the suite runs in this process, whose stderr its output is read from
    httpd.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
    root = url.rsplit("/v1", 1)[0]

    def script(plan: dict[str, Any]) -> None:
        req = urllib.request.Request(
            root + "/_script",
            data=json.dumps(plan).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        urllib.request.urlopen(req).read()

    def stats() -> dict[str, int]:
        with urllib.request.urlopen(root + "/_stats") as resp:
            return json.loads(resp.read())

    yield url, script, stats
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def run_openai(real_suite, server, monkeypatch):
    from ctxgate.backends import endpoint

    url = server[0]
    # what CTXGATE_REPROBE_S=0.5 sets when the suite is imported (it is already, in this process)
    monkeypatch.setattr(endpoint, "REPROBE_S", 0.5)

    def run(*args: str, model: str = "tiny") -> pytest.RunResult:
        return real_suite(
            "--backend",
            "openai",
            "--base-url",
            url,
            "--tokenizer",
            str(TINY),
            "--served-model",
            "tiny",
            "--request-retries",
            "1",
            *args,
            model=Path(model),
        )

    return run


# one case, niah_single_1 at 512, its outputs never cached (each test scripts its own replies)
CASE = ("-k", "niah_single_1", "--lengths", "512", "--no-cache")


def _out(result: pytest.RunResult) -> str:
    out = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in out and "IndexError" not in out, out[-3000:]
    return out


def test_a_completion_without_choices_is_one_line(run_openai, server):
    server[1]({"completions": [{"choices": []}] * 20})
    out = _out(run_openai("-k", "vt", "--lengths", "1k", "--samples", "2", "--no-cache"))
    assert "the completion has no choices" in out


def test_a_server_that_ignores_a_thinking_budget_gets_budget_forcing(run_openai, server, tmp_path):
    """The probe: a server that takes a negative thinking_token_budget does not read the field (it
    takes anything), so the suite forces the budget itself."""
    report = tmp_path / "r.json"
    args = ("--think-end", "</think>", "--thinking-budget", "8", "--report", str(report))
    _out(run_openai("-k", "vt", "--lengths", "1k", "--samples", "1", "--no-cache", *args))
    assert json.loads(report.read_text())["run"]["thinking"]["budget_by"] == "forcing"


def test_a_server_that_lists_no_model_is_told_it_is_loading(run_openai, server):
    server[1]({"models": []})
    out = _out(run_openai("-k", "vt", "--lengths", "1k", "--samples", "1", "--no-cache"))
    assert (
        "lists no model at /models" in out
        and "--served-model" not in out.split("lists no model")[1][:200]
    )


def test_a_4xx_is_refused_at_once_and_not_retried(run_openai, server):
    server[1]({"completions": [{"status": 413}]})
    before = server[2]()["completions"]
    out = _out(run_openai("-k", "vt", "--lengths", "1k", "--samples", "1", "--no-cache"))
    assert "refused a completion (413" in out
    assert (
        server[2]()["completions"] - before == 1
    )  # one request: a 413 does not get better by asking again


def test_a_replica_dropped_by_a_burst_of_503s_is_tried_again(run_openai, server):
    """A burst of 503s longer than the retries (a server restarting) drops the only replica; the
    request waits for its re-probe (CTXGATE_REPROBE_S later) instead of failing this case and every
    later one."""
    server[1](
        {"completions": [{"status": 503}] * 2}
    )  # --request-retries 1: two requests, the series is spent
    before = server[2]()["completions"]
    result = run_openai(
        "-k", "vt or niah_single_1", "--lengths", "1k", "--samples", "1", "--no-cache"
    )
    _out(result)
    result.assert_outcomes(passed=2, deselected=len(all_tasks()) - 2)
    assert server[2]()["completions"] - before == 4  # two 503s, then one completion per case


def test_a_dead_server_is_given_up_after_its_probes(run_openai, server):
    server[1]({"completions": [{"status": 503}] * 100})
    result = run_openai("-k", "vt", "--lengths", "1k", "--samples", "1", "--no-cache")
    out = _out(result)
    assert result.ret != 0 and "given up after 3 series of retries failed in a row over" in out


def test_an_outage_under_the_default_concurrency_is_one_failure_and_the_run_finishes(
    run_openai, server
):
    """A server restarting (503 for 10 s) while the default 8 requests are in flight: they count
    as one failure of the server, not eight, so it is tried again on the documented schedule
    (re-probed CTXGATE_REPROBE_S after each failed series of retries) and every sample is
    answered."""
    server[1]({"outage": {"after": 8, "seconds": 10}, "delay_s": 0.05})
    result = run_openai(
        "-k", "niah_single_1", "--lengths", "1k", "--samples", "40", "--no-cache",
        "--request-retries", "4",
    )  # fmt: skip
    out = _out(result)
    result.assert_outcomes(passed=1, deselected=len(all_tasks()) - 1)
    assert server[2]()["answered"] == 40 and "given up" not in out
    assert "answered 40, dropped 1 time(s) (last: " in out  # the 8 in flight: one failure


def test_a_reply_of_the_wrong_types_is_one_line_naming_the_server_and_the_field(run_openai, server):
    server[1]({"completions": [{"choices": [{"text": 5}]}] * 20})
    out = _out(run_openai("-k", "vt", "--lengths", "1k", "--samples", "1", "--no-cache"))
    assert "AttributeError" not in out
    assert "the completion: choices[0].text: Input should be a valid string, not 5 (int)" in out
    assert f"{server[0]} answered a completion wrongly" in out  # up, not down: no outage


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
FIELDS = ("choices", "text", "message", "content", "usage", "prompt_tokens", "data", "id", "tokens")
# replies shaped like the real ones, each field anything
SHAPED = st.recursive(
    JSON,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from(FIELDS), inner),
    max_leaves=16,
)
BODIES = (
    SHAPED.map(json.dumps)
    | st.binary(max_size=40)
    | st.integers(1, 5000).map(lambda depth: "[" * depth + "]" * depth)
    | st.integers(1, 5000).map(lambda depth: '{"choices": ' * depth)
)


@given(BODIES)
@example(b"")
@example('{"choices": [{"text": null}]}')
@example('{"choices": [{"text": "ok", "finish_reason": "stop"}], "usage": {"prompt_tokens": true}}')
@example('{"data": [{"id": "m", "max_model_len": 8192.5}]}')
@example(b"\xff\xfe{}")
def test_every_reply_is_read_into_its_record_or_one_designed_line(body):
    """Structured garbage (nesting, types, encodings, sizes) into the one reader, as every kind
    of reply: a record of exactly the declared types, or ``Malformed`` in one line."""
    from ctxgate import retrying

    kinds = (retrying.Completion, retrying.ChatCompletion, retrying.ModelList, retrying.Version)
    for kind in (*kinds, retrying.TokenIds):
        try:
            found = retrying.read_reply(kind, body, "the reply")
        except retrying.Malformed as exc:
            assert str(exc).startswith("the reply") and "\n" not in str(exc)
            continue
        assert isinstance(found, kind)
        if isinstance(found, retrying.Completion):
            assert found.choices and all(isinstance(c.text, str) for c in found.choices)


def test_a_failing_tokenize_is_refused_not_downgraded(run_openai, server):
    server[1]({"tokenize_status": 401})
    out = _out(run_openai("-k", "vt", "--lengths", "1k", "--samples", "1", "--no-cache"))
    assert "/tokenize answered 401" in out


def test_a_length_past_the_servers_max_model_len_names_it_and_force_does_not_pass_it(
    run_openai, server
):
    """The server would refuse the request: --force-lengths (for positions past the model's) cannot
    help, so the case is a window error naming the server's limit and how to raise it."""
    server[1]({"max_model_len": 1024})
    result = run_openai(
        "-k",
        "niah_single_1",
        "--lengths",
        "1k,2k",
        "--samples",
        "1",
        "--no-cache",
        "--force-lengths",
    )
    out = _out(result)
    result.assert_outcomes(passed=1, errors=1, deselected=2 * len(all_tasks()) - 2)
    assert (
        "niah_single_1 at 2048: the length exceeds the server's max model length (1024, as "
        "http://127.0.0.1" in out
    )
    assert "restart the server with a longer one (vLLM: --max-model-len" in out


def test_request_timeouts_grow_with_the_prompt_past_128k(run_openai, server):
    """The read timeout each request carries (the openai client's own header): --request-timeout up
    to 128K tokens, in proportion beyond. One request in flight: none is queued behind another,
    whose prompt its time limit would count too."""
    server[1]({"max_model_len": 300_000})
    lengths = "1k,256k"
    result = run_openai(
        "-k", "niah_single_1", "--lengths", lengths, "--samples", "1", "--no-cache",
        "--request-timeout", "100",
        "--concurrency", "1",
    )  # fmt: skip
    _out(result)
    result.assert_outcomes(passed=2, deselected=2 * len(all_tasks()) - 2)
    sent = {tokens: timeout for tokens, timeout in server[2]()["requests"]}
    short, long = min(sent), max(sent)
    assert short <= 1024 and sent[short] == 100
    assert long > 250_000 and sent[long] == pytest.approx(100 * long / 131072)


def test_a_server_too_slow_for_the_timeout_names_the_flag(run_openai, server):
    server[1]({"completions": [{"delay_s": 3}] * 20})
    result = run_openai(
        "-k", "vt", "--lengths", "1k", "--samples", "1", "--no-cache", "--request-timeout", "1",
        "--request-retries", "0",
    )  # fmt: skip
    out = _out(result)
    assert result.ret != 0
    assert "each request timed out after 1 s: raise --request-timeout (it is per 128K tokens" in out


def test_a_server_whose_weights_cannot_be_identified_is_not_cached(run_openai, pytester):
    result = run_openai(
        "-k",
        "vt",
        "--lengths",
        "1k",
        "--samples",
        "2",
        "--cache-dir",
        "cache",
        "--report",
        "out/r.json",
    )
    assert result.ret == 0
    report = json.loads((pytester.path / "out" / "r.json").read_text())
    assert "cannot be identified" in report["run"]["cache"]["disabled"]
    assert (
        not (pytester.path / "cache" / "generations.sqlite").exists()
        or not sqlite3.connect(pytester.path / "cache" / "generations.sqlite")
        .execute("SELECT COUNT(*) FROM generations")
        .fetchone()[0]
    )
    cached = run_openai(
        "-k", "vt", "--lengths", "1k", "--samples", "2", "--cache-dir", "cache", model=str(TINY)
    )
    assert cached.ret == 0
    rows = (
        sqlite3.connect(pytester.path / "cache" / "generations.sqlite")
        .execute("SELECT COUNT(*) FROM generations")
        .fetchone()[0]
    )
    assert rows == 2  # with the served checkpoint's folder named, the weights are known


def test_every_engine_setting_is_in_the_cache_namespace(server):
    import transformers

    from ctxgate.backends.endpoint import EndpointBackend
    from ctxgate.backends.fingerprint import checkpoint_fingerprint
    from ctxgate.backends.servers import EndpointSettings, Known
    from ctxgate.run.cache import namespace_for

    tok = transformers.AutoTokenizer.from_pretrained(str(TINY))
    local = checkpoint_fingerprint(str(TINY))

    def namespace(engine: dict[str, Any], fingerprint: dict[str, Any] | None = local) -> Any:
        known = Known("vllm", local_fingerprint=fingerprint, engine=engine)
        backend = EndpointBackend(EndpointSettings((server[0],), "tiny"), tok, str(TINY), known)
        return namespace_for(backend.fingerprint["sha256"], backend)

    plain = {"dtype": "bfloat16", "tensor_parallel": 1, "vllm_args": []}
    seen = [
        namespace(plain),
        namespace({**plain, "dtype": "float16"}),
        namespace({**plain, "vllm_args": ["--quantization=fp8"]}),
        namespace({**plain, "vllm_args": ["--kv-cache-dtype=fp8"]}),
        namespace({**plain, "tensor_parallel": 2}),
    ]
    assert len({json.dumps(n, sort_keys=True) for n in seen}) == len(seen)
    assert namespace(plain, None) is None  # the served weights unknown: no cache at all


def test_a_vllm_window_is_never_forced_past_its_rope_table():
    """vLLM builds its RoPE table with exactly max_position_embeddings rows: --force-lengths cannot
    pass it, the fix is to extend the positions (measured: garbage at 32K and a segfault at 256K on
    the tiny checkpoint)."""
    from types import SimpleNamespace

    from ctxgate.backends.endpoint import EndpointBackend

    served = SimpleNamespace(name="vllm", replicas=[])
    window = EndpointBackend.window_of(served, 8192)  # type: ignore[arg-type]
    assert not window.forceable
    assert window.what == "the model's max_position_embeddings (8192)"
    assert "--model-override max_position_embeddings=N or --rope-scaling JSON" in window.fix


def test_a_reply_past_its_budget_is_cut_to_it_and_named(run_openai, server, tmp_path):
    """A server that ignores max_tokens: a 5,000-token text (a needle anywhere in it would be
    credited if scored whole) is cut to the request's budget, counted here, and named."""
    _, script, _ = server
    long = {"index": 0, "text": "4242 " * 2500, "finish_reason": "stop"}
    usage = {"prompt_tokens": 1, "completion_tokens": 5000, "total_tokens": 5001}
    script({"completions": [{"choices": [long], "usage": usage}] * 2})
    report = tmp_path / "r.json"
    result = run_openai(*CASE, "--samples", "2", "--report", str(report))
    assert result.ret == 0, _out(result)[-3000:]
    budget = next(t for t in all_tasks() if t.name == "niah_single_1").tokens_to_generate
    (case,) = json.loads(report.read_text())["cases"]
    assert case["cost"]["overruns"] == 2 and case["cost"]["generated_tokens"] <= 2 * budget
    assert case["cost"]["reported_tokens"] == 0  # counted here: the server's count is of its text
    assert "2 replies ran past their budget and were cut to it" in result.stdout.str()
    lines = tmp_path.joinpath("r.predictions.jsonl").read_text().splitlines()
    rows = [json.loads(x) for x in lines if x]
    assert all(r["finish_reason"] == "length" and r["output_tokens"] <= budget for r in rows)


@pytest.mark.parametrize(
    ("usage", "said"),
    [
        (-1, "reported -1 completion tokens: a count below 0"),
        (10**6, "reported 1000000 completion tokens for a request allowed 128"),
        (0, "completion tokens for a text of"),
    ],
    ids=["negative", "over-the-budget", "fewer-than-the-text"],
)
def test_a_usage_that_cannot_be_right_is_refused_naming_the_server(run_openai, server, usage, said):
    url, script, _ = server
    text = {"index": 0, "text": "the number is 4242 and nothing more", "finish_reason": "stop"}
    counts = {"prompt_tokens": 1, "completion_tokens": usage, "total_tokens": 1}
    script({"completions": [{"choices": [text], "usage": counts}] * 4})
    result = run_openai(*CASE, "--samples", "2")
    assert result.ret == 1
    line = next(x for x in result.stdout.lines if said in x)
    assert url in line and "the server's usage cannot be right" in line
