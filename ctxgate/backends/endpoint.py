"""An OpenAI-compatible server as the backend: vLLM, SGLang, TGI, TensorRT-LLM, a multi-node vLLM on
Ray. Before any prompt, each server's model, max model length and version are read, and its
tokenizer checked against the suite's. Prompts go as token ids, or with ``api="chat"`` as one user
message of text, as RULER and HELMET send prompts to chat APIs. The API key lives only in the openai
client; reports record URLs without credentials."""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Sequence
from functools import partial
from typing import Any

from ctxgate.backends.base import (
    TOKENS_IN_FLIGHT,
    BackendDown,
    Generation,
    GenerationParams,
    Request,
    Window,
    Withdrawn,
)
from ctxgate.backends.endpoint_probe import (
    EndpointError,
    Server,
    check_tokenizer,
    describe_server,
    server_window,
)
from ctxgate.backends.model_config import ConfigChanges
from ctxgate.backends.replies import ImpossibleUsage, as_given, checked
from ctxgate.backends.servers import (
    BARE_CHAT_TEMPLATE,
    MAX_PROBES,
    REPROBE_S,
    TIMEOUT_UNIT_TOKENS,
    EndpointSettings,
    Known,
    Replica,
)
from ctxgate.backends.vllm_server import NO_PREFIX_CACHE
from ctxgate.retrying import (
    ChatCompletion,
    Completion,
    Exhausted,
    Redirected,
    Refused,
    call_with_retries,
    http_client,
    read_reply,
    redact_url,
)
from ctxgate.tokens.tokenizers import HFTokenizer


