"""Another package's plugin, registered under the ``ctxgate`` entry point as docs/architecture.md
says: the worked example of an extra runs as written from outside ctxgate, and a plugin that
cannot load, or answers a hook no spec declares, is one line naming it and the fix."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ctxgate.hooks import manager
from tests.conftest import ALL_RIGHT, ROOT, call_ctxgate


def _worked_example() -> str:
    """The first code block of "An extra" in docs/architecture.md, as a newcomer copies it."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    after = text[text.index("**An extra**") :]
    found = re.search(r"```python\n(.*?)```", after, re.S)
    assert found, "docs/architecture.md: 'An extra' has no python block"
    return found.group(1)


@pytest.fixture
def installed(tmp_path: Path) -> Iterator[Callable[[str], None]]:
    """``install(source)``: a package of one module, ``outside_plugin``, on the path with its
    ``ctxgate`` entry point, as pip leaves one; the plugin manager made again without it after."""
    site = tmp_path / "site"
    info = site / "outside_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: outside-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[ctxgate]\nmyextra = outside_plugin\n")

    def install(source: str) -> None:
        (site / "outside_plugin.py").write_text(source)

    with pytest.MonkeyPatch.context() as patched:
        patched.syspath_prepend(str(site))
        manager.cache_clear()
        yield install
    sys.modules.pop("outside_plugin", None)
    manager.cache_clear()


def test_the_worked_example_runs_as_another_packages_plugin(installed, suite):
    installed(_worked_example())
    result = suite(ALL_RIGHT, "-k", "niah_single_1", "--my-flag", "3", lengths="4k")
    assert result.ret == 0, result.stdout.str()[-3000:]
    assert result.stdout.lines.count("My extra: what it saw") == 1  # among the run's notes, once
    bad = suite(ALL_RIGHT, "-k", "niah_single_1", "--my-flag", "three", lengths="4k")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "--my-flag" in bad.stderr.str() and "three" in bad.stderr.str()


@pytest.mark.parametrize(
    ("source", "says"),
    [
        (
            "import not_a_module_anywhere\n",
            "the ctxgate plugin myextra (outside_plugin) cannot be loaded (ModuleNotFoundError: "
            "No module named 'not_a_module_anywhere'): reinstall the package that provides it, "
            "or uninstall it",
        ),
        (
            "from ctxgate.hookspec import hookimpl\n\n\n@hookimpl\ndef ctxgate_report_note(report):"
            "\n    return []\n",
            "the ctxgate plugin myextra (outside_plugin) answers ctxgate_report_note, a hook "
            "ctxgate does not have: rename it to one of ctxgate/hookspec.py's (or an installed "
            "extra's), or uninstall it",
        ),
    ],
    ids=["cannot-load", "unknown-hook"],
)
def test_a_plugin_that_cannot_take_part_is_one_line(installed, suite, source, says):
    """From pytest and from a verb alike, before anything runs."""
    installed(source)
    result = suite(ALL_RIGHT, "-k", "niah_single_1", lengths="4k")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = [line for line in result.stderr.lines if line.strip()]
    assert lines == [f"ERROR: {says}"], result.stderr.str()[-3000:]
    verb = call_ctxgate("--help")
    assert verb.returncode == 2 and verb.stderr.strip() == f"ctxgate: {says}", verb.stderr


def test_a_section_of_the_plan_two_plugins_name_is_refused(installed, suite):
    installed(_worked_example().replace('NAME = "myextra"', 'NAME = "search"'))
    result = suite(ALL_RIGHT, "-k", "niah_single_1", lengths="4k")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.stderr.lines if line.strip()] == [
        "ERROR: two ctxgate plugins name their section of the plan 'search': rename one"
    ]


BUDGETS = """from ctxgate.api import hookimpl


@hookimpl
def ctxgate_task_budgets(plan):
    return {BUDGETS}
"""


def test_a_budget_an_extra_gives_a_task_is_the_one_its_cases_run(installed, suite, pytester):
    """The budget replaces the spec's in the length rule: 5,000 tokens fill a 4K case."""
    installed(BUDGETS.replace("{BUDGETS}", "{'niah_single_1': 5000}"))
    result = suite(ALL_RIGHT, "-k", "niah_single_1", "--report", "run.json", lengths="4k,8k")
    assert result.ret == 0, result.stdout.str()[-3000:]
    cases = {c["length"]: c for c in json.loads((pytester.path / "run.json").read_text())["cases"]}
    assert cases[4096]["verdict"] == "skip"
    assert "its generation budget of 5000 tokens fills it" in cases[4096]["message"]
    assert cases[8192]["verdict"] == "pass"


@pytest.mark.parametrize(
    ("budgets", "says"),
    [
        (
            "{'niah_single_1': 0}",
            "an extra gave niah_single_1 a generation budget of 0: a budget "
            "is a whole number of tokens, 1 or more; fix the option that sets it",
        ),
        ("{'niah_single_9': 16}", "unknown task 'niah_single_9'; did you mean"),
    ],
    ids=["zero", "unknown-task"],
)
def test_a_budget_that_cannot_be_is_one_line(installed, suite, budgets, says):
    installed(BUDGETS.replace("{BUDGETS}", budgets))
    result = suite(ALL_RIGHT, "-k", "niah_single_1", lengths="4k")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = [line for line in result.stderr.lines if line.strip()]
    assert len(lines) == 1 and says in lines[0], result.stderr.str()[-3000:]
