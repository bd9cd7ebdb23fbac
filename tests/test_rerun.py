"""pytest's own habits from the checkout: under its pytest settings (pyproject.toml), --lf, --ff and
--sw read the cache the last run wrote, as in any pytest project, --search-effective-length
included; git ignores the cache. The runs the other tests launch keep out of it (AS_USERS_RUN)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import AS_USERS_RUN, ROOT, TINY, in_process

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CHECKOUT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["pytest"]
SETTINGS = CHECKOUT["ini_options"]
CACHE = SETTINGS.get("cache_dir", ".pytest_cache")
# niah_single_1 on the shipped checkpoint: above 50% at 512 tokens, 0% at 2K, where a floor fails it
FLOORED = '[[floor]]\ntask = "niah_single_1"\nlength = "2k"\nfloor = 1\n'
# --model=PATH, one word: a path of its own would make the checkout the run's rootdir and its cache
SUITE = (f"--model={TINY}", "-k", "niah_single_1", "--lengths", "512,2k", "--samples", "10")
LONG, SHORT = "test_ruler[niah_single_1-2048]", "test_ruler[niah_single_1-512]"


@pytest.fixture
def checkout(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """The suite in a pytester dir under the checkout's own pytest settings, and a floor that fails
    niah_single_1 at 2K: one case passes, one fails."""
    monkeypatch.setenv("PYTEST_ADDOPTS", AS_USERS_RUN.replace("-p no:cacheprovider", ""))
    shutil.copytree(ROOT / "tests_longctx", pytester.path / "tests_longctx")
    lines = [f"{key} = {json.dumps(value)}" for key, value in SETTINGS.items()]
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n" + "\n".join(lines) + "\n")
    (pytester.path / "thresholds.toml").write_text(FLOORED)
    first = in_process(pytester, *SUITE, "-v")
    first.assert_outcomes(passed=1, failed=1)
    return pytester


def ran(result: pytest.RunResult) -> list[str]:
    """The cases a run ran, in its order (-v)."""
    return [
        line.split("::")[1].split()[0]
        for line in result.outlines
        if " PASSED" in line or " FAILED" in line
    ]


def cases(pytester: pytest.Pytester, report: str) -> list[tuple[str, int]]:
    found = json.loads((pytester.path / report).read_text())["cases"]
    return [(c["task"], c["length"]) for c in found]


def test_the_checkout_keeps_pytests_cache_where_git_ignores_it():
    assert "no:cacheprovider" not in SETTINGS.get("addopts", "")
    assert not Path(CACHE).is_absolute()
    ignored = subprocess.run(["git", "check-ignore", "-q", f"{CACHE}/v/cache/lastfailed"], cwd=ROOT)
    assert ignored.returncode == 0, f"{CACHE} is not in .gitignore"


def test_last_failed_reruns_the_failed_case_alone(checkout):
    assert (checkout.path / CACHE / "v" / "cache" / "lastfailed").is_file()
    again = in_process(checkout, *SUITE, "-v", "--lf", "--report", "lf.json")
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(["run-last-failure: rerun previous 1 failure*"])
    assert ran(again) == [LONG] and cases(checkout, "lf.json") == [("niah_single_1", 2048)]


def test_last_failed_under_the_search_reruns_the_failed_case_alone(checkout):
    """The search orders and skips what --lf left: the failed case alone, run for its floor."""
    argv = (*SUITE, "-v", "--lf", "--search-effective-length", "--report", "search.json")
    again = in_process(checkout, *argv)
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(["run-last-failure: rerun previous 1 failure*"])
    assert ran(again) == [LONG] and cases(checkout, "search.json") == [("niah_single_1", 2048)]


def test_failed_first_runs_the_failed_case_first(checkout):
    again = in_process(checkout, *SUITE, "-v", "--ff")
    again.assert_outcomes(passed=1, failed=1)
    assert ran(again) == [LONG, SHORT]


def test_stepwise_goes_on_from_the_case_that_failed(checkout):
    """--sw starts the next run from the case that failed, the cases before it not run again."""
    in_process(checkout, *SUITE, "--sw").assert_outcomes(passed=1, failed=1)
    again = in_process(checkout, *SUITE, "-v", "--sw")
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(["stepwise: skipping * already passed items*"])
    assert ran(again) == [LONG]
    (checkout.path / "thresholds.toml").write_text("[defaults]\nfloor = 0\n")  # the failure fixed
    fixed = in_process(checkout, *SUITE, "-v", "--sw")
    fixed.assert_outcomes(passed=1)
    assert ran(fixed) == [LONG]