class EndpointBackend:
    def __init__(
        self,
        settings: EndpointSettings,
        tokenizer: Any,
        tokenizer_name: str,
        known: Known | None = None,
    ) -> None:
        """``tokenizer``: the served model's (``tokenizer_name`` its folder or id), checked against
        every server's; ``known``: what the session knows of the served model beside its
        settings."""
        import openai

        known = known or Known()
        self.name, self._diagnose, self._openai = known.name, known.diagnose, openai
        # also wakes a request waiting for a replica with a free slot
        self._lock = threading.Condition()
        # a server that answered wrongly: the line every later request fails on, unsent
        self._wrong: str | None = None
        self.settings = settings
        self.chat_api = settings.api == "chat"
        own = tokenizer.chat_template
        if self.chat_api:
            tokenizer.chat_template = BARE_CHAT_TEMPLATE
        self.hf_tokenizer = tokenizer
        self.tokenizer = HFTokenizer(tokenizer, own)
        key = os.environ.get(settings.key_env) or "EMPTY"  # local servers take any key
        client = partial(
            openai.OpenAI,
            api_key=key,
            timeout=settings.timeout_s,
            max_retries=0,
            http_client=http_client(),
        )
        self.replicas = [Replica(url, client(base_url=url)) for url in settings.base_urls]
        model = self._described(tokenizer_name)
        self.max_positions: int | None = min(
            (r.max_model_len for r in self.replicas if r.max_model_len), default=None
        )
        self._check_window(known.expected)
        self.concurrency = settings.concurrency * len(self.replicas)
        self.tokens_in_flight = TOKENS_IN_FLIGHT * len(self.replicas)
        self._decided: set[tuple[str, int]] = set()  # withdrawn: their waiting requests never go
        # the next case's requests go in while the current one's last finish and it is scored: the
        # engine's batch stays full across cases, and _pick keeps each server at its --concurrency
        self.cases_at_once = 2
        self.fingerprint = self._served_fingerprint(model, known.local_fingerprint)
        self.engine = dict(known.engine or {})
        # a server's prefix cache: vLLM's is on unless its arguments turn it off (the suite starts
        # its own with it on); a hosted API's caches what it can
        args = self.engine.get("vllm_args")
        cache_on = not isinstance(args, list | tuple) or NO_PREFIX_CACHE not in args
        self.shares_prefixes = settings.shared_first and cache_on
        self._weights_known = known.local_fingerprint is not None

    def _described(self, tokenizer_name: str) -> str:
        """Each server asked what it serves (and, over completions, whether its tokenizer is the
        run's): the one model they all serve."""
        settings = self.settings
        for r in self.replicas:
            server = Server(r.url, r.client, settings.key_env, partial(self._retrying, r))
            described = describe_server(server, settings.served_model, self.chat_api)
            r.model, r.max_model_len, r.version = described
            if not self.chat_api:  # a chat API takes text: there are no ids to compare
                check_tokenizer(server, r.model, self.tokenizer, tokenizer_name)
        models = sorted({r.model for r in self.replicas})
        if len(models) > 1:
            raise EndpointError(
                f"the --base-url replicas serve different models ({', '.join(models)}); replicas "
                "must serve one checkpoint"
            )
        return models[0]

    def _check_window(self, expected: ConfigChanges | None) -> None:
        """A server must serve the window the extras' changes give (one with another was not
        started with them)."""
        if expected is None or expected.window is None:
            return
        for r in self.replicas:
            if r.max_model_len != expected.window:
                raise EndpointError(
                    f"{redact_url(r.url)} serves {r.model!r} with a max model length of "
                    f"{r.max_model_len}, but {expected.flags} give a window of "
                    f"{expected.window}: the server was not started with these settings. "
                    "Start it with them (vLLM: --hf-overrides with the same JSON; "
                    "--max-model-len the window), or drop the options"
                )

    def _served_fingerprint(self, model: str, local: dict[str, object] | None) -> dict[str, object]:
        served = {
            "model": model,
            "versions": sorted({str(r.version) for r in self.replicas}),
            "max_model_len": self.max_positions,
            "local": (local or {}).get("sha256"),
        }
        return {
            "sha256": hashlib.sha256(json.dumps(served, sort_keys=True).encode()).hexdigest(),
            "served": served,
            **({"local": local} if local else {}),
        }

    def cache_identity(self) -> dict[str, object] | None:
        """The served weights and the engine's settings. None (never cached) when the weights are
        unknown: a server you run may have been restarted on other weights under the same name."""
        if not self._weights_known:
            return None
        chat = {"api": "chat"} if self.chat_api else {}  # the same ids as text to a chat template
        return {"served": self.fingerprint["served"], "engine": self.engine, **chat}

    def _retrying(
        self, replica: Replica, call: Any, what: str, scale: float = 1.0, asking: bool = False
    ) -> Any:
        """``asking``: a bad request is an answer (Refused, to the caller), not a failure."""
        s = self.settings
        try:
            return call_with_retries(
                call, self._openai, max_retries=s.max_retries, time_limit_s=s.time_limit_s * scale
            )
        except Refused as exc:
            if asking and exc.kind == "bad_request":
                raise
            fix = {
                "auth": f"check {s.key_env}",
                "not_found": "check --served-model and --base-url",
                "bad_request": "check the server's limits (max model length) and --served-model",
            }[exc.kind]
            raise EndpointError(
                f"{redact_url(replica.url)} refused {what} ({exc.status}: {exc.detail}); {fix}"
            ) from None
        except Redirected as exc:  # a case's one line, as every refusal of a server
            raise EndpointError(exc.line) from None
        except Exhausted as exc:
            if exc.malformed:  # it is up and answers wrongly: no outage, and no wait changes that
                self._wrong = (
                    f"{redact_url(replica.url)} answered {what} wrongly ({exc.malformed}): it "
                    "is up but does not answer as an OpenAI-compatible server; fix the server or "
                    "the proxy before it, or point --base-url at an OpenAI-compatible server"
                )
                raise EndpointError(self._wrong) from None
            fix = (
                f"each request timed out after {s.timeout_s * scale:.0f} s: raise "
                "--request-timeout (it is per 128K tokens; a long prefill on a slow engine takes "
                "longer)"
                if exc.timed_out
                else "check that the server runs and is reachable from here"
            )
            raise BackendDown(
                f"{redact_url(replica.url)} did not answer {what} {exc}; {fix}"
            ) from None

    def summary(self) -> str:
        """How the servers shared the requests and each drop (empty: one server, never dropped)."""
        with self._lock:
            if len(self.replicas) == 1 and not self.replicas[0].drops:
                return ""
            parts = []
            for r in self.replicas:
                part = f"{redact_url(r.url)} answered {r.answered}"
                if r.drops:
                    gone = ", given up" if r.failures >= MAX_PROBES else ""
                    part += f", dropped {len(r.drops)} time(s){gone} (last: {r.drops[-1]})"
                parts.append(part)
        return f"servers: {'; '.join(parts)}"

    def withdraw(self, task: str, length: int) -> None:
        """The case is decided: its requests still waiting never go (those sent finish)."""
        with self._lock:
            self._decided.add((task, length))
            self._lock.notify_all()

    def _pick(self, request: Request) -> tuple[Replica, int, int]:
        """The least busy replica with room for the request, the prompt tokens it already has in
        flight, and how many times it was dropped so far. A dropped one is tried again REPROBE_S
        later (a burst of 503s while a server restarts must not end a long run), and requests wait
        for that try; after MAX_PROBES failed tries in a row it is gone, and with none left every
        request fails at once."""
        size = len(request.input_ids)
        with self._lock:
            while True:
                if (request.task, request.length) in self._decided:
                    raise Withdrawn(f"{request.task} at {request.length} is decided")
                if self._wrong is not None:  # a server answers every request the same way
                    raise EndpointError(self._wrong)
                now = time.monotonic()
                for r in self.replicas:
                    due = now - r.down_at >= REPROBE_S
                    if r.down is not None and r.failures < MAX_PROBES and due:
                        r.down = None  # its re-probe: this request
                alive = [r for r in self.replicas if r.down is None]
                room = [r for r in alive if r.in_flight == 0 or r.fits(size, self.settings)]
                if room:  # ties (every replica idle between requests) rotate
                    chosen = min(room, key=lambda r: (r.in_flight, r.sent))
                    ahead = chosen.tokens
                    chosen.in_flight += 1
                    chosen.tokens += size
                    chosen.sent += 1
                    return chosen, ahead, len(chosen.drops)
                if alive:  # every live one is full: wait for a request to finish
                    self._lock.wait(timeout=1.0)
                    continue
                waiting = [
                    r.down_at + REPROBE_S - now for r in self.replicas if r.failures < MAX_PROBES
                ]
                if not waiting:
                    raise BackendDown(
                        "every server is down: "
                        + "; ".join(
                            f"{r.down}; given up after {r.failures} series of retries failed in "
                            f"a row over {r.down_at - r.failing_since:.0f}s (a new series "
                            f"{REPROBE_S:g}s after each)"
                            for r in self.replicas
                        )
                    )
                self._lock.wait(timeout=max(0.0, min(waiting)))  # a withdrawal wakes it too

    def generate(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        return [self._one(r, params) for r in requests]

    def _one(self, r: Request, params: GenerationParams) -> Generation:
        while True:
            replica, ahead, drops = self._pick(r)
            # the engine works through the prompts sent before this one too: the limit counts them
            scale = max(1.0, (len(r.input_ids) + ahead) / TIMEOUT_UNIT_TOKENS)
            started = time.monotonic()
            try:
                resp = self._retrying(
                    replica, lambda: self._send(replica, r, params, scale), "a completion", scale
                )
            except BackendDown as exc:
                why = f"{exc} (at {time.strftime('%H:%M:%S')})"
                if self._diagnose is not None:
                    why += f". {self._diagnose()}"
                with self._lock:
                    if len(replica.drops) == drops:  # the first of its requests to fail
                        if replica.failures == 0:
                            replica.failing_since = started
                        replica.down = why
                        replica.down_at = time.monotonic()
                        replica.failures += 1
                        replica.drops.append(why)
                continue  # another replica, or BackendDown from _pick when none is left
            finally:
                with self._lock:
                    replica.in_flight -= 1
                    replica.tokens -= len(r.input_ids)
                    # the room freed may fit a waiting request that another would not
                    self._lock.notify_all()
            with self._lock:
                replica.failures = 0
                replica.answered += 1
            try:
                reply = as_given(resp, replica.url)
                return checked(reply, params.max_new_tokens, self.tokenizer, replica.url)
            except ImpossibleUsage as exc:  # its counts cannot be believed: nor can its reply
                raise EndpointError(
                    f"{exc}; the server's usage cannot be right: fix the server (or the proxy "
                    "before it), or point --base-url at one that counts what it generates"
                ) from None

    def _send(
        self, replica: Replica, r: Request, params: GenerationParams, scale: float
    ) -> Completion | ChatCompletion:
        """One request, its reply read strictly (a reply the server got wrong is retried once)."""
        common = {
            "model": replica.model,
            "max_tokens": params.max_new_tokens,
            "temperature": 0.0,
            "stop": list(params.stop_strings) or None,
            "timeout": self.settings.timeout_s * scale,
        }
        # vLLM's name (its own budget: the thought is closed after this many tokens)
        budget = params.thinking_budget if params.by_engine else None
        extra: dict[str, object] = {} if budget is None else {"thinking_token_budget": budget}
        if self.chat_api:
            text = self.hf_tokenizer.decode(list(r.input_ids), skip_special_tokens=True)
            kwargs = self.tokenizer.template_kwargs  # a reasoning model's switch, for its template
            extra |= {"chat_template_kwargs": kwargs} if kwargs else {}
            # gpt-oss's level is also the request's own field, the one vLLM's harmony path reads
            effort = {k: v for k, v in kwargs.items() if k == "reasoning_effort"}
            sent = replica.client.chat.completions.with_raw_response.create(
                messages=[{"role": "user", "content": text}],
                extra_body=extra or None,
                **effort,
                **common,
            )
            return read_reply(ChatCompletion, sent.content, "the chat completion")
        # vLLM's and SGLang's names: a thought's closing marker may be a special token, and budget
        # forcing reads it at the end of the thought
        extra |= {"skip_special_tokens": False} if params.keep_special else {}
        extra |= {"include_stop_str_in_output": True} if params.stop_strings else {}
        # each token's text: where the engine closed a thought at its budget, counted exactly
        extra |= {"logprobs": 0} if budget is not None else {}
        # vLLM's name; a server that ignores it gives text alone, and forcing re-tokenizes it. The
        # suite's own vLLM always gives them: a text re-tokenized is no count of what it generated
        # (a random model's stray byte tokens decode to replacement characters that encode longer)
        exact = params.token_ids or self.name == "vllm"
        extra |= {"return_token_ids": True} if exact else {}
        sent = replica.client.completions.with_raw_response.create(
            prompt=list(r.input_ids), extra_body=extra or None, **common
        )
        return read_reply(Completion, sent.content, "the completion")

    def own_thinking_budget(self) -> bool:
        """Whether every server closes a thought at a budget itself (vLLM's
        ``thinking_token_budget``, taken with a reasoning parser that names the thought's markers),
        asked in one-token requests: a server that reads the field refuses a negative budget; one
        that ignores it takes anything."""
        probe = Request(tuple(self.tokenizer.encode("?")))

        def takes(replica: Replica, budget: int) -> bool:
            params = GenerationParams(1, thinking_budget=budget, by_engine=True)
            call = partial(self._send, replica, probe, params, 1.0)
            try:
                self._retrying(replica, call, "a request with a thinking budget", asking=True)
            except Refused:
                return False
            return True

        return all(not takes(r, -2) and takes(r, 1) for r in self.replicas)

    def window_of(self, limit: int) -> Window:
        urls = ", ".join(str(redact_url(r.url)) for r in self.replicas if r.max_model_len == limit)
        return server_window(limit, self.name == "vllm", urls)

    def describe(self) -> dict[str, object]:
        return {
            "backend": self.name,
            "endpoints": [redact_url(r.url) for r in self.replicas],
            "served_model": self.replicas[0].model,
            "server_version": self.replicas[0].version,
            "max_model_len": self.max_positions,
            "api": self.settings.api,
            "concurrency": self.concurrency,
            **({"engine": self.engine} if self.engine else {}),  # the suite's own servers'
        }
