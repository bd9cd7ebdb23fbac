"""A reasoning model's thought: how its chat template turns thinking on or off, the markers that
open and close a thought, and an output split into thought and answer. Resolved once per run from
the tokenizer and its template (``prepare``), then read by the prompt builder (the template's
arguments), the engines (markers that are special tokens must survive decoding) and the scorer."""

from __future__ import annotations

import re
from collections.abc import Set
from dataclasses import dataclass
from typing import Any

from ctxgate.api import (
    THINKING_MODES,
    CtxgateError,
    ThoughtEnd,
    model_template,
    render,
    set_template_kwargs,
    vocabulary,
)

MODES = THINKING_MODES  # --thinking's choices: the spine's option
EFFORTS = ("low", "medium", "high")  # gpt-oss's reasoning levels
# (opening, closing) markers of the families that write their thought inline: Qwen3 and
# DeepSeek-R1's, Magistral's, and gpt-oss's analysis channel before its final one
MARKERS = (
    ("<think>", "</think>"),
    ("[THINK]", "[/THINK]"),
    ("<|channel|>analysis", "<|channel|>final<|message|>"),
)
MARKED = frozenset(m for pair in MARKERS for m in pair)  # a special token that is a marker


class ThinkingError(CtxgateError, ValueError):
    """--thinking, --think-end or --thinking-budget cannot apply to the model; the line says why."""


@dataclass(frozen=True)
class Thinking:
    """The options as given: ``mode`` one of MODES, ``budget`` tokens of thought before the answer
    (None: thought and answer share the task's budget), ``end`` the closing marker (None: found)."""

    mode: str = "default"
    budget: int | None = None
    end: str | None = None


@dataclass(frozen=True)
class ThoughtFormat:
    """How this model thinks, resolved once. ``end`` None: it writes no thought (nothing is
    split). ``opened``: its generation prompt opens the thought (R1's ends in ``<think>``), so every
    output starts inside one; ``closed``: it closes an empty one (Qwen3's with thinking off), so
    what a server's reasoning parser calls thought is answer. ``special``: the closing marker is a
    special token, which an engine drops from its text unless asked to keep special tokens."""

    mode: str = "default"
    budget: int | None = None
    start: str | None = None
    end: str | None = None
    opened: bool = False
    special: bool = False
    template_kwargs: tuple[tuple[str, object], ...] = ()  # hashable: it keys prompt memos
    closed: bool = False
    marker_tokens: int = 0  # the closing marker's, counted in a budget
    # the generation prompt's tokens after the opening marker where it opens the thought (R1's
    # line break): an engine's own budget counts them
    prompt_thought: int = 0
    # what holds the thought to the budget: "engine" (the server's own thinking budget) or
    # "forcing" (forcing.py); resolved with the backend, None without a budget
    budget_by: str | None = None
    # where a chat prompt's answer prefix (RULER's) goes: "after the thought" (the suite continues
    # the thought with it), "left out" (a chat API cannot be continued); None: in the prompt
    answer_prefix: str | None = None
    end_given: bool = False  # ``end`` is --think-end's, not found in the model's files

    @property
    def thinks(self) -> bool:
        return self.end is not None

    def split(self, text: str) -> tuple[str | None, str, ThoughtEnd | None, int]:
        """``text`` as (thought, answer, how the thought ended, where the answer starts in it).
        The answer is what follows the last closing marker. With none, an output that opened a
        thought (or whose prompt did) is all thought and its answer empty: "never"; any other is
        all answer, with no thought."""
        if self.end is None:
            return None, text, None, 0
        at = text.rfind(self.end)
        if at >= 0:
            after = at + len(self.end)
            return self._thought(text[:at]), text[after:].lstrip(), "model", after
        if self.opened or (self.start is not None and text.lstrip().startswith(self.start)):
            return self._thought(text), "", "never", len(text)
        return None, text, None, 0

    def _thought(self, text: str) -> str:
        text = text.lstrip()
        return text.removeprefix(self.start).lstrip() if self.start else text

    def describe(self) -> dict[str, object]:
        """For the run record: what was asked and what was found."""
        return {
            "mode": self.mode,
            "budget": self.budget,
            "budget_by": self.budget_by,
            "start": self.start,
            "end": self.end,
            "opened": self.opened,
            "closed": self.closed,
            "template_kwargs": dict(self.template_kwargs),
            "answer_prefix": self.answer_prefix,
        }


