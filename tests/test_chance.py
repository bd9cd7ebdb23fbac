"""Each task's chance score at each length (``tasks/chance.py``): a random guesser's score on the
generated tasks (bench/chance.py, in small runs here) held to it at any length, stated in
docs/tasks.md, shown beside each case, and a floor at or below a case's refused before the model
loads."""

from __future__ import annotations

import functools
import re
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.chance import Guess, Measured, guessed_tasks, guesses, measure, run, shipped_context
from ctxgate.gate.session import judge_session
from ctxgate.gate.thresholds import (
    Thresholds,
    ThresholdsError,
    parse_thresholds,
    refuse_floors_at_chance,
)
from ctxgate.records.case import CaseRecord
from ctxgate.records.schema import RunInfo
from ctxgate.report.build import build_report
from ctxgate.report.tables import markdown, terminal
from ctxgate.sources.errors import DataNotGiven
from ctxgate.tasks.base import BuildContext
from ctxgate.tasks.build import build_sample
from ctxgate.tasks.chance import chance_at
from ctxgate.tasks.registry import all_tasks, get_task, task_names
from tests.conftest import ROOT, SCRIPTED


def _held(m: Measured) -> bool:
    """The measured chance, give or take four standard errors and half a point, meets the declared
    interval. The standard error is at least a right-or-wrong score's at the declared chance: with
    a few samples their own spread can come out far too small."""
    said = m.declared
    assert said is not None
    q = min(max(m.measured, said.low), said.high) / 100
    stderr = max(m.stderr, 100 * (q * (1 - q) / (m.samples * m.draws)) ** 0.5)
    slack = 4 * stderr + 0.5
    return said.low - slack <= m.measured <= said.high + slack


def test_every_generated_tasks_chance_is_what_random_answers_drawn_as_its_distractors_score(
    tmp_path,
):
    ctx = replace(shipped_context(), data_dir=str(tmp_path))  # no data: only the generated build
    measured = guesses(ctx.encoder)
    # the suites whose guessers live here; an extra that measures its own chance (RULERv2,
    # MRCR v2, GraphWalks, LongBench v2) checks it in its own tests
    here = ("ctxgate.tasks", "ctxgate.ext.families")
    for spec in all_tasks():
        if spec.name not in measured and spec.build.__module__.startswith(here):
            with pytest.raises(DataNotGiven):
                build_sample(spec, ctx, 8192, 0, 42)
    for m in run(8192, samples=8, draws=60):
        assert _held(m), m
    wrong = {m.task: m.wrong_needle for m in run(8192, samples=4, draws=30, tasks=["ctx_mrcr_2"])}
    assert wrong["ctx_mrcr_2"] is not None
    assert wrong["ctx_mrcr_2"] > chance_at(get_task("ctx_mrcr_2"), 8192).score


@functools.cache
def _context() -> tuple[BuildContext, dict[str, Guess]]:
    ctx = shipped_context()
    return ctx, guesses(ctx.encoder)


@settings(max_examples=40, deadline=None)
@given(task=st.sampled_from(guessed_tasks()), length=st.integers(16, 8192))
def test_at_any_length_a_random_guesser_scores_the_chance_declared_there(task, length):
    ctx, found = _context()
    m = measure(get_task(task), found[task], ctx, length, samples=4, draws=20)
    assert m is None or _held(m), m  # None: the task does not fit, so no case runs there


def test_docs_tasks_states_every_tasks_chance_at_8k_as_its_spec_declares():
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
    assert {t: round(chance_at(get_task(t), 8192).score, 1) for t in stated} == stated


def refused(text: str, lengths: tuple[int, ...] = (1024, 8192)) -> str:
    with pytest.raises(ThresholdsError) as err:
        refuse_floors_at_chance(parse(text), lengths)
    assert "\n" not in str(err.value)
    return str(err.value)


def parse(text: str) -> Thresholds:
    return parse_thresholds(text, "t.toml", task_names())


