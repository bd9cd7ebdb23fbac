"""Word overlap between a question and its needle, measured and capped: latent needles must not be
findable by literal matching (NoLiMa's premise). The three steps (docs/tasks.md, "The overlap
filter") err toward calling words shared (a false alarm only makes the set stricter); at most
``MAX_SHARED`` content words may be shared."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from ctxgate.api import CtxgateError

CHARACTER_PLACEHOLDER = "{CHAR}"
MAX_SHARED = 0

# English function words, auxiliaries and question words: they carry no lexical cue to the needle.
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be been before being below between
    both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more
    most my myself no nor not now of off on once only or other our ours ourselves out over own same
    she should so some such than that the their theirs them themselves then there these they this
    those through to too under until up very was we were what when where which while who whom whose
    why will with would you your yours yourself yourselves
    """.split()
)

_WORD = re.compile(r"[a-z0-9]+")
_MIN_STEM = 3


def fold(text: str) -> str:
    """Accents dropped, lower-cased: ``Reykjavík`` and ``reykjavik`` are one word."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def content_words(text: str) -> tuple[str, ...]:
    """Step 1: the words of ``text`` in order, repeats kept, ``{CHAR}`` removed, accents folded,
    runs of letters and digits (``Rembrandt's``: ``rembrandt``, ``s``), none of one letter or of
    ``STOP_WORDS``."""
    words = _WORD.findall(fold(text.replace(CHARACTER_PLACEHOLDER, " ")))
    return tuple(w for w in words if len(w) > 1 and w not in STOP_WORDS)


def stem(word: str) -> str:
    """Step 2, light stemming: the first suffix rule that applies, where 3+ letters remain."""

    def keeps(suffix: str) -> bool:
        return word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM

    if keeps("ies") or keeps("ied"):
        return word[:-3] + "y"
    for suffix in ("ing", "ed", "ly"):
        if keeps(suffix):
            return word[: -len(suffix)]
    if keeps("es") and word[:-2].endswith(("s", "x", "z", "ch", "sh")):
        return word[:-2]
    if keeps("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def related(a: str, b: str) -> bool:
    """Step 3: equal stems, one a prefix of the other of 4+ letters (``thai``/``thailand``), or the
    same first five letters (``japan``/``japanese``)."""
    sa, sb = stem(a), stem(b)
    short, long = sorted((sa, sb), key=len)
    if len(short) >= 4 and long.startswith(short):
        return True
    return sa == sb or len(short) >= 5 and sa[:5] == sb[:5]


@dataclass(frozen=True)
class Overlap:
    pairs: tuple[tuple[str, str], ...]

    @property
    def count(self) -> int:
        return len(self.pairs)

    def describe(self) -> str:
        return ", ".join(q if q == n else f"{q}~{n}" for q, n in self.pairs)


def overlap(question: str, needle: str) -> Overlap:
    needle_words = tuple(dict.fromkeys(content_words(needle)))
    pairs: list[tuple[str, str]] = []
    for q in dict.fromkeys(content_words(question)):
        match = next((n for n in needle_words if related(q, n)), None)
        if match is not None:
            pairs.append((q, match))
    return Overlap(tuple(pairs))


class LiteralOverlap(CtxgateError, ValueError):
    """A question shares content words with its needle beyond the cap."""


def check_pair(question: str, needle: str, where: str, cap: int = MAX_SHARED) -> Overlap:
    found = overlap(question, needle)
    if found.count > cap:
        raise LiteralOverlap(
            f"{where}: the question {question!r} shares {found.count} content word(s) with the "
            f"needle {needle!r} ({found.describe()}; at most {cap} allowed): reword the question "
            "so that only the association leads to the needle"
        )
    return found
