"""bench/ruler2_build.py's smoke: one RULERv2 task of each kind built from whole texts and from
parts, in-process, the same sets both ways, each with its two times and their ratio."""

from __future__ import annotations

import re

import pytest

from bench.ruler2_build import KINDS, main, parser


def test_the_smoke_builds_each_kind_both_ways_and_the_sets_are_the_same(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--smoke"]) == 0
    out = capsys.readouterr().out
    assert "the second build counts from parts" in out, out
    for task in KINDS:
        line = re.search(
            rf"^{task} at 4096: whole texts [\d.]+ s, from parts [\d.]+ s, [\d.]+x; "
            r"10 samples, the same$",
            out,
            re.MULTILINE,
        )
        assert line, out
    assert re.search(r"^all: .*, [\d.]+x; sets the same$", out, re.MULTILINE), out


def test_a_task_not_of_ruler2_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        parser().parse_args(["--tasks", "mk_niah_basic,niah_single_1"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("ruler2_build.py: --tasks ") and "niah_single_1" in err, err
    assert err.count("\n") == 1, err


def test_the_defaults() -> None:
    parsed = vars(parser().parse_args([]))
    assert parsed == {
        "tokenizer": "fixtures/tiny-llama-niah",
        "lengths": (131072,),
        "samples": 100,
        "seed": 42,
        "tasks": None,
        "data_dir": None,
        "smoke": False,
    }
