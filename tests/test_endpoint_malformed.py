"""A server that answers wrongly is not down: ``--backend openai`` against a real loopback server
(fixtures/completions_server.py) through the real openai client, each field a reply is read on given
a value of the wrong type. The reply is asked for once more at once (a proxy may garble one), then
the run stops on one line naming the server, the field and the value's type; no backoff series runs
and the server is never counted as an outage. A server that is down still is one."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ctxgate.backends.base import BackendDown, GenerationParams, Request
from ctxgate.backends.endpoint_probe import EndpointError
from tests import test_endpoint_faults as faults
from tests.conftest import TINY

server, run_openai = faults.server, faults.run_openai  # the loopback server and the suite on it

WRONGLY = "does not answer as an OpenAI-compatible server; fix the server or the proxy before it"


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    import transformers

    return transformers.AutoTokenizer.from_pretrained(str(TINY))


def backend(url: str, tokenizer: Any, api: str = "completions", retries: int = 4) -> Any:
    """The backend on one server, four retries a request by default (an outage's series is five
    requests)."""
    from ctxgate.backends.endpoint import EndpointBackend
    from ctxgate.backends.servers import EndpointSettings

    settings = EndpointSettings((url,), "tiny", max_retries=retries, api=api)
    return EndpointBackend(settings, tokenizer, str(TINY))


def one_line(exc: pytest.ExceptionInfo[BaseException], url: str, detail: str) -> str:
    line = str(exc.value)
    assert "\n" not in line and line.startswith(f"{url} answered "), line
    assert detail in line and WRONGLY in line and "--base-url" in line, line
    assert "down" not in line and "reachable" not in line, line  # not an outage
    return line


def generate(b: Any) -> list[Any]:
    return b.generate([Request((1, 2, 3), "vt", 1024)], GenerationParams(4))


# (the API, the completion scripted for every request, what the line names)
REPLIES = {
    "completion text": (
        "completions",
        {"choices": [{"text": 5}]},
        "(the completion: choices[0].text: Input should be a valid string, not 5 (int))",
    ),
    "completion text null": (
        "completions",
        {"choices": [{"text": None, "finish_reason": "stop"}]},
        "choices[0].text: Input should be a valid string, not null",
    ),
    "chat content": (
        "chat",
        {"choices": [{"message": {"content": 5}}]},
        "(the chat completion: choices[0].message.content: Input should be a valid string, "
        "not 5 (int))",
    ),
    "reasoning": (
        "chat",
        {"choices": [{"message": {"content": "42", "reasoning": 7.5}}]},
        "choices[0].message.reasoning: Input should be a valid string, not 7.5 (float)",
    ),
    "reasoning_content": (
        "chat",
        {"choices": [{"message": {"content": "42", "reasoning_content": ["a"]}}]},
        "choices[0].message.reasoning_content: Input should be a valid string, not ['a'] (list)",
    ),
    "usage completion_tokens": (
        "completions",
        {"usage": {"prompt_tokens": 3, "completion_tokens": True}},
        "usage.completion_tokens: Input should be a valid integer, not True (bool)",
    ),
    "usage prompt_tokens": (
        "completions",
        {"usage": {"prompt_tokens": "3", "completion_tokens": 1}},
        "usage.prompt_tokens: Input should be a valid integer, not '3' (str)",
    ),
    "missing choices": (
        "completions",
        {"body": json.dumps({"id": "cmpl-1", "object": "text_completion"})},
        "(the completion: choices: Field required)",
    ),
    "empty choices": ("completions", {"choices": []}, "(the completion has no choices)"),
    "chat choice without a message": (
        "chat",
        {"choices": [{"text": "42"}]},
        "(the chat completion: choices[0].message: Field required)",
    ),
    "not JSON": (
        "completions",
        {"body": "<html>502 Bad Gateway</html>"},
        "(the completion: Invalid JSON: expected value at line 1 column 1)",
    ),
}


@pytest.mark.parametrize("member", REPLIES)
def test_a_malformed_reply_stops_at_once_on_one_line(server, tokenizer, member):
    api, reply, detail = REPLIES[member]
    url, script, stats = server
    script({"completions": [reply] * 20})
    b = backend(url, tokenizer, api)
    before = stats()["completions"]
    with pytest.raises(EndpointError) as exc:
        generate(b)
    one_line(exc, url, detail)
    assert stats()["completions"] - before == 2  # one quick retry, no series of five
    assert not b.replicas[0].drops and b.replicas[0].failures == 0  # no outage counted
    with pytest.raises(EndpointError) as again:  # every later request: the same line, unsent
        generate(b)
    assert str(again.value) == str(exc.value) and stats()["completions"] - before == 2


def test_the_model_list_the_probe_reads_is_named(server, tokenizer):
    url, script, stats = server
    script({"models": [5]})
    with pytest.raises(EndpointError) as exc:
        backend(url, tokenizer)
    line = one_line(exc, url, "/models: data[0].id: Input should be a valid string, not 5 (int)")
    assert "answered the model list wrongly" in line
    assert len(stats()["authorization"]["/v1/models"]) == 2


def test_the_model_lists_max_model_len_is_named(server, tokenizer):
    url, script, stats = server
    script({"max_model_len": "8192"})
    with pytest.raises(EndpointError) as exc:
        backend(url, tokenizer)
    one_line(exc, url, "data[0].max_model_len: Input should be a valid integer, not '8192' (str)")
    assert len(stats()["authorization"]["/v1/models"]) == 2


def test_the_probes_prompt_token_count_is_named(server, tokenizer):
    """A server without /tokenize is checked by the probe's prompt-token count."""
    url, script, stats = server
    script({"tokenize_status": 404, "completions": [{"usage": {"prompt_tokens": 7.0}}] * 20})
    with pytest.raises(EndpointError) as exc:
        backend(url, tokenizer)
    line = one_line(exc, url, "usage.prompt_tokens: Input should be a valid integer, not 7.0")
    assert "answered the probe wrongly (the probe's completion: " in line
    assert stats()["completions"] == 2


