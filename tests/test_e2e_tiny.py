"""End to end on the shipped checkpoint: the real suite, a real transformers model, real
generations."""

from __future__ import annotations

import contextlib
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema

from ctxgate.records.schema import report_schema
from ctxgate.tasks import all_tasks
from tests.browsing import Opened, launch

SECRET = "sk-ctxgate-test-0123456789-never-written"


def test_retrieval_passes_short_and_fails_long_for_real(real_suite, pytester):
    # The shipped model gets 85% at 256 tokens and 0% at 2048 (40 samples; bench/tiny_accuracy.py,
    # README).
    (pytester.path / "thresholds.toml").write_text(
        '[[floor]]\ntask = "niah_single_1"\nfloor = 70\n'
    )
    result = real_suite(
        "-k", "niah_single_1", "--lengths", "256,2k", "--samples", "40", "--report", "r.json"
    )
    result.assert_outcomes(passed=1, failed=1)
    cases = {c["length"]: c for c in json.loads((pytester.path / "r.json").read_text())["cases"]}
    assert cases[256]["verdict"] == "pass" and cases[256]["score"] >= 70
    assert cases[2048]["verdict"] == "fail" and cases[2048]["score"] <= 10
    for case in cases.values():  # tokens through the real model per second of generation
        assert (
            case["throughput"]["prompt_tokens_per_s"]
            > case["throughput"]["generated_tokens_per_s"]
            > 0
        )
    result.stdout.fnmatch_lines(
        ["*niah_single_1 at 2048 (2K): score * < floor 70.0 (n=40, 95% CI*"]
    )


def test_every_task_and_length_under_xdist_with_all_outputs(
    real_suite, pytester, judge_server, monkeypatch, helmet_data_long
):
    """The full fixture run, judged over HTTP by the scripted OpenAI-compatible server: all seven
    HELMET categories and the overall average at 2K, and the API key in no file the run wrote."""
    url, stats = judge_server
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    result = real_suite(
        "--lengths",
        "1k,2k",
        "--samples",
        "3",
        "-n",
        "2",
        "--report",
        "out/run.json",
        "--junitxml",
        "out/junit.xml",
        "--data-dir",
        str(helmet_data_long),
        "--judge-model",
        "ctxgate-lexical-judge",
        "--judge-base-url",
        url,
        "--cache-dir",
        "out/cache",
    )
    assert result.ret == 0, result.stdout.str()[-3000:]
    report = json.loads((pytester.path / "out" / "run.json").read_text())
    jsonschema.validate(report, report_schema())
    lines = (pytester.path / "out" / "run.predictions.jsonl").read_text().splitlines()
    for line in lines:
        jsonschema.validate(json.loads(line), report_schema(predictions=True))
    expected = {(t.name, L) for t in all_tasks() for L in (1024, 2048)}
    assert {(c["task"], c["length"]) for c in report["cases"]} == expected
    ran = [c for c in report["cases"] if c["verdict"] == "pass"]
    assert (
        len(ran) >= 55
    )  # a few tasks cannot fit their fixed parts and generation in 1K: skipped with a reason
    for c in report["cases"]:
        if c["verdict"] == "skip":
            assert "choose a longer --lengths" in c["message"]
    assert (
        report["run"]["model_fingerprint"]["sha256"] and report["run"]["backend"]["backend"] == "hf"
    )
    assert report["by_length"]["1024"]["ruler"]["score"] is not None
    names = {
        c.get("name")
        for c in ET.parse(pytester.path / "out" / "junit.xml").getroot().iter("testcase")
    }
    assert "test_ruler[niah_multikey_2-1024]" in names and "test_helmet[json_kv-1024]" in names
    at = report["by_length"][
        "2048"
    ]  # all seven HELMET categories from the fixture data, and the overall mean
    for c in ("recall", "rag", "rerank", "cite", "longqa", "summ", "icl", "overall"):
        assert at[f"helmet_{c}"]["score"] is not None and not at[f"helmet_{c}"]["partial"], (
            c,
            at[f"helmet_{c}"],
        )
    assert at["helmet_overall"]["members"] == [
        "recall",
        "rag",
        "rerank",
        "cite",
        "longqa",
        "summ",
        "icl",
    ]
    judged = [c for c in report["cases"] if c["task"] == "narrativeqa" and c["length"] == 2048][0]
    assert judged["judge"]["status"] == "judged" and judged["judge"]["usage"]["requests"] >= 3
    md = (pytester.path / "out" / "run.md").read_text()
    assert md.count("|") > 20 and all(
        f"| HELMET {c} |" in md for c in ("RAG", "Re-rank", "Cite", "Summ", "overall")
    )
    assert stats()["authorization"] and all(
        a == f"Bearer {SECRET}" for a in stats()["authorization"]
    )
    for path in (pytester.path / "out").rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert all(
        c["n"] == 3 for c in ran if c["task"] != "infbench_sum"
    )  # its fixture keeps 2 long books
    assert len((pytester.path / "out" / "run.predictions.jsonl").read_text().splitlines()) == sum(
        c["n"] for c in ran
    )
    _the_page_of_every_task_in_a_browser(pytester.path / "out" / "run.html", pytester.path)


