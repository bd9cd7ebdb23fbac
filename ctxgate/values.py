"""What a value is, as the refusals check it: a number (not a bool), a finite one, a whole number
above 0; and the known name nearest a mistyped one, for a refusal's hint."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from typing import TypeGuard


def is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_finite(value: object) -> TypeGuard[int | float]:
    """Not NaN or an infinity (JSON has neither, Python's json reads both)."""
    return is_number(value) and (isinstance(value, int) or math.isfinite(value))


def is_whole(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def did_you_mean(key: str, known: Iterable[str]) -> str:
    """`` (did you mean NAME?)`` with the known name nearest ``key``; empty when none is."""
    near = difflib.get_close_matches(key, sorted(known), n=1)
    return f" (did you mean {near[0]}?)" if near else ""
