"""The official GraphWalks prompt, piece by piece, as the dataset's rows spell it (its card's
example, checked against rows quoted whole: the smallest row, 11 nodes, is 2,637 characters, as
the card's "2.6k" smallest says), and NeMo-Skills' rewording of the BFS operation."""

from __future__ import annotations

import hashlib
import re

HEAD = (
    "You will be given a graph as a list of directed edges. All nodes are at least degree 1. "
    "You will also get a description of an operation to perform on the graph.\n"
    "Your job is to execute the operation on the graph and return the set of nodes that the "
    "operation results in. If asked for a breadth-first search (BFS), only return the nodes that "
    "are reachable at that depth, do not return the starting node. If asked for the parents of a "
    "node, only return the nodes that have an edge leading to the given node, do not return the "
    "given node itself.\n\n"
    "Here is an example:\n<begin example>\n\n"
    "The graph has the following edges:\nuvwx -> alke\nabcd -> uvwx\nabcd -> efgh\nefgh -> uvwx\n\n"
    "Example 1:\nOperation:\nPerform a BFS from node abcd with depth 1.\n"
    "Final Answer: [uvwx, efgh]\n\n"
    "Example 2:\nOperation:\nPerform a BFS from node alke with depth 1.\nFinal Answer: []\n\n"
    "Example 3:\nOperation:\nFind the parents of node uvwx.\nFinal Answer: [abcd, efgh]\n\n"
    "Example 4:\nOperation:\nFind the parents of node abcd.\nFinal Answer: []\n\n"
    "<end example>\n"
    "Here is the graph to operate on:\nThe graph has the following edges:"
)
# each edge's line opens with its newline; after the last, two empty lines and the operation
TAIL = (
    "\n\n\nOperation:\n{operation}\n\n"
    "You should immediately return the set of nodes that the operation results in, with no "
    "additional text. Return your final answer as a list of nodes in the very last line of your "
    "response. For example, if the operation returns the set of nodes [node1, node2, node3], your "
    "response should be:\nFinal Answer: [node1, node2, node3]\n"
    "If the operation returns the empty set, your response should be:\nFinal Answer: []\n"
)
BFS = "Perform a BFS from node {node} with depth {depth}."
PARENTS = "Find the parents of node {node}."
EDGE = "\n{source} -> {target}"

# NeMo-Skills' graphwalks/prepare.py: the operation's words only, the instructions as they are
_BFS_WORDING = re.compile(r"Perform a BFS from node (\S+) with depth (\d+)")
_EXACT_DEPTH = (
    r"Perform a BFS from node \1 and return only the nodes at exactly depth \2 "
    r"(not nodes at intermediate depths)"
)
ORIGINAL, EXACT_DEPTH = "original", "exact-depth"
WORDINGS = (ORIGINAL, EXACT_DEPTH)


def reword(prompt: str, wording: str) -> str:
    """The prompt with the BFS operation in ``wording``: as written, or as NeMo-Skills rewrites it
    (``re.sub`` of its pattern, every occurrence)."""
    if wording == ORIGINAL:
        return prompt
    if wording != EXACT_DEPTH:
        raise ValueError(f"unknown BFS wording {wording!r}; choose one of {', '.join(WORDINGS)}")
    return _BFS_WORDING.sub(_EXACT_DEPTH, prompt)


def node_name(index: int) -> str:
    """Node ``index``'s name as the dataset's rows have it: the md5 of its number, 10 hex digits."""
    return hashlib.md5(str(index).encode("ascii"), usedforsecurity=False).hexdigest()[:10]


def operation(kind: str, node: str, depth: int) -> str:
    return BFS.format(node=node, depth=depth) if kind == "bfs" else PARENTS.format(node=node)


def tail(kind: str, node: str, depth: int, wording: str) -> str:
    return reword(TAIL.format(operation=operation(kind, node, depth)), wording)


def edge_lines(edges: list[tuple[int, int]]) -> str:
    return "".join(EDGE.format(source=node_name(a), target=node_name(b)) for a, b in edges)


def render(edges: list[tuple[int, int]], kind: str, node: str, depth: int, wording: str) -> str:
    """A whole prompt, as one text: the instructions, the edges, the operation."""
    return HEAD + edge_lines(edges) + tail(kind, node, depth, wording)
