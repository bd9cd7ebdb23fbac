"""A draw's exact token count from its parts, without tokenizing its whole text. The reference's
fitting counts every draw's whole text and the sets follow those counts, so a count from parts is
used only where the tokenizer's pipeline provably gives a text's ids as its parts' ids joined at
the places the builders cut it.

The cuts (``CUT``), at a position p of a text T:

- (a) T[p] a space, T[p-1] and T[p+1] printable ASCII other than a space;
- (b) T[p-1] an ASCII letter or digit, T[p] ASCII punctuation.

Byte-level BPE split by GPT-2's pattern (``ByteLevel`` with its regex), Llama-3's or Qwen2's
(``Split``, then ``ByteLevel`` without one) ends a pre-token at each. No match of those patterns
holds a character other than whitespace followed by a space, or a letter or digit followed by
punctuation: a space or punctuation only begins a match's letters, digits or punctuation, and the
contractions begin with their apostrophe. The matches before p are T[:p]'s alone: the runs that end
at p end there in both, and the one lookahead, ``\\s+(?!\\S)``, ends only a match of whitespace,
which T[p-1] is not. The matches from p on are T[p:]'s alone: the patterns look behind at nothing.
BPE then encodes each pre-token alone. What else could reach across a cut is ruled out where the
tokenizer is read (``splits_at_cuts``): a normalizer other than NFC (which keeps an ASCII boundary),
a space added before a text, and an added token whose text could straddle a cut; a part that holds
an added token's text raises ``Unsplit``, and the set is built from whole texts. The builders check
the first draw of each set both ways (a difference, ``Miscounted``, counts the tokenizer whole from
then on). A sample sent has its ids joined from its words' by the same proof (``Tally.ids``); a run
checks their count against the one its set was fitted with, and the suite a case's first sample's
ids against its whole text's (tasks.py)."""

from __future__ import annotations

import itertools
import json
import re
import string
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ctxgate.api import HFTokenizer, RawTokenizer

T = TypeVar("T")

LETTERS = frozenset(string.ascii_letters)
PRINTABLE = "[!-~]"
PUNCTUATION = "[!-/:-@\\[-`{-~]"
# each cut's lookahead first: a search tries every place, and most fail at its first character
SPACES = f"(?= {PRINTABLE})(?<={PRINTABLE})"
CUT = re.compile(f"{SPACES}|(?={PUNCTUATION})(?<=[0-9A-Za-z])")
WORDS = re.compile(SPACES)  # a part's words: cut at its spaces alone, the faster search
# some of the cuts, where niah's lines hold one-off words: before a space and a hyphenated word or
# a number, and between a letter or digit and a hyphen or full stop (a line's parts recur whole)
KEYS = re.compile(
    f"(?=[ .-])(?:(?= [0-9A-Za-z]+-| [0-9])(?<={PRINTABLE})|(?=[-.])(?<=[0-9A-Za-z]))"
)
GPT2 = {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}
BYTES = {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}
# the patterns, each with the digits of its pre-tokens of digits (GPT-2's: a whole run)
SPLITS = {
    # Llama-3's
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
    r"\s*[\r\n]+|\s+(?!\S)|\s+": 3,
    # Qwen2's
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
    r"\s*[\r\n]+|\s+(?!\S)|\s+": 1,
}
# an added token's text that holds one of these could straddle a cut between two parts
STRADDLES = re.compile(r"\s|[0-9A-Za-z][-.:]")
NUMBERS = re.compile("(?: [0-9]+)*")
NUMBER = re.compile(" [0-9]+")
KEPT = 1 << 20  # words' ids kept; emptied past this many
DIGIT = re.compile("[0-9]")


class Unsplit(Exception):
    """A part cannot be counted alone (it holds an added token's text): the set is counted whole."""


class Miscounted(Unsplit):
    """A count from parts differs from the whole text's: the tokenizer is counted whole for good."""


