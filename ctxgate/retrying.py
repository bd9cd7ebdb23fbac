"""Calls to an OpenAI-compatible server, retried the way the judge and the endpoint backends both
need.

Transient failures (408, 409, 425, 429, 5xx, timeouts, dropped connections, a body that does not
parse, ``Malformed``) are retried with exponential backoff and jitter, honouring ``Retry-After``,
within a retry count and a time limit; those no retry fixes (a refused key, an unknown model, any
other 4xx) raise ``Refused`` at once, for the caller to name its fix.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

T = TypeVar("T")
TRANSIENT_STATUS = frozenset({408, 409, 425, 429})  # 4xx that a later try can clear; every 5xx too


class Refused(RuntimeError):
    """The server refused in a way no retry fixes. ``kind``: auth, not_found or bad_request."""

    def __init__(self, kind: str, status: int | None, detail: str) -> None:
        super().__init__(f"{kind} ({status}): {detail}")
        self.kind, self.status, self.detail = kind, status, detail


class Malformed(RuntimeError):
    """A reply that arrived but cannot be used (no choices, no text): retried like a 5xx."""


class Exhausted(RuntimeError):
    """Transient failures outlasted the retries or the time limit. ``timed_out``: the last one was
    the request's own timeout (the server was too slow, not gone)."""

    def __init__(self, message: str, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


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
    retry = 0
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
            json.JSONDecodeError,  # a body cut short does not parse: the server's fault
            Malformed,
        ) as exc:
            last = exc
        wait = backoff(retry, last)
        spent = time.monotonic() - start
        if retry >= max_retries or spent + wait > time_limit_s:
            failure = f"{type(last).__name__}: {str(last)[:160]}"
            raise Exhausted(
                f"after {retry + 1} requests in {spent:.0f}s (last: {failure})",
                timed_out=isinstance(last, openai.APITimeoutError),
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
