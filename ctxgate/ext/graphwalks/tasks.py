"""GraphWalks' tasks: ``ctx_graphwalks_bfs`` and ``ctx_graphwalks_parents``, a graph generated to
fill the length in the dataset's prompt format, its answer computed; ``graphwalks_bfs`` and
``graphwalks_parents``, the official rows (``official.py``). The chance of each: the F1 of a random
node set, measured by drawing graphs as the builder does."""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Sequence

from ctxgate.api import (
    Bands,
    BuildContext,
    Chance,
    Job,
    Sample,
    TaskSpec,
    register_all,
    register_suite,
)

from .edges import name_ids, nodes_for
from .grader import GRAPHWALKS_F1, reference, set_f1
from .graph import DEGREES, KINDS, MIN_NODES, Graph, Question, draw_graph, draw_question
from .official import OFFICIAL_BUDGET, build_official, pool_size
from .prompt import HEAD, node_name, tail
from .settings import NAME, SECTION

GENERATED_BUDGET = 512  # MAX_ANSWER names of up to 10 tokens each, with their commas
# a name's tokens vary by a few from the question's placeholder's: room held back for them
SLACK = 16
PLACEHOLDER = "f" * 10


def fit_graph(
    rng: random.Random, names_room: int, degree: int, job: Job, ctx: BuildContext
) -> Graph:
    """The largest graph of ``degree`` out-edges a node whose edge list fits ``names_room``."""
    names = name_ids(ctx.encoder)
    nodes = nodes_for(names, names_room, degree)
    while True:
        job.need_room(nodes, MIN_NODES, f"graph nodes of {degree} out-edges")
        graph = draw_graph(rng, nodes, degree)
        over = names.size(graph) - names_room
        if over <= 0:
            return graph
        nodes -= max(1, round(over / (degree * names.line_mean(nodes))))


def build(kind: str, ctx: BuildContext, job: Job) -> Sample:
    rng, wording = job.rng, SECTION.of(ctx.extras).bfs_wording
    degree = rng.choice(DEGREES)
    probe = ctx.frame(HEAD, tail(kind, PLACEHOLDER, 3, wording), "")
    graph = fit_graph(rng, probe.budget(job.length, job.gen) - SLACK, degree, job, ctx)
    question = draw_question(rng, graph, kind)
    if question is None:
        raise job.too_short(
            f"its graph of {graph.nodes} nodes has no node whose answer has 1 to 32 nodes"
        )
    frame = ctx.frame(HEAD, tail(kind, node_name(question.node), question.depth, wording), "")
    names = name_ids(ctx.encoder)
    body = names.ids(graph)
    text = "".join(f"\n{node_name(a)} -> {node_name(b)}" for a, b in graph.edges())
    answer = [node_name(n) for n in question.answer]
    return job.sample(
        frame.around(body, text),
        (reference(answer),),
        "",
        operation=kind,
        node=node_name(question.node),
        depth=question.depth or None,
        nodes=graph.nodes,
        degree=degree,
        edges=len(graph.targets),
        answer_nodes=len(answer),
        bfs_wording=wording,
    )


# a line's tokens in the shipped tiny tokenizer, and the instructions' and question's: the
# chance's graphs are sized by these, as the builder sizes its own by the model's tokenizer
LINE_TOKENS = 21
FIXED_TOKENS = 460
BAND_STARTS = (1024, 2048, 4096, 8192, 16384)
CHANCE_DRAWS = 200


def chance_nodes(length: int, degree: int) -> int:
    return max(0, (length - GENERATED_BUDGET - FIXED_TOKENS) // (degree * LINE_TOKENS))


def random_guess_f1(rng: random.Random, graph: Graph, question: Question) -> float:
    """A random node set of the answer's size scored against the answer."""
    guess = rng.sample(range(graph.nodes), len(question.answer))
    return set_f1(guess, question.answer)


@functools.cache
def measured_chance(kind: str, starts: Sequence[int] = BAND_STARTS) -> Bands:
    """The F1 of a random node set in each band of lengths (percent), drawn as the builder draws:
    a degree, a graph of the nodes the band's first length holds, a question; longer lengths hold
    more nodes, so the last band's figure is above theirs."""
    rng, chances = random.Random(f"graphwalks-chance-{kind}"), []
    for start in starts:
        scores: list[float] = []
        while len(scores) < CHANCE_DRAWS:
            degree = rng.choice(DEGREES)
            nodes = chance_nodes(start, degree)
            if nodes < MIN_NODES:
                scores.append(0.0)  # no graph: the case skips
                continue
            graph = draw_graph(rng, nodes, degree)
            question = draw_question(rng, graph, kind)
            if question is not None:
                scores.append(random_guess_f1(rng, graph, question))
        mean = 100 * sum(scores) / len(scores)
        sd = (sum((100 * s - mean) ** 2 for s in scores) / (len(scores) - 1)) ** 0.5
        spread = 2 * sd / len(scores) ** 0.5
        chances.append(Chance(round(mean, 2), max(0.0, mean - spread), mean + spread, len(scores)))
    return Bands(tuple(starts), tuple(chances))


def _generated(kind: str) -> TaskSpec:
    what = "a BFS's nodes at a depth" if kind == "bfs" else "a node's parents"
    return TaskSpec(
        name=f"ctx_graphwalks_{kind}",
        suite=NAME,
        category="graph",
        metric=GRAPHWALKS_F1,
        tokens_to_generate=GENERATED_BUDGET,
        build=functools.partial(build, kind),
        chance=measured_chance(kind),
        description=f"GraphWalks, generated: {what} in a directed graph's edge list",
        chat_template=True,
    )


def _official(kind: str) -> TaskSpec:
    """The generated task's case, built from the dataset's own rows instead, which it replaces
    where the files are given."""
    return dataclasses.replace(
        _generated(kind),
        name=f"graphwalks_{kind}",
        tokens_to_generate=OFFICIAL_BUDGET,
        build=functools.partial(build_official, kind),
        description=f"GraphWalks' own {kind} rows (--data-dir graphwalks/), binned by this "
        "model's tokens",
        pool_size=functools.partial(pool_size, kind),
        replaces=f"ctx_graphwalks_{kind}",
    )


register_suite(NAME, "GraphWalks")
register_all(__name__, [*map(_generated, KINDS), *map(_official, KINDS)])
