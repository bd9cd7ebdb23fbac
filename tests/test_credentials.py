"""Credentials never leave their origin: every client ctxgate sends a key with (the endpoint, its
probe, the judge) goes through one door (``ctxgate.retrying.http_client``), which refuses a redirect
to another origin in one line naming both; a key variable named on purpose must hold a key; a server
URL is checked when the option is read. Real servers on 127.0.0.1 (fixtures/completions_server.py)
record the Authorization header of every request they get."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tests.conftest import TINY

SECRET = "sk-ctxgate-credentials-test-4242"
Server = tuple[str, Callable[[dict[str, Any]], None], Callable[[], dict[str, Any]]]


@pytest.fixture
def servers() -> Iterator[Callable[[], Server]]:
    """``make()``: a scripted server's base URL, script and stats; each stopped after the test."""
    from fixtures.completions_server import start

    started = []

    def make() -> Server:
        url, httpd = start()
        started.append(httpd)
        root = url.removesuffix("/v1")

        def script(plan: dict[str, Any]) -> None:
            request = urllib.request.Request(
                root + "/_script", data=json.dumps(plan).encode(), method="POST"
            )
            urllib.request.urlopen(request, timeout=10).read()

        def stats() -> dict[str, Any]:
            with urllib.request.urlopen(root + "/_stats", timeout=10) as resp:
                return json.loads(resp.read())

        return url, script, stats

    yield make
    for httpd in started:
        httpd.shutdown()
        httpd.server_close()


def _origin(url: str) -> str:
    return url.removesuffix("/v1")


def test_a_redirect_to_another_origin_is_refused_and_the_key_never_arrives(
    real_suite, servers, monkeypatch
):
    """The issue's case: the server's /version answers 302 to another host:port."""
    home, script, stats = servers()
    elsewhere, _, elsewhere_stats = servers()
    script({"redirects": {"/version": _origin(elsewhere) + "/version"}})
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    result = real_suite(
        "--backend", "openai", "--base-url", home, "--tokenizer", str(TINY),
        "--served-model", "tiny", "-k", "vt", "--lengths", "1k", "--samples", "1", "--no-cache",
        model=Path("tiny"),
    )  # fmt: skip
    out = result.stdout.str() + result.stderr.str()
    assert result.ret != 0 and "Traceback" not in out, out[-3000:]
    assert (
        f"{_origin(home)} redirected a request, which carries the API key, to "
        f"{_origin(elsewhere)}; ctxgate sends a key to its own server only" in out
    )
    assert elsewhere_stats()["authorization"] == {}  # not a request, let alone the key
    assert stats()["authorization"]["/v1/models"] == [f"Bearer {SECRET}"]


def test_the_key_reaches_its_own_server_on_every_request_a_same_origin_redirect_included(
    servers, monkeypatch
):
    """Every request the endpoint makes (the model list, vLLM's /version and /tokenize, the
    completions) carries the key named by --api-key-env to its own server, and a redirect within
    that origin is followed with it."""
    import transformers

    from ctxgate.backends.base import GenerationParams, Request
    from ctxgate.backends.endpoint import EndpointBackend
    from ctxgate.backends.servers import EndpointSettings

    url, script, stats = servers()
    script({"redirects": {"/version": _origin(url) + "/moved/version"}})
    monkeypatch.setenv("CTXGATE_TEST_KEY", SECRET)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(TINY))
    backend = EndpointBackend(
        EndpointSettings((url,), "tiny", key_env="CTXGATE_TEST_KEY"), tokenizer, str(TINY)
    )
    params = GenerationParams(max_new_tokens=4)
    assert backend.generate([Request((1, 2, 3), "vt", 1024)], params)[0].text == "42"
    seen = stats()["authorization"]
    assert set(seen) == {"/v1/models", "/version", "/moved/version", "/tokenize", "/v1/completions"}
    assert all(headers == [f"Bearer {SECRET}"] for headers in seen.values()), seen


def test_a_completion_redirected_mid_run_is_the_cases_one_line_and_not_retried(
    servers, monkeypatch
):
    import transformers

    from ctxgate.backends.base import GenerationParams, Request
    from ctxgate.backends.endpoint import EndpointBackend
    from ctxgate.backends.endpoint_probe import EndpointError
    from ctxgate.backends.servers import EndpointSettings

    home, script, stats = servers()
    elsewhere, _, elsewhere_stats = servers()
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(TINY))
    backend = EndpointBackend(EndpointSettings((home,), "tiny"), tokenizer, str(TINY))
    script({"redirects": {"/v1/completions": elsewhere + "/completions"}})
    with pytest.raises(EndpointError, match=f"^{_origin(home)} redirected a request, which"):
        backend.generate([Request((1, 2, 3), "vt", 1024)], GenerationParams(4))
    assert len(stats()["authorization"]["/v1/completions"]) == 1  # refused, not retried
    assert elsewhere_stats()["authorization"] == {}


