"""The README's second noise model: an output that is one of the asked request's writings, drawn
uniformly, after the random string. Its expected score, per sample and over a bucket, is what the
README publishes per needle count (51, 27 and 15 at 2, 4 and 8 needles)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from .generator import Asked, Generator
from .metric import mrcr2_score


def guessed(gen: Generator, asked: Asked) -> float:
    """A uniform guess among the request's writings: its expected score, 0-1."""
    relevant = gen.corpus.relevant
    target = asked.token + relevant[asked.answer].text
    scores = [mrcr2_score(asked.token + relevant[w].text, target)[0] for w in asked.writings]
    return sum(scores) / len(scores)


def noise_rate(gen: Generator, asked: Sequence[Asked]) -> tuple[float, float]:
    """The guesser's mean score over the samples and its standard error, both in percent."""
    scores = [100 * guessed(gen, a) for a in asked]
    mean = sum(scores) / len(scores)
    spread = sum((s - mean) ** 2 for s in scores) / max(len(scores) - 1, 1)
    return mean, math.sqrt(spread / len(scores))
