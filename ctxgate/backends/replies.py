"""A server's reply held to the request it answers: nothing it says is taken on trust. Text past the
request's budget (a server that ignored ``max_tokens``) is cut to it and counted as such; the
completion tokens its usage reports are checked against what it was allowed and what its text
holds, and one that cannot be right is refused, naming the server. The generated tokens a case
counts are the usage's where it is right, else counted here from the text."""

from __future__ import annotations

from collections.abc import Sequence

from ctxgate.backends.base import Generation
from ctxgate.refusal import CtxgateError
from ctxgate.retrying import ChatChoice, ChatCompletion, Completion, redact_url
from ctxgate.tokens.tokenizers import RawTokenizer


class ImpossibleUsage(CtxgateError, ValueError):
    """A server's usage that cannot be right for its reply: the line names the server and why."""


def slack(counted: int) -> int:
    """How far a re-tokenized text's count may stray from the ids it was generated as: a text
    decoded and encoded again may merge or split a few tokens."""
    return max(2, counted // 10)


def as_given(resp: Completion | ChatCompletion, url: str) -> Generation:
    """The reply as the server at ``url`` gave it: its text, what its usage says it generated
    (``reported``; ``output_tokens`` is left for ``checked`` to count) and what of the prompt it
    served from its prefix cache (``cached``), a count that cannot be right refused."""
    choice = resp.choices[0]  # read_reply made sure there is one
    tokens = resp.usage.completion_tokens if resp.usage else None
    cached = _cached(resp, url)
    finish = "length" if choice.finish_reason == "length" else "stop"
    if isinstance(choice, ChatChoice):
        # a chat reply a provider filtered has no content: an empty output, scored as one
        message = choice.message
        thought = message.reasoning or message.reasoning_content
        return Generation(
            message.content or "", 0, finish, thought=thought, reported=tokens, cached=cached
        )
    pieces = choice.logprobs.tokens if choice.logprobs else None  # asked with a budget
    return Generation(
        choice.text,
        0,
        finish,
        pieces=tuple(pieces or ()) or None,
        ids=choice.token_ids,
        reported=tokens,
        cached=cached,
    )


def _cached(resp: Completion | ChatCompletion, url: str) -> int | None:
    """The prompt tokens the usage says came from the prefix cache: none below 0, none past the
    prompt it says it read."""
    usage = resp.usage
    details = usage.prompt_tokens_details if usage else None
    cached = details.cached_tokens if details else None
    if cached is None or usage is None:
        return None
    prompt = usage.prompt_tokens
    if cached < 0 or (prompt is not None and cached > prompt):
        raise ImpossibleUsage(
            f"{redact_url(url)} reported {cached} cached prompt tokens"
            + (f" of a prompt of {prompt}" if prompt is not None else "")
            + (": a count below 0" if cached < 0 else ": more than the prompt holds")
        )
    return cached


def checked(reply: Generation, budget: int, tokenizer: RawTokenizer, url: str) -> Generation:
    """``reply`` as the server gave it (its ``output_tokens`` the usage's, or None in
    ``reported`` where it gave none) held to ``budget``, the request's ``max_tokens``: its text cut
    to the budget where it ran past it (``overrun``: the tokens cut), its count the usage's where
    that is right. Raises ImpossibleUsage, naming the server at ``url``."""
    server = str(redact_url(url))
    ids = list(reply.ids) if reply.ids is not None else None
    exact = ids is not None
    counted = len(ids) if ids is not None else len(tokenizer.encode(reply.text))
    usage = reply.reported
    if usage is not None and usage < 0:
        raise ImpossibleUsage(f"{server} reported {usage} completion tokens: a count below 0")
    # a text re-tokenized may count a few more than the ids it was generated as: where the server
    # says it kept to the budget and the text's count is within that slack, it did
    kept_to = not exact and usage is not None and usage <= budget
    if counted > budget + (slack(counted) if kept_to else 0):
        text, kept = cut(reply.text, ids, budget, tokenizer)
        return Generation(
            text,
            len(kept),
            "length",
            reply.thought,
            reply.forced,
            reply.prompt_tokens,
            None,
            tuple(kept) if exact else None,
            reported=None,  # its count is of the text it gave, not of what is scored
            overrun=counted - len(kept),
            cached=reply.cached,
        )
    # the server counts its tokens as it counts the budget: none past it, whatever the text
    if usage is not None and usage > budget:
        raise ImpossibleUsage(
            f"{server} reported {usage} completion tokens for a request allowed {budget}, for a "
            f"text of {counted}: more than it was allowed"
        )
    if usage is not None and usage < counted - (0 if exact else slack(counted)):
        raise ImpossibleUsage(
            f"{server} reported {usage} completion tokens for a text of {counted} tokens: fewer "
            "than its text holds"
        )
    tokens = usage if usage is not None else counted
    return Generation(
        reply.text,
        tokens,
        reply.finish_reason,
        reply.thought,
        reply.forced,
        reply.prompt_tokens,
        reply.pieces,
        reply.ids,
        reported=usage,
        cached=reply.cached,
    )


def cut(
    text: str, ids: Sequence[int] | None, budget: int, tokenizer: RawTokenizer
) -> tuple[str, list[int]]:
    """The text's first ``budget`` tokens (its generated ids where the server gave them, else its
    own tokens), as text and ids, shorter still where the text decoded does not encode back within
    the budget."""
    kept = list(ids if ids is not None else tokenizer.encode(text))[: max(budget, 0)]
    while True:
        said = tokenizer.decode(kept)
        if len(tokenizer.encode(said)) <= budget or not kept:
            return said, kept
        kept = kept[:-1]
