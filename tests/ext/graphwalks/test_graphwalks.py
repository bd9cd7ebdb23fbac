"""GraphWalks: the grader against lm-evaluation-harness's (goldens), the prompt against the rows
quoted whole, the generated graphs' answers recomputed from their prompts' text, the BFS wording
switch, the official parquet files in their schema, and one run of the suite."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxgate.api import (
    BuildContext,
    DataNotGiven,
    DataUnavailable,
    TaskTooShort,
    get_task,
)
from ctxgate.ext.graphwalks import grader, prompt
from ctxgate.ext.graphwalks.files import load_graphwalks, parse_row
from ctxgate.ext.graphwalks.graph import Graph, draw_graph
from ctxgate.ext.graphwalks.settings import NAME, GraphwalksSettings
from ctxgate.ext.graphwalks.tasks import measured_chance
from ctxgate.metrics.registry import score_prediction
from ctxgate.tasks.build import build_sample

HERE = Path(__file__).parent
FEW = settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
GENERATED = ("ctx_graphwalks_bfs", "ctx_graphwalks_parents")
# dataset row 1 as quoted whole in public code: 11 nodes, 4 out-edges each, parents of node 7
ROW1_TARGETS = (
    "0 6 2 1 8 9 3 8 9 3 3 8 10 10 4 1 6 3 0 5 1 6 6 9 7 7 5 4 9 5 7 0 3 0 3 7 0 6 4 4 7 10 9 5"
)


# ---------------------------------------------------------------- the grader


def test_the_grader_is_lm_evaluation_harnesss_on_its_drawn_cases():
    rows = json.loads((HERE / "grader_goldens.json").read_text())
    for row in rows:
        refs = (grader.reference(row["gold"]),)
        strict = score_prediction("graphwalks_f1", row["output"], refs)[0]
        flexible = score_prediction("graphwalks_flexible_f1", row["output"], refs)[0]
        assert (strict, flexible) == (row["f1"], row["flexible_f1"]), row["output"]


def test_the_cards_code_as_printed_keeps_its_quirks():
    refs = (grader.reference(["abcd", "efgh"]),)
    # the first item keeps "Final Answer: [" before it
    assert grader.card_nodes("Final Answer: [abcd, efgh]") == ["Final Answer: [abcd", "efgh"]
    assert score_prediction("graphwalks_card_f1", "Final Answer: [abcd, efgh]", refs)[0] == 0.5
    assert score_prediction("graphwalks_card_f1", "Final Answer: [zzzz]", refs)[0] == 1.0
    assert score_prediction("graphwalks_f1", "Final Answer: [abcd, efgh]", refs)[0] == 1.0
    assert score_prediction("graphwalks_f1", "Final Answer: [zzzz]", refs)[0] == 0.0


@FEW
@given(st.text(), st.lists(st.text(max_size=12), max_size=5))
def test_any_output_scores_between_0_and_1_and_bad_references_are_one_line(output, gold):
    refs = (grader.reference(gold),)
    for metric in ("graphwalks_f1", "graphwalks_flexible_f1", "graphwalks_card_f1"):
        assert 0.0 <= score_prediction(metric, output, refs)[0] <= 1.0
    with pytest.raises(ValueError, match="one reference, the answer's nodes as a JSON list"):
        grader.gold_nodes([output, "x"])


# ---------------------------------------------------------------- the prompt and the graph


def row1() -> Graph:
    return Graph(11, 4, tuple(int(t) for t in ROW1_TARGETS.split()))


def test_the_prompt_is_the_rows_quoted_whole():
    graph = row1()
    text = prompt.render(list(graph.edges()), "parents", prompt.node_name(7), 0, "original")
    assert len(text) == 2637  # the card's smallest prompt_chars, "2.6k"
    assert prompt.node_name(0) == "cfcd208495" and prompt.node_name(45) == "6c8349cc72"
    assert (
        "<end example>\nHere is the graph to operate on:\nThe graph has the following edges:\n"
        in text
    )
    assert "\ncfcd208495 -> cfcd208495\ncfcd208495 -> 1679091c5a\n" in text
    assert text.endswith(
        "d3d9446802 -> e4da3b7fbb\n\n\nOperation:\nFind the parents of node "
        "8f14e45fce.\n\nYou should immediately return the set of nodes that the "
        "operation results in, with no additional text. Return your final answer "
        "as a list of nodes in the very last line of your response. For example, "
        "if the operation returns the set of nodes [node1, node2, node3], your "
        "response should be:\nFinal Answer: [node1, node2, node3]\nIf the "
        "operation returns the empty set, your response should be:\n"
        "Final Answer: []\n"
    )
    # its own answer: the nodes with an edge to node 7, node 7's self-loop left out
    assert {prompt.node_name(n) for n in graph.parents(7)} == {
        prompt.node_name(n) for n in (6, 8, 10)
    }


def test_the_exact_depth_wording_is_nemo_skills_rewrite_of_the_operation_only():
    text = prompt.render([(0, 1)], "bfs", "cfcd208495", 2, prompt.EXACT_DEPTH)
    assert (
        "Perform a BFS from node cfcd208495 and return only the nodes at exactly depth 2 (not "
        "nodes at intermediate depths).\n" in text
    )
    assert "only return the nodes that are reachable at that depth" in text  # instructions kept
    assert prompt.reword(text, prompt.ORIGINAL) == text
    with pytest.raises(ValueError, match="choose one of original, exact-depth"):
        prompt.reword(text, "exact")


def shortest(graph: Graph, start: int) -> dict[int, int]:
    dist, frontier = {start: 0}, [start]
    while frontier:
        nxt = []
        for n in frontier:
            for c in graph.children(n):
                if c not in dist:
                    dist[c] = dist[n] + 1
                    nxt.append(c)
        frontier = nxt
    return dist


@FEW
@given(st.randoms(use_true_random=False), st.integers(1, 40), st.integers(1, 4), st.integers(0, 5))
def test_bfs_answers_are_the_nodes_at_exactly_that_shortest_distance(rng, nodes, degree, depth):
    graph = draw_graph(rng, nodes, degree)
    start = rng.randrange(nodes)
    dist = shortest(graph, start)
    assert graph.at_depth(start, depth) == {n for n, d in dist.items() if d == depth}
    assert start not in graph.parents(start)


# ---------------------------------------------------------------- the generated tasks

EDGE = re.compile(r"^(\w{10}) -> (\w{10})$", re.M)
OPERATION = re.compile(
    r"Perform a BFS from node (\w+)(?: with depth| and return only the nodes at "
    r"exactly depth) (\d+)|Find the parents of node (\w+)\."
)


def answer_from_text(text: str) -> set[str]:
    """The answer as the prompt's own text gives it: its edges read back, the operation done."""
    edges = EDGE.findall(text.split("Here is the graph to operate on:")[1])
    found = OPERATION.findall(text.split("<end example>")[1])[0]
    if found[2]:
        return {a for a, b in edges if b == found[2] and a != found[2]}
    children: dict[str, list[str]] = {}
    for a, b in edges:
        children.setdefault(a, []).append(b)
    seen, frontier = {found[0]}, {found[0]}
    for _ in range(int(found[1])):
        frontier = {c for n in frontier for c in children.get(n, [])} - seen
        seen |= frontier
    return frontier