def is_cut(left: str, right: str) -> bool:
    """Whether ``left + right`` is cut where they meet (the module's rules)."""
    return bool(left and right and CUT.match(left[-1] + right[:2], 1))


def _has(spec: Any, wanted: dict[str, object]) -> bool:
    return isinstance(spec, dict) and all(spec.get(k) == v for k, v in wanted.items())


def _pretokenizer_splits(pre: Any) -> int | None:
    """0 for GPT-2's split, the digits of a pre-token of digits for Llama-3's or Qwen2's; None
    for any other pre-tokenizer."""
    steps = pre.get("pretokenizers") if _has(pre, {"type": "Sequence"}) else [pre]
    if not isinstance(steps, list):
        return None
    if len(steps) == 1:
        return 0 if _has(steps[0], GPT2) else None
    split = steps[0]
    pattern = split.get("pattern") if isinstance(split, dict) else None
    if (
        len(steps) == 2
        and _has(steps[1], BYTES)
        and _has(split, {"type": "Split", "behavior": "Isolated", "invert": False})
        and isinstance(pattern, dict)
    ):
        return SPLITS.get(str(pattern.get("Regex")))
    return None


@dataclass(frozen=True)
class Pipeline:
    """What counting from parts needs to know of a tokenizer that allows it."""

    added: tuple[str, ...]  # the added tokens' texts, none of which a part may hold
    digits: int  # of a pre-token of digits; 0: a whole run of them
    widths: tuple[int, ...]  # each id's bytes (byte-level: a character of its text a byte)


def _added(pipeline: dict[str, Any]) -> tuple[str, ...] | None:
    """The added tokens' texts; None where one could straddle a cut or sit in a number."""
    texts = tuple(str(t.get("content", "")) for t in pipeline.get("added_tokens") or ())
    for text in texts:
        if not text or not text.isascii() or STRADDLES.search(text) or text.isdigit():
            return None
    return texts


def splits_at_cuts(raw: RawTokenizer) -> Pipeline | None:
    """How ``raw`` counts where its pipeline gives a text's ids as its parts' ids joined at every
    cut (the module's proof); None for any other pipeline, whose texts are counted whole."""
    if not isinstance(raw, HFTokenizer) or not hasattr(raw.tok, "backend_tokenizer"):
        return None
    backend = raw.tok.backend_tokenizer
    if backend.truncation is not None or backend.padding is not None:
        return None
    pipeline = json.loads(backend.to_str())
    model = pipeline.get("model") or {}
    digits = _pretokenizer_splits(pipeline.get("pre_tokenizer"))
    added = _added(pipeline)
    fits = (
        model.get("type") == "BPE"
        and not model.get("dropout")
        and pipeline.get("normalizer") in (None, {"type": "NFC"})
    )
    if not fits or digits is None or added is None or not isinstance(model.get("vocab"), dict):
        return None
    vocab: dict[str, int] = model["vocab"]
    widths = [0] * (max(vocab.values(), default=-1) + 1)
    for text, at in vocab.items():
        widths[at] = len(text)
    return Pipeline(added, digits, tuple(widths))


