"""The task registry is the one place membership is written: a task added in a module of its own
appears in RULER's average or a HELMET category exactly when its spec says so, and in the session's
summaries with it."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from ctxgate.gate.session import judge_session
from ctxgate.gate.thresholds import Thresholds
from ctxgate.records.case import CaseRecord
from ctxgate.tasks import registration, registry

TOY = """
from ctxgate.metrics.registry import STRING_MATCH_ALL
from ctxgate.tasks.base import Sample, TaskSpec
from ctxgate.tasks.registration import register


def _build(ctx, length, index, rng):
    return Sample("toy", length, index, (1, 2, 3), ("x",), "")


def _spec(name, suite, category, **extra):
    return TaskSpec(name=name, suite=suite, category=category, metric=STRING_MATCH_ALL,
                    tokens_to_generate=8, build=_build, chance=0.0, **extra)


@register
def toy_ruler():
    return _spec("toy_ruler", "ruler", "niah")


@register
def toy_helmet():
    return _spec("toy_helmet", "helmet", "toy")


@register
def toy_ruler_in_recall():
    return _spec("toy_ruler_in_recall", "ruler", "qa", helmet_category="recall")
"""


@pytest.fixture
def toy_tasks(tmp_path, monkeypatch):
    """The toy module in a temporary package, registered into a copy of the registry."""
    registry.all_tasks()  # the real tasks first, as any run has them
    saved = dict(registration._TASKS)
    package = tmp_path / "toypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "toy_tasks.py").write_text(textwrap.dedent(TOY))
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("toypkg.toy_tasks")
    yield
    registration._TASKS.clear()
    registration._TASKS.update(saved)
    for name in ("toypkg.toy_tasks", "toypkg"):
        sys.modules.pop(name, None)


def test_a_toy_task_counts_where_its_spec_says(toy_tasks):
    tasks = registry.membership()
    assert "toy_ruler" in tasks.ruler and "toy_ruler_in_recall" in tasks.ruler
    assert "toy_helmet" not in tasks.ruler
    assert tasks.helmet["toy"] == ("toy_helmet",)
    assert "toy_ruler_in_recall" in tasks.helmet["recall"]
    assert all("toy_ruler" not in members for members in tasks.helmet.values())
    assert registry.get_task("toy_helmet").marks == ("helmet", "toy")


def test_the_session_summaries_take_the_toy_task_in(toy_tasks):
    cases = [
        CaseRecord(t, registry.get_task(t).suite, 1024, score=50.0, verdict="pass")
        for t in ("toy_ruler", "toy_helmet")
    ]
    verdict = judge_session(cases, Thresholds(path="(none)"), True)
    at = verdict.by_length["1024"]
    assert at["ruler"].members == ("toy_ruler",) and at["ruler"].partial
    assert at["helmet_toy"].members == ("toy_helmet",) and at["helmet_toy"].score == 50.0


def test_without_the_toy_module_nothing_of_it_is_known():
    tasks = registry.membership()
    assert not any(t.startswith("toy_") for t in tasks.ruler) and "toy" not in tasks.helmet


def test_the_marker_vocabulary_is_the_markers_the_specs_carry(toy_tasks):
    vocabulary = registry.marker_vocabulary()
    assert set(vocabulary) == {m for t in registry.all_tasks() for m in t.marks}
    assert vocabulary["toy"].endswith(": toy_helmet")  # a new task's own marker is declared with it
    assert vocabulary["judge"].startswith("-m 'judge' selects, -m 'not judge' leaves out: ")
