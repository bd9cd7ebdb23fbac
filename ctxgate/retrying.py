"""Calls to an OpenAI-compatible server, retried the way the judge and the endpoint backends both need.

Transient failures (429, 5xx, timeouts, dropped connections, a body that does not parse) are retried with
exponential backoff and jitter, honouring ``Retry-After``, within a retry count and a time limit. Failures that no
retry can fix (a refused key, an unknown model, a rejected request) are raised at once as ``Refused`` so the caller
can name its own fix.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

T = TypeVar("T")


class Refused(RuntimeError):
    """The server refused in a way no retry fixes. ``kind``: auth, not_found or bad_request."""

    def __init__(self, kind: str, status: int | None, detail: str) -> None:
        super().__init__(f"{kind} ({status}): {detail}")
        self.kind, self.status, self.detail = kind, status, detail


class Exhausted(RuntimeError):
    """Transient failures outlasted the retries or the time limit; the message says how many and the last one."""


def call_with_retries(call: Callable[[], T], openai: Any, *, max_retries: int, time_limit_s: float,
                      sleep: Callable[[float], None] = time.sleep,
                      on_retry: Callable[[], None] | None = None) -> T:
    """``openai`` is the imported package (imported by the caller, so that importing this module costs nothing)."""
    start = time.monotonic()
    retry = 0
    while True:
        try:
            return call()
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise Refused("auth", exc.status_code, str(exc)[:200]) from None
        except openai.NotFoundError as exc:
            raise Refused("not_found", exc.status_code, str(exc)[:200]) from None
        except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
            raise Refused("bad_request", exc.status_code, str(exc)[:200]) from None
        except (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError, openai.APIConnectionError,
                openai.APIResponseValidationError, openai.APIStatusError, IndexError, AttributeError,
                ValueError) as exc:
            failure, last = f"{type(exc).__name__}: {str(exc)[:160]}", exc
        wait = backoff(retry, last)
        spent = time.monotonic() - start
        if retry >= max_retries or spent + wait > time_limit_s:
            raise Exhausted(f"after {retry + 1} requests in {spent:.0f}s (last: {failure})")
        if on_retry is not None:
            on_retry()
        sleep(wait)
        retry += 1


def backoff(retry: int, exc: BaseException) -> float:
    response = getattr(exc, "response", None)
    header = response.headers.get("retry-after") if response is not None else None
    try:
        if header is not None:
            return min(60.0, max(0.0, float(header)))
    except ValueError:
        pass
    return min(30.0, 0.5 * 2 ** retry) * (0.75 + 0.5 * random.random())


def redact_url(url: str | None) -> str | None:
    """A URL fit for a report: no credentials, no query."""
    if not url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
