"""The extension contract, proved by a package that is not ctxgate:
``tests/outside/ctxgate-marbles`` (its own pyproject.toml and ``ctxgate`` entry point) adds a task
family with its metric and a chance it measures per length, an option its builder reads and the
run records, a run slot, a report section and a tracker, through ``ctxgate.api`` alone. Loaded
as pip leaves an installed package, its cases run under the plain command with no test file of
its own, gate, refuse a baseline of another option up front, and its reports read back with it
and without it; docs/extending.md's code is its code, and the page's commands run."""

from __future__ import annotations

import configparser
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import tomllib

from ctxgate import cli
from ctxgate.hooks import manager
from ctxgate.records.io import read_report
from ctxgate.tasks import registration
from tests.conftest import ROOT

PACKAGE = ROOT / "tests" / "outside" / "ctxgate-marbles"
SELECT = ("-k", "count_marbles", "--lengths", "512,1k", "--samples", "4", "--no-cache")


@pytest.fixture
def marbles(tmp_path: Path) -> Iterator[Callable[[bool], None]]:
    """``install(True)``: the package on the path with its distribution's metadata, its entry
    points as its pyproject.toml declares them, as pip leaves an installed package; ``install
    (False)``: gone again. The registries of tasks and suites, and the plugin manager, are as they
    were after."""
    project = tomllib.loads((PACKAGE / "pyproject.toml").read_text())["project"]
    site = tmp_path / "site"
    info = site / "ctxgate_marbles-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    points = configparser.ConfigParser()
    points.read_dict({"ctxgate": project["entry-points"]["ctxgate"]})
    with (info / "entry_points.txt").open("w") as f:
        points.write(f)
    tasks, suites = dict(registration._TASKS), dict(registration._SUITES)

    def install(on: bool) -> None:
        for path in (str(site), str(PACKAGE)):
            if on and path not in sys.path:
                sys.path.insert(0, path)
            elif not on and path in sys.path:
                sys.path.remove(path)
        if not on:
            for name in [m for m in sys.modules if m.startswith("ctxgate_marbles")]:
                del sys.modules[name]
            registration._TASKS.clear()
            registration._TASKS.update(tasks)
            registration._SUITES.clear()
            registration._SUITES.update(suites)
        manager.cache_clear()

    install(True)
    yield install
    install(False)


def test_the_plain_command_runs_the_packages_cases_and_they_gate(marbles, real_suite, pytester):
    (pytester.path / "thresholds.toml").write_text(
        '[[floor]]\ntask = "count_marbles"\nlength = "*"\nfloor = 50\n'
    )
    result = real_suite(
        *SELECT, "--marble-color", "blue", "--report", "r.json", "--junitxml", "j.xml",
        "--log-to", f"marbles={pytester.path / 'metrics.jsonl'}", "-o", "junit_family=xunit1",
    )  # fmt: skip
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out[-3000:]  # the tiny model counts badly
    result.stdout.fnmatch_lines(["*test_marbles?count_marbles-512?*", "*< floor 50.0*"])
    report = read_report(pytester.path / "r.json")
    cases = {c.name: c for c in report.cases}
    assert set(cases) == {"count_marbles-512", "count_marbles-1024"}
    assert all(c.suite == "marbles" and c.metric == "marble_count" for c in cases.values())
    assert all(0 < (c.chance or 0) < 10 for c in cases.values())  # the package's measured bands
    assert {g.name: g.verdict for g in report.gates}["floors"] == "fail"
    assert type(report.run.extras["marbles"]).__name__ == "MarbleSettings"
    assert report.run.extras["marbles"].color == "blue"  # type: ignore[attr-defined]
    [section] = [s for s in report.sections if s.extra == "marbles"]
    assert section.lines[0].startswith("Marbles: blue marbles counted in 2 case(s)")
    assert section.lines[0] in out and "#### Marbles" in (pytester.path / "r.md").read_text()
    assert 'name="ctxgate.marbles.color" value="blue"' in (pytester.path / "j.xml").read_text()
    logged = json.loads((pytester.path / "metrics.jsonl").read_text())
    assert "ctxgate/case/count_marbles/512" in logged and "ctxgate/marbles_avg/1K" not in logged
    assert "Marbles avg" in out  # the family's summary row, from its suite's label


def test_the_builder_reads_the_option_and_the_prompts_are_the_runs(marbles):
    from ctxgate.api import task_samples

    [red] = task_samples("count_marbles", str(ROOT / "fixtures" / "tiny-llama-niah"), 512)
    assert "How many red marbles are in the list above?" in red.text
    assert red.answers == (str(red.text.count(": red\n")),)


