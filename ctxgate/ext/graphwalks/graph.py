"""A GraphWalks graph as the dataset's rows have it: nodes 0..n-1 in order, each with the same
number of out-edges to nodes drawn uniformly (repeats and self-loops allowed), listed node by node;
and the two operations, computed: a BFS's nodes at exactly a depth, and a node's parents."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

KINDS = ("bfs", "parents")
DEGREES = (1, 2, 3, 4)  # out-edges per node: the rows quoted whole have 1 and 4
DEPTHS = (1, 2, 3)
MIN_NODES = 8
MAX_ANSWER = 32  # nodes an answer may have, so that it fits the generation budget
TRIES = 256  # questions drawn before a graph is found to have none of a fitting answer


@dataclass(frozen=True)
class Graph:
    """``targets[i * degree + j]``: node i's j-th out-edge."""

    nodes: int
    degree: int
    targets: tuple[int, ...]

    def edges(self) -> Iterator[tuple[int, int]]:
        k = self.degree
        return ((i // k, t) for i, t in enumerate(self.targets))

    def children(self, node: int) -> tuple[int, ...]:
        k = self.degree
        return self.targets[node * k : (node + 1) * k]

    def at_depth(self, start: int, depth: int) -> frozenset[int]:
        """The nodes whose shortest path from ``start`` has ``depth`` edges: a BFS that adds no
        node twice (the start is at depth 0, never after)."""
        seen, frontier = {start}, {start}
        for _ in range(depth):
            frontier = {c for n in frontier for c in self.children(n)} - seen
            seen |= frontier
        return frozenset(frontier)

    def parents(self, node: int) -> frozenset[int]:
        """The nodes with an edge to ``node``, not ``node`` itself."""
        return frozenset(a for a, b in self.edges() if b == node and a != node)


@dataclass(frozen=True)
class Question:
    kind: str
    node: int
    depth: int  # 0 for parents
    answer: frozenset[int]


def draw_graph(rng: random.Random, nodes: int, degree: int) -> Graph:
    return Graph(nodes, degree, tuple(rng.randrange(nodes) for _ in range(nodes * degree)))


def draw_question(rng: random.Random, graph: Graph, kind: str) -> Question | None:
    """A node (and a depth) whose answer has 1 to MAX_ANSWER nodes: an empty answer scores 0
    whatever is said (the set F1 has no recall to give), so none is asked; None where TRIES draws
    found none."""
    if kind not in KINDS:
        raise ValueError(f"unknown GraphWalks operation {kind!r}; choose one of {', '.join(KINDS)}")
    for _ in range(TRIES):
        node = rng.randrange(graph.nodes)
        depth = rng.choice(DEPTHS) if kind == "bfs" else 0
        answer = graph.at_depth(node, depth) if kind == "bfs" else graph.parents(node)
        if 1 <= len(answer) <= MAX_ANSWER:
            return Question(kind, node, depth, answer)
    return None