@FEW
@given(st.sampled_from(GENERATED), st.integers(1, 3000), st.integers(0, 3), st.booleans())
def test_every_length_builds_within_the_rule_or_skips_and_answers_its_own_text(
    hf_encoder, task, length, index, exact
):
    wording = prompt.EXACT_DEPTH if exact else prompt.ORIGINAL
    ctx = BuildContext(hf_encoder, chat=False, extras={NAME: GraphwalksSettings(wording)})
    spec = get_task(task)
    try:
        s = build_sample(spec, ctx, length, index, 42)
    except TaskTooShort as exc:
        assert length < 2048 and "choose a longer --lengths value" in str(exc)
        return
    assert len(s.input_ids) + spec.tokens_to_generate <= length
    assert s.input_ids == hf_encoder.whole(s.text)  # joined ids are the whole text's
    assert set(grader.gold_nodes(s.answers)) == answer_from_text(s.text)
    assert ("exactly depth" in s.text) == (exact and task.endswith("bfs"))


def test_long_prompts_fill_the_length_and_samples_differ(hf_encoder):
    ctx = BuildContext(hf_encoder, chat=False)
    spec = get_task("ctx_graphwalks_parents")
    a, b = (build_sample(spec, ctx, 16384, i, 42) for i in (0, 1))
    assert a.text != b.text and a.input_ids == hf_encoder.whole(a.text)
    assert 0.97 * 16384 < len(a.input_ids) + spec.tokens_to_generate <= 16384
    assert build_sample(spec, ctx, 16384, 0, 42).text == a.text


