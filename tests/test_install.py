"""Installed anywhere: the wheel carries the suite, the plugin, the shipped data and the templates,
so `pytest --model` runs the whole suite from an empty folder of a fresh virtualenv, with and
without `ctxgate init`'s thresholds.

The wheel is built from this checkout and installed with pip into a new virtualenv, its dependencies
resolved as a user's would be; torch is pinned to the version of the test's own environment, which
pip takes from its configured wheels (on the project machines the local CPU wheel), so no CUDA build
is downloaded. The build prints no packaging warning, and a wheel built without the extras
(ctxgate/ext), installed over it, runs a RULER and a HELMET case as the whole wheel does."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ctxgate import cli
from ctxgate.workflows import init
from tests.conftest import HELMET_DATA, ROOT, TINY, suite_command

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

# --model=PATH, one word: pytest takes a path given as a word of its own, before the plugin declares
# the option, for a test path, and would read this checkout's pyproject.toml as the run's ini
RUN = (
    f"--model={TINY}",
    "-k",
    "niah_single_1",
    "--lengths",
    "1k",
    "--samples",
    "2",
    "--no-cache",
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """(the source it was built from, the wheel, what the build printed on stderr)."""
    root = tmp_path_factory.mktemp("build")
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
    return (source, *_wheel(source, root / "wheels"))


def _wheel(source: Path, to: Path) -> tuple[Path, str]:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q"]
        + ["-w", str(to), str(source)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = to.glob("ctxgate-*.whl")
    return wheel, done.stderr


@pytest.fixture(scope="module")
def fresh_python(built: tuple[Path, Path, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("install") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    torch = f"torch=={importlib.metadata.version('torch')}"
    installed = subprocess.run(
        # --no-compile: the modules a run imports are compiled as it imports them, not all of
        # torch's and transformers' beforehand
        [*_pip(python), "install", "-q", "--no-compile", str(built[1]), torch],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    return python


def _pip(python: Path) -> list[str]:
    """This environment's pip, installing into ``python``'s (which then needs none of its own)."""
    return [sys.executable, "-m", "pip", "--python", str(python)]


def test_the_build_prints_no_packaging_warning(built):
    """setuptools warns of a data folder the packaging does not declare, and of deprecated
    settings: a newcomer's first screen has none of it."""
    warned = re.findall(r"^.*(?:Warning\b|warning:).*$", built[2], re.MULTILINE)
    assert not warned, "\n".join(warned)


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


# a RULER and a HELMET case that build at 512 tokens on the shipped checkpoint and data
CASES = ("-k", "niah_single_1 or icl_trec_coarse", "--lengths", "512", "--samples", "2")
CASES += (f"--data-dir={HELMET_DATA}", "--no-cache", "--report", "out/r.json")
# what differs between two runs of the same cases: when they ran and how long they took
TIMES = {"created", "seconds", "build_seconds", "engine_seconds", "throughput"}
THRESHOLDS = ROOT / "ctxgate" / "templates" / "thresholds.toml"  # the spine's tables alone


def _untimed(value: object) -> object:
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in TIMES}
    return [_untimed(v) for v in value] if isinstance(value, list) else value


def _cases(python: Path, folder: Path) -> tuple[object, object]:
    """The report and the predictions of CASES run in ``folder`` (made here)."""
    folder.mkdir()
    done = _run(python, folder, f"--model={TINY}", *CASES)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-3000:]
    assert f"rootdir: {folder}" in done.stdout  # no ini of this checkout's
    report = json.loads((folder / "out" / "r.json").read_text("utf-8"))
    lines = (folder / "out" / "r.predictions.jsonl").read_text("utf-8").splitlines()
    return _untimed(report), _untimed([json.loads(line) for line in lines])


def _without_the_extras(source: Path, to: Path) -> Path:
    """The wheel of ``source`` less ctxgate/ext: its folder, its packages and its data."""
    bare = to / "source"
    shutil.copytree(source, bare, symlinks=True, ignore=shutil.ignore_patterns("build", "*.egg*"))
    shutil.rmtree(bare / "ctxgate" / "ext")
    text = (bare / "pyproject.toml").read_text("utf-8")
    text = re.sub(r'"ctxgate\.ext[\w.]*",[ ]*', "", text)
    text = re.sub(r'(?m)^"ctxgate\.ext[\w.]*" = .*\n', "", text)
    assert "ctxgate.ext" not in json.dumps(tomllib.loads(text))  # what the build reads
    (bare / "pyproject.toml").write_text(text, "utf-8")
    return _wheel(bare, to / "wheels")[0]