class Tally:
    """Exact counts of parts for one tokenizer: each part cut into words at its spaces that are
    cuts, each distinct word encoded once; numbers, one-off, from their pre-tokens of digits, or
    encoded together. A whole text's ids are its words' ids joined (``ids``)."""

    def __init__(self, raw: RawTokenizer, pipeline: Pipeline) -> None:
        self.raw, self.pipeline = raw, pipeline
        self._starts = frozenset(t[0] for t in pipeline.added)
        self._words: dict[str, tuple[int, ...]] = {}
        self._tables: dict[tuple[int, str], tuple[Sequence[object], Table]] = {}
        self._digits: list[Any] = []  # per width, the counts of its zero-padded numbers
        self._kept: dict[str, Any] = {}
        self._last: tuple[str, list[int]] = ("", [])  # the numbers fresh() last encoded
        self._widths: Any = None  # the pipeline's, as an array
        self.lock = threading.RLock()

    def kept(self, name: str, make: Callable[[], Any]) -> Any:
        """What a builder keeps for this tokenizer (niah's counts of its key words), made once."""
        with self.lock:
            if name not in self._kept:
                self._kept[name] = make()
            return self._kept[name]

    def _plain(self, part: str) -> None:
        if any(c in part for c in self._starts) and any(t in part for t in self.pipeline.added):
            raise Unsplit("a part holds an added token's text")

    def counts(self, parts: Sequence[str], cuts: re.Pattern[str] = WORDS) -> list[int]:
        """Each part's tokens, from its words: cut at its spaces, or at every ``CUT`` (``cuts``)
        where a part's hyphens recur in others (the key words)."""
        for part in parts:
            self._plain(part)
        split = [cuts.split(p) for p in parts]
        with self.lock:
            words = self._words
            self._add([w for ws in split for w in ws])
            return [sum(map(len, map(words.__getitem__, ws))) for ws in split]

    def ids(self, text: str, cuts: re.Pattern[str] = WORDS) -> list[int]:
        """The text's ids: its words' ids joined, as a space between two printable characters is
        a cut in any text. New words that hold a digit (a draw's random numbers and values, each
        met once) are encoded for this text and not kept, lest they crowd out the words that
        recur."""
        self._plain(text)
        split = cuts.split(text)
        with self.lock:
            words = self._words
            new = self._add(split)
            ids = list(itertools.chain.from_iterable(map(words.__getitem__, split)))
            for word in filter(DIGIT.search, new):
                del words[word]
            return ids

    def _add(self, split: Sequence[str]) -> list[str]:
        """``split``'s words not kept, encoded and kept (the caller holds the lock)."""
        words = self._words
        if len(words) > KEPT:
            words.clear()
        missing = set(split).difference(words)
        numbers = {w for w in missing if NUMBER.fullmatch(w)}
        if numbers:  # in the text's order, as a draw's values were counted
            self._add_numbers([w for w in split if w in numbers])
        others = list(missing - numbers)  # in any order: each is encoded alone
        if others:
            words.update(zip(others, map(tuple, self.raw.encode_batch(others))))
        return [*numbers, *others]

    def _add_numbers(self, numbers: list[str]) -> None:
        """Numbers, each a space and digits, kept with their ids: encoded as one text, as each
        ends a pre-token (``fresh``), and cut where their bytes end (the caller holds the lock)."""
        import numpy as np

        if self._widths is None:
            self._widths = np.asarray(self.pipeline.widths, dtype=np.int64)
        ids = self._encoded(numbers)
        ends = np.cumsum(self._widths[ids])
        bounds = np.cumsum([len(n) for n in numbers])  # ASCII: a character a byte
        at = np.searchsorted(ends, bounds) + 1
        if at[-1] != len(ids) or not np.array_equal(ends[at - 1], bounds):
            raise Unsplit("a token straddles two numbers")
        starts = [0, *at[:-1].tolist()]
        self._words.update(
            zip(numbers, map(tuple, map(ids.__getitem__, map(slice, starts, at.tolist()))))
        )

    def _encoded(self, numbers: Sequence[str]) -> list[int]:
        """The numbers' ids, encoded as one text, or those of the last numbers encoded where
        these are the same (a draw's values, counted by ``fresh``, then sent)."""
        joined = "".join(numbers)
        if self._last[0] != joined:
            self._last = (joined, self.raw.encode(joined))
        return self._last[1]

    def count(self, part: str) -> int:
        return self.counts([part])[0]

    def fresh(self, numbers: Sequence[str]) -> int:
        """The summed counts of one-off numbers, each a space and digits."""
        joined = "".join(numbers)
        if not NUMBERS.fullmatch(joined):
            raise Unsplit("fresh() counts numbers, each a space and digits")
        if not self.pipeline.digits:  # one pre-token each: encoded as one text, cut at spaces
            with self.lock:
                return len(self._encoded(numbers))
        return self._by_digits(numbers)

    def _by_digits(self, numbers: Sequence[str]) -> int:
        """A space, then pre-tokens of ``digits`` digits from the left: each counted once."""
        import numpy as np

        width = self.pipeline.digits
        with self.lock:
            if not self._digits:
                for w in range(1, width + 1):
                    texts = [f"{i:0{w}d}" for i in range(10**w)]
                    self._digits.append(np.asarray(self.counts(texts), dtype=np.int64))
            total = len(numbers) * self.count(" ")
        by_size: dict[int, list[int]] = {}
        for number in numbers:
            by_size.setdefault(len(number) - 1, []).append(int(number))
        for size, values in by_size.items():
            at = np.asarray(values, dtype=np.int64)
            for start in range(0, size, width):
                w = min(width, size - start)
                chunk = at // 10 ** (size - start - w) % 10**w
                total += int(self._digits[w - 1][chunk].sum())
        return total

    def table(self, items: Sequence[object], form: str) -> Table:
        """The counts of ``form.format(item)`` for each of ``items`` (a haystack's, kept by the
        loaders' memo: the same object for the same data)."""
        key = (id(items), form)
        with self.lock:
            found = self._tables.get(key)
            if found is None or found[0] is not items:
                found = self._tables[key] = (items, Table(self, items, form))
            return found[1]