def test_a_floor_at_its_measured_chance_is_refused_before_any_model_loads(
    marbles, real_suite, pytester
):
    (pytester.path / "thresholds.toml").write_text(
        '[[floor]]\ntask = "count_marbles"\nlength = "*"\nfloor = 1\n'
    )
    result = real_suite(*SELECT)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "count_marbles" in result.stderr.str() and "chance" in result.stderr.str()


def test_a_baseline_of_another_color_is_refused_up_front_naming_the_option(
    marbles, real_suite, pytester
):
    assert real_suite(*SELECT, "--report", "red.json").ret == 0
    result = real_suite(*SELECT, "--marble-color", "green", "--baseline", "red.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    [line] = [x for x in result.stderr.lines if x.strip()]
    assert line == (
        "ERROR: --baseline red.json ran with --marble-color color 'red', this run with color "
        "'green': its samples cannot be paired with these. Re-run the baseline with the same "
        "--marble-color, or drop --baseline"
    )
    assert "collected" not in result.stdout.str()  # refused before any case was collected


def test_its_report_reads_back_with_the_package_and_without_it(marbles, real_suite, pytester):
    assert (
        real_suite(*SELECT, "-k", "count_marbles or niah_single_1", "--report", "r.json").ret == 0
    )
    report = pytester.path / "r.json"
    marbles(False)  # uninstalled
    kept = read_report(report)
    assert kept.run.extras["marbles"] == {"color": "red"}  # kept as written
    assert [c.suite for c in kept.cases if c.task == "count_marbles"] == ["marbles", "marbles"]
    assert cli.main(["diff", str(report), str(report)]) == 0
    page = pytester.path / "r2.html"
    assert cli.main(["html", str(report), "-o", str(page)]) == 0
    assert "Marbles: red marbles counted" in page.read_text()  # its section, as the report kept it
    again = real_suite(
        "-k", "niah_single_1", "--lengths", "512,1k", "--samples", "4", "--no-cache",
        "--baseline", "r.json", "--report", "b.json",
    )  # fmt: skip
    assert again.ret == 0, again.stdout.str()[-3000:]
    said = (pytester.path / "b.md").read_text()
    assert "Kept as written, from extras not installed here" not in said  # b.json has none
    marbles(True)  # installed again: the slot reads into its model
    assert type(read_report(report).run.extras["marbles"]).__name__ == "MarbleSettings"


def test_adding_the_package_changed_no_file_of_ctxgate():
    """An outside package needs no file outside its own folder: nothing of ctxgate's names it."""
    names = re.compile(r"ctxgate_marbles|count_marbles|marble-color|ctxgate-marbles")
    files = subprocess.run(
        ["git", "ls-files", "ctxgate", "plugins", "tests_longctx", "pyproject.toml", "scripts"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    naming = [f for f in files if names.search((ROOT / f).read_text("utf-8", errors="replace"))]
    assert naming == []


PAGE = ROOT / "docs" / "extending.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", PAGE.read_text("utf-8"), re.S)


def test_the_pages_code_is_the_packages_own():
    """Each block that names a file of the package is that file's code, as it runs in these
    tests."""
    named = [b for b in _blocks("python") + _blocks("toml") if b.startswith("# ")]
    assert len(named) >= 8
    for block in named:
        first, _, code = block.partition("\n")
        source = (PACKAGE / first.removeprefix("# ")).read_text("utf-8")
        assert code in source, f"docs/extending.md's block of {first} is not in the package"


def test_the_pages_commands_run_with_the_package_installed(tmp_path):
    """The page's shell block, as a newcomer runs it in the checkout: the package installed by
    pip (into a folder of its own here, so that this environment is left as it was), then the
    run and the prompt it prints."""
    [commands] = _blocks("bash")
    install, *rest = [line for line in commands.splitlines() if line.strip()]
    site = tmp_path / "site"
    pip = install.split()[2:-1]  # pip install's options, then its folder
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", *pip, "--target", str(site), str(PACKAGE)],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "fixtures").symlink_to(ROOT / "fixtures")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    env["PYTEST_ADDOPTS"] = "-p no:cacheprovider"
    for line in rest:
        ran = subprocess.run(
            ["bash", "-c", line], cwd=scratch, env=env, capture_output=True, text=True
        )
        assert ran.returncode == 0, f"{line}\n{ran.stdout[-2000:]}{ran.stderr[-2000:]}"
    report = read_report(scratch / "out" / "marbles.json")
    assert {c.task for c in report.cases} == {"count_marbles"}
    assert "How many red marbles are in the list above?" in ran.stdout
