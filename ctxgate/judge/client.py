"""The judge client: the ``openai`` package against OpenAI or any OpenAI-compatible server. The API
key lives only in the ``openai`` client object, never in a cache key or file; transient failures
are retried within a per-verdict time limit, and what still fails is a failed verdict, never
dropped. Every reply is kept by (judge, prompt, sampling parameters, attempt) in SQLite, one
transaction a reply, so re-scoring costs nothing."""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, astuple, dataclass, replace
from typing import Generic, TypeVar

from ctxgate.judge.verdict import Unparseable, last_object
from ctxgate.records.case import JudgeUsage
from ctxgate.refusal import CtxgateError
from ctxgate.retrying import (
    ChatCompletion,
    Exhausted,
    Redirected,
    Refused,
    call_with_retries,
    http_client,
    read_reply,
    redact_url,
)
from ctxgate.sqlitefile import CacheWarning, SqliteFile, StoreUnavailable


def _digest(values: list[object]) -> str:
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class CachedReply:
    text: str
    prompt_tokens: int
    completion_tokens: int


class JudgeCache(SqliteFile):
    FILE_NAME = "judge.sqlite"
    APPLICATION_ID = 0x43544A44  # "CTJD"
    TABLES = (
        "CREATE TABLE replies (key TEXT PRIMARY KEY, model TEXT, text TEXT, "
        "prompt_tokens INTEGER, completion_tokens INTEGER, checksum TEXT, created REAL)",
    )
    WHAT = "judge cache"
    FIX = "pass another --judge-cache folder"

    @staticmethod
    def key(model: str, prompt: str, params: dict[str, object], attempt: int) -> str:
        return _digest([model, prompt, params, attempt])

    def get(self, key: str) -> CachedReply | None:
        with self._lock:
            rows = self.execute(
                "SELECT text, prompt_tokens, completion_tokens, checksum FROM replies "
                "WHERE key = ?",
                (key,),
            )
            if not rows:
                return None
            text, p, c, checksum = rows[0]
            if checksum != _digest([text, p, c]):
                self.execute("DELETE FROM replies WHERE key = ?", (key,))
                return None
            return CachedReply(text, p, c)

    def put(self, key: str, model: str, reply: CachedReply) -> None:
        fields = astuple(reply)  # text, prompt_tokens, completion_tokens
        with self._lock:
            self.execute(
                "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, model, *fields, _digest(list(fields)), time.time()),
            )


T = TypeVar("T")

# USD per million (input, output) tokens, list prices as of 2026-11; --judge-price overrides, and a
# model missing here reports its cost as unknown rather than guessing.
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-2024-05-13": (5.0, 15.0),
    "gpt-4o-2024-08-06": (2.5, 10.0),
    "gpt-4o-2024-11-20": (2.5, 10.0),
    "gpt-4o": (2.5, 10.0),
    "gpt-4o-mini": (0.15, 0.6),
    "gpt-4o-mini-2024-07-18": (0.15, 0.6),
    "gpt-4.1": (2.0, 8.0),
    "gpt-4.1-mini": (0.4, 1.6),
}


class JudgeError(CtxgateError, RuntimeError):
    """The judge cannot work as configured; the message names the fix."""


class JudgeUnavailable(RuntimeError):
    """Transient failures outlasted the retries or the time limit for one verdict."""


