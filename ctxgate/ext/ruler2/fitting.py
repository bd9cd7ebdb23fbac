"""The reference's way to fill a length, shared by its three builders: a first draw estimates the
tokens per unit, a binary search finds the most units whose prompt fits, and each sample is drawn
at that count, ``incremental`` units fewer at a time until it fits. Every draw takes from the one
random stream, as the reference's global ``random`` does, so the counts searched decide the
samples: ``measure`` gives a draw's tokens as its whole text's count is (counting.py)."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar, overload

from .counting import WORDS

T = TypeVar("T")


class Draw(Protocol):
    """A draw as a builder made it: its text is written where it is read."""

    @property
    def text(self) -> str: ...

    @property
    def answers(self) -> tuple[str, ...]: ...


D = TypeVar("D", bound=Draw)


@dataclass(frozen=True)
class Fitted:
    """A sample as its set gives it: the text, the answers, the tokens the reference counts (the
    draw itself, with all it was made of, is let go), and where its ids are joined (counting.py's
    ``Tally.ids``): at its spaces, or also at the cuts that part its one-off words into recurring
    ones (``KEYS``: niah's keys)."""

    text: str
    answers: tuple[str, ...]
    tokens: int
    cuts: re.Pattern[str] = WORDS


# a draw that does not fit at the fewest units is drawn again at most this often (the reference
# draws again for ever)
RETRIES = 64


class TooShort(ValueError):
    """Even the fewest units leave the prompt over the length."""


def search_units(
    draw: Callable[[int], T], measure: Callable[[T], int], limit: int, step: int
) -> int:
    """The reference's ``generate_samples`` search: the most units whose draw fits ``limit``."""
    per_unit = measure(draw(step)) / step
    low, high = step, max(int(limit / per_unit * 3), step * 2)
    best = None
    while low <= high:
        mid = (low + high) // 2
        if measure(draw(mid)) <= limit:
            best, low = mid, mid + 1
        else:
            high = mid - 1
    return best if best is not None else step


def fit_draw(
    draw: Callable[[int], T], measure: Callable[[T], int], fit: tuple[int, int, int]
) -> tuple[T, int]:
    """One sample drawn at ``units``, fewer by ``step`` while it is over ``limit``; its tokens."""
    units, step, limit = fit
    for _ in range(RETRIES):
        try:
            found = draw(units)
        except ValueError:  # fewer units than needles: the reference catches it and draws again
            found = None
        if found is not None:
            tokens = measure(found)
            if tokens <= limit:
                return found, tokens
        if units > step:
            units -= step
    raise TooShort(f"{RETRIES} draws at {units} units stay over {limit} tokens or fail")


def fitted(found: tuple[D, int], cuts: re.Pattern[str] = WORDS) -> Fitted:
    """The sample ``fit_draw`` found."""
    drawn, tokens = found
    return Fitted(drawn.text, drawn.answers, tokens, cuts)


def fit_each(
    draws: Iterable[Callable[[int], D]],
    measure: Callable[[D], int],
    fit: tuple[int, int, int],
    cuts: re.Pattern[str] = WORDS,
) -> Iterator[Fitted]:
    """A set's samples (``fit``: units, step, limit), each drawn when asked for. Where the retries
    can reach the fewest units (a short length), all are drawn at the first: a set the reference
    cannot finish (it draws for ever) is then refused whole, whichever sample is asked for."""
    units, step, _ = fit
    made: Iterator[Fitted] = (fitted(fit_draw(d, measure, fit), cuts) for d in draws)
    if units <= step * RETRIES:
        made = iter(list(made))
    yield from made


class Repeated(Sequence[T], Generic[T]):
    """``[x for x in items for _ in range(times)]`` without the list (``random.sample`` only
    indexes a large population)."""

    def __init__(self, items: Sequence[T], times: int) -> None:
        self.items, self.times = items, times

    def __len__(self) -> int:
        return len(self.items) * self.times

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...
    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self.items[index // self.times]


def repeats(wanted: int, have: int) -> int:
    """How often the reference repeats a pool of ``have`` to draw ``wanted`` (ceiling division)."""
    return (wanted + have - 1) // have if wanted > have else 1


# CPython's ``choice(seq)`` is ``seq[_randbelow(len(seq))]``, and Random's ``_randbelow`` takes
# ``getrandbits`` of the length's bits until one is below it: ``below`` draws the same numbers
# without three calls per draw, where the interpreter is CPython's
INLINE = getattr(random.Random, "_randbelow", None) is getattr(
    random.Random, "_randbelow_with_getrandbits", False
)


def below(rng: random.Random, sizes: Sequence[int], times: int) -> list[int]:
    """The places ``times`` rounds of ``rng.choice`` take in sequences of ``sizes``' lengths, each
    round through ``sizes`` in turn, as the stream gives them (a million-token haystack takes some
    90,000)."""
    if not INLINE:
        return [rng.choice(range(n)) for _ in range(times) for n in sizes]
    bits = rng.getrandbits
    widths = [(n, n.bit_length()) for n in sizes]
    out: list[int] = []
    add = out.append
    for _ in range(times):
        for n, k in widths:
            r = bits(k)
            while r >= n:
                r = bits(k)
            add(r)
    return out


def shuffle(rng: random.Random, items: list[T]) -> None:
    """``rng.shuffle(items)``: each place from the last swapped with one below or at it."""
    if not INLINE:
        rng.shuffle(items)
        return
    bits = rng.getrandbits
    for i in reversed(range(1, len(items))):
        n = i + 1
        k = n.bit_length()
        j = bits(k)
        while j >= n:
            j = bits(k)
        items[i], items[j] = items[j], items[i]


def random_number(rng_randint: Callable[[int, int], int], digits: int = 7) -> str:
    return str(rng_randint(10 ** (digits - 1), 10**digits - 1))


def ordinal(n: int) -> str:
    """inflect's ``ordinal`` of a whole number: 1st, 2nd, 3rd, 4th, 11th, 21st."""
    tens = n % 100
    suffix = "th" if 11 <= tens <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