def test_without_the_extras_ruler_and_helmet_score_as_with_them(fresh_python, built, tmp_path):
    """A wheel built without ctxgate/ext, installed over the whole one: the same two cases give
    the same report and the same outputs, sample by sample; an extra's flag is one line naming the
    extra, under pytest (a usage error, 4) and under ctxgate bisect (a refusal, 2)."""
    source, whole, _ = built
    expected = _cases(fresh_python, tmp_path / "with")
    bare = _without_the_extras(source, tmp_path / "bare")
    pip = [*_pip(fresh_python), "install", "-q", "--no-compile", "--no-deps"]
    subprocess.run([*pip, "--force-reinstall", str(bare)], check=True, capture_output=True)
    try:
        # no module of ctxgate/ext (the bytecode the whole wheel's runs wrote stays, as pip leaves
        # what it did not install) and no entry point
        lacks = "import ctxgate, pathlib, importlib.metadata as m; "
        lacks += "ext = pathlib.Path(ctxgate.__file__).parent / 'ext'; "
        lacks += "assert not list(ext.rglob('*.py')) and not m.entry_points(group='ctxgate')"
        subprocess.run([fresh_python, "-c", lacks], check=True, cwd=tmp_path)
        assert _cases(fresh_python, tmp_path / "without") == expected
        assert not (tmp_path / "without" / "out" / "r.html").exists()  # the html extra's
        pytest_run = _run(fresh_python, tmp_path, f"--model={TINY}", "--ray", "local")
        assert pytest_run.returncode == 4, pytest_run.stdout[-2000:] + pytest_run.stderr
        assert "unrecognized arguments: --ray" in pytest_run.stderr  # pytest's own refusal
        ctxgate = str(Path(fresh_python).parent / "ctxgate")
        bisect = subprocess.run([ctxgate, "bisect", str(tmp_path)], capture_output=True, text=True)
        assert bisect.returncode == 2 and bisect.stderr.startswith(
            "ctxgate: 'bisect' is a verb of neither ctxgate nor an installed extra (extras "
            "installed: none; "
        )
        # the spine's thresholds.toml has no table of an extra: init writes it alone
        (tmp_path / "fresh").mkdir()
        subprocess.run([ctxgate, "init", str(tmp_path / "fresh")], check=True, capture_output=True)
        assert (tmp_path / "fresh" / "thresholds.toml").read_text() == THRESHOLDS.read_text()
        # the whole install's file, read here: its [thinking] named as an absent extra's table
        (tmp_path / "fresh" / "thresholds.toml").write_text(init.thresholds_text())
        read = _run(fresh_python, tmp_path / "fresh", f"--model={TINY}", *CASES[:4])
        assert read.returncode == 4, read.stdout[-2000:] + read.stderr
        assert (
            "[thinking] is a table of neither ctxgate nor an installed extra (extras installed: "
            "none)" in read.stderr
        ) and "delete the table, or install the package that reads it" in read.stderr
        assert "unknown key" not in read.stderr
    finally:  # the whole wheel again, for whatever runs next in this environment
        subprocess.run([*pip, "--force-reinstall", str(whole)], check=True, capture_output=True)


def test_init_writes_the_shipped_thresholds_and_never_overwrites_unasked(tmp_path, capsys):
    parser = __import__("ctxgate.cli", fromlist=["parser"]).parser()
    assert init.main(parser.parse_args(["init", str(tmp_path), "--ci", "slurm"])) == 0
    written = (tmp_path / "thresholds.toml").read_text()
    # the spine's tables, then each installed extra's: the thinking extra's [thinking]
    assert written == init.thresholds_text() and written.startswith(THRESHOLDS.read_text())
    assert "\n[thinking]\nmax_cut_share = 0.1\n" in written
    assert (tmp_path / "ci" / "ctxgate.sbatch").stat().st_mode & 0o111
    assert f"wrote {tmp_path / 'thresholds.toml'}" in capsys.readouterr().out
    (tmp_path / "thresholds.toml").write_text("# mine\n")
    assert init.main(parser.parse_args(["init", str(tmp_path)])) == 1
    assert "exists; nothing was written. Pass --force" in capsys.readouterr().err
    assert (tmp_path / "thresholds.toml").read_text() == "# mine\n"
    assert init.main(parser.parse_args(["init", str(tmp_path), "--force"])) == 0
    assert (tmp_path / "thresholds.toml").read_text() == init.thresholds_text()


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