def test_a_redirect_refusal_that_openai_wraps_as_a_lost_connection_is_not_retried():
    """openai before 3.x wraps what an httpx hook raises in APIConnectionError: the refusal still
    comes out as itself, at once, not as a server that did not answer."""
    import httpx
    import openai

    from ctxgate.retrying import Redirected, call_with_retries

    calls = []

    def call() -> None:
        calls.append(1)
        try:
            raise Redirected("http://a:1 redirected a request ... to http://b:2")
        except Redirected as exc:
            request = httpx.Request("POST", "http://a:1/v1/completions")
            raise openai.APIConnectionError(request=request) from exc

    with pytest.raises(Redirected, match="http://b:2"):
        call_with_retries(call, openai, max_retries=3, time_limit_s=60, sleep=lambda s: None)
    assert len(calls) == 1


def test_without_a_key_a_local_server_gets_the_placeholder_as_before(servers, monkeypatch):
    """The default: OPENAI_API_KEY unset, and a local server that takes any key."""
    import transformers

    from ctxgate.backends.endpoint import EndpointBackend
    from ctxgate.backends.servers import EndpointSettings

    url, _, stats = servers()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(TINY))
    EndpointBackend(EndpointSettings((url,), "tiny"), tokenizer, str(TINY))
    assert stats()["authorization"]["/v1/models"] == ["Bearer EMPTY"]


def test_the_judge_refuses_a_redirect_to_another_origin(servers, monkeypatch, tmp_path):
    from ctxgate.judge import verdict
    from ctxgate.judge.client import JudgeClient, JudgeError, JudgeSettings

    home, script, _ = servers()
    elsewhere, _, elsewhere_stats = servers()
    script({"redirects": {"/v1/chat/completions": elsewhere + "/chat/completions"}})
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    client = JudgeClient(JudgeSettings(model="tiny", base_url=home), sleep=lambda s: None)
    with pytest.raises(JudgeError) as refused:
        client.ask("Is it fluent?", verdict.fluency)
    assert str(refused.value).startswith(
        f"{_origin(home)} redirected a request, which carries the API key, to {_origin(elsewhere)}"
    )
    assert elsewhere_stats()["authorization"] == {}


@pytest.mark.parametrize("value", [None, ""])
def test_a_key_variable_named_on_purpose_must_hold_a_key(pytester, monkeypatch, value):
    """--api-key-env NAME with NAME unset or empty is refused at start: it would send no key."""
    if value is None:
        monkeypatch.delenv("CTXGATE_UNSET_KEY", raising=False)
    else:
        monkeypatch.setenv("CTXGATE_UNSET_KEY", value)
    result = pytester.runpytest(
        "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1",
        "--api-key-env", "CTXGATE_UNSET_KEY",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --api-key-env 'CTXGATE_UNSET_KEY' names a variable that is unset or empty here "
            "(export CTXGATE_UNSET_KEY=YOUR_KEY first, or name the variable that holds the key)*"
        ]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize(
    ("url", "wrong"),
    [
        ("http://127.0.0.1:99999/v1", "cannot be read as a URL (Port out of range 0-65535)"),
        ("http://[::1:8000/v1", "cannot be read as a URL (Invalid IPv6 URL)"),
        ("http://[::1]]:8000/v1", "has a broken IPv6 host ('[::1]]:8000'; e.g. [::1]:8000)"),
        ("http://::1:8000/v1", "an IPv6 host goes in brackets, e.g. [::1]:8000)"),
        ("127.0.0.1:8000/v1", "has no http:// or https:// scheme"),
        ("http://gpu 7:8000/v1", "has no valid host name ('gpu 7')"),
        ("http://gpu7:0/v1", "has port 0"),
    ],
)
@pytest.mark.parametrize("option", ["BASE_URL", "JUDGE_BASE_URL"])
def test_a_server_url_is_checked_when_the_option_is_read(url, wrong, option):
    from ctxgate.run import options
    from ctxgate.run.flags import OptionError

    flag = getattr(options, option)
    with pytest.raises(OptionError) as refused:
        flag.read([url] if flag.action == "append" else url)
    line = refused.value.line
    assert line.startswith(f"{flag.flag} {url!r} ") and wrong in line
    assert line.endswith(f"e.g. {flag.flag} http://127.0.0.1:8000/v1")


@pytest.mark.parametrize("flag", ["--base-url", "--judge-base-url"])
def test_a_bad_server_url_is_one_usage_error_line_from_pytest(pytester, flag):
    result = pytester.runpytest("--backend", "openai", flag, "http://127.0.0.1:99999/v1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {flag} 'http://127.0.0.1:99999/v1' cannot be read as*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


URLS = st.builds("http://{}:{}/v1".format, st.text(max_size=20), st.integers(-5, 70000))


@given(st.text(max_size=60) | URLS)
@example("http://[::1]:8000/v1")
@example("https://api.openai.com/v1")
def test_origin_reads_any_text_into_an_origin_or_says_what_is_wrong(text):
    """The one URL rule of the option check and the door: an origin, or a ValueError with words."""
    from ctxgate.retrying import origin

    try:
        found = origin(text)
    except ValueError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    scheme, _, rest = found.partition("://")
    assert scheme in ("http", "https") and 1 <= int(rest.rpartition(":")[2]) <= 65535
    assert origin(found) == found  # an origin is its own
