"""The pytest plugins, run through pytester with the scripted backend (plumbing only: no model
here)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import jsonschema
import pytest

from ctxgate.records.io import report_schema
from ctxgate.tasks import all_tasks, get_task
from ctxgate.tasks.chance import chance_at
from tests.conftest import ALL_RIGHT, SCRIPTED


def test_report_json_junit_markdown_under_xdist(suite, pytester):
    # xunit1: the junit family whose testcases carry the case's properties (tests/test_junit.py
    # reads xunit2's)
    junit = ("--junitxml", "out/junit.xml", "-o", "junit_family=xunit1")
    result = suite(ALL_RIGHT, "-n", "2", "--report", "out/run.json", *junit)
    assert result.ret == 0, result.stdout.str()
    report = json.loads((pytester.path / "out" / "run.json").read_text())
    jsonschema.validate(report, report_schema())
    ids = {(c["task"], c["length"]) for c in report["cases"]}
    assert (
        ("niah_multikey_2", 8192) in ids
        and ("json_kv", 4096) in ids
        and len(ids) == 2 * len(all_tasks())
    )
    ran = [c for c in report["cases"] if c["verdict"] == "pass"]
    # four samples a case, or all a case's data holds (OpenAI MRCR's fixture rows of a length), each
    # answered right
    wrong = [
        (c["task"], c["score"], c["n"])
        for c in ran
        if not (c["score"] == 100.0 and (c["n"] == 4 or c["sample_cap"]))
    ]
    assert ran and not wrong, wrong
    assert report["run"]["model"] == "script.json" and report["run"]["chat_template"] == "task"
    assert report["by_length"]["8192"]["helmet_recall"]["score"] == 100.0
    predictions = (pytester.path / "out" / "run.predictions.jsonl").read_text().splitlines()
    pending = [c for c in report["cases"] if (c.get("judge") or {}).get("status") == "pending"]
    assert len(predictions) == sum(c["n"] for c in ran) + 4 * len(
        pending
    )  # pending judged cases keep their outputs
    assert "| niah_single_1 |" in (pytester.path / "out" / "run.md").read_text()
    assert all(
        c["chance"] == chance_at(get_task(c["task"]), c["length"]).score for c in report["cases"]
    )  # each case's, at its length
    cases = list(ET.parse(pytester.path / "out" / "junit.xml").getroot().iter("testcase"))
    names = {c.get("name") for c in cases}
    assert "test_ruler[niah_multikey_2-8192]" in names
    assert {"score", "floor", "n", "ci", "chance"} <= {
        p.get("name") for c in cases for p in c.iter("property")
    }
    assert "ctxgate" in result.stdout.str() and "RULER avg" in result.stdout.str()


def test_failing_case_names_task_length_score_floor_n_and_interval(suite):
    script = {**ALL_RIGHT, "accuracy": {"niah_single_1": {"8192": 0.5}}}
    thresholds = '[[floor]]\ntask = "niah_single_1"\nfloor = 90\n'
    result = suite(script, "-k", "niah_single_1", thresholds=thresholds)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.re_match_lines(
        [
            r".*niah_single_1 at 8192 \(8K\): score 50\.0 < floor 90\.0 \(n=4, 95% CI "
            r"\d+\.\d-\d+\.\d.*"
        ]
    )


def test_upper_rule_tolerates_noise(suite):
    script = {**ALL_RIGHT, "accuracy": {"niah_single_1": {"*": 0.75}}}
    thresholds = '[defaults]\nrule = "upper"\n[[floor]]\ntask = "niah_single_1"\nfloor = 90\n'
    suite(script, "-k", "niah_single_1", thresholds=thresholds).assert_outcomes(passed=2)


def test_length_beyond_max_positions_fails_unless_forced(suite):
    """A window shorter than a selected length is the checkpoint's doing: the case errors and the
    run fails."""
    script = {**ALL_RIGHT, "max_positions": 5000}
    result = suite(script, "-k", "niah_single_1")
    result.assert_outcomes(passed=1, errors=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "*niah_single_1 at 8192: the length exceeds the model's max_position_embeddings "
            "(5000)*drop 8192 from --lengths, or pass --force-lengths*"
        ]
    )
    suite(script, "-k", "niah_single_1", "--force-lengths").assert_outcomes(passed=2)


def test_effective_length_gate_fails_the_session(suite):
    script = {
        **ALL_RIGHT,
        "accuracy": {t: {"8192": 0.0} for t in ("niah_single_1", "niah_single_2", "vt")},
    }
    thresholds = '[session]\nmin_effective_length = "8k"\n'
    result = suite(script, "-m", "ruler", thresholds=thresholds)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        ["*Gate min_effective_length: FAIL - effective length 4K < required 8K*"]
    )
    ok = suite(ALL_RIGHT, "-m", "ruler", thresholds=thresholds)
    assert ok.ret == 0
    ok.stdout.fnmatch_lines(["*Gate min_effective_length: PASS*"])


def test_markers_select_helmet_recall(suite):
    result = suite(ALL_RIGHT, "-m", "recall", "--co", "-q")
    out = result.stdout.str()
    assert "test_helmet[json_kv-4096]" in out and "test_ruler[niah_multivalue-8192]" in out
    assert "niah_single_1" not in out


def test_bad_thresholds_stop_before_the_model_loads(suite, pytester):
    (pytester.path / "script.json").unlink(missing_ok=True)
    result = pytester.runpytest(
        "--backend", SCRIPTED, "--model", "missing.json", "--thresholds", "bad.toml"
    )
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--thresholds bad.toml does not exist: pass --thresholds PATH*"])
    (pytester.path / "bad.toml").write_text('[[floor]]\ntask = "niah_singel_1"\nfloor = 3\n')
    result = pytester.runpytest(
        "--backend", SCRIPTED, "--model", "missing.json", "--thresholds", "bad.toml"
    )
    result.stderr.fnmatch_lines(
        ["*floor[[]0[]].task: 'niah_singel_1' matches no task*niah_single_1*"]
    )


@pytest.mark.parametrize(
    ("backend", "said"),
    [
        (
            "hff",
            "*--backend 'hff' is not hf, vllm, openai or an importable MODULE:FACTORY*e.g. "
            "--backend hf*",
        ),
        (
            "tests.scripted:Missing",
            "*'tests.scripted:Missing'*has no attribute 'Missing'*mypackage.engine:MyBackend*",
        ),
        (
            "tests.conftest:ALL_RIGHT",
            "*--backend 'tests.conftest:ALL_RIGHT': ALL_RIGHT is not callable*",
        ),
    ],
)
def test_a_backend_that_is_none_of_the_suites_and_not_importable_is_one_line(
    suite, pytester, backend, said
):
    result = pytester.runpytest("--backend", backend, "--model", "x.json")
    assert result.ret == 4
    result.stderr.fnmatch_lines([said])


def test_suite_without_model_says_how_to_give_one(suite, pytester):
    result = pytester.runpytest()
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*needs a checkpoint: add --model*fixtures/tiny-llama-niah*"])


def test_bad_lengths_and_samples_are_usage_errors(suite, pytester):
    pytester.runpytest("--lengths", "8kb").stderr.fnmatch_lines(["*--lengths*'8kb'*8k*"])
    pytester.runpytest("--samples", "0").stderr.fnmatch_lines(
        ["*--samples '0' is not a whole number from 1 to 100,000*"]
    )


def test_markdown_goes_to_the_github_step_summary(suite, pytester, monkeypatch):
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    suite(ALL_RIGHT, "-k", "vt").assert_outcomes(passed=2)
    assert "| vt | 100.0 | 100.0 |" in summary.read_text()


def test_bad_haystack_is_a_usage_error(suite, pytester):
    result = suite(ALL_RIGHT, "--haystack", "nowhere.txt")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--haystack*'nowhere.txt' does not exist*"])


def test_missing_model_path_is_a_usage_error_before_workers_start(suite, pytester):
    result = pytester.runpytest("--model", "./no/such/ckpt", "-n", "2")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--model './no/such/ckpt' does not exist*"])


def test_unloadable_model_errors_every_case_with_one_message(suite, pytester):
    (pytester.path / "broken.json").write_text("{not json")
    result = pytester.runpytest(
        "--backend", SCRIPTED, "--model", "broken.json", "--lengths", "4k", "-k", "vt"
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ctxgate: the model 'broken.json' could not be loaded: --backend scripted needs "
            "--model pointing at a JSON script*"
        ]
    )
