"""The judge client over real HTTP: the openai package against fixtures/judge_server.py on
127.0.0.1."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from ctxgate.judge import verdict
from ctxgate.judge.client import JudgeClient, JudgeError, JudgeSettings, cost
from ctxgate.judge.verdict import render
from tests.conftest import call_ctxgate, script_faults

KEY = "sk-judge-test-key-4242-do-not-store"
FLUENCY = render(
    "fluency_legal", text="The court approved the settlement and the library reopened."
)


@pytest.fixture
def client_for(judge_server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    url, _ = judge_server

    def make(**overrides) -> JudgeClient:
        settings = JudgeSettings(
            **{
                "model": "ctxgate-lexical-judge",
                "base_url": url,
                "cache_dir": str(tmp_path / "cache"),
                **overrides,
            }
        )
        return JudgeClient(settings, sleep=lambda s: None)

    return make


def test_retries_429_and_500_then_answers(client_for, judge_server):
    url, stats = judge_server
    script_faults(url, [{"status": 429, "retry_after": 0}, {"status": 500}])
    client = client_for()
    v = client.ask(FLUENCY, verdict.fluency)
    assert v.ok and v.value == 1
    usage = client.take_usage()
    assert (usage.requests, usage.retries, stats()["requests"]) == (1, 2, 3)


def test_a_request_past_its_timeout_is_retried(client_for, judge_server):
    url, stats = judge_server
    script_faults(url, [{"delay": 1.5}])
    client = client_for(timeout_s=0.5)
    assert client.ask(FLUENCY, verdict.fluency).value == 1
    assert client.take_usage().retries == 1


def test_the_time_limit_turns_endless_failures_into_a_counted_failed_verdict(
    client_for, judge_server
):
    url, stats = judge_server
    script_faults(url, [{"status": 503}] * 20)
    client = client_for(time_limit_s=0.1)
    v = client.ask(FLUENCY, verdict.fluency)
    assert v.value is None and "no verdict after 1 requests" in v.error
    usage = client.take_usage()
    assert (usage.verdicts, usage.failed_verdicts) == (1, 1)
    script_faults(url, [{"status": 500}] * 3)
    v = client_for(max_retries=2).ask(FLUENCY, verdict.fluency)
    assert "no verdict after 3 requests" in v.error and "raise --judge-retries" in v.error


def test_malformed_verdicts_are_asked_again_then_failed_never_dropped(client_for, judge_server):
    url, stats = judge_server
    script_faults(url, [{"reply": "I think it is fluent."}, {"reply": '{"fluency": 7}'}])
    client = client_for()
    v = client.ask(FLUENCY, verdict.fluency)
    assert v.value == 1 and stats()["requests"] == 3  # two unusable replies, then a good one
    script_faults(url, [{"reply": "no json here"}] * 3)
    v = client_for().ask(render("fluency_book", text="Another text entirely."), verdict.fluency)
    assert v.value is None and v.error.startswith("unparseable after 3 replies")


def test_a_broken_http_body_is_retried(client_for, judge_server):
    url, stats = judge_server
    script_faults(url, [{"body": "not json at all"}])
    client = client_for()
    assert client.ask(FLUENCY, verdict.fluency).value == 1
    assert client.take_usage().retries == 1


def test_a_rerun_is_served_from_the_cache_with_zero_requests(client_for, judge_server):
    url, stats = judge_server
    prompts = [
        FLUENCY,
        render(
            "entailment",
            premise="Title: A\nThe mill was built by Mara.",
            hypothesis="Mara built the mill.",
        ),
    ]
    first = client_for()
    assert [
        first.ask(prompts[0], verdict.fluency).value,
        first.ask(prompts[1], verdict.entailment).value,
    ] == [1, True]
    before = stats()["requests"]
    again = client_for()  # a new process would open the same file
    assert [
        again.ask(prompts[0], verdict.fluency).value,
        again.ask(prompts[1], verdict.entailment).value,
    ] == [1, True]
    usage = again.take_usage()
    assert stats()["requests"] == before and (usage.requests, usage.cache_hits) == (0, 2)


def test_the_key_is_sent_but_never_stored(client_for, judge_server, tmp_path):
    url, stats = judge_server
    client = client_for(price_per_mtok=(2.5, 10.0))
    client.ask(FLUENCY, verdict.fluency)
    assert stats()["authorization"] == [f"Bearer {KEY}"]
    assert KEY not in json.dumps(client.settings.describe())
    for path in (tmp_path / "cache").iterdir():
        assert KEY.encode() not in path.read_bytes()
    usage = client.take_usage()
    assert cost(usage, (2.5, 10.0)) == pytest.approx(
        (usage.prompt_tokens * 2.5 + usage.completion_tokens * 10) / 1e6, abs=1e-6
    )


def test_a_refused_key_is_a_configuration_error_not_a_failed_verdict(client_for, judge_server):
    url, _ = judge_server
    script_faults(url, [{"status": 401}])
    with pytest.raises(JudgeError, match="OPENAI_API_KEY"):
        client_for().ask(FLUENCY, verdict.fluency)


def test_openai_without_a_key_names_the_fix(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(JudgeError, match="OPENAI_API_KEY"):
        JudgeClient(JudgeSettings(model="gpt-4o-2024-05-13"))


def judge_from(given: dict[str, str]) -> JudgeSettings | None:
    """The judge the options give, read as pytest and ``ctxgate judge`` read them (the table, then
    the plan)."""
    from ctxgate.gate.plan import judge_settings
    from ctxgate.run.flags import read
    from ctxgate.run.options import JUDGE

    return judge_settings(read(JUDGE, lambda dest: given.get("--" + dest.replace("_", "-"))), None)


@pytest.mark.parametrize("price", ["abc", "2.5", "nan,1", "inf,1", "-1,2", "1,2,3"])
def test_a_judge_price_that_is_not_two_amounts_is_refused_with_an_example(price):
    from ctxgate.run.flags import OptionError

    given = {
        "--judge-model": "m",
        "--judge-base-url": "http://127.0.0.1:1/v1",
        "--judge-price": price,
    }
    with pytest.raises(
        OptionError, match=rf"--judge-price '{re.escape(price)}' .*e\.g\. --judge-price 2\.5,10$"
    ):
        judge_from(given)
    with pytest.raises(
        OptionError, match=r"e\.g\. --judge-price 2\.5,10$"
    ):  # with no judge asked for, too
        judge_from({"--judge-price": price})


@pytest.mark.parametrize("flag", ["--judge-price", "--judge-base-url"])
def test_a_judge_option_without_a_judge_model_is_refused(flag):
    value = "2.5,10" if flag == "--judge-price" else "http://127.0.0.1:1/v1"
    with pytest.raises(JudgeError, match=f"{flag} sets up a judge: add --judge-model"):
        judge_from({flag: value})


def test_ctxgate_judge_scores_a_pending_run_later_and_again_for_free(
    real_suite, pytester, judge_server, monkeypatch, helmet_data_long
):
    url, stats = judge_server
    result = real_suite(
        "-m",
        "judge",
        "--lengths",
        "2k",
        "--samples",
        "2",
        "--report",
        "out/run.json",
        "--data-dir",
        str(helmet_data_long),
        "--cache-dir",
        "out/gen",
    )
    assert result.ret == 0, result.stdout.str()[-2000:]
    report = json.loads((pytester.path / "out" / "run.json").read_text())
    assert {c["verdict"] for c in report["cases"]} == {"skip"}
    assert all(c["judge"]["status"] == "pending" for c in report["cases"])
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    cmd = [
        "judge",
        "out/run.json",
        "--judge-model",
        "ctxgate-lexical-judge",
        "--judge-base-url",
        url,
        "--judge-cache",
        "out/judge",
    ]
    key = {"OPENAI_API_KEY": KEY}

    def judge(*more: str) -> subprocess.CompletedProcess[str]:
        return call_ctxgate(*cmd, *more, cwd=pytester.path, env=key)

    done = judge()
    assert done.returncode == 0, done.stderr
    judged = json.loads((pytester.path / "out" / "run.json").read_text())
    assert all(c["verdict"] == "pass" and c["judge"]["status"] == "judged" for c in judged["cases"])
    assert judged["by_length"]["2048"]["helmet_summ"]["score"] is not None
    assert "requests" in done.stdout and stats()["requests"] > 0
    before = stats()["requests"]
    again = judge("--all")
    assert again.returncode == 0 and stats()["requests"] == before and " 0 requests" in again.stdout
    written = (pytester.path / "out" / "run.json").read_bytes()
    idle = judge()  # nothing pending
    assert idle.returncode == 0 and "judged already; the report is left as it is" in idle.stdout
    assert (pytester.path / "out" / "run.json").read_bytes() == written
    for path in (pytester.path / "out").rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
