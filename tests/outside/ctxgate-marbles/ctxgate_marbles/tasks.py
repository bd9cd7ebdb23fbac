"""``count_marbles``: a list of marbles of random colors fills the length; the question asks how
many are of one color (``--marble-color``). Its chance is measured here, per band of lengths: a
random guess of a count between none and every marble listed."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from ctxgate.api import (
    Bands,
    BuildContext,
    Chance,
    Job,
    Metric,
    Sample,
    Scored,
    TaskSpec,
    register,
    register_suite,
)

from .settings import COLORS, NAME, MarbleSettings

HEAD = "Below is a list of marbles, one per line. Read it carefully.\n\n"
TAIL = "\n\nHow many {color} marbles are in the list above? Answer with a number."
PREFIX = "Answer:"
LINE = "Marble {index}: {color}\n"
TOKENS_PER_LINE = 8  # the chance's estimate of a line's tokens, whatever the tokenizer


def color_of(ctx: BuildContext) -> str:
    """The color the run asks about: the package's section of the plan (``--marble-color``)."""
    section = ctx.extras.get(NAME)
    return section.color if isinstance(section, MarbleSettings) else MarbleSettings().color


def build(ctx: BuildContext, job: Job) -> Sample:
    color, enc = color_of(ctx), ctx.encoder
    frame = ctx.frame(HEAD, TAIL.format(color=color), PREFIX)
    room = frame.budget(job.length, job.gen)
    ids: list[int] = []
    lines: list[str] = []
    while True:
        line = LINE.format(index=len(lines) + 1, color=job.rng.choice(COLORS))
        piece = enc.encode(line)
        if len(ids) + len(piece) > room:
            break
        ids.extend(piece)
        lines.append(line)
    job.need_room(len(lines), 1, "marbles")
    count = sum(line.endswith(f": {color}\n") for line in lines)
    prompt = frame.around(ids, "".join(lines))
    return job.sample(prompt, (str(count),), PREFIX, marbles=len(lines), color=color)


def _count(prediction: str, references: Sequence[str], prefix: str | None) -> Scored:
    """1 where the first number of the output is the count; the number is what was scored."""
    found = re.search(r"\d+", prediction)
    said = found.group(0) if found else ""
    return float(said == references[0]), said


COUNT_MATCH = Metric("marble_count", _count, "the first number of the output is the count")


def measured_chance(starts: Sequence[int] = (256, 512, 1024, 2048, 4096, 8192)) -> Bands:
    """A random guess's expected score in each band of lengths, measured by drawing lists as the
    builder does (at ``TOKENS_PER_LINE``) and guessing a count between none and the list's size."""
    rng, chances = random.Random(0), []
    for start in starts:
        lines = max(1, (start - 64) // TOKENS_PER_LINE)
        hits = []
        for _ in range(400):
            count = sum(rng.choice(COLORS) == COLORS[0] for _ in range(lines))
            hits.append(float(rng.randint(0, lines) == count))
        mean = 100 * sum(hits) / len(hits)
        spread = 200 * (mean / 100 * (1 - mean / 100) / len(hits)) ** 0.5
        chances.append(Chance(round(mean, 2), max(0.0, mean - spread), mean + spread, len(hits)))
    return Bands(tuple(starts), tuple(chances))


register_suite(NAME, "Marbles")


@register
def count_marbles() -> TaskSpec:
    return TaskSpec(
        name="count_marbles",
        suite=NAME,
        category="counting",
        metric=COUNT_MATCH,
        tokens_to_generate=8,
        build=build,
        chance=measured_chance(),
        description="count the marbles of one color in a long list",
    )
