"""An edge list's ids from its names' ids, each name tokenized once per encoder: a line is
``"\\n" + source``, ``" ->"``, ``" " + target`` (pieces that start at whitespace, so that joined
they are the whole text's ids), so a graph's size in tokens is known before its text is."""

from __future__ import annotations

import math
import threading
import weakref
from dataclasses import dataclass, field

from ctxgate.api import PieceEncoder

from .graph import Graph
from .prompt import node_name

ARROW = " ->"
BATCH = 4096  # names tokenized at a time, as a graph's size calls for them


@dataclass
class NameIds:
    """The ids of node names as a line's source (after a newline) and as its target."""

    enc: PieceEncoder
    source: list[tuple[int, ...]] = field(default_factory=list)
    target: list[tuple[int, ...]] = field(default_factory=list)
    arrow: tuple[int, ...] = ()
    lock: threading.Lock = field(default_factory=threading.Lock)

    def upto(self, nodes: int) -> None:
        with self.lock:
            if not self.arrow:
                self.arrow = self.enc.encode(ARROW)
            while len(self.source) < nodes:
                names = [node_name(i) for i in range(len(self.source), len(self.source) + BATCH)]
                self.source.extend(self.enc.encode_fresh(["\n" + n for n in names]))
                self.target.extend(self.enc.encode_fresh([" " + n for n in names]))

    def line_mean(self, nodes: int) -> float:
        """A line's mean size in tokens in a graph of ``nodes`` nodes (sources and targets alike
        drawn from them)."""
        self.upto(nodes)
        names = sum(len(s) + len(t) for s, t in zip(self.source[:nodes], self.target[:nodes]))
        return len(self.arrow) + names / nodes

    def size(self, graph: Graph) -> int:
        self.upto(graph.nodes)
        k, t = graph.degree, self.target
        sources = sum(len(s) for s in self.source[: graph.nodes]) * k
        return (
            sources + len(self.arrow) * len(graph.targets) + sum(len(t[j]) for j in graph.targets)
        )

    def ids(self, graph: Graph) -> list[int]:
        self.upto(graph.nodes)
        out: list[int] = []
        for a, b in graph.edges():
            out.extend(self.source[a])
            out.extend(self.arrow)
            out.extend(self.target[b])
        return out


_NAMES = weakref.WeakKeyDictionary[PieceEncoder, NameIds]()
_NAMES_LOCK = threading.Lock()


def name_ids(enc: PieceEncoder) -> NameIds:
    with _NAMES_LOCK:
        if enc not in _NAMES:
            _NAMES[enc] = NameIds(enc)
        return _NAMES[enc]


def nodes_for(names: NameIds, room: int, degree: int) -> int:
    """The most nodes whose lines, at their mean size, fit ``room`` tokens (the mean taken over the
    nodes themselves: later names' numbers are longer)."""
    nodes = max(1, room // max(1, degree * 8))
    for _ in range(4):  # the mean moves little with the count: a few rounds settle it
        nodes = max(0, math.floor(room / (degree * names.line_mean(max(nodes, 1)))))
    return nodes
