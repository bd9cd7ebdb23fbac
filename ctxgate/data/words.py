"""Word lists, shipped so that data never depend on a library version: wonderwords 3.0.1's nouns,
adjectives and verbs (MIT, see data/words/), RULER's keys and CWE vocabulary, and for CWE past
those, Webster's Second list (public domain; by ``scripts/build_words.py``)."""

from __future__ import annotations

import lzma
from functools import lru_cache
from importlib import resources


def _resource(name: str) -> bytes:
    return resources.files("ctxgate.data").joinpath("words").joinpath(name).read_bytes()


def _read(name: str) -> tuple[str, ...]:
    lines = (line.strip() for line in _resource(name).decode("utf-8").splitlines())
    return tuple(w for w in lines if w.isalpha() and w.islower())


@lru_cache(maxsize=1)
def nouns() -> tuple[str, ...]:
    return _read("nouns.txt")


@lru_cache(maxsize=1)
def adjectives() -> tuple[str, ...]:
    return _read("adjectives.txt")


@lru_cache(maxsize=1)
def vocabulary() -> tuple[str, ...]:
    """Sorted unique nouns, adjectives and verbs: the CWE word pool."""
    return tuple(sorted(set(nouns()) | set(adjectives()) | set(_read("verbs.txt"))))


@lru_cache(maxsize=1)
def english() -> tuple[str, ...]:
    """Webster's Second list, lowercase ASCII, sorted (234,448 words): CWE's words past those."""
    return tuple(lzma.decompress(_resource("english_web2.txt.xz")).decode("ascii").split())
