"""What an OpenAI-compatible server is, asked before any prompt: the model it serves, its max model
length and version, and whether it tokenizes as the suite does (a probe text's ids, vLLM's
/tokenize, or its prompt-token count elsewhere)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from ctxgate.records.refusal import CtxgateError
from ctxgate.retrying import redact_url
from ctxgate.tokens.tokenizers import HFTokenizer

PROBE = (
    "ctxgate probe: the special magic number is 7392641.\n"  # then what tokenizers split apart:
    " Ünïcödé — ✓ 東京\tend  two spaces"  # accents, symbols, CJK, a tab, a double space
)
# a call to the server, with the retries and time limit of every call; the text names what it asks
Ask = Callable[[Callable[[], Any], str], Any]


class EndpointError(CtxgateError, RuntimeError):
    """A server cannot be used as configured; the message names the URL and the fix."""


def describe_server(
    url: str, client: Any, ask: Ask, wanted: str | None, chat_api: bool, key_env: str
) -> tuple[str, int | None, str | None]:
    """The model ``url`` serves (``wanted``, else the one it lists), its max length and version."""
    listed = ask(lambda: list(client.models.list()), "the model list")
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
    version = get_json(url, "/version", key_env).get("version")
    max_model_len = (getattr(chosen, "model_extra", None) or {}).get("max_model_len")
    return chosen.id, max_model_len, version if isinstance(version, str) else None


def get_json(
    base_url: str,
    path: str,
    key_env: str,
    body: dict[str, object] | None = None,
    required: bool = False,
) -> dict[str, object]:
    """A server-specific endpoint outside the OpenAI API (vLLM's /version, /tokenize); {} where the
    server has none (404, 405, 501). ``required``: any other failure is an EndpointError."""
    import urllib.error
    import urllib.request

    headers = {
        "Authorization": f"Bearer {os.environ.get(key_env) or 'EMPTY'}",
        "Content-Type": "application/json",
    }
    data = None if body is None else json.dumps(body).encode()
    url = base_url.rstrip("/").removesuffix("/v1") + path
    try:
        request = urllib.request.Request(url, data=data, headers=headers)
        with urllib.request.urlopen(request, timeout=30) as resp:
            found = json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        if exc.code in (404, 405, 501) or not required:
            return {}
        raise EndpointError(
            f"{redact_url(url)} answered {exc.code} ({exc.reason}); check {key_env} and the server"
        ) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        if not required:
            return {}
        raise EndpointError(
            f"{redact_url(url)} failed ({type(exc).__name__}: {str(exc)[:120]}); check that the "
            "server runs and is reachable from here"
        ) from None
    return found if isinstance(found, dict) else {}


def check_tokenizer(
    url: str, client: Any, model: str, ask: Ask, tokenizer: HFTokenizer, tokenizer_name: str,
    key_env: str,
) -> None:  # fmt: skip
    """The server at ``url`` (serving ``model``) tokenizes the probe into the local tokenizer's ids
    (vLLM's /tokenize; elsewhere its prompt-token count), or the model would not see the suite's
    prompts: EndpointError."""
    local = tokenizer.encode_batch([PROBE])[0]
    body = {"model": model, "prompt": PROBE, "add_special_tokens": False}
    remote = get_json(url, "/tokenize", key_env, body, required=True).get("tokens")
    # no /tokenize: the prompt-token count of the probe, special tokens on both sides
    if not isinstance(remote, list):
        local = tokenizer.prefix_ids() + local
        create = client.completions.create
        usage = ask(
            lambda: create(model=model, prompt=PROBE, max_tokens=1, temperature=0.0).usage,
            "the probe",
        )
        remote = [None] * int(getattr(usage, "prompt_tokens", 0) or 0)
        same = len(remote) == len(local)
    else:
        same = list(remote) == list(local)
    if not same:
        raise EndpointError(
            f"{redact_url(url)} (serving {model!r}) tokenizes a probe text into {len(remote)} "
            f"ids {list(remote)[:8]}..., the local tokenizer {tokenizer_name} into {len(local)} "
            f"ids {local[:8]}...: the server would not see the suite's prompts. Pass --tokenizer "
            "with the served model's tokenizer"
        )
