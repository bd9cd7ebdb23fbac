"""Installed anywhere: the wheel carries the suite, the plugin, the shipped data and the templates,
so `pytest --model` runs the whole suite from an empty folder of a fresh virtualenv, with and
without `ctxgate init`'s thresholds.

The wheel is built from this checkout and installed with pip into a new virtualenv, its dependencies
resolved as a user's would be; torch is pinned to the version of the test's own environment, which
pip takes from its configured wheels (on the project machines the local CPU wheel), so no CUDA build
is downloaded."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ctxgate import cli
from ctxgate.workflows import init
from tests.conftest import ROOT, TINY, suite_command

RUN = (
    "--model",
    str(TINY),
    "-k",
    "niah_single_1",
    "--lengths",
    "1k",
    "--samples",
    "2",
    "--no-cache",
)


@pytest.fixture(scope="module")
def fresh_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("install")
    wheels = root / "wheels"
    # built from a copy: a build in the checkout rewrites its ctxgate.egg-info, which every test
    # process on this machine reads its entry points from (pythonpath "."), while they run
    source = root / "source"
    shutil.copytree(
        ROOT,
        source,
        symlinks=True,
        ignore=shutil.ignore_patterns(
            ".git", ".venv*", "build", "*.egg-info", "__pycache__", ".ctxgate-cache", "out"
        ),
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-build-isolation",
            "--no-deps",
            "-q",
            "-w",
            str(wheels),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    (wheel,) = wheels.glob("ctxgate-*.whl")
    torch = f"torch=={importlib.metadata.version('torch')}"
    installed = subprocess.run(
        # --no-compile: the modules a run imports are compiled as it imports them, not all of
        # torch's and transformers' beforehand
        [python, "-m", "pip", "install", "-q", "--no-compile", str(wheel), torch],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    return python


def _run(python: Path, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # the wheel's own interpreter, without this checkout on its path
        suite_command(*args, model=None, python=python),
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_wheel_runs_the_suite_from_an_empty_folder(fresh_python, tmp_path):
    where = subprocess.run(
        [
            fresh_python,
            "-c",
            "import ctxgate, ctxgate_plugins; print(ctxgate.__file__, ctxgate_plugins.__file__)",
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    ).stdout
    assert str(ROOT) not in where  # the installed copy, not this checkout
    bare = _run(fresh_python, tmp_path, *RUN)
    assert bare.returncode == 0, bare.stdout[-3000:] + bare.stderr[-2000:]
    assert "1 passed" in bare.stdout and "ctxgate thresholds: none in" in bare.stdout
    init_done = subprocess.run(
        [str(Path(fresh_python).parent / "ctxgate"), "init", "--ci", "github"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert init_done.returncode == 0, init_done.stderr
    assert (tmp_path / ".github" / "workflows" / "ctxgate.yml").is_file()
    gated = _run(fresh_python, tmp_path, *RUN, "--report", "out/run.json")
    assert gated.returncode == 0, gated.stdout[-3000:]
    # the next step init prints runs as printed, path/to/ckpt (the documented placeholder) being the
    # checkpoint
    lines = init_done.stdout.splitlines()
    first = next(lines[i + 1].strip() for i, line in enumerate(lines) if line.startswith("next"))
    (tmp_path / "path" / "to").mkdir(parents=True)
    (tmp_path / "path" / "to" / "ckpt").symlink_to(TINY)
    bin_dir = str(Path(fresh_python).parent)
    checked = subprocess.run(
        ["bash", "-c", first],
        cwd=tmp_path,
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert checked.returncode == 0 and "1 passed" in checked.stdout, (
        checked.stdout[-3000:] + checked.stderr[-2000:]
    )
    assert f"ctxgate thresholds: {tmp_path / 'thresholds.toml'} (found" in gated.stdout
    assert (tmp_path / "out" / "run.json").is_file()


def test_init_writes_the_shipped_thresholds_and_never_overwrites_unasked(tmp_path, capsys):
    parser = __import__("ctxgate.cli", fromlist=["parser"]).parser()
    assert init.main(parser.parse_args(["init", str(tmp_path), "--ci", "slurm"])) == 0
    assert (tmp_path / "thresholds.toml").read_bytes() == (ROOT / "thresholds.toml").read_bytes()
    assert (tmp_path / "ci" / "ctxgate.sbatch").stat().st_mode & 0o111
    assert f"wrote {tmp_path / 'thresholds.toml'}" in capsys.readouterr().out
    (tmp_path / "thresholds.toml").write_text("# mine\n")
    assert init.main(parser.parse_args(["init", str(tmp_path)])) == 1
    assert "exists; nothing was written. Pass --force" in capsys.readouterr().err
    assert (tmp_path / "thresholds.toml").read_text() == "# mine\n"
    assert init.main(parser.parse_args(["init", str(tmp_path), "--force"])) == 0
    assert (tmp_path / "thresholds.toml").read_bytes() == (ROOT / "thresholds.toml").read_bytes()


def test_init_never_writes_through_a_link_and_writes_all_or_nothing(tmp_path, capsys):
    parser = __import__("ctxgate.cli", fromlist=["parser"]).parser()
    repo, outside = tmp_path / "repo", tmp_path / "outside.toml"
    repo.mkdir()
    (repo / "thresholds.toml").symlink_to(
        outside
    )  # dangling: it points to a file outside the folder
    assert init.main(parser.parse_args(["init", str(repo)])) == 1
    assert "exists; nothing was written" in capsys.readouterr().err and not outside.exists()
    assert (
        init.main(parser.parse_args(["init", str(repo), "--force"])) == 0
    )  # replaces the link, not its target
    assert not outside.exists() and not (repo / "thresholds.toml").is_symlink()
    other = tmp_path / "other"
    other.mkdir()
    (other / "ci").write_text("a file where the CI template's folder would go\n")
    assert (
        cli.main(["init", str(other), "--ci", "slurm"]) == 2
    )  # the refusal is printed where every verb's is
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a file" in err and "nothing was written" in err
    assert not (other / "thresholds.toml").exists()
