"""Bisect on a real sequence of tiny checkpoints whose retrieval breaks at a known index (no
scripted backend)."""

from __future__ import annotations

import json
import math

import pytest

from ctxgate.cli import main
from ctxgate.workflows.bisect import BisectError, order_checkpoints, step_of


def test_checkpoints_are_ordered_by_step(tmp_path):
    for name in ("step_2000", "checkpoint-300", "global_step1000"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}")
    assert [p.name for p in order_checkpoints([tmp_path])] == [
        "checkpoint-300",
        "global_step1000",
        "step_2000",
    ]
    with pytest.raises(BisectError, match="no step number"):
        step_of(tmp_path / "final")


def test_bisect_names_the_first_damaged_checkpoint(checkpoint_sequence, tmp_path, capsys):
    args = [
        str(checkpoint_sequence),
        "--good",
        "checkpoint-100",
        "--bad",
        "checkpoint-800",
        "-k",
        "niah_single_1",
        "--lengths",
        "256",
        "--samples",
        "20",
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    assert main(["bisect", *args, "--json", str(tmp_path / "a.json")]) == 0
    first = json.loads((tmp_path / "a.json").read_text())
    assert first["first_bad"].endswith("checkpoint-600") and first["first_bad_index"] == 5
    assert first["evaluations"] <= math.ceil(math.log2(8)) + 1
    out = capsys.readouterr().out
    assert "first bad checkpoint" in out and "BAD" in out
    # The same bisect again: every generation comes from the cache.
    assert main(["bisect", *args, "--json", str(tmp_path / "b.json")]) == 0
    again = json.loads((tmp_path / "b.json").read_text())
    assert again["first_bad_index"] == 5 and all(p["from_cache"] == 20 for p in again["path"])


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


def test_a_flag_that_does_not_fit_the_checkpoints_is_a_usage_error_not_a_bad_checkpoint(
    checkpoint_sequence, capsys
):
    args = [
        "bisect",
        str(checkpoint_sequence),
        "-k",
        "niah_single_1",
        "--lengths",
        "256",
        "--no-cache",
    ]
    assert main([*args, "--config-from", str(checkpoint_sequence / "checkpoint-100")]) == 2
    err = capsys.readouterr().err
    assert "--config-from is for a sharded checkpoint" in err and "drop --config-from" in err


def test_bisect_under_sequential_finds_the_same_checkpoint_with_fewer_samples(
    checkpoint_sequence, tmp_path
):
    args = [
        str(checkpoint_sequence),
        "--good",
        "checkpoint-100",
        "--bad",
        "checkpoint-800",
        "-k",
        "niah_single_1",
        "--lengths",
        "256",
        "--samples",
        "20",
        "--no-cache",
    ]
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
    """Declared once (run/options.py): pytest's plugins and bisect's parser add each as the table
    says (its help, metavar, action); both read it through the table's parser."""
    import argparse

    import ctxgate_plugins.options
    from ctxgate.run.options import EVALUATION, SEQUENTIAL_OPTIONS
    from ctxgate.workflows.bisect import add_parser

    parser = argparse.ArgumentParser()
    subparsers = parser.add_subparsers()
    add_parser(subparsers)
    bisect = subparsers.choices["bisect"]._option_string_actions
    plugins = pytest.Parser(_ispytest=True)
    ctxgate_plugins.options.pytest_addoption(plugins)
    declared = {name: o for g in plugins._groups for o in g.options for name in o.names()}
    for option in (*EVALUATION, *SEQUENTIAL_OPTIONS):
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
    from ctxgate.workflows.bisect import search

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
