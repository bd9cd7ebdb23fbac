"""The suite collects its own cases, and only those, whatever the form of --model and wherever
pytest starts."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ctxgate.tasks import all_tasks
from tests.conftest import ROOT, TINY, launch_suite


def collect(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``args`` name the model in the form under test."""
    return launch_suite(
        *args,
        "--lengths",
        "512",
        "--collect-only",
        "-q",
        model=None,
        cwd=cwd,
        timeout=300,
        checkout_on_path=False,
    )


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkpoint in a folder outside the repository, as /ckpts/step-12000 would be."""
    target = tmp_path_factory.mktemp("ckpts") / "step-12000"
    shutil.copytree(TINY, target)
    return target


@pytest.mark.parametrize("where", ["repo root", "another folder"])
@pytest.mark.parametrize("form", ["--model PATH", "--model=PATH"])
def test_an_absolute_model_path_collects_only_the_suite(outside, tmp_path, where, form):
    cwd = ROOT if where == "repo root" else tmp_path
    (tmp_path / "test_not_ours.py").write_text(
        "def test_x():\n    pass\n"
    )  # the other folder's own tests
    model = ["--model", str(outside)] if form == "--model PATH" else [f"--model={outside}"]
    result = collect(cwd, *model)
    ids = [line for line in result.stdout.splitlines() if "::" in line]
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert len(ids) == len(all_tasks()), ids[:5]
    suites = {
        t.suite for t in all_tasks()
    }  # each suite's cases are its test's: test_ruler[...], test_mrcr[...]
    assert all(any(f"test_{suite}[" in i for suite in suites) for i in ids)
    assert f"{len(all_tasks())} tests collected" in result.stdout


def test_named_test_paths_are_still_the_users_choice(outside):
    result = collect(ROOT, "--model", str(outside), "tests_longctx/test_suites.py::test_helmet")
    ids = [line for line in result.stdout.splitlines() if "::" in line]
    assert ids and all("test_helmet[" in i for i in ids)


def test_the_suite_runs_without_xdist(outside, tmp_path):
    """-p no:xdist, a common way to debug a suite: the xdist-only hooks are optional, not an
    error."""
    result = launch_suite(
        "-p", "no:xdist", "-k", "vt", "--lengths", "1k", "--samples", "2", "--no-cache",
        model=outside, cwd=tmp_path, timeout=300, checkout_on_path=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "1 passed" in result.stdout and "PluginValidationError" not in result.stderr


@pytest.mark.parametrize("args", [["--help"], ["--model", str(TINY), "--collect-only", "-q"]])
def test_help_and_collection_import_no_engine(args):
    """Start-up stays at the floor: ``pytest --help`` and collecting the suite import none of
    torch, transformers, vllm or ray (a fresh process's modules are the behaviour here)."""
    code = (
        "import sys, pytest; pytest.main(sys.argv[1:]); "
        "print(sorted({m.split('.')[0] for m in sys.modules} "
        "& {'torch', 'transformers', 'vllm', 'ray'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout[-2000:] + done.stderr[-2000:]
