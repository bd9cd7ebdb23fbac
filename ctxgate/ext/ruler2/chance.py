"""What a guess scores on RULERv2's tasks, measured by drawing records as the builders do and
scoring a guess with the task's own metric. Measured on the shipped samples (the records every
run without ``--data-dir`` reads); on the full sets ``measured(...)`` of their records says more.

- qa_medium, qa_hard (HotpotQA answers): "yes" or "no" at random, or, where the question asks
  "..., A or B?", one of the two: the answers a reply can give without reading any document.
- the MMLU copy tasks: another question of the context copied in place of the asked one; the
  word error rate credits the words two questions share ("A.", "B.", ...).
- multiple choice: one letter of four, 25; the 7- and 10-digit numbers: a guess never matches one
  and a number has one word, so 0."""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable, Sequence

from ctxgate.api import Bands, Chance, Metric

from .files import load_hotpotqa, load_mmlu
from .metrics import ALL, PART, TWO_STEPS

DRAWS = 400
_ALTERNATIVES = re.compile(r",\s*([^,?]+?)\s+or\s+([^,?]+?)\?\s*$")

Guess = Callable[[random.Random], tuple[str, Sequence[str]]]


def measured(guess: Guess, metric: Metric, draws: int = DRAWS) -> Bands:
    """The mean score (percent) of ``draws`` guesses, with a two-sigma band."""
    rng, hits = random.Random(0), []
    assert metric.fn is not None
    for _ in range(draws):
        said, answers = guess(rng)
        hits.append(metric.fn(said, answers, None)[0])
    mean = sum(hits) / len(hits)
    spread = 2 * (sum((h - mean) ** 2 for h in hits) / len(hits) / len(hits)) ** 0.5
    low, high = 100 * max(0.0, mean - spread), 100 * (mean + spread)
    # the same at every length: the answers and the guesses do not depend on it
    return Bands((1,), (Chance(round(100 * mean, 2), round(low, 2), round(high, 2), len(hits)),))


def qa_guess(questions: Sequence[tuple[str, Sequence[str]]]) -> Guess:
    def guess(rng: random.Random) -> tuple[str, Sequence[str]]:
        question, answers = rng.choice(questions)
        found = _ALTERNATIVES.search(question)
        options = found.groups() if found else ("yes", "no")
        return rng.choice(options), answers

    return guess


def copy_guess(questions: Sequence[str]) -> Guess:
    def guess(rng: random.Random) -> tuple[str, Sequence[str]]:
        asked, copied = rng.sample(range(len(questions)), 2)
        return questions[copied], [questions[asked]]

    return guess


def _band(score: float, low: float, high: float) -> Bands:
    return Bands((1,), (Chance(score, low, high, DRAWS),))


# what ``measure_all`` gives on the shipped samples, written down so that registering the tasks
# reads no data (tests/ext/ruler2 holds the two equal)
PINNED: dict[str, Bands | float] = {
    "qa_medium": _band(53.75, 48.76, 58.74),
    "qa_hard": _band(53.75, 48.76, 58.74),
    "mk_niah_easy": _band(7.13, 6.22, 8.04),
    "mv_niah_easy": _band(7.13, 6.22, 8.04),
    "mv_niah_medium": _band(7.13, 6.22, 8.04),
    "mv_niah_hard": _band(7.13, 6.22, 8.04),
    "mk_niah_medium": 25.0,
    "mk_niah_hard": 25.0,
}


def chances() -> dict[str, Bands | float]:
    """Each task's chance, on the shipped samples (measured: ``measure_all``)."""
    return PINNED


@functools.cache
def measure_all() -> dict[str, Bands | float]:
    """Each task's chance measured on the shipped samples."""
    needles, _ = load_hotpotqa(None)
    qa = qa_guess([(n.question, n.answers) for n in needles])
    test, aux = load_mmlu(None)
    copied = copy_guess([i.question for i in (*test, *aux)])
    return {
        "qa_medium": measured(qa, PART),
        "qa_hard": measured(qa, PART),
        "mk_niah_easy": measured(copied, ALL),
        "mv_niah_easy": measured(copied, ALL),
        "mv_niah_medium": measured(copied, TWO_STEPS),
        "mv_niah_hard": measured(copied, ALL),
        "mk_niah_medium": 25.0,
        "mk_niah_hard": 25.0,
    }