def _the_page_of_every_task_in_a_browser(page_file: Path, shots: Path) -> None:
    """The demo's configuration (every task, all HELMET categories, judged cases) as the plugin drew
    it, opened in Chromium: both suites' heatmaps, the seven categories and their average, the depth
    grids, a judged case's samples. Skips last (naming the install command) where no browser is
    installed."""
    with contextlib.contextmanager(launch)() as browser:
        opened = Opened(browser, page_file, shots)
        page = opened.page
        assert page.locator("#ruler table.heatmap tbody tr").count() == 13
        rows = page.locator("#categories table tbody th").all_inner_texts()
        assert len(rows) == 8 and rows[-1] == "Overall average", rows
        assert (
            page.locator("#categories table tbody td.score").count() >= 8
        )  # each has a score at 2K at least
        assert page.locator('.depth-grid[data-task="all"] tbody tr').count() == 40
        opened.shot("categories", "#categories")
        page.locator('a[href="#case/narrativeqa/2048"]').first.click()
        page.wait_for_selector("#drill:not([hidden]) table.samples")
        assert page.locator("table.samples tbody tr").count() == 3
        opened.clean()


def test_chat_template_on_is_applied_and_recorded(real_suite, pytester, tiny_chat):
    result = real_suite(
        "-k",
        "niah_single_1",
        "--lengths",
        "1k",
        "--samples",
        "2",
        "--chat-template",
        "on",
        "--report",
        "r.json",
        model=tiny_chat,
    )
    result.assert_outcomes(passed=1)
    run = json.loads((pytester.path / "r.json").read_text())["run"]
    assert run["chat_template"] == "on" and len(run["chat_template_sha256"]) == 64


def test_the_task_policy_wraps_ruler_for_a_chat_model_and_not_for_a_base_model(
    real_suite, pytester, tiny_chat
):
    """RULER runs chat models with their template (config_models.sh), HELMET's JSON KV never; a base
    model (no template, the shipped checkpoint) runs everything plain. Each case records which."""
    select = ("-k", "niah_single_1 or json_kv", "--lengths", "1k", "--samples", "1")
    real_suite(*select, "--report", "chat.json", model=tiny_chat).assert_outcomes(passed=2)
    real_suite(*select, "--report", "base.json").assert_outcomes(passed=2)

    def wrapped(name: str) -> dict[str, bool]:
        return {
            c["task"]: c["chat_template"]
            for c in json.loads((pytester.path / name).read_text())["cases"]
        }

    assert wrapped("chat.json") == {"niah_single_1": True, "json_kv": False}
    assert wrapped("base.json") == {"niah_single_1": False, "json_kv": False}
