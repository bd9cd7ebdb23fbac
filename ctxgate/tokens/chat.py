"""A chat template's turns: the fixed text it writes around the messages of a conversation, found
once from the template itself, so that a conversation of thousands of messages is assembled from
pieces each tokenized once, as the template would render it whole
(``codec.PieceEncoder.chat_turns``)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ctxgate.records.refusal import CtxgateError

Render = Callable[
    [list[dict[str, str]]], str
]  # messages -> the template's text, with the generation prompt


class ChatTemplateError(CtxgateError, ValueError):
    """The tokenizer's chat template cannot render a plain user message; the message names its file."""


def _turn_sentinel(i: int) -> str:
    return f"\u27e6CTXGATE-MESSAGE-{i}\u27e7"


@dataclass(frozen=True)
class ChatTurns:
    """The fixed text a chat template writes around the messages of a user/assistant conversation
    that starts and ends with a user message: ``start`` before the first message, one text between
    each two messages by their roles, ``end`` after the last with the generation prompt.
    ``user_user`` is None where the template refuses two user messages in a row. ``trims``: the
    template strips the whitespace around each message's content. A conversation is then assembled
    piece by piece (contents and these texts, each tokenized once) exactly as the template renders
    it whole."""

    start: str
    user_assistant: str
    assistant_user: str
    user_user: str | None
    end: str
    trims: bool = False

    def between(self, before: str, after: str) -> str:
        found = {
            ("user", "assistant"): self.user_assistant,
            ("assistant", "user"): self.assistant_user,
            ("user", "user"): self.user_user,
        }.get((before, after))
        if found is None:
            fix = (
                "pass --chat-template off for the plain transcript, which has that turn"
                if (before, after) == ("user", "user")
                else "give a conversation whose assistant messages each follow a user message"
            )
            raise ValueError(
                f"a {before} message followed by a {after} message cannot be rendered by these "
                f"turns: {fix}"
            )
        return found

    def content(self, text: str) -> str:
        return text.strip() if self.trims else text

    def pieces(self, messages: Sequence[tuple[str, str]]) -> tuple[list[str], list[str]]:
        """The conversation (role, content) as the template's own texts (``start``, the turns
        between messages, ``end``: one more than the messages) and the contents as the template
        writes them; text, content, text, ..., content, text joined is the rendering. The one walk
        over a conversation: callers tokenize the few distinct texts once and each content once."""
        if not messages or messages[0][0] != "user" or messages[-1][0] != "user":
            roles = "none" if not messages else f"{messages[0][0]} ... {messages[-1][0]}"
            raise ValueError(
                f"a conversation starts and ends with a user message, not {roles}: give one that "
                "does"
            )
        texts, contents = [self.start], []
        for i, (role, text) in enumerate(messages):
            if i:
                texts.append(self.between(messages[i - 1][0], role))
            contents.append(self.content(text))
        texts.append(self.end)
        return texts, contents

    def render(self, messages: Sequence[tuple[str, str]]) -> str:
        """The conversation (role, content) as the template renders it, with the generation prompt."""
        texts, contents = self.pieces(messages)
        return "".join(itertools.chain.from_iterable(zip(texts, contents))) + texts[-1]


def _between_sentinels(text: str, count: int) -> list[str] | None:
    """The texts before, between and after sentinels 0..count-1 in ``text``; None when one is
    missing or out of order."""
    parts, at = [], 0
    for i in range(count):
        found = text.find(_turn_sentinel(i), at)
        if found < 0:
            return None
        parts.append(text[at:found])
        at = found + len(_turn_sentinel(i))
    return [*parts, text[at:]]


