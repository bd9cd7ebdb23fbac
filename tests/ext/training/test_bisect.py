"""Bisect on a real sequence of tiny checkpoints whose retrieval breaks at a known index (no
scripted backend)."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxgate.backends.formats import written
from ctxgate.cli import main
from ctxgate.ext.training.bisect import Judging, bisect, search
from ctxgate.ext.training.run_folder import (
    BisectError,
    order_checkpoints,
    step_of,
    why_left_out,
)
from ctxgate.refusal import Unreachable
from ctxgate.run.loading import ModelError


def test_checkpoints_are_ordered_by_step(tmp_path):
    for name in ("step_2000", "checkpoint-300", "global_step1000"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}")
        (tmp_path / name / "model.safetensors").write_bytes(b"")
    assert [p.name for p in order_checkpoints([tmp_path])] == [
        "checkpoint-300",
        "global_step1000",
        "step_2000",
    ]
    with pytest.raises(BisectError, match="no step number"):
        step_of(tmp_path / "final")


def _between_good_and_bad(sequence, *more: str) -> list[str]:
    """bisect's arguments over the sequence's ends, niah_single_1 at 256 with 20 samples."""
    ends = ["--good", "checkpoint-100", "--bad", "checkpoint-800"]
    case = ["-k", "niah_single_1", "--lengths", "256", "--samples", "20"]
    return [str(sequence), *ends, *case, *more]


def test_bisect_names_the_first_damaged_checkpoint(checkpoint_sequence, tmp_path, capsys):
    args = _between_good_and_bad(checkpoint_sequence, "--cache-dir", str(tmp_path / "cache"))
    assert main(["bisect", *args, "--json", str(tmp_path / "a.json")]) == 0
    first = json.loads((tmp_path / "a.json").read_text())
    assert first["first_bad"].endswith("checkpoint-600") and first["first_bad_index"] == 5
    assert first["evaluations"] <= math.ceil(math.log2(8)) + 1
    out = capsys.readouterr().out
    assert "first bad checkpoint" in out and "BAD" in out
    # each checkpoint's cost under its verdict, and the bisection's in all
    assert [p["cost"]["generations"] for p in first["path"]] == [20] * first["evaluations"]
    assert first["cost"]["generations"] == 20 * first["evaluations"]
    assert out.count("      cost: 20 generations") == first["evaluations"]
    assert f"Cost in all: {20 * first['evaluations']} generations" in out
    # The same bisect again: every generation comes from the cache, and costs nothing.
    assert main(["bisect", *args, "--json", str(tmp_path / "b.json")]) == 0
    again = json.loads((tmp_path / "b.json").read_text())
    assert again["first_bad_index"] == 5 and all(p["from_cache"] == 20 for p in again["path"])
    assert again["cost"]["generations"] == 0


def test_bisect_refuses_an_unusable_selection(checkpoint_sequence, capsys):
    assert (
        main(
            [
                "bisect",
                str(checkpoint_sequence),
                "-k",
                "no_such_task",
                "--lengths",
                "256",
                "--no-cache",
            ]
        )
        == 2
    )
    assert "selects no case" in capsys.readouterr().err


def test_bisect_under_sequential_finds_the_same_checkpoint_with_fewer_samples(
    checkpoint_sequence, tmp_path
):
    args = _between_good_and_bad(checkpoint_sequence, "--no-cache")
    assert main(["bisect", *args, "--json", str(tmp_path / "fixed.json")]) == 0
    assert main(["bisect", *args, "--sequential", "--json", str(tmp_path / "seq.json")]) == 0
    fixed, seq = (json.loads((tmp_path / f"{name}.json").read_text()) for name in ("fixed", "seq"))
    assert seq["first_bad_index"] == fixed["first_bad_index"] == 5
    assert sum(p["samples"] for p in seq["path"]) < sum(p["samples"] for p in fixed["path"])


@pytest.mark.parametrize(
    ("flag", "value", "names"),
    [
        ("--rope-scaling", '{"rope_type": "linear", "factor": 0}', "--rope-scaling"),
        ("--model-override", "rope_theta=0", "rope_theta"),
        ("--haystack", "no/such/essay.txt", "--haystack"),
        ("--data-dir", "no/such/folder", "--data-dir"),
    ],
)
def test_bisect_refuses_a_bad_option_in_the_words_pytest_uses(
    checkpoint_sequence, capsys, flag, value, names
):
    """The plan checks a value once (gate/plan.make_plan) for pytest and bisect alike."""
    args = [
        "bisect",
        str(checkpoint_sequence),
        "-k",
        "niah_single_1",
        "--lengths",
        "256",
        "--no-cache",
    ]
    assert main([*args, flag, value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ctxgate bisect: ") and names in err


def test_the_options_bisect_shares_with_pytest_are_the_same_options():
    """Declared once (run/options.py, or an extra's evaluating group): pytest's plugins and bisect's
    parser add each as the table says (its help, metavar, action); both read it through the table's
    parser."""
    import argparse

    import ctxgate_plugins.options
    from ctxgate.ext.training.bisect import add_parser
    from ctxgate.run.flags import extra_groups
    from ctxgate.run.options import EVALUATION

    parser = argparse.ArgumentParser()
    subparsers = parser.add_subparsers()
    add_parser(subparsers)
    bisect = subparsers.choices["bisect"]._option_string_actions
    plugins = pytest.Parser(_ispytest=True)
    ctxgate_plugins.options.pytest_addoption(plugins)
    declared = {name: o for g in plugins._groups for o in g.options for name in o.names()}
    evaluating = [o for g in extra_groups() if g.evaluates for o in g.options]
    flags = {o.flag for o in evaluating}
    assert {"--sequential", "--sequential-alpha", "--sequential-min"} <= flags
    for option in (*EVALUATION, *evaluating):
        mine, theirs = bisect[option.flag], declared[option.flag].attrs()
        assert (
            mine.help == theirs["help"] == option.help.replace("%(default)s", str(option.default))
        )
        assert (
            mine.metavar == theirs.get("metavar")
            and mine.type is None
            and theirs.get("type") is None
        )


@pytest.mark.parametrize("fan_out", [1, 2, 3, 4, 7, 16])
def test_a_fan_out_finds_the_plain_bisections_checkpoint_in_no_more_rounds(fan_out):
    """Every length of run from 2 checkpoints to 70, every place the break can be: the same first
    bad checkpoint as the plain bisection (fan-out 1), in no more rounds, and in log_(k+1) N rounds
    at most."""

    def counted(size: int, first_bad: int, fan: int) -> tuple[int, int, set[int]]:
        probed: list[list[int]] = []

        def probe_round(points: list[int]) -> dict[int, bool]:
            assert points and all(0 < p < size - 1 for p in points)
            probed.append(points)
            return {p: p >= first_bad for p in points}

        found = search(0, size - 1, probe_round, fan)
        return found, len(probed), {p for r in probed for p in r}

    for size in range(2, 71):
        for first_bad in range(1, size):
            plain, plain_rounds, _ = counted(size, first_bad, 1)
            found, rounds, seen = counted(size, first_bad, fan_out)
            assert found == plain == first_bad
            assert rounds <= plain_rounds
            assert (
                rounds <= math.ceil(math.log(size - 1, fan_out + 1)) + 1
                if size > 2
                else rounds == 0
            )
            assert len(seen) <= rounds * fan_out


@settings(max_examples=300, deadline=None)
@given(st.data(), st.integers(2, 40), st.sampled_from([1, 2, 3, 7]))
def test_a_search_around_skipped_checkpoints_ends_at_the_first_bad_or_the_range_before_it(
    data, size, fan_out
):
    """Any run, any break, any checkpoints that cannot be opened (never the ends, which are
    evaluated): the answer is the first checkpoint at or after the break that could be opened, and
    every checkpoint between it and the last good one probed is one that could not."""
    first_bad = data.draw(st.integers(1, size - 1))
    skipped = data.draw(st.sets(st.integers(0, size - 1))) - {0, size - 1}
    probed: dict[int, bool | None] = {}

    def probe_round(points: list[int]) -> dict[int, bool | None]:
        assert points and not set(points) & set(probed) and all(0 < p < size - 1 for p in points)
        assert len(points) <= fan_out
        verdicts = {p: None if p in skipped else p >= first_bad for p in points}
        probed.update(verdicts)
        return verdicts

    found = search(0, size - 1, probe_round, fan_out)
    assert found == min(i for i in range(first_bad, size) if i not in skipped)
    last_good = max([0, *(i for i, bad in probed.items() if bad is False)])
    assert set(range(last_good + 1, found)) <= skipped


@pytest.mark.parametrize("bad", [None, 4])
def test_a_cluster_that_fails_mid_bisect_stops_it_and_skips_no_checkpoint(tmp_path, bad):
    """Only the checkpoint's own failure is a skip: a cluster that cannot be joined for the last
    checkpoint, or for one in the middle, is the line bisect ends with, not a checkpoint skipped."""
    run = [tmp_path / f"checkpoint-{i}" for i in range(5)]
    down = ModelError("the model could not be loaded", Unreachable("--ray 127.0.0.1:1: no head"))
    assert not down.checkpoint and ModelError("opening", OSError("truncated")).checkpoint

    def evaluate(path, reference, together):
        if reference is not None:
            raise down
        return {("vt", 512): SimpleNamespace(samples_from_cache=0, n=1, cost=None)}

    with pytest.raises(ModelError, match="no head"):
        bisect(run, 0, bad, evaluate, Judging(lambda t, L: 0.0))


NAMES = (
    "config.json",
    "adapter_config.json",
    "model.safetensors",
    "adapter_model.safetensors",
    "pytorch_model.bin",
    "optimizer.pt",
    "trainer_state.json",
    "shard.distcp",
    "pytorch_model_fsdp_0/",
    "pytorch_model_fsdp_0/.metadata",
    "global_step10/",
    "global_step10/mp_rank_00_model_states.pt",
    "runs/",
)


@settings(max_examples=200, deadline=None)
@given(
    st.sets(st.sampled_from(NAMES)),
    st.sampled_from(["checkpoint-100", "final", "step_7", "logs"]),
)
def test_every_folder_is_in_the_sequence_or_named_with_why(names, folder_name):
    """Whatever a folder of a run holds: in the sequence when it holds a checkpoint with its
    weights and a step, else one line of why."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / folder_name
        folder.mkdir()
        for name in sorted(names):
            path = folder / name
            path.parent.mkdir(exist_ok=True)
            if name.endswith("/"):
                path.mkdir(exist_ok=True)
            else:
                path.write_bytes(b"")
        why = why_left_out(folder)
        if written(folder) and folder_name not in ("final", "logs"):
            assert why is None
        else:
            assert why and "\n" not in why
            if written(folder):
                assert "no step number" in why