def test_chance_is_a_random_node_sets_f1_falling_with_the_length():
    for kind in ("bfs", "parents"):
        bands = measured_chance(kind)
        scores = [c.score for c in bands.chances[1:]]
        assert scores == sorted(scores, reverse=True) and 0 < scores[0] < 30
        assert get_task(f"ctx_graphwalks_{kind}").chance == bands


# ---------------------------------------------------------------- the official files


def write_rows(folder: Path, rows: list[dict[str, object]], name: str = "gw.parquet") -> None:
    import datasets

    (folder / "graphwalks").mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(rows).to_parquet(str(folder / "graphwalks" / name))


def official_row(kind: str) -> dict[str, object]:
    graph = row1()
    node = prompt.node_name(7)
    text = prompt.render(list(graph.edges()), kind, node, 1, "original")
    answer = [
        prompt.node_name(n)
        for n in (graph.parents(7) if kind == "parents" else graph.at_depth(7, 1))
    ]
    answer += [node] if kind == "parents" else []  # the mislabel the card's fix takes out
    return {
        "prompt": text,
        "answer_nodes": answer,
        "problem_type": kind,
        "prompt_chars": len(text),
        "date_added": "04-12-2025",
    }


def test_official_rows_are_sent_as_written_binned_by_length_and_reworded(hf_encoder, tmp_path):
    write_rows(tmp_path, [official_row("parents"), official_row("bfs")])
    ctx = BuildContext(hf_encoder, chat=False, data_dir=str(tmp_path))
    s = build_sample(get_task("graphwalks_parents"), ctx, 4096, 0, 42)
    assert s.text == official_row("parents")["prompt"] and s.meta["answer_fixed"]
    assert prompt.node_name(7) not in grader.gold_nodes(s.answers)
    exact = BuildContext(
        hf_encoder,
        chat=False,
        data_dir=str(tmp_path),
        extras={NAME: GraphwalksSettings(prompt.EXACT_DEPTH)},
    )
    bfs = build_sample(get_task("graphwalks_bfs"), exact, 4096, 0, 42)
    assert "exactly depth 1" in bfs.text
    with pytest.raises(TaskTooShort, match="has no row at length 16384"):
        build_sample(get_task("graphwalks_bfs"), ctx, 16384, 0, 42)


def test_missing_and_malformed_files_are_one_line(hf_encoder, tmp_path):
    ctx = BuildContext(hf_encoder, chat=False, data_dir=str(tmp_path))
    with pytest.raises(DataNotGiven, match="put openai/graphwalks"):
        build_sample(get_task("graphwalks_bfs"), ctx, 4096, 0, 42)
    with pytest.raises(DataUnavailable, match="field problem_type is 'dfs'"):
        parse_row({**official_row("bfs"), "problem_type": "dfs"}, "f: row 1")
    write_rows(tmp_path, [{"prompt": "x", "problem_type": "bfs"}])
    with pytest.raises(DataUnavailable, match="has no column answer_nodes"):
        load_graphwalks(str(tmp_path))


# ---------------------------------------------------------------- a run


def test_the_suite_runs_graphwalks_with_the_wording_recorded(real_suite, pytester):
    result = real_suite(
        "-k",
        "ctx_graphwalks",
        "--lengths",
        "2k",
        "--samples",
        "2",
        "--graphwalks-bfs-wording",
        "exact-depth",
        "--report",
        "r.json",
    )
    assert result.ret == 0, result.stdout.str()[-3000:]
    report = json.loads((pytester.path / "r.json").read_text())
    assert {c["task"] for c in report["cases"]} == set(GENERATED)
    assert "exact-depth" in json.dumps(report["run"])
