"""RULER variable tracking: a chain of 4 name-binding hops in the noise haystack, with a one-shot
example."""

from __future__ import annotations

import itertools
import random
import string

from ctxgate.data.haystacks import NOISE_LINE
from ctxgate.metrics.registry import STRING_MATCH_ALL
from ctxgate.tasks.base import BuildContext, Job, Sample, TaskSpec, distinct
from ctxgate.tasks.registration import register

HEAD = "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n"
TAIL = "\nQuestion: Find all variables that are assigned the value {query} in the text above."
ANSWER_PREFIX = (
    " Answer: According to the chain(s) of variable assignment in the text above, {num_v} "
    "variables are assigned the value {query}, they are: "
)
NUM_HOPS = 4
EXAMPLE_TOKENS = 500  # RULER builds its one-shot example at about 500 tokens


def _chain(rng: random.Random, name_len: int) -> tuple[list[str], str, list[str]]:
    names = distinct(lambda: "".join(rng.choices(string.ascii_uppercase, k=name_len)), NUM_HOPS + 1)
    value = str(rng.randint(10000, 99999))
    # RULER writes each hop with a trailing space ("VAR B = VAR A "), the first binding without
    hops = [f"VAR {names[j + 1]} = VAR {names[j]} " for j in range(NUM_HOPS)]
    return names, value, [f"VAR {names[0]} = {value}", *hops]


def _noise_with_chain(
    n_noise: int, chain: list[str], rng: random.Random
) -> tuple[list[str], list[int]]:
    lines = [NOISE_LINE] * n_noise
    if n_noise + 1 >= len(chain):
        positions = sorted(rng.sample(range(n_noise + 1), len(chain)))
    else:
        positions = list(range(len(chain)))
    placed = [pos + j for j, pos in enumerate(positions)]  # each line goes in after those before it
    for at, line in zip(placed, chain):
        lines.insert(at, line)
    return lines, placed


def _example(ctx: BuildContext, budget: int, rng: random.Random) -> str:
    """The one-shot demo (3-letter names, its own value, answered), then a blank line."""
    enc = ctx.encoder
    names, value, chain = _chain(rng, 3)
    prefix = ANSWER_PREFIX.format(num_v=NUM_HOPS + 1, query=value)
    answered = TAIL.format(query=value) + prefix + " " + " ".join(names)
    room = budget - enc.count(HEAD + answered + "\n\n") - sum(enc.count("\n" + c) for c in chain)
    lines, _ = _noise_with_chain(max(0, room // enc.count("\n" + NOISE_LINE)), chain, rng)
    return HEAD + "\n".join(lines) + answered + "\n\n"


def build_vt(ctx: BuildContext, job: Job) -> Sample:
    enc, rng = ctx.encoder, job.rng
    # below 4K the 500-token example would crowd out the task: at most a quarter
    example = _example(ctx, min(EXAMPLE_TOKENS, (job.length - job.gen) // 4), rng)
    names, value, chain = _chain(rng, 5)
    answer_prefix = ANSWER_PREFIX.format(num_v=NUM_HOPS + 1, query=value)
    frame = ctx.frame(example + HEAD, TAIL.format(query=value), answer_prefix)
    budget = frame.budget(job.length, job.gen) - sum(enc.count("\n" + c) for c in chain)
    n_noise = budget // enc.count("\n" + NOISE_LINE)
    job.need_room(n_noise, 1)
    lines, placed = _noise_with_chain(n_noise, chain, rng)
    # a few distinct lines, each tokenized once behind its newline
    behind = {line: enc.encode("\n" + line) for line in dict.fromkeys(lines[1:])}
    rest = itertools.chain.from_iterable(map(behind.__getitem__, lines[1:]))
    prompt = frame.around(itertools.chain(enc.encode(lines[0]), rest), "\n".join(lines))
    return job.sample(
        prompt, tuple(names), answer_prefix, chain=chain, chain_lines=placed, haystack_units=n_noise
    )


@register
def vt() -> TaskSpec:
    return TaskSpec(
        name="vt",
        suite="ruler",
        chat_template=True,
        category="vt",
        metric=STRING_MATCH_ALL,
        tokens_to_generate=30,
        build=build_vt,
        chance=0.0,  # five names drawn as the chain's are never its own: measured
        description="variable tracking, 1 chain x 4 hops",
    )
