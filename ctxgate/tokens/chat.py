"""A chat template's turns: the fixed text it writes around a conversation's messages, found once
from the template itself, so that a conversation of thousands of messages is assembled from pieces
each tokenized once, as the template would render it whole (``codec.PieceEncoder.chat_turns``)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ctxgate.refusal import CtxgateError

# messages -> the template's text, with the generation prompt
Render = Callable[[list[dict[str, str]]], str]


class ChatTemplateError(CtxgateError, ValueError):
    """The chat template cannot render a plain user message; the message names its file."""


def _turn_sentinel(i: int) -> str:
    return f"\u27e6CTXGATE-MESSAGE-{i}\u27e7"


def _messages(roles: Sequence[str]) -> list[dict[str, str]]:
    return [{"role": r, "content": _turn_sentinel(i)} for i, r in enumerate(roles)]


def brief(exc: BaseException) -> str:
    """An exception's type and message, on one line, for a ChatTemplateError."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"


@dataclass(frozen=True)
class ChatTurns:
    """The fixed text a chat template writes around the messages of a user/assistant conversation
    that starts and ends with a user message: ``start``, the text between each two messages by
    their roles (``user_user`` None where the template refuses two user messages in a row), ``end``
    with the generation prompt. ``trims``: the template strips each message's content."""

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
        """The conversation (role, content) as the template's texts (one more than the messages)
        and the contents as it writes them: text, content, ..., content, text is the rendering."""
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
        """The conversation as the template renders it, with the generation prompt."""
        texts, contents = self.pieces(messages)
        return "".join(itertools.chain.from_iterable(zip(texts, contents))) + texts[-1]


def _between_sentinels(text: str, count: int) -> list[str] | None:
    """The texts around sentinels 0..count-1 in ``text``; None when one is missing or misplaced."""
    parts, at = [], 0
    for i in range(count):
        found = text.find(_turn_sentinel(i), at)
        if found < 0:
            return None
        parts.append(text[at:found])
        at = found + len(_turn_sentinel(i))
    return [*parts, text[at:]]


def turns_of(render: Render, source: Path) -> ChatTurns:
    """A chat template's turns (``render``: the template, with the generation prompt; ``source``:
    its file), found from conversations of sentinels, then checked: the turns joined must give the
    template's own rendering of a longer conversation."""
    alternating = ("user", "assistant", "user", "assistant", "user")
    five = _rendered(render, _messages(alternating), source, "fails on a five-message conversation")
    parts = _between_sentinels(five, len(alternating))
    if parts is None or parts[1] != parts[3] or parts[2] != parts[4]:
        raise ChatTemplateError(
            f"the chat template ({source}) does not write the same text between every user and "
            "assistant message, so a conversation cannot be assembled from its turns: pass "
            "--chat-template off for the plain transcript"
        )
    start, user_assistant, assistant_user, _, _, end = parts
    if not user_assistant or not assistant_user:
        # the bare template of --endpoint-api chat ("{{ message['content'] }}" only) is one: the
        # model would get one run of text, its requests and answers no longer told apart
        raise ChatTemplateError(
            f"the chat template ({source}) writes nothing between a user and an assistant "
            "message, so a conversation rendered with it has no turns the model can tell apart: "
            "serve the model with --endpoint-api completions (its own template, as token ids), or "
            "pass --chat-template off for the plain transcript"
        )
    turns = ChatTurns(start, user_assistant, assistant_user, _user_user(render, source, parts), end)
    roles = (*alternating, "assistant", "user")
    padded = [f" \n{_turn_sentinel(i)}\n " for i in range(len(roles))]
    seven = [{"role": r, "content": c} for r, c in zip(roles, padded)]
    whole = _rendered(render, seven, source, "renders five messages but fails on seven")
    for trims in (False, True):
        if replace(turns, trims=trims).render(list(zip(roles, padded))) == whole:
            return replace(turns, trims=trims)
    raise ChatTemplateError(
        f"the chat template ({source}) renders a seven-message conversation otherwise than its "
        "turns joined (it treats messages by position, or alters their contents): pass "
        "--chat-template off for the plain transcript"
    )


def _rendered(render: Render, messages: list[dict[str, str]], source: Path, what: str) -> str:
    """The template's rendering of ``messages``, or a ChatTemplateError saying it ``what``."""
    try:
        return render(messages)
    except Exception as exc:  # noqa: BLE001 - jinja and templates raise many types
        raise ChatTemplateError(
            f"the chat template ({source}) {what} ({brief(exc)}): fix the template, or pass "
            "--chat-template off for the plain transcript"
        ) from None


def _user_user(render: Render, source: Path, parts: list[str]) -> str | None:
    """The text between two user messages, or None where the template refuses them or renders them
    apart from its other turns."""
    # present wherever a template renders (transformers uses it)
    from jinja2.exceptions import TemplateError

    roles = ("user", "user", "assistant", "user")
    try:
        found = _between_sentinels(render(_messages(roles)), len(roles))
    except Exception as exc:  # noqa: BLE001 - jinja and templates raise many types
        # a template's own refusal ("roles must alternate") comes from raise_exception, which raises
        # TemplateError itself; jinja's subclasses of it (an undefined name) and other types are
        # its bugs
        if type(exc) is TemplateError:
            return None
        raise ChatTemplateError(
            f"the chat template ({source}) fails on two user messages in a row ({brief(exc)}) "
            "other than by refusing them with raise_exception: fix the template, or pass "
            "--chat-template off for the plain transcript"
        ) from None
    if found is None or [found[i] for i in (0, 2, 3, 4)] != [parts[i] for i in (0, 1, 2, 5)]:
        return None
    return found[1]