@dataclass(frozen=True)
class JudgeSettings:
    model: str
    base_url: str | None = None
    temperature: float = 0.1  # HELMET's judge: gpt-4o-2024-05-13, temperature 0.1, top_p 0.9
    top_p: float = 0.9
    max_tokens: int = 4096
    timeout_s: float = 120.0  # one HTTP request
    time_limit_s: float = 600.0  # one verdict, retries and backoff included
    max_retries: int = 6
    parse_retries: int = 2  # asks again when a reply holds no usable verdict
    concurrency: int = 4
    price_per_mtok: tuple[float, float] | None = None
    cache_dir: str | None = None

    def price(self) -> tuple[float, float] | None:
        return self.price_per_mtok or PRICES.get(self.model)

    def describe(self) -> dict[str, object]:
        """What a report records: never the key, and the URL without credentials or query."""
        price, url = self.price(), redact_url(self.base_url)
        return {**asdict(self), "base_url": url, "price_per_mtok": list(price) if price else None}

    def sampling(self) -> dict[str, object]:
        return {"temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens}


def cost(usage: JudgeUsage, price: tuple[float, float] | None) -> float | None:
    if price is None:
        return None
    return round((usage.prompt_tokens * price[0] + usage.completion_tokens * price[1]) / 1e6, 6)


def priced(usage: JudgeUsage, price: tuple[float, float] | None) -> JudgeUsage:
    """A case record's usage: seconds rounded, its cost where the price is known."""
    return replace(usage, seconds=round(usage.seconds, 3), cost_usd=cost(usage, price))


@dataclass(frozen=True)
class Verdict(Generic[T]):
    value: T | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _open_cache(directory: str | None) -> JudgeCache | None:
    """No judge cache, with one warning, when its folder cannot be written: re-judging pays."""
    if not directory:
        return None
    try:
        return JudgeCache(directory)
    except StoreUnavailable as exc:
        warnings.warn(f"{exc}; judging without a cache", CacheWarning, stacklevel=3)
        return None


class JudgeClient:
    def __init__(
        self, settings: JudgeSettings, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        key = os.environ.get("OPENAI_API_KEY")
        if not key and settings.base_url is None:
            raise JudgeError(
                f"--judge-model {settings.model} needs OPENAI_API_KEY in the environment, or "
                "--judge-base-url http://HOST:PORT/v1 for an OpenAI-compatible server"
            )
        import openai  # only a judged run pays for the import

        self._openai = openai
        s = self.settings = settings
        self._client = openai.OpenAI(
            api_key=key or "EMPTY",
            base_url=s.base_url,
            timeout=s.timeout_s,
            max_retries=0,
            http_client=http_client(),
        )
        self.server = redact_url(settings.base_url) or "api.openai.com"
        self.cache = _open_cache(settings.cache_dir)
        self._sleep = sleep
        self._usage = JudgeUsage()
        self._usage_lock = threading.Lock()

    def take_usage(self) -> JudgeUsage:
        """What was spent since the last call (one case's worth, when called once per case)."""
        with self._usage_lock:
            usage, self._usage = self._usage, JudgeUsage()
        return usage

    def _count(self, **delta: float) -> None:
        with self._usage_lock:
            now = self._usage
            self._usage = replace(now, **{k: getattr(now, k) + v for k, v in delta.items()})

    def ask(self, prompt: str, check: Callable[[dict[str, object]], T]) -> Verdict[T]:
        error, tries = "", self.settings.parse_retries + 1
        for attempt in range(tries):
            try:
                text = self._reply(prompt, attempt)
            except JudgeUnavailable as exc:
                self._count(verdicts=1, failed_verdicts=1)
                return Verdict(None, str(exc))
            try:
                value = check(last_object(text))
            except Unparseable as exc:
                error = str(exc)
                continue
            self._count(verdicts=1)
            return Verdict(value)
        self._count(verdicts=1, failed_verdicts=1)
        return Verdict(None, f"unparseable after {tries} replies: {error}")

    def _reply(self, prompt: str, attempt: int) -> str:
        s = self.settings
        # the server is part of the judge's identity: one model name on two servers is two judges
        key = JudgeCache.key(f"{s.model}@{self.server}", prompt, s.sampling(), attempt)
        cached = self.cache.get(key) if self.cache else None
        if cached is not None:
            self._count(cache_hits=1)
            return cached.text
        reply = self._request(prompt)
        if self.cache:
            self.cache.put(key, s.model, reply)
        return reply.text

    def _request(self, prompt: str) -> CachedReply:
        s = self.settings
        start = time.monotonic()

        def call() -> CachedReply:
            sent = self._client.chat.completions.with_raw_response.create(
                model=s.model,
                messages=[{"role": "user", "content": prompt}],
                temperature=s.temperature,
                top_p=s.top_p,
                max_tokens=s.max_tokens,
            )
            resp = read_reply(ChatCompletion, sent.content, f"the reply of {self.server}")
            usage = resp.usage
            return CachedReply(
                resp.choices[0].message.content or "",
                (usage.prompt_tokens if usage else None) or 0,
                (usage.completion_tokens if usage else None) or 0,
            )

        try:
            reply = call_with_retries(
                call,
                self._openai,
                max_retries=s.max_retries,
                time_limit_s=s.time_limit_s,
                sleep=self._sleep,
                on_retry=lambda: self._count(retries=1),
            )
        except Refused as exc:
            message = _REFUSED[exc.kind].format(
                url=self.server, model=s.model, status=exc.status, detail=exc.detail
            )
            raise JudgeError(message) from None
        except Redirected as exc:
            raise JudgeError(exc.line) from None
        except Exhausted as exc:
            self._count(seconds=time.monotonic() - start)
            raise JudgeUnavailable(
                f"no verdict {exc}; raise --judge-retries/--judge-time-limit or check the server"
            ) from None
        self._count(
            requests=1,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            seconds=time.monotonic() - start,
        )
        return reply


_REFUSED = {
    "auth": "the judge at {url} refused the key ({status}): check OPENAI_API_KEY",
    "not_found": "the judge server does not know model {model!r} ({status}): check --judge-model "
    "and --judge-base-url",
    "bad_request": "the judge rejected the request ({status}: {detail}); check --judge-model and "
    "the server's limits",
}
