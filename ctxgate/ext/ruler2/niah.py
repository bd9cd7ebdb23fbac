"""``prepare_niah.py`` with a haystack of needles (mk_niah_basic, mv_niah_basic): lines "One of
the special magic numbers for KEY is: VALUE." around the queried key's needles, as the reference
draws them from one random stream."""

from __future__ import annotations

import functools
import itertools
import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .counting import KEYS, Measure, Tally, Unsplit, is_cut
from .fitting import Fitted, below, fit_each, search_units, shuffle
from .words import KeyCounts, KeyWords, key_words

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
class NiahForm:
    """What a set's draws share: the template (one value or several) and the key words."""

    single: bool
    words: KeyWords

    @property
    def template(self) -> str:
        return TEMPLATE_SINGLE if self.single else TEMPLATE_MULTIPLE

    @property
    def kind(self) -> str:
        return "number" if self.single else "numbers"

    def text(self, drawn: NiahDraw) -> str:
        line = NEEDLE.replace("{type_needle_v}", "numbers")
        keys = self.words.take([k for k, _ in drawn.lines] + [drawn.query])
        context = "\n".join(line.format(key=k, value=v) for k, (_, v) in zip(keys, drawn.lines))
        return self.template.format(type_needle_v=self.kind, context=context, query=keys[-1])


@dataclass(eq=False)
class NiahDraw:
    """A draw as the stream made it: each line's key (its place among the key words) and value,
    and the queried key; its text is written where it is read."""

    lines: list[tuple[int, str]]
    query: int
    answers: tuple[str, ...]
    form: NiahForm

    @functools.cached_property
    def text(self) -> str:
        return self.form.text(self)


class NiahSet:
    """The reference's stream for one set: ``values`` values per key, one key, one query."""

    def __init__(self, values: int, seed: int) -> None:
        self.values, self.seed = values, seed
        self.rng = random.Random(seed)
        self.form = NiahForm(values == 1, key_words())
        # ``choice`` draws a place from the sequence's length alone: the word there is the one
        # ``choice(words)`` gives, looked up only where a text is written; and from a range, the
        # number ``randint`` gives over its bounds (both take one ``_randbelow`` of the length)
        self.places = range(len(self.form.words))
        self.numbers = range(10 ** (DIGITS - 1), 10**DIGITS)

    def _key(self) -> int:
        return self.rng.choice(self.places)

    def _value(self) -> str:
        return str(self.rng.choice(self.numbers))

    def draw(self, units: int) -> NiahDraw:
        """``generate_input_output(units)``."""
        key = self._key()
        values = [self._value() for _ in range(self.values)]
        needles = [(key, v) for v in values]
        random.Random(self.seed).shuffle(needles)  # the reference's own seeded shuffle
        low = self.numbers.start
        if self.values == 1:
            drawn = below(self.rng, (len(self.places), len(self.numbers)), units)
            lines = [(k, str(low + v)) for k, v in zip(drawn[::2], drawn[1::2])]
        else:
            hay_values = [str(low + v) for v in below(self.rng, (len(self.numbers),), units)]
            keys = below(self.rng, (len(self.places),), math.ceil(units / self.values))
            hay_keys = (keys * self.values)[:units]
            lines = list(zip(hay_keys, hay_values))
            shuffle(self.rng, lines)
        at = sorted(self.rng.sample(range(units), len(needles)), reverse=True)
        for index, line in zip(at, needles):
            lines.insert(index, line)
        self.rng.sample(range(1), 1)  # the query's key: one of one, drawn all the same
        return NiahDraw(lines, key, tuple(values), self.form)


class NiahParts:
    """A draw's tokens from its parts, cut before each key, before " is:" and each value, and after
    each value: the template's parts counted once, the keys' from their words' counts, the values
    (ten random digits each) encoded together."""

    def __init__(self, tally: Tally, form: NiahForm) -> None:
        marked = form.template.format(type_needle_v=form.kind, context="\0", query="\1")
        head, tail = marked.split("\0")
        lead, rest = NEEDLE.format(type_needle_v="numbers", key="\1", value="\2").split(" \1")
        middle, end = rest.split(" \2")
        last = tail.split(" \1")
        joins = [head + lead, " Key", middle, " 1", end + "\n" + lead, " Key", middle, " 1"]
        joins += [end + last[0], " Key", *last[1:-1], " Key", last[-1]]
        if len(last) != 3 or not all(map(is_cut, joins, joins[1:])):
            raise Unsplit("the template's parts do not meet at cuts")
        first, between, each, after = tally.counts(
            [head + lead, end + "\n" + lead, middle, end + last[0]]
        )
        self.fixed = (first - between, between + each, after + sum(tally.counts(last[1:])))
        self.tally = tally
        self.keys: KeyCounts = tally.kept("keys", lambda: KeyCounts(tally, form.words))

    def __call__(self, drawn: NiahDraw) -> int:
        first, per_line, after = self.fixed
        keys = [k for k, _ in drawn.lines]
        keys += [drawn.query, drawn.query]
        values = self.tally.fresh([" " + v for _, v in drawn.lines])
        return first + per_line * len(drawn.lines) + after + self.keys.total(keys) + values


def niah_set(
    values: int,
    seed: int,
    count: Callable[[str], int],
    limit: int,
    n: int,
    tally: Tally | None = None,
) -> Iterator[Fitted]:
    """``generate_samples``: ``n`` samples within ``limit`` tokens, as ``count`` counts them
    (``tally``: from the draws' parts, the same counts), each drawn when asked for."""
    stream = NiahSet(values, seed)
    parts = None if tally is None else NiahParts(tally, stream.form)
    measure = Measure(count, lambda d: d.text, parts)
    step = 5  # max(5, values * keys) and 5 under 4096 alike, for one key and at most 4 values
    units = search_units(stream.draw, measure, limit, step)
    # its keys are one-off words of recurring parts: the adjective, the hyphen and noun
    yield from fit_each(itertools.repeat(stream.draw, n), measure, (units, step, limit), KEYS)
