"""Calls to an OpenAI-compatible server, retried the way the judge and the endpoint backends both
need. They go through one door and their replies through one reader, the probe's too.

The door (``http_client``) is the HTTP client of every such call: a redirect to another origin is
refused, since the request carries the key. The reader (``read_reply``) reads every reply into its
frozen record strictly: a reply of the wrong shape is one ``Malformed`` line saying what is wrong.

Transient failures (408, 409, 425, 429, 5xx, timeouts, dropped connections) are retried with
exponential backoff and jitter, honouring ``Retry-After``, within a retry count and a time limit;
those no retry fixes (a refused key, an unknown model, any other 4xx) raise ``Refused`` at once, for
the caller to name its fix.

A ``Malformed`` reply (a field of the wrong type or missing, no choices, a body that is not JSON or
cut short) is no outage: the server is up and answers wrongly, and waiting does not change its
answer. It is retried once, at once and within the retry count (a proxy may garble one reply); a
second one in the same call ends it as ``Exhausted`` with ``malformed`` set, for the caller to name
the field and the server, never a server that is down.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urljoin, urlsplit, urlunsplit

from ctxgate.refusal import CtxgateError

T = TypeVar("T")
TRANSIENT_STATUS = frozenset({408, 409, 425, 429})  # 4xx that a later try can clear; every 5xx too


class Refused(RuntimeError):
    """The server refused in a way no retry fixes. ``kind``: auth, not_found or bad_request."""

    def __init__(self, kind: str, status: int | None, detail: str) -> None:
        super().__init__(f"{kind} ({status}): {detail}")
        self.kind, self.status, self.detail = kind, status, detail


class Malformed(RuntimeError):
    """A reply that arrived but cannot be used (no choices, a text that is a number): retried once,
    at once, then the server's answer."""


class Redirected(CtxgateError, RuntimeError):
    """A server sent a request, which carries the key, on to another origin."""


class Exhausted(RuntimeError):
    """Transient failures outlasted the retries or the time limit. ``timed_out``: the last one was
    the request's own timeout (the server was too slow, not gone); ``malformed``: the last reply's
    ``Malformed`` line (the server answers wrongly, it is not gone)."""

    def __init__(self, message: str, timed_out: bool = False, malformed: str | None = None) -> None:
        super().__init__(message)
        self.timed_out, self.malformed = timed_out, malformed


def call_with_retries(
    call: Callable[[], T],
    openai: Any,
    *,
    max_retries: int,
    time_limit_s: float,
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Callable[[], None] | None = None,
) -> T:
    """``openai``: the package, imported by the caller so that importing this costs nothing."""
    start = time.monotonic()
    retry = garbled = 0
    while True:
        try:
            return call()
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise Refused("auth", exc.status_code, str(exc)[:200]) from None
        except openai.NotFoundError as exc:
            raise Refused("not_found", exc.status_code, str(exc)[:200]) from None
        except openai.APIStatusError as exc:
            if exc.status_code < 500 and exc.status_code not in TRANSIENT_STATUS:  # 400, 422, ...
                raise Refused("bad_request", exc.status_code, str(exc)[:200]) from None
            last = exc
        except (
            openai.APITimeoutError,
            openai.APIConnectionError,
            openai.APIResponseValidationError,
        ) as exc:
            unwrap_redirect(exc)
            last = exc
        except Malformed as exc:
            last, garbled = exc, garbled + 1
        malformed = str(last) if isinstance(last, Malformed) else None
        wait = 0.0 if malformed else backoff(retry, last)
        spent = time.monotonic() - start
        if retry >= max_retries or spent + wait > time_limit_s or garbled > 1:
            failure = f"{type(last).__name__}: {str(last)[:160]}"
            raise Exhausted(
                f"after {retry + 1} requests in {spent:.0f}s (last: {failure})",
                timed_out=isinstance(last, openai.APITimeoutError),
                malformed=malformed,
            )
        if on_retry is not None:
            on_retry()
        sleep(wait)
        retry += 1


def backoff(retry: int, exc: BaseException) -> float:
    response = getattr(exc, "response", None)
    header = response.headers.get("retry-after") if response is not None else None
    if header is not None:
        with contextlib.suppress(ValueError):
            return min(60.0, max(0.0, float(header)))
    return min(30.0, 0.5 * 2**retry) * (0.75 + 0.5 * random.random())


