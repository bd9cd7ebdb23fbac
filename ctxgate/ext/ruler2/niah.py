"""``prepare_niah.py`` with a haystack of needles (mk_niah_basic, mv_niah_basic): lines "One of
the special magic numbers for KEY is: VALUE." around the queried key's needles, as the reference
draws them from one random stream."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

from .fitting import fit_draw, search_units
from .words import key_words

TEMPLATE_SINGLE = (
    "A special magic {type_needle_v} is hidden within the following text. Make sure to memorize "
    "it. I will quiz you about the {type_needle_v} afterwards.\n{context}\nWhat is the special "
    "magic {type_needle_v} for {query} mentioned in the provided text? The special magic "
    "{type_needle_v} for {query} mentioned in the provided text is"
)
TEMPLATE_MULTIPLE = (
    "Some special magic {type_needle_v} are hidden within the following text. Make sure to "
    "memorize them. I will quiz you about the {type_needle_v} afterwards.\n{context}\nWhat are all "
    "the special magic {type_needle_v} for {query} mentioned in the provided text? The special "
    "magic {type_needle_v} for {query} mentioned in the provided text are"
)
NEEDLE = "One of the special magic {type_needle_v} for {key} is: {value}."
DIGITS = 10  # --num_digits_v


@dataclass(frozen=True)
class NiahDraw:
    text: str
    answers: tuple[str, ...]


class NiahSet:
    """The reference's stream for one set: ``values`` values per key, one key, one query."""

    def __init__(self, values: int, seed: int) -> None:
        self.values, self.seed = values, seed
        self.rng = random.Random(seed)
        self.words = key_words()

    def _key(self) -> str:
        return self.rng.choice(self.words)

    def _value(self) -> str:
        return str(self.rng.randint(10 ** (DIGITS - 1), 10**DIGITS - 1))

    def _line(self, key: str, value: str) -> str:
        return NEEDLE.format(type_needle_v="numbers", key=key, value=value)

    def draw(self, units: int) -> NiahDraw:
        """``generate_input_output(units)``."""
        key = self._key()
        values = [self._value() for _ in range(self.values)]
        needles = [self._line(key, v) for v in values]
        random.Random(self.seed).shuffle(needles)  # the reference's own seeded shuffle
        if self.values == 1:
            lines = [self._line(self._key(), self._value()) for _ in range(units)]
        else:
            hay_values = [self._value() for _ in range(units)]
            keys = [self._key() for _ in range(math.ceil(units / self.values))]
            hay_keys = (keys * self.values)[:units]
            lines = [self._line(k, v) for k, v in zip(hay_keys, hay_values)]
            self.rng.shuffle(lines)
        at = sorted(self.rng.sample(range(units), len(needles)), reverse=True)
        for index, line in zip(at, needles):
            lines.insert(index, line)
        self.rng.sample(range(1), 1)  # the query's key: one of one, drawn all the same
        single = self.values == 1
        text = (TEMPLATE_SINGLE if single else TEMPLATE_MULTIPLE).format(
            type_needle_v="number" if single else "numbers", context="\n".join(lines), query=key
        )
        return NiahDraw(text, tuple(values))


def niah_set(
    values: int, seed: int, count: Callable[[str], int], limit: int, n: int
) -> list[NiahDraw]:
    """``generate_samples``: ``n`` samples within ``limit`` tokens, as ``count`` counts them."""
    stream = NiahSet(values, seed)
    step = 5  # max(5, values * keys) and 5 under 4096 alike, for one key and at most 4 values
    units = search_units(lambda k: stream.draw(k).text, count, limit, step)
    return [
        fit_draw(stream.draw, lambda d: d.text, count, (units, step, limit))[0] for _ in range(n)
    ]
