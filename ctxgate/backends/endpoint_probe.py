"""What an OpenAI-compatible server is, asked before any prompt: the model it serves, its max model
length and version and the window that gives, and whether it tokenizes as the suite does (a probe
text's ids, vLLM's /tokenize, or its prompt-token count elsewhere)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from ctxgate.backends.base import Window, model_window
from ctxgate.refusal import CtxgateError
from ctxgate.retrying import (
    Completion,
    Malformed,
    ModelList,
    TokenIds,
    Version,
    read_reply,
    redact_url,
    unwrap_redirect,
)
from ctxgate.tokens.tokenizers import HFTokenizer

PROBE = (
    "ctxgate probe: the special magic number is 7392641.\n"  # then what tokenizers split apart:
    " Ünïcödé — ✓ 東京\tend  two spaces"  # accents, symbols, CJK, a tab, a double space
)
# a call to the server, with the retries and time limit of every call; the text names what it asks
Ask = Callable[[Callable[[], Any], str], Any]
R = TypeVar("R")


class EndpointError(CtxgateError, RuntimeError):
    """A server cannot be used as configured; the message names the URL and the fix."""


@dataclass(frozen=True)
class Server:
    """A server as the probes reach it: its URL, the openai client (its door, its key), the
    variable the key is read from (a fix names it), and how a call to it is retried."""

    url: str
    client: Any
    key_env: str
    ask: Ask


def describe_server(
    server: Server, wanted: str | None, chat_api: bool
) -> tuple[str, int | None, str | None]:
    """The model the server serves (``wanted``, else the one it lists), its max length, version."""
    url, client = server.url, server.client
    listed = server.ask(
        lambda: read_reply(ModelList, client.models.with_raw_response.list().content, "/models"),
        "the model list",
    ).data
    names = [m.id for m in listed]
    if chat_api and wanted is not None and wanted not in names:
        # a maker's API lists some models under another name ("models/gemini-1.5-pro-001") and
        # takes the plain one; a wrong name is refused by the first request
        return wanted, None, None
    if not names:
        raise EndpointError(
            f"{redact_url(url)} lists no model at /models: the server is still loading "
            "one, or serves none; wait until it lists the model (or start it with --model)"
        )
    if wanted is None and len(names) != 1:
        raise EndpointError(
            f"{redact_url(url)} serves {len(names)} models ({', '.join(names)}): pass "
            "--served-model NAME"
        )
    if wanted is not None and wanted not in names:
        raise EndpointError(
            f"{redact_url(url)} does not serve {wanted!r} (it serves {', '.join(names)}): check "
            "--served-model"
        )
    chosen = next(m for m in listed if m.id == (wanted or names[0]))
    version = get_json(server, "/version", Version)
    return chosen.id, chosen.max_model_len, version.version if version else None


def server_window(limit: int, own: bool, urls: str) -> Window:
    """The window of a server whose max model length is ``limit`` (``own``: the suite's vLLM;
    ``urls``: the servers that list it), never forceable: vLLM's RoPE table has exactly
    max_position_embeddings rows, and a position past it reads outside the table (on CPU: garbage
    at 32K, a segfault at 256K)."""
    extend = (
        "--model-override max_position_embeddings=N or --rope-scaling JSON (vLLM then builds "
        "its RoPE table that long; past it, it reads outside the table), or use --backend hf"
    )
    if own:
        return Window(model_window(limit).what, f"extend the positions with {extend}", False)
    return Window(
        f"the server's max model length ({limit}, as {urls} lists it at /models)",
        "restart the server with a longer one (vLLM: --max-model-len at least the length plus "
        "the task's output tokens, and past the model's positions --hf-overrides with a "
        "longer max_position_embeddings or rope_scaling, never VLLM_ALLOW_LONG_MAX_MODEL_LEN "
        "alone)",
        forceable=False,
    )


def get_json(
    server: Server,
    path: str,
    kind: type[R],
    body: dict[str, object] | None = None,
    required: bool = False,
) -> R | None:
    """A server-specific endpoint outside the OpenAI API (vLLM's /version, /tokenize), through the
    server's openai client, read as ``kind``. None where the server has none (404, 405, 501) or
    answers in another form; ``required``: any other failure is an EndpointError."""
    import openai

    url, client = server.url.rstrip("/").removesuffix("/v1") + path, server.client
    try:
        send = partial(client.post, body=body) if body is not None else client.get
        reply = send(url, cast_to=str, options={"timeout": 30})
    except openai.APIStatusError as exc:
        if exc.status_code in (404, 405, 501) or not required:
            return None
        failure, fix = f"answered {exc.status_code}", f"check {server.key_env} and the server"
    except openai.APIError as exc:
        unwrap_redirect(exc)
        if not required:
            return None
        failure = f"failed ({type(exc).__name__}: {str(exc)[:120]})"
        fix = "check that the server runs and is reachable from here"
    else:
        with contextlib.suppress(Malformed):  # another server's endpoint of that name
            return read_reply(kind, reply, path)
        return None
    raise EndpointError(f"{redact_url(url)} {failure}; {fix}") from None


def check_tokenizer(
    server: Server, model: str, tokenizer: HFTokenizer, tokenizer_name: str
) -> None:
    """The server (serving ``model``) tokenizes the probe into the local tokenizer's ids (vLLM's
    /tokenize; elsewhere its prompt-token count), or the model would not see the suite's prompts:
    EndpointError."""
    url, client = server.url, server.client
    local = tokenizer.encode_batch([PROBE])[0]
    body = {"model": model, "prompt": PROBE, "add_special_tokens": False}
    tokenized = get_json(server, "/tokenize", TokenIds, body, required=True)
    remote: list[int | None]
    if tokenized is None:  # no /tokenize: the probe's prompt-token count, with special tokens
        local = tokenizer.prefix_ids() + local
        create = client.completions.with_raw_response.create

        def probe() -> Completion:
            sent = create(model=model, prompt=PROBE, max_tokens=1, temperature=0.0)
            return read_reply(Completion, sent.content, "the probe's completion")

        usage = server.ask(probe, "the probe").usage
        remote = [None] * ((usage.prompt_tokens if usage else None) or 0)
        same = len(remote) == len(local)
    else:
        remote = list(tokenized.tokens)
        same = remote == list(local)
    if not same:
        raise EndpointError(
            f"{redact_url(url)} (serving {model!r}) tokenizes a probe text into {len(remote)} "
            f"ids {list(remote)[:8]}..., the local tokenizer {tokenizer_name} into {len(local)} "
            f"ids {local[:8]}...: the server would not see the suite's prompts. Pass --tokenizer "
            "with the served model's tokenizer"
        )