def redact_url(url: str | None) -> str | None:
    """A URL fit for a report: no credentials, no query."""
    if not url:
        return url
    parts = urlsplit(url)
    netloc = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def origin(url: str) -> str:
    """``scheme://host:port``, the port spelled out: what a key is bound to. A ValueError says what
    keeps ``url`` from being an http(s) URL with a host and a port from 1 to 65535."""
    import ipaddress

    try:
        parts = urlsplit(url)
        port = parts.port  # a ValueError past 65535
    except ValueError as exc:
        bare_ipv6 = "[" not in url and url.partition("//")[2].partition("/")[0].count(":") > 1
        hint = "; an IPv6 host goes in brackets, e.g. [::1]:8000" if bare_ipv6 else ""
        raise ValueError(f"cannot be read as a URL ({exc}{hint})") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError("has no http:// or https:// scheme")
    host = parts.hostname or ""
    written = parts.netloc.rpartition("@")[2]
    if written.startswith("["):  # urlsplit reads no further than the first "]"
        inside, _, rest = written[1:].partition("]")
        if rest not in ("", ":", f":{port}"):
            raise ValueError(f"has a broken IPv6 host ({written!r}; e.g. [::1]:8000)")
        ipaddress.IPv6Address(inside.partition("%")[0])
    elif not host or not all(c.isalnum() or c in "-._" for c in host):
        raise ValueError(f"has no valid host name{f' ({host!r})' if host else ''}")
    if port == 0:
        raise ValueError("has port 0 (ports run from 1 to 65535)")
    port = port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{f'[{host}]' if written.startswith('[') else host}:{port}"


def http_client() -> Any:
    """The HTTP client every call to a server goes through (``openai.OpenAI(http_client=...)``):
    openai's own defaults, with a redirect to another origin refused in one line, since the request
    carries the key: httpx would strip it but still send the prompt there, to fail without it."""
    import openai

    return openai.DefaultHttpxClient(event_hooks={"response": [_same_origin]})


def unwrap_redirect(exc: BaseException) -> None:
    """openai before 3.x wraps what the hook raises in an APIConnectionError, which it and
    ``call_with_retries`` would retry as a lost connection."""
    if isinstance(exc.__cause__, Redirected):
        raise exc.__cause__ from None


def _same_origin(response: Any) -> None:
    if not response.has_redirect_location:
        return
    here = str(response.request.url)
    there = urljoin(here, response.headers["location"])
    try:
        crossed = origin(there) != origin(here)
    except ValueError:  # a Location no client could follow: httpx names it
        return
    if crossed:
        raise Redirected(
            f"{origin(here)} redirected a request, which carries the API key, to {origin(there)}; "
            "ctxgate sends a key to its own server only: give that server's URL itself if you "
            "trust it"
        )


# --- the replies, as read: only what ctxgate uses, every other field ignored
@dataclass(frozen=True)
class PromptDetails:
    cached_tokens: int | None = None  # served from the engine's prefix cache, not computed


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_tokens_details: PromptDetails | None = None  # vLLM's with --enable-prompt-tokens-details


@dataclass(frozen=True)
class Logprobs:
    tokens: tuple[str, ...] | None = None  # each generated token's text


@dataclass(frozen=True)
class TextChoice:
    text: str
    finish_reason: str | None = None
    logprobs: Logprobs | None = None
    token_ids: tuple[int, ...] | None = None  # vLLM's, asked with return_token_ids


@dataclass(frozen=True)
class ChatMessage:
    content: str | None = None  # a reply a provider filtered has none
    # a reasoning model's thought, split off by the server's reasoning parser (vLLM's name, and
    # SGLang's and older vLLM's)
    reasoning: str | None = None
    reasoning_content: str | None = None


@dataclass(frozen=True)
class ChatChoice:
    message: ChatMessage
    finish_reason: str | None = None


class _Choices:
    choices: tuple[Any, ...]

    def __post_init__(self) -> None:
        if not self.choices:
            raise ValueError("has no choices")


@dataclass(frozen=True)
class Completion(_Choices):
    choices: tuple[TextChoice, ...]
    usage: Usage | None = None


@dataclass(frozen=True)
class ChatCompletion(_Choices):
    choices: tuple[ChatChoice, ...]
    usage: Usage | None = None


@dataclass(frozen=True)
class ServedModel:
    id: str
    max_model_len: int | None = None  # vLLM's


@dataclass(frozen=True)
class ModelList:
    data: tuple[ServedModel, ...]


@dataclass(frozen=True)
class Version:  # vLLM's /version
    version: str | None = None


@dataclass(frozen=True)
class TokenIds:  # vLLM's /tokenize
    tokens: tuple[int, ...]


R = TypeVar("R")


def read_reply(kind: type[R], body: bytes | str, what: str) -> R:
    """``body`` read as ``kind`` (JSON of exactly the types it declares: no number for a text, no
    true for a count), else ``Malformed`` naming ``what`` and the first field that is wrong."""
    from pydantic import ValidationError

    from ctxgate.records.schema import adapter_for

    try:
        return adapter_for(kind).validate_json(body, strict=True)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        if error["type"] == "value_error":  # a rule of the record's own ("has no choices")
            raise Malformed(f"{what} {error['msg'].removeprefix('Value error, ')}") from None
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])
        wrong, value = error["msg"], error["input"]
        if error["type"] not in ("json_invalid", "missing"):
            wrong += (
                ", not null" if value is None else f", not {value!r:.60} ({type(value).__name__})"
            )
        raise Malformed(f"{what}: {where[1:]}: {wrong}" if where else f"{what}: {wrong}") from None