def turns_of(render: Render, source: Path) -> ChatTurns:
    """A chat template's turns (``render``: the template applied to messages, with the generation
    prompt; ``source``: its file, for messages), found by rendering conversations whose contents are
    sentinels, then checked: the turns joined must reproduce the template's own rendering of a
    longer conversation."""
    alternating = ("user", "assistant", "user", "assistant", "user")
    sentinels = [{"role": r, "content": _turn_sentinel(i)} for i, r in enumerate(alternating)]
    parts = _between_sentinels(
        _rendered(render, sentinels, source, "fails on a five-message conversation"),
        len(alternating),
    )
    if parts is None or parts[1] != parts[3] or parts[2] != parts[4]:
        raise ChatTemplateError(
            f"the chat template ({source}) does not write the same text between every user "
            "and assistant message, so a conversation cannot be assembled from its turns: pass "
            "--chat-template "
            "off for the plain transcript"
        )
    start, user_assistant, assistant_user, _, _, end = parts
    if not user_assistant or not assistant_user:
        # the bare template of --endpoint-api chat ("{{ message['content'] }}" only) is one: the
        # conversation would reach the model as one run of text, its requests and answers no longer
        # told apart
        raise ChatTemplateError(
            f"the chat template ({source}) writes nothing between a user and an assistant "
            "message, so a conversation rendered with it has no turns the model can tell apart: "
            "serve the model "
            "with --endpoint-api completions (its own template, as token ids), or pass "
            "--chat-template off for "
            "the plain transcript"
        )
    turns = ChatTurns(start, user_assistant, assistant_user, _user_user(render, source, parts), end)
    roles = ("user", "assistant", "user", "assistant", "user", "assistant", "user")
    padded = [f" \n{_turn_sentinel(i)}\n " for i in range(len(roles))]
    seven = [{"role": r, "content": c} for r, c in zip(roles, padded)]
    whole = _rendered(render, seven, source, "renders five messages but fails on seven")
    for trims in (False, True):
        if replace(turns, trims=trims).render(list(zip(roles, padded))) == whole:
            return replace(turns, trims=trims)
    raise ChatTemplateError(
        f"the chat template ({source}) renders a seven-message conversation otherwise than "
        "its turns joined (it treats messages by position, or alters their contents): pass "
        "--chat-template off "
        "for the plain transcript"
    )


def _rendered(render: Render, messages: list[dict[str, str]], source: Path, what: str) -> str:
    """The template's rendering of ``messages``, or a ChatTemplateError saying it ``what`` and why."""
    try:
        return render(messages)
    except Exception as exc:  # noqa: BLE001 - jinja raises many types, and templates raise their own
        message = " ".join(str(exc).split())[:200]
        raise ChatTemplateError(
            f"the chat template ({source}) {what} ({type(exc).__name__}: {message}): fix the "
            "template, or pass "
            "--chat-template off for the plain transcript"
        ) from None


def _user_user(render: Render, source: Path, parts: list[str]) -> str | None:
    """The text between two user messages, or None where the template refuses them or renders them
    apart from its other turns."""
    from jinja2.exceptions import (
        TemplateError,
    )  # present wherever a template renders (transformers uses it)

    roles = ("user", "user", "assistant", "user")
    try:
        found = _between_sentinels(_sentinels(render, roles), len(roles))
    except Exception as exc:  # noqa: BLE001 - jinja raises many types, and templates raise their own
        # a template's own refusal ("roles must alternate") comes from raise_exception, which raises
        # TemplateError itself; jinja's subclasses of it (an undefined name) and any other type are
        # its bugs
        if type(exc) is TemplateError:
            return None
        message = " ".join(str(exc).split())[:200]
        raise ChatTemplateError(
            f"the chat template ({source}) fails on two user messages in a row "
            f"({type(exc).__name__}: {message}) other than by refusing them with raise_exception: "
            "fix the "
            "template, or pass --chat-template off for the plain transcript"
        ) from None
    if found is None or (found[0], found[2], found[3], found[4]) != (
        parts[0],
        parts[1],
        parts[2],
        parts[5],
    ):
        return None
    return found[1]


def _sentinels(render: Render, roles: Sequence[str]) -> str:
    return render([{"role": r, "content": _turn_sentinel(i)} for i, r in enumerate(roles)])
