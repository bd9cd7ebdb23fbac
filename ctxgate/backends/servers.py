"""An OpenAI-compatible server as the endpoint backend sends to it: the settings its options give,
what the session knows of the model it serves, and each replica's state."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxgate.backends.base import TOKENS_IN_FLIGHT
from ctxgate.backends.model_config import ConfigChanges

# a dropped replica is tried again after this long
REPROBE_S = float(os.environ.get("CTXGATE_REPROBE_S", "30"))
MAX_PROBES = 3  # retry series a replica may fail in a row before it is given up
# requests in flight per server by default, on servers the user runs and others may share
OPENAI_CONCURRENCY = 8
# prompts up to this long get the configured timeouts; longer ones proportionally more (linear, not
# quadratic as prefills: 600 s is far above what a 128K prompt takes, and a hung server should not
# hold a 1M case for hours)
TIMEOUT_UNIT_TOKENS = 131072


@dataclass(frozen=True)
class Known:
    """What the session knows of the served model beside its settings: ``name`` "openai" for
    servers the user runs, "vllm" for the suite's own; ``diagnose``, what to add when a server
    goes away (its log's tail); ``local_fingerprint``, the checkpoint folder's, when the served
    weights are known to be its; ``engine``, every engine setting that changes a generation, for
    the cache key; ``expected``, the extras' changes to the model's config, whose window a server
    must serve."""

    name: str = "openai"
    diagnose: Callable[[], str] | None = None
    local_fingerprint: dict[str, object] | None = None
    engine: Mapping[str, object] | None = None
    expected: ConfigChanges | None = None


@dataclass(frozen=True)
class EndpointSettings:
    base_urls: tuple[str, ...]
    served_model: str | None = None  # None: the one model the server lists
    concurrency: int = OPENAI_CONCURRENCY  # requests in flight per replica
    # one request of up to TIMEOUT_UNIT_TOKENS; longer ones get more
    timeout_s: float = 600.0
    time_limit_s: float = 1800.0  # one sample, retries included; scaled like timeout_s
    max_retries: int = 4
    key_env: str = "OPENAI_API_KEY"
    api: str = "completions"  # or "chat": one user message of text (ENDPOINT_APIS)
    # a case's requests ordered by the prefixes they share, where the server caches prefixes
    shared_first: bool = True


ENDPOINT_APIS = ("completions", "chat")
# chat API: the suite's chat prompt is the user text alone; the server adds its own template
BARE_CHAT_TEMPLATE = "{% for message in messages %}{{ message['content'] }}{% endfor %}"


@dataclass
class Replica:
    url: str
    client: Any
    model: str = ""
    max_model_len: int | None = None
    version: str | None = None
    in_flight: int = 0
    tokens: int = 0  # prompt tokens in flight
    # requests handed to it so far: of replicas equally busy, the one sent fewer takes the next
    sent: int = 0
    down: str | None = None  # why it was dropped
    down_at: float = 0.0  # when (monotonic): it is tried again REPROBE_S later
    failures: int = 0  # retry series it failed in a row
    failing_since: float = 0.0  # when the first of them began
    answered: int = 0
    # why it was dropped, each time: a request sent before a drop that fails too is that outage,
    # not another failure
    drops: list[str] = field(default_factory=list)

    def fits(self, size: int, settings: EndpointSettings) -> bool:
        return self.in_flight < settings.concurrency and self.tokens + size <= TOKENS_IN_FLIGHT
