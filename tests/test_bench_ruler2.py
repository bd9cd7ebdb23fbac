"""bench/ruler2_build.py's smoke: one RULERv2 task of each kind built from whole texts and from
parts, in-process, the same sets both ways, each with its two times and their ratio."""

from __future__ import annotations

import re
from pathlib import Path

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


def test_stand_in_data_reads_and_builds_as_the_real_files_would(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench import ruler2_data
    from ctxgate.ext.ruler2.files import load_hotpotqa, load_mmlu

    assert ruler2_data.main([str(tmp_path), "--fraction", "0.001"]) == 0
    test, aux = load_mmlu(str(tmp_path))
    needles, paragraphs = load_hotpotqa(str(tmp_path))
    assert (len(test), len(aux), len(needles)) == (14, 100, 7)
    assert len(paragraphs) == 90 * ruler2_data.PARAGRAPHS
    assert all(len(n.gold) == ruler2_data.GOLD for n in needles)
    argv = ["--lengths", "8k", "--samples", "3", "--tasks", "mk_niah_easy,qa_basic"]
    assert main([*argv, "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("3 samples, the same") == 2, out
