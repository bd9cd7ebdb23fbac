"""One rule for the thresholds file, wherever it is read: the suite under pytest and every verb that
takes --thresholds (diff, bisect, html, judge) find the same file (--thresholds, else the ini option
ctxgate_thresholds, else the nearest thresholds.toml up to the project's top) and refuse a given
path that is a folder or missing in one line with the fix, never gating with no floors instead. And
``ctxgate init`` writes all of its files or none, naming the file that cannot be written."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ctxgate.gate.thresholds import PytestConfig, ThresholdsError, find_thresholds, thresholds_here
from ctxgate.records.io import atomic_write_all
from ctxgate.tasks.registry import task_names
from tests.conftest import (
    ALL_RIGHT,
    SCRIPTED,
    call_ctxgate,
    stored_report,
    suite_command,
    suite_env,
)

STRICT = "[regression]\ntolerance = 7.0\n"
LOOSE = "[regression]\ntolerance = 3.0\n"
INI_FILES = {  # each config file pytest reads, naming ci/strict.toml
    "pytest.ini": "[pytest]\nctxgate_thresholds = ci/strict.toml\n",
    "pyproject.toml": '[tool.pytest.ini_options]\nctxgate_thresholds = "ci/strict.toml"\n',
    "tox.ini": "[pytest]\nctxgate_thresholds = ci/strict.toml\n",
    "setup.cfg": "[tool:pytest]\nctxgate_thresholds = ci/strict.toml\n",
}
JUDGE = ("--judge-model", "x", "--judge-base-url", "http://127.0.0.1:9/v1", "--out", "j.json")


def pending_report(folder: Path, status: str = "pending", **run: str) -> Path:
    """A stored run with one judged case waiting for its judge (what ``ctxgate judge`` and ``html``
    read), or judged already (``status``)."""
    case = {
        "task": "multi_lexsum",
        "length": 4096,
        "metric": "summary_judge",
        "category": "summ",
        "suite": "helmet",
    }
    report = stored_report([{**case, "verdict": "skip", "judge": {"status": status}}], run=run)
    report["predictions"] = "run.predictions.jsonl"
    (folder / "run.json").write_text(json.dumps(report))
    (folder / "run.predictions.jsonl").write_text("")
    return folder / "run.json"


def test_a_given_folder_or_missing_file_is_refused_with_the_fix(tmp_path):
    with pytest.raises(ThresholdsError) as empty:
        find_thresholds(str(tmp_path), tmp_path, PytestConfig())
    assert str(empty.value) == (
        f"--thresholds {tmp_path} is a folder: pass a thresholds file, or write "
        f"{tmp_path / 'thresholds.toml'} "
        f"with `ctxgate init {tmp_path}`"
    )
    (tmp_path / "thresholds.toml").write_text(LOOSE)
    with pytest.raises(ThresholdsError) as holding:
        find_thresholds(str(tmp_path), tmp_path, PytestConfig())
    assert str(holding.value) == (
        f"--thresholds {tmp_path} is a folder: pass the thresholds file, e.g. --thresholds "
        f"{tmp_path / 'thresholds.toml'}"
    )
    with pytest.raises(ThresholdsError) as missing:
        find_thresholds(str(tmp_path / "gone.toml"), tmp_path, PytestConfig())
    assert str(missing.value) == (
        f"--thresholds {tmp_path / 'gone.toml'} does not exist: pass --thresholds PATH to an "
        "existing thresholds "
        f"file, e.g. --thresholds {tmp_path / 'thresholds.toml'}"
    )
    with pytest.raises(
        ThresholdsError, match=r"^--thresholds gone/x\.toml does not exist: .*\(`ctxgate init`"
    ):
        find_thresholds("gone/x.toml", tmp_path, PytestConfig())
    assert (
        find_thresholds(str(tmp_path / "thresholds.toml"), tmp_path, PytestConfig())[1]
        == "--thresholds"
    )


@pytest.mark.parametrize("ini", sorted(INI_FILES))
def test_the_verbs_read_the_ini_option_pytest_reads_in_every_config_file(tmp_path, ini):
    (tmp_path / ini).write_text(INI_FILES[ini])
    (tmp_path / "thresholds.toml").write_text(LOOSE)
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "strict.toml").write_text(STRICT)
    (tmp_path / "runs").mkdir()
    assert (
        thresholds_here(None, task_names(), tmp_path / "runs").tolerance == 7.0
    )  # relative to the ini file
    (tmp_path / "ci" / "strict.toml").unlink()
    with pytest.raises(
        ThresholdsError, match=r"ctxgate_thresholds = 'ci/strict.toml', but .* does not exist"
    ):
        thresholds_here(None, task_names(), tmp_path / "runs")
    (tmp_path / "ci" / "strict.toml").mkdir()
    with pytest.raises(
        ThresholdsError, match=r"is a folder: name the thresholds file, e.g. ctxgate_thresholds ="
    ):
        thresholds_here(None, task_names(), tmp_path / "runs")


def test_a_config_file_pytest_cannot_read_is_refused_by_the_verbs_too(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest\n")
    with pytest.raises(
        ThresholdsError, match=r"pytest\.ini:1: .*fix the file \(pytest reads it too\)"
    ):
        thresholds_here(None, task_names(), tmp_path)
    (tmp_path / "thresholds.toml").write_text(LOOSE)
    assert (
        thresholds_here(str(tmp_path / "thresholds.toml"), task_names(), tmp_path).tolerance == 3.0
    )


def test_pytest_and_diff_gate_with_the_file_the_ini_names_over_the_nearest_one(suite, pytester):
    pytester.makeini(
        "[pytest]\ntestpaths = tests_longctx\naddopts = -p no:cacheprovider\nctxgate_thresholds = "
        "ci/strict.toml\n"
    )
    (pytester.path / "ci").mkdir()
    (pytester.path / "ci" / "strict.toml").write_text(STRICT)
    ran = suite(ALL_RIGHT, "-k", "vt", "--report", "base.json", thresholds=LOOSE, lengths="4k")
    ran.assert_outcomes(passed=1)
    strict = pytester.path / "ci" / "strict.toml"
    ran.stdout.fnmatch_lines([f"ctxgate thresholds: {strict} (ctxgate_thresholds in tox.ini;*"])
    assert json.loads((pytester.path / "base.json").read_text())["run"]["thresholds"] == str(strict)
    diff = call_ctxgate("diff", "base.json", "base.json", cwd=pytester.path)
    assert diff.returncode == 0, diff.stderr
    assert "  7.0  " in diff.stdout and "3.0" not in diff.stdout, diff.stdout


@pytest.mark.parametrize("kind", ["folder", "missing"])
def test_pytest_refuses_a_thresholds_folder_or_missing_file_in_one_line(suite, pytester, kind):
    (pytester.path / "gates").mkdir()
    (pytester.path / "gates" / "thresholds.toml").write_text(LOOSE)
    given = "gates" if kind == "folder" else "gates/strict.toml"
    result = suite(ALL_RIGHT, "-k", "vt", "--thresholds", given, lengths="4k")
    assert result.ret == 4
    expected = {
        "folder": "ERROR: --thresholds gates is a folder: pass the thresholds file, e.g. "
        "--thresholds "
        "gates/thresholds.toml",
        "missing": "ERROR: --thresholds gates/strict.toml does not exist: pass --thresholds PATH "
        "to an existing "
        "thresholds file, e.g. --thresholds gates/thresholds.toml",
    }[kind]
    assert expected in result.stderr.lines, result.stderr.str()


def test_pytest_and_the_verbs_walk_up_to_the_repository_top_without_a_config_file(tmp_path):
    """No config file: pytest's rootdir is where it started, yet the nearest thresholds.toml up to
    .git counts, for the suite and for the verbs alike."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "thresholds.toml").write_text(STRICT)
    start = tmp_path / "runs" / "exp1"
    start.mkdir(parents=True)
    (start / "script.json").write_text(json.dumps(ALL_RIGHT))
    args = ("--backend", SCRIPTED, "--model=script.json", "-k", "vt", "--lengths", "4k", "--co")
    listed = subprocess.run(
        suite_command(*args, model=None),
        cwd=start,
        env=suite_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert listed.returncode == 0, listed.stdout[-2000:] + listed.stderr[-2000:]
    assert f"ctxgate thresholds: {tmp_path / 'thresholds.toml'} (found 2 up;" in listed.stdout, (
        listed.stdout
    )
    assert thresholds_here(None, task_names(), start).tolerance == 7.0


def verb_arguments(verb: str, report: Path, given: str) -> list[str]:
    return {
        "diff": ["diff", str(report), str(report), "--thresholds", given],
        "bisect": ["bisect", "ckpt-1", "ckpt-2", "--thresholds", given],
        "html": ["html", str(report), "--thresholds", given],
        "judge": ["judge", str(report), "--thresholds", given, *JUDGE],
    }[verb]


@pytest.mark.parametrize("verb", ["diff", "bisect", "html", "judge"])
def test_every_verb_refuses_a_thresholds_folder_or_missing_file_in_one_line(tmp_path, verb):
    report = pending_report(tmp_path)
    (tmp_path / "gates").mkdir()
    (tmp_path / "gates" / "thresholds.toml").write_text(LOOSE)
    for given, message in (
        (
            "gates",
            "--thresholds gates is a folder: pass the thresholds file, e.g. --thresholds "
            "gates/thresholds.toml",
        ),
        (
            "gone.toml",
            "--thresholds gone.toml does not exist: pass --thresholds PATH to an existing "
            "thresholds file",
        ),
    ):
        refused = call_ctxgate(*verb_arguments(verb, report, given), cwd=tmp_path)
        assert refused.returncode == 4, refused.stdout + refused.stderr
        assert (
            refused.stderr.startswith(f"ctxgate {verb}: {message}")
            and refused.stderr.count("\n") == 1
        )
    assert not (tmp_path / "j.json").exists() and not (tmp_path / "run.html").exists()
    assert (
        call_ctxgate("html", str(report), cwd=tmp_path).returncode == 0
    )  # without the bad option it draws


@pytest.mark.parametrize("recorded", ["gone/thresholds.toml", "gates"])
def test_judge_refuses_the_runs_own_thresholds_file_when_it_is_gone(tmp_path, recorded):
    (tmp_path / "gates").mkdir()
    report = pending_report(tmp_path, thresholds=recorded)
    refused = call_ctxgate("judge", str(report), *JUDGE, cwd=tmp_path)
    assert refused.returncode == 4
    problem = "is a folder" if recorded == "gates" else "does not exist"
    assert refused.stderr.startswith(
        f"ctxgate judge: {report}: run.thresholds {recorded} {problem}: pass"
    )
    assert refused.stderr.count("\n") == 1 and not (tmp_path / "j.json").exists()


def test_judge_refuses_a_bad_thresholds_option_even_with_nothing_to_judge(tmp_path):
    report = pending_report(tmp_path, status="judged")
    idle = call_ctxgate("judge", str(report), *JUDGE, cwd=tmp_path)
    assert idle.returncode == 0 and "judged already" in idle.stdout, idle.stderr
    refused = call_ctxgate("judge", str(report), "--thresholds", "gone.toml", *JUDGE, cwd=tmp_path)
    assert refused.returncode == 4 and "--thresholds gone.toml does not exist" in refused.stderr


def test_judge_reads_the_ini_option_for_a_run_gated_without_a_file(tmp_path):
    (tmp_path / "pytest.ini").write_text(INI_FILES["pytest.ini"])
    report = pending_report(tmp_path, thresholds="(none)")
    refused = call_ctxgate("judge", str(report), *JUDGE, cwd=tmp_path)
    assert refused.returncode == 4
    assert (
        "ctxgate_thresholds = 'ci/strict.toml', but" in refused.stderr
        and "does not exist" in refused.stderr
    )


@pytest.mark.parametrize(
    ("ci", "where"), [("gitlab", ".gitlab-ci.yml"), ("slurm", "ci/ctxgate.sbatch")]
)
def test_init_refuses_a_folder_where_a_file_goes_and_writes_nothing(tmp_path, ci, where):
    (tmp_path / where).mkdir(parents=True)
    refused = call_ctxgate("init", str(tmp_path), "--ci", ci, "--force", cwd=tmp_path)
    assert refused.returncode == 2
    assert refused.stderr == (
        f"ctxgate init: {tmp_path / where} is a folder, but ctxgate init writes a file there; "
        "nothing was written: "
        "move or remove the folder, then run ctxgate init again\n"
    )
    assert not (tmp_path / "thresholds.toml").exists()
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_a_write_of_several_files_renames_none_unless_every_one_can_be_replaced(tmp_path):
    kept = tmp_path / "report.json"
    kept.write_text("old\n")
    (tmp_path / "report.md").mkdir()
    with pytest.raises(IsADirectoryError) as folder:
        atomic_write_all({kept: "new\n", tmp_path / "report.md": "new\n"})
    assert folder.value.filename == str(
        tmp_path / "report.md"
    )  # the destination, never a temporary file
    assert kept.read_text() == "old\n" and sorted(os.listdir(tmp_path)) == [
        "report.json",
        "report.md",
    ]
    with pytest.raises(FileNotFoundError) as parentless:
        atomic_write_all({kept: "new\n", tmp_path / "gone" / "report.md": "new\n"})
    assert parentless.value.filename == str(tmp_path / "gone" / "report.md")
    assert kept.read_text() == "old\n"
    (tmp_path / "report.md").rmdir()
    atomic_write_all({kept: "new\n", tmp_path / "report.md": "new\n"})
    assert kept.read_text() == "new\n" == (tmp_path / "report.md").read_text()


def test_the_ini_option_given_by_o_without_an_ini_file_is_read_from_the_start(tmp_path):
    with pytest.raises(
        ThresholdsError, match=r"^-o ctxgate_thresholds=ci/strict\.toml, but .* does not exist"
    ):
        find_thresholds(None, tmp_path, PytestConfig(None, "ci/strict.toml"))
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "strict.toml").write_text(STRICT)
    found = find_thresholds(None, tmp_path, PytestConfig(None, "ci/strict.toml"))
    assert found == (tmp_path / "ci" / "strict.toml", "-o ctxgate_thresholds")
