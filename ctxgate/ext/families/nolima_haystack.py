"""The haystack a NoLiMa-style needle sits in: the essay less the sentences that name the case's
keywords or characters (a literal hook, a second answer), with everyday filler sentences about the
record's other characters, so that "which character?" needs the needle's hop."""

from __future__ import annotations

import functools
import random
import re
import threading
import weakref

import numpy as np

from ctxgate.api import EssayTokens, PieceEncoder
from ctxgate.ext.families.lexical_overlap import fold, overlap
from ctxgate.ext.families.nolima_files import CHARACTER, NeedleCase

# Everyday sentences about the record's other characters, tied to no answer of any question, with
# no content word of the project's questions and needles (``usable_fillers`` checks each case).
FILLERS = (
    "{CHAR} fixed the squeaky hinge on the garden gate.",
    "{CHAR} sorted a drawer of old letters into shoeboxes.",
    "{CHAR} left the umbrella by the door again.",
    "{CHAR} finally repainted the hallway a pale green.",
    "{CHAR} stayed up late with a thick detective novel.",
    "{CHAR} lost the spare key and had to call a locksmith.",
    "{CHAR} brushed the dog on the back step.",
    "{CHAR} replaced the flat tyre on an old bicycle.",
    "{CHAR} answered a pile of emails before noon.",
    "{CHAR} rearranged the bookshelves by colour.",
    "{CHAR} fell asleep on the sofa halfway through a film.",
    "{CHAR} wrapped the presents in brown paper.",
    "{CHAR} searched an hour for the missing glasses.",
    "{CHAR} mowed the lawn before the neighbours woke up.",
    "{CHAR} ironed a stack of shirts with the radio on.",
    "{CHAR} borrowed a ladder to clear the gutters.",
    "{CHAR} wound the grandfather clock on Sundays.",
    "{CHAR} had a tooth filled at the dentist.",
    "{CHAR} sewed a loose button back onto a coat.",
    "{CHAR} changed the bulb in the bedside lamp.",
    "{CHAR} kept a notebook of the birds at the feeder.",
    "{CHAR} untangled a drawer full of cables.",
    "{CHAR} joined a pottery class.",
    "{CHAR} washed the windows until they squeaked.",
    "{CHAR} assembled a wardrobe without reading the instructions.",
    "{CHAR} swept the leaves off the front steps.",
    "{CHAR} renewed a library card that had long expired.",
    "{CHAR} wrote a long letter to an old school friend.",
    "{CHAR} practised piano scales for an hour.",
    "{CHAR} patched a hole in the shed roof.",
    "{CHAR} counted the coins saved in a jar.",
    "{CHAR} sorted the recycling into three bins.",
    "{CHAR} finished a thousand-piece jigsaw puzzle.",
    "{CHAR} knitted a scarf for the coming winter.",
    "{CHAR} fed the neighbour's cat twice a day.",
    "{CHAR} put up new curtains in the bedroom.",
    "{CHAR} filed the tax forms just before the deadline.",
    "{CHAR} tuned the old guitar and played a few chords.",
    "{CHAR} repotted the ferns on the windowsill.",
    "{CHAR} defrosted the freezer and wiped it clean.",
    "{CHAR} unblocked the bathroom sink with a plunger.",
    "{CHAR} cancelled an unused gym membership.",
    "{CHAR} ordered a new mattress after months of back pain.",
    "{CHAR} cleaned the car inside and out.",
    "{CHAR} glued the handle back onto a mug.",
    "{CHAR} set up a new printer after much grumbling.",
    "{CHAR} taught the parrot to whistle.",
    "{CHAR} replaced the batteries in the smoke alarm.",
)
FILLER_SPACING = 400  # haystack tokens per filler sentence, up to one of each
MIN_FILLERS = 2  # where they fit, the needle's character is one of three named or more
FILLER_SHARE = 4  # the fillers take at most 1/4 of the haystack's room

Filler = tuple[str, tuple[int, ...]]  # a filler sentence and its ids


def keyword_pattern(case: NeedleCase) -> re.Pattern[str]:
    """Sentences naming a keyword or a character (a literal hook, a second answer)."""
    phrases = {k.strip() for k in case.keywords}
    phrases = {p[4:] if p.lower().startswith("the ") else p for p in phrases}
    words = sorted({form for p in phrases for form in (p.lower(), fold(p))}, key=len, reverse=True)
    parts = [r"(?i:\b(?:" + "|".join(map(re.escape, words)) + "))"]
    if case.characters:
        parts.append(r"\b(?:" + "|".join(map(re.escape, case.characters)) + r")\b")
    return re.compile("|".join(parts))


@functools.lru_cache(maxsize=256)
def usable_fillers(case: NeedleCase) -> tuple[str, ...]:
    """The fillers sharing no content word with the case, naming none of its keywords."""
    pattern = keyword_pattern(case)
    return tuple(
        f
        for f in FILLERS
        if not overlap(case.question, f).count
        and not overlap(f, case.needle).count
        and not pattern.search(f.replace(CHARACTER, ""))
    )


def draw_fillers(
    enc: PieceEncoder, case: NeedleCase, character: str | None, room: int, rng: random.Random
) -> list[Filler]:
    """A sample's fillers about other characters, one per ``FILLER_SPACING`` tokens."""
    others = [c for c in case.characters if c != character]
    usable = usable_fillers(case)
    if character is None or not others or not usable:
        return []
    n = min(len(usable), max(MIN_FILLERS, round(room / FILLER_SPACING)))
    texts = [t.replace(CHARACTER, rng.choice(others)) for t in rng.sample(usable, n)]
    ids = enc.encode_many([" " + t for t in texts])  # at most fillers x names pieces: cached
    while n and sum(len(i) for i in ids[:n]) > room // FILLER_SHARE:
        n -= 1
    return list(zip(texts[:n], ids[:n]))


_LEFT_OUT = weakref.WeakKeyDictionary[EssayTokens, dict[str, bytearray]]()
_LEFT_OUT_LOCK = threading.Lock()


def left_out(tokens: EssayTokens, pattern: re.Pattern[str], n: int) -> np.ndarray:
    """Which of the first ``n`` sentences the pattern leaves out, each searched once per pattern."""
    with _LEFT_OUT_LOCK:
        seen = _LEFT_OUT.setdefault(tokens, {}).setdefault(pattern.pattern, bytearray())
        seen.extend(1 if pattern.search(s) else 0 for s in tokens.sentences[len(seen) : n])
        return np.frombuffer(bytes(seen[:n]), dtype=np.uint8).astype(bool)


def fit_sentences(
    tokens: EssayTokens, pattern: re.Pattern[str], room: int
) -> tuple[np.ndarray, np.ndarray, bool]:
    """The leading kept sentences that fit: indices, token counts, whether the essay ended."""
    target = room
    while True:
        tokens.fit(target)
        n = len(tokens.ends) - 1
        lengths = np.diff(np.asarray(tokens.ends[: n + 1], dtype=np.int64))
        out = left_out(tokens, pattern, n)
        used = np.cumsum(np.where(out, 0, lengths))
        total = int(used[-1]) if n else 0
        if total > room or tokens.complete:
            break
        target = tokens.ends[n] + room - total + 1  # past what the left-out sentences took
    stop = int(np.searchsorted(used, room, side="right"))
    kept = np.flatnonzero(~out[:stop])
    return kept, lengths[kept], stop == n