def prepare(thinking: Thinking, tokenizer: Any, model: str) -> ThoughtFormat:
    """The model's thought format, with the template's arguments set on ``tokenizer`` (an
    ``HFTokenizer``; another kind supports ``--think-end`` alone). Raises ThinkingError where
    ``thinking`` asks what the model cannot do."""
    template, (added, special_tokens) = model_template(tokenizer), vocabulary(tokenizer)
    kwargs = _switch(thinking.mode, template, model)
    start, end = _markers(added | (special_tokens & MARKED), template, thinking.end)
    if end is None and (thinking.mode != "default" or thinking.budget is not None):
        flag = "--thinking-budget" if thinking.mode == "default" else f"--thinking {thinking.mode}"
        raise ThinkingError(
            f"{flag}: {model} shows no end-of-thought marker (no </think>, [/THINK] or gpt-oss "
            "channel in its tokenizer or chat template): pass --think-end TEXT with the text that "
            "ends its thought, or drop the option"
        )
    marker = len(tokenizer.encode(end)) if end else 0
    if thinking.budget is not None and thinking.budget <= marker:
        raise ThinkingError(
            f"--thinking-budget {thinking.budget} leaves no room for a thought before {model}'s "
            f"closing marker ({marker} token(s), counted in the budget): give "
            f"--thinking-budget {marker + 1} or more"
        )
    if kwargs:
        set_template_kwargs(tokenizer, kwargs)
    special = bool(end and any(t in end for t in special_tokens))
    tail = ""  # the generation prompt, as the run renders it
    if end is not None and template:
        said = render(tokenizer, [{"role": "user", "content": "?"}], template)
        tail = (said or "").rpartition("?")[2]
    opened = bool(start and tail.rstrip().endswith(start))
    inside = tail[tail.rfind(str(start)) + len(str(start)) :] if opened else ""
    closed = bool(end and tail.rstrip().endswith(end))
    pairs = tuple(kwargs.items())
    return ThoughtFormat(
        thinking.mode,
        thinking.budget,
        start,
        end,
        opened,
        special,
        pairs,
        closed,
        marker,
        prompt_thought=len(tokenizer.encode(inside)) if inside else 0,
        end_given=thinking.end is not None,
    )


def _switch(mode: str, template: str, model: str) -> dict[str, object]:
    """The template arguments ``mode`` sets: Qwen3's ``enable_thinking``, gpt-oss's
    ``reasoning_effort``."""
    if mode == "default":
        return {}
    if mode in EFFORTS:
        if "reasoning_effort" not in template:
            raise ThinkingError(
                f"--thinking {mode}: the chat template of {model} has no reasoning_effort "
                "(gpt-oss's reasoning level): pass --thinking on or off, or leave --thinking out"
            )
        return {"reasoning_effort": mode}
    if "enable_thinking" in template:
        return {"enable_thinking": mode == "on"}
    if "reasoning_effort" in template:
        if mode == "on":
            return {}
        raise ThinkingError(
            f"--thinking off: the chat template of {model} cannot turn thinking off, only set "
            "gpt-oss's reasoning level: pass --thinking low (its least), or leave --thinking out"
        )
    if mode == "on":
        return {}  # a model that always thinks (R1): on is its only way
    raise ThinkingError(
        f"--thinking off: the chat template of {model} has no switch for thinking "
        "(enable_thinking): leave --thinking out, or serve a template with the switch"
    )


def _markers(vocab: Set[str], template: str, given: str | None) -> tuple[str | None, str | None]:
    """The opening and closing markers: the first family whose closing marker is ``given``
    (--think-end) or, with none given, is in the tokenizer's vocabulary or the chat template. A
    closing marker of no family opens as the model's own family does, else as its tag reads
    (``<x>`` before ``</x>``, ``[X]`` before ``[/X]``): an output that opens a thought the given
    marker never closes is then all thought, counted as never ended, not scored whole."""
    own = [(s, e) for s, e in MARKERS if e in vocab or e in template]
    for start, end in MARKERS:
        if given == end or (given is None and (start, end) in own):
            return start, end
    if given is None:
        return None, None
    if own:
        return own[0][0], given
    tag = re.fullmatch(r"<\/([^<>]+)>|\[\/([^\[\]]+)\]", given)
    return (f"<{tag[1]}>" if tag[1] else f"[{tag[2]}]") if tag else None, given
