"""Input lengths as users write them (``8k``) and as the benchmarks mean them (8192). RULER and
HELMET use binary thousands: "128K" is 131072 tokens. Length 0 is BABILong's "0k", a task's bare
form (its facts without background text, ``TaskSpec.bare``); every other task skips it."""

from __future__ import annotations

import re

from ctxgate.refusal import CtxgateError

# at most 18 digits: far beyond any window, and short of the digits int() refuses to read
_LENGTH = re.compile(r"^\s*(\d{1,18})\s*([kKmM]?)\s*$")
_UNITS = {"": 1, "k": 1024, "m": 1024 * 1024}


class LengthError(CtxgateError, ValueError):
    """A length value that cannot be understood."""


def parse_length(text: str | int) -> int:
    """``"8k"`` -> 8192, ``"8192"`` -> 8192, ``"1m"`` -> 1048576, ``"0"`` -> 0 (the bare form)."""
    if isinstance(text, int):
        value = text
    else:
        match = _LENGTH.match(text)
        if not match:
            raise LengthError(
                f"cannot read the length {text!r}: write a token count such as 8192 or a "
                "binary-thousands form such as 8k (=8192) or 128k (=131072)"
            )
        value = int(match.group(1)) * _UNITS[match.group(2).lower()]
    if value < 0:
        raise LengthError(f"the length {text!r} must be a number of tokens, e.g. 8k")
    return value


def parse_lengths(text: str) -> tuple[int, ...]:
    """A comma-separated list, sorted and de-duplicated: ``"1k,512"`` -> (512, 1024)."""
    parts = [p for p in text.split(",") if p.strip()]
    if not parts:
        raise LengthError(f"--lengths {text!r} names no length: write e.g. --lengths 8k,16k,32k")
    return tuple(sorted({parse_length(p) for p in parts}))


def format_length(tokens: int) -> str:
    """131072 -> "128K", 1000 -> "1000", 0 -> "0": a short label for tables."""
    for unit, size in (("M", 1024 * 1024), ("K", 1024)):
        if tokens and tokens % size == 0:
            return f"{tokens // size}{unit}"
    return str(tokens)