class Table:
    """Counts of a part made of each of many items (a haystack's), found on first use."""

    def __init__(self, tally: Tally, items: Sequence[object], form: str) -> None:
        import numpy as np

        self.tally, self.items, self.form = tally, items, form
        self.known = np.full(len(items), -1, dtype=np.int64)

    def total(self, indexes: Sequence[int]) -> int:
        import numpy as np

        at = np.fromiter(indexes, dtype=np.int64, count=len(indexes))
        with self.tally.lock:
            new = np.unique(at[self.known[at] < 0]).tolist()
            if new:
                parts = [self.form.format(self.items[i]) for i in new]
                self.known[new] = self.tally.counts(parts)
            return int(self.known[at].sum())


_TALLIES: weakref.WeakKeyDictionary[Any, Tally | None] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def tally_for(raw: RawTokenizer) -> Tally | None:
    """The tokenizer's ``Tally``; None where its counts come from whole texts."""
    with _LOCK:
        if raw not in _TALLIES:
            pipeline = splits_at_cuts(raw)
            _TALLIES[raw] = None if pipeline is None else Tally(raw, pipeline)
        return _TALLIES[raw]


def forget(raw: RawTokenizer) -> None:
    """Whole texts for this tokenizer from now on (a count from parts was found wrong)."""
    with _LOCK:
        _TALLIES[raw] = None


def text_ids(raw: RawTokenizer, text: str, cuts: re.Pattern[str] = WORDS) -> list[int]:
    """The text's ids: its words' joined where the tokenizer's pipeline allows (a 1M-token text's
    in a fraction of its tokenizing), else, or where it holds an added token's text, the whole
    text's."""
    tally = tally_for(raw)
    if tally is not None:
        try:
            return tally.ids(text, cuts)
        except Unsplit:
            pass
    return raw.encode(text)


class Measure(Generic[T]):
    """A draw's tokens: from its parts (``parts``) where a tally is given, else its whole text;
    the first draw, a set's shortest, counted both ways, ``Miscounted`` where they differ."""

    def __init__(
        self,
        whole: Callable[[str], int],
        text: Callable[[T], str],
        parts: Callable[[T], int] | None,
    ) -> None:
        self.whole, self.text, self.parts = whole, text, parts
        self.checked = parts is None

    def __call__(self, drawn: T) -> int:
        if self.parts is None:
            return self.whole(self.text(drawn))
        tokens = self.parts(drawn)
        if not self.checked:
            self.checked = True
            whole = self.whole(self.text(drawn))
            if whole != tokens:
                raise Miscounted(f"{tokens} tokens from the parts, {whole} from the whole text")
        return tokens
