"""Each task's chance score (``TaskSpec.chance``): measured where the task is generated
(bench/chance.py, in a small run here) and held to its declaration, stated in docs/tasks.md, shown
beside each case, and a floor at or below it refused when thresholds.toml is read."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from ctxgate.gate.session import judge_session
from ctxgate.gate.thresholds import Thresholds, ThresholdsError, parse_thresholds
from ctxgate.records.schema import CaseRecord, RunInfo
from ctxgate.report.build import build_report
from ctxgate.report.tables import markdown, terminal
from ctxgate.sources.errors import DataNotGiven
from ctxgate.tasks.build import build_sample
from ctxgate.tasks.registry import all_tasks, get_task, task_names
from tests.conftest import ROOT, SCRIPTED


def test_every_generated_tasks_chance_is_what_random_answers_drawn_as_its_distractors_score(
    tmp_path,
):
    from bench.chance import guesses, run, shipped_context

    ctx = replace(
        shipped_context(), data_dir=str(tmp_path)
    )  # no data: only the generated tasks build
    measured = guesses(ctx.encoder)
    for spec in all_tasks():
        if spec.name not in measured:
            with pytest.raises(DataNotGiven):
                build_sample(spec, ctx, 8192, 0, 42)
    for m in run(8192, samples=8, draws=60):
        # four standard errors of the small run, and half a point for the declaration's rounding
        assert abs(m.measured - m.declared) <= 4 * m.stderr + 0.5, m
    wrong = {m.task: m.wrong_needle for m in run(8192, samples=4, draws=30, tasks=["ctx_mrcr_2"])}
    assert wrong["ctx_mrcr_2"] is not None and wrong["ctx_mrcr_2"] > get_task("ctx_mrcr_2").chance


def test_docs_tasks_states_every_tasks_chance_as_its_spec_declares():
    text = (ROOT / "docs" / "tasks.md").read_text("utf-8")
    section = text.split("## Chance scores", 1)[1]
    stated: dict[str, float] = {}
    for row in re.findall(
        r"(?m)^\| (`[^|]+`) \| ([0-9.]+) \| [^|\n]+ \|$", section
    ):  # tasks | chance | how
        for task in re.findall(r"`([a-z0-9_]+)`", row[0]):
            assert task not in stated, f"{task} is listed twice"
            stated[task] = float(row[1])
    assert set(stated) == set(task_names())
    assert {t: round(get_task(t).chance, 1) for t in stated} == stated


def parse(text: str) -> Thresholds:
    return parse_thresholds(text, "t.toml", task_names())


def test_a_floor_at_or_below_a_tasks_chance_is_refused_naming_the_task_its_chance_and_the_fix():
    with pytest.raises(ThresholdsError) as err:
        parse('[[floor]]\ntask = "*"\nlength = "<=32k"\nfloor = 20\n')
    message = str(err.value)
    assert message.startswith(
        "t.toml: floor[0].floor: 20 (task '*', length '<=32k') is at or below the chance"
    )
    assert (
        "of msmarco_rerank, 50, and that of " in message and "raise the floor above 50" in message
    )
    assert "narrow task '*'" in message and "\n" not in message
    # at the chance score itself, for the task alone: the fix is the floor or the rule
    with pytest.raises(
        ThresholdsError, match=r"infbench_mc, 25: .*Fix: raise the floor above 25, or drop the rule"
    ):
        parse('[[floor]]\ntask = "infbench_mc"\nfloor = 25\n')
    with pytest.raises(
        ThresholdsError, match=r"floor\[1\]\.floor: 19.*ctx_babi_qa3, 20, and that of 2 more"
    ):
        parse(
            '[[floor]]\ntask = "niah_*"\nfloor = 90\n[[floor]]\ntask = "ctx_babi_*"\nfloor = 19\n'
        )


def test_a_floor_above_chance_a_zero_floor_and_a_task_a_later_rule_floors_everywhere_are_kept():
    assert (
        parse('[[floor]]\ntask = "infbench_mc"\nfloor = 25.5\n').floor_for("infbench_mc", 4096)
        == 25.5
    )
    assert parse('[[floor]]\ntask = "*"\nfloor = 0\n').floor_for("msmarco_rerank", 4096) == 0
    # the later rule of every length is msmarco_rerank's floor, so the first sets it nowhere
    both = parse(
        '[[floor]]\ntask = "*"\nfloor = 40\n[[floor]]\ntask = "msmarco_rerank"\nfloor = 60\n'
    )
    assert both.floor_for("msmarco_rerank", 8192) == 60 and both.floor_for("vt", 8192) == 40
    # one of some lengths leaves the first rule the task's floor at the others: refused
    with pytest.raises(ThresholdsError, match="msmarco_rerank, 50"):
        parse(
            '[[floor]]\ntask = "*"\nfloor = 40\n[[floor]]\ntask = "msmarco_rerank"\nlength = '
            '"8k"\nfloor = 60\n'
        )


def test_the_suite_refuses_such_a_floor_before_the_model_loads(suite, pytester):
    (pytester.path / "chance.toml").write_text('[[floor]]\ntask = "icl_*"\nfloor = 10\n')
    result = pytester.runpytest(
        "--backend", SCRIPTED, "--model", "missing.json", "--thresholds", "chance.toml"
    )
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        ["*chance.toml: floor[[]0[]].floor: 10 (task 'icl_*', length '*') is at or below the "
         "chance score of "
         "icl_trec_coarse, 16.7*Fix: raise the floor above 16.7*"]
    )  # fmt: skip


def test_the_report_gives_each_case_its_chance_beside_its_score():
    cases = [
        CaseRecord(
            "infbench_mc",
            "helmet",
            2048,
            "longqa",
            "mc_accuracy",
            "pass",
            score=40.0,
            n=5,
            chance=25.0,
        ),
        CaseRecord(
            "vt", "ruler", 2048, "vt", "string_match_all", "pass", score=90.0, n=5, chance=0.0
        ),
        CaseRecord(
            "cwe", "ruler", 2048, "aggregation", "string_match_all", "pass", score=30.0, n=5
        ),  # an old one
    ]
    verdict = judge_session(cases, Thresholds("t"), True)
    report = build_report(cases, RunInfo("m", None, 42, 5, (2048,), "task"), verdict)
    md = markdown(report)
    assert (
        "| task | 2K | chance |" in md
        and "| infbench_mc | 40.0 | 25.0 |" in md
        and "| vt | 90.0 | 0.0 |" in md
    )
    assert "| cwe | 30.0 |  |" in md and "chance: a random answer's expected score" in md
    assert any(
        line.split() == ["infbench_mc", "40.0", "25.0"] for line in terminal(report).splitlines()
    )