def test_one_garbled_reply_is_asked_for_again_at_once(server, tokenizer):
    url, script, stats = server
    b = backend(url, tokenizer)
    script({"completions": [{"choices": [{"text": 5}]}]})
    before = stats()["completions"]
    assert [g.text for g in generate(b)] == ["42"]
    assert stats()["completions"] - before == 2 and b.replicas[0].answered == 1


def test_the_quick_retry_waits_for_nothing_and_a_second_malformed_reply_ends_the_call():
    """The rule itself (ctxgate/retrying.py): one retry at once, within the count; an outage's
    failures still back off."""
    import openai

    from ctxgate.retrying import Exhausted, Malformed, call_with_retries

    sleeps: list[float] = []
    replies = iter([Malformed("r: text: Input should be a valid string, not 5 (int)")] * 9)

    def call() -> None:
        raise next(replies)

    with pytest.raises(Exhausted) as exc:
        call_with_retries(call, openai, max_retries=4, time_limit_s=60, sleep=sleeps.append)
    assert exc.value.malformed == "r: text: Input should be a valid string, not 5 (int)"
    assert sleeps == [0.0] and not exc.value.timed_out
    with pytest.raises(Exhausted) as exc:  # no retries asked for: none
        call_with_retries(call, openai, max_retries=0, time_limit_s=60, sleep=sleeps.append)
    assert exc.value.malformed and sleeps == [0.0]


def test_a_server_that_is_down_keeps_the_outage_rule(server, tokenizer, monkeypatch):
    """503s to every request: each series of retries runs out (two requests, backing off), the
    server is dropped and re-probed, and after three series it is given up, as before."""
    from ctxgate.backends import endpoint
    from ctxgate.backends.servers import MAX_PROBES

    monkeypatch.setattr(endpoint, "REPROBE_S", 0.01)
    url, script, stats = server
    b = backend(url, tokenizer, retries=1)
    script({"completions": [{"status": 503}] * 100})
    before = stats()["completions"]
    with pytest.raises(BackendDown) as exc:
        generate(b)
    assert str(exc.value).startswith("every server is down: ")
    assert f"given up after {MAX_PROBES} series of retries failed in a row" in str(exc.value)
    assert stats()["completions"] - before == MAX_PROBES * 2
    assert b.replicas[0].failures == MAX_PROBES


def test_a_whole_run_ends_on_the_one_line_and_the_gate_fails(run_openai, server, pytester):
    """Two cases of three samples, one request at a time: the first request's two replies stop the
    run; no other request is sent, and each case fails on the line."""
    url, script, stats = server
    script({"completions": [{"choices": [{"text": 5}]}] * 20})
    result = run_openai(
        "-k", "vt or niah_single_1", "--lengths", "1k", "--samples", "3", "--no-cache",
        "--report", "r.json", "--request-retries", "4", "--concurrency", "1",
    )  # fmt: skip
    out = result.stdout.str() + result.stderr.str()
    assert result.ret != 0 and "Traceback" not in out
    line = f"{url} answered a completion wrongly (the completion: choices[0].text: Input should "
    line += "be a valid string, not 5 (int)): it is up but " + WRONGLY
    assert f"vt at 1024: {line}" in out and f"niah_single_1 at 1024: {line}" in out, out[-3000:]
    assert "every server is down" not in out and "reachable" not in out
    assert stats()["completions"] == 2  # the probe has /tokenize: both were the first sample's
    assert "Gate cases: FAIL - 2 of 2 selected cases produced no score" in out
    report = json.loads((pytester.path / "r.json").read_text())
    assert [c["verdict"] for c in report["cases"]] == ["error", "error"]


def test_a_whole_run_on_a_wrong_model_list_stops_before_any_case(run_openai, server):
    url, script, _ = server
    script({"models": [5]})
    result = run_openai("-k", "vt or niah_single_1", "--lengths", "1k", "--no-cache")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret != 0 and "Traceback" not in out
    assert f"{url} answered the model list wrongly (/models: data[0].id: " in out, out[-3000:]
    assert "passed" not in out.splitlines()[-1]
