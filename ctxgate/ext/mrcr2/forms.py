"""MRCR v2's wording, as eval_hub's ``mrcr_utils.py`` writes it (specification: every string
here is the reference's, character for character): a request and its writing as a turn of the
plain transcript or of the JSON one, the few-shot examples, and the closing question."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

INDEX_NAMES = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")
HASH_LENGTH = 12
HEAD = (
    "Here are some examples of conversations succeeded by a follow-up question answered correctly:"
)
RULE = "========"
STATIC_FILE = "static_fewshot.json"


def escape(text: str) -> str:
    """JSON string content, escaped as ``json.dumps`` does (non-ASCII as ``\\uXXXX``)."""
    return json.dumps(text)[1:-1]


def request(fmt: str, topic: str, style: str) -> str:
    return f"Write a {fmt} about {topic} in {style} style."


def turn(query: str, text: str, json_style: bool) -> str:
    """A request and the writing that answers it, as one piece of the transcript."""
    if json_style:
        return (
            f'{{"role": "user", "content": "{escape(query)}"}}, '
            f'{{"role": "assistant", "content": "{escape(text)}"}}, '
        )
    return f"User: {query}\n\nAssistant: {text}\n\n"


def question(token: str, nth: int, fmt: str, topic: str, style: str) -> str:
    """The closing question about the ``nth`` (from 0) writing of one request, before wrapping."""
    return (
        f"User: Prepend {token} to the {INDEX_NAMES[nth]} {fmt} about {topic} in a {style} "
        "style. Do not include any other text in your response.\n\nAssistant:"
    )


def final_query(asked: str, json_style: bool) -> str:
    """The question as it ends the prompt: the JSON transcript closes its list with it."""
    return f'{{"role": "user", "content": "{escape(asked)}"}}]' if json_style else asked


def example_question(token: str, index: str, fmt: str, topic: str, style: str) -> str:
    """A few-shot example's question: worded as the closing one, with a space after the colon."""
    return (
        f"User: Prepend {token} to the {index} {fmt} about {topic} in a {style} style. "
        "Do not include any other text in your response.\n\nAssistant: "
    )


def example_turn(query: str, text: str) -> str:
    """A few-shot example's turn: always the plain form, JSON transcript or not."""
    return f"User: {query}\n\nAssistant: {text}\n\n"


def fewshot(example1: str, example2: str, json_style: bool) -> str:
    """The generated few-shot opening: two examples, numbered in the plain form (which then opens
    a third, the transcript), unnumbered in the JSON form."""
    if json_style:
        opened, closed = f"{RULE} EXAMPLE {RULE}", f"{RULE} END EXAMPLE {RULE}"
        return (
            f"{HEAD}\n{opened}\n\n{example1}\n\n{closed}\n\n{opened}\n\n{example2}\n\n{closed}\n\n"
        )
    return (
        f"{HEAD}\n{RULE} EXAMPLE 1 {RULE}\n\n{example1}\n\n{RULE} END EXAMPLE 1 {RULE}\n\n"
        f"{RULE} EXAMPLE 2 {RULE}\n\n{example2}\n\n{RULE} END EXAMPLE 2 {RULE}\n\n"
        f"{RULE} EXAMPLE 3 {RULE}\n\n"
    )


def wrap_fewshot(prefix: str) -> str:
    """The generated opening as the JSON transcript's first message."""
    return f'[{{"role": "user", "content": "{escape(prefix)}"}}, '


@cache
def static_fewshot(json_style: bool) -> str:
    """The reference's fixed opening (``FEW_SHOT_PREFIX``, or ``FEW_SHOT_PREFIX_JSON_WRAPPED``)."""
    shipped = json.loads((resources.files(__package__) / STATIC_FILE).read_text("utf-8"))
    if json_style:
        return '[{"role": "user", "content": ' + json.dumps(shipped["json"]) + "}, "
    return str(shipped["text"])
