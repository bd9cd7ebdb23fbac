"""Word lists, shipped with the package so that data never depend on a library version.

The lists are the noun, adjective and verb lists of wonderwords 3.0.1 (MIT licence, see data/words/), which is
what RULER draws its keys and CWE vocabulary from, and, for CWE at lengths that need more distinct words than those,
Webster's Second International word list (public domain; ``english_web2.txt.xz``, built by
``scripts/build_words.py``), where RULER switches to a larger English list of its own.
"""

from __future__ import annotations

import lzma
from functools import lru_cache
from importlib import resources


def _read(name: str) -> tuple[str, ...]:
    text = resources.files("ctxgate.data").joinpath("words").joinpath(name).read_text("utf-8")
    return tuple(
        w for w in (line.strip() for line in text.splitlines()) if w.isalpha() and w.islower()
    )


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
    """Webster's Second word list, lowercase ASCII words, sorted (234,448 words): CWE's words past the vocabulary."""
    raw = (
        resources.files("ctxgate.data")
        .joinpath("words")
        .joinpath("english_web2.txt.xz")
        .read_bytes()
    )
    return tuple(lzma.decompress(raw).decode("ascii").split())
