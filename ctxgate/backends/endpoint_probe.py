"""What an OpenAI-compatible server is, asked before any prompt: the model it serves, its max model
length and version, and whether it tokenizes as the suite does (a probe text's ids, vLLM's
/tokenize, or its prompt-token count elsewhere)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from ctxgate.records.refusal import CtxgateError
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


def describe_server(
    url: str, client: Any, ask: Ask, wanted: str | None, chat_api: bool, key_env: str
) -> tuple[str, int | None, str | None]:
    """The model ``url`` serves (``wanted``, else the one it lists), its max length and version."""
    listed = ask(
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
    version = get_json(client, url, "/version", Version, key_env)
    return chosen.id, chosen.max_model_len, version.version if version else None


def get_json(
    client: Any,
    base_url: str,
    path: str,
    kind: type[R],
    key_env: str,
    body: dict[str, object] | None = None,
    required: bool = False,
) -> R | None:
    """A server-specific endpoint outside the OpenAI API (vLLM's /version, /tokenize), through the
    openai ``client`` (its door, its key), read as ``kind``. None where the server has none (404,
    405, 501) or answers in another form; ``required``: any other failure is an EndpointError."""
    import openai

    url = base_url.rstrip("/").removesuffix("/v1") + path
    try:
        send = partial(client.post, body=body) if body is not None else client.get
        reply = send(url, cast_to=str, options={"timeout": 30})
    except openai.APIStatusError as exc:
        if exc.status_code in (404, 405, 501) or not required:
            return None
        failure, fix = f"answered {exc.status_code}", f"check {key_env} and the server"
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
    url: str, client: Any, model: str, ask: Ask, tokenizer: HFTokenizer, tokenizer_name: str,
    key_env: str,
) -> None:  # fmt: skip
    """The server at ``url`` (serving ``model``) tokenizes the probe into the local tokenizer's ids
    (vLLM's /tokenize; elsewhere its prompt-token count), or the model would not see the suite's
    prompts: EndpointError."""
    local = tokenizer.encode_batch([PROBE])[0]
    body = {"model": model, "prompt": PROBE, "add_special_tokens": False}
    tokenized = get_json(client, url, "/tokenize", TokenIds, key_env, body, required=True)
    remote: list[int | None]
    if tokenized is None:  # no /tokenize: the probe's prompt-token count, with special tokens
        local = tokenizer.prefix_ids() + local
        create = client.completions.with_raw_response.create

        def probe() -> Completion:
            sent = create(model=model, prompt=PROBE, max_tokens=1, temperature=0.0)
            return read_reply(Completion, sent.content, "the probe's completion")

        usage = ask(probe, "the probe").usage
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