def test_a_floor_at_or_below_a_cases_chance_at_its_length_is_refused_naming_both_and_the_fix():
    # the case named first is the one whose chance reaches furthest past the floor
    top = max(all_tasks(), key=lambda t: chance_at(t, 1024).high)
    high = chance_at(top, 1024).high
    message = refused('[[floor]]\ntask = "*"\nlength = "<=32k"\nfloor = 20\n')
    assert message.startswith(f"t.toml: floor[0].floor: 20 gates {top.name} at 1K, whose ")
    assert f"chance score there reaches {high:.3g}, and " in message
    fix = f"Fix: raise the floor above {high:.3g}, or give {top.name} a [[floor]] of its own"
    assert fix in message and f'(task = "{top.name}", floor = 0)' in message  # all its lengths
    # the chance at the case's own length: CWE's falls as more words fit
    cwe_1k, cwe_8k = (chance_at(get_task("cwe"), L).high for L in (1024, 8192))
    assert cwe_8k < cwe_1k
    between = f"{(cwe_1k + cwe_8k) / 2:.1f}"
    cwe = f'[[floor]]\ntask = "cwe"\nfloor = {between}\n'
    refuse_floors_at_chance(parse(cwe), (8192,))
    message = refused(cwe)
    assert message.startswith(f"t.toml: floor[0].floor: {between} gates cwe at 1K")
    assert '(task = "cwe", length = "1k", floor = 0)' in message  # its one length reached
    # [defaults] floor too
    message = refused(f"[defaults]\nfloor = {between}\n", (8192,))
    assert message.startswith(f"t.toml: defaults.floor: {between} gates ")
    # a later rule that sets the case's floor to 0 takes it out
    kept = cwe + '[[floor]]\ntask = "cwe"\nlength = "<8k"\nfloor = 0\n'
    refuse_floors_at_chance(parse(kept), (1024, 8192))
    assert parse(kept).floor_for("cwe", 1024) == 0


def test_a_floor_above_chance_a_zero_floor_and_a_later_rule_that_floors_the_case_are_kept():
    above = parse('[[floor]]\ntask = "infbench_mc"\nfloor = 25.5\n')
    refuse_floors_at_chance(above, (1024, 8192))
    assert above.floor_for("infbench_mc", 4096) == 25.5
    refuse_floors_at_chance(parse('[[floor]]\ntask = "*"\nfloor = 0\n'), (1024,))
    # the later rule of every length is msmarco_rerank's floor, so the first sets it nowhere
    both = parse(
        '[[floor]]\ntask = "*"\nfloor = 60\n[[floor]]\ntask = "msmarco_rerank"\nfloor = 70\n'
    )
    refuse_floors_at_chance(both, (8192,))
    assert both.floor_for("msmarco_rerank", 8192) == 70 and both.floor_for("vt", 8192) == 60
    # one of some lengths leaves the first rule the task's floor at the others: refused
    over_40 = [t.name for t in all_tasks() if t.name != "msmarco_rerank"]
    over_40 = [t for t in over_40 if chance_at(get_task(t), 1024).high >= 40]
    others = "".join(f'[[floor]]\ntask = "{t}"\nfloor = 0\n' for t in over_40)
    assert "gates msmarco_rerank at 1K" in refused(
        '[[floor]]\ntask = "*"\nfloor = 40\n[[floor]]\ntask = "msmarco_rerank"\nlength = '
        '"8k"\nfloor = 60\n' + others
    )


def test_the_suite_refuses_such_a_floor_before_the_model_loads(suite, pytester):
    (pytester.path / "chance.toml").write_text('[[floor]]\ntask = "icl_*"\nfloor = 10\n')
    result = pytester.runpytest(
        "--backend", SCRIPTED, "--model", "missing.json", "--thresholds", "chance.toml",
        "--lengths", "2k",
    )  # fmt: skip
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        ["*chance.toml: floor[[]0[]].floor: 10 gates icl_trec_coarse at 2K, whose chance score "
         "there reaches 16.7: *Fix: raise the floor above 16.7*"]
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
