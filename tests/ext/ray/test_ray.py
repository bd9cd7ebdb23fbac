"""``--ray``: the suite on a real Ray cluster of this machine (``ray.cluster_utils.Cluster``: a
head, and worker nodes with a custom resource standing in for a GPU; the tiny checkpoint on CPU;
every address on the loopback). One cluster for the file; each run is the suite as users start it,
in its own process; the serial runs they are compared with run in this one."""

from __future__ import annotations

import contextlib
import http.server
import itertools
import json
import os
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from ctxgate.ext.ray.connection import AT_DRIVER_PRIORITY
from tests.conftest import ROOT, TINY, call_ctxgate, launch_suite, run_ctxgate, start_suite
from tests.test_docs_commands import commands

RESOURCE = "fake_gpu"
CASES = ("-k", "niah_single_1 or vt", "--lengths", "512,1k")
RAY_ENV = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"
}  # else Ray turns 127.0.0.1 into the interface address
THRESHOLDS = """
[[floor]]
task = "niah_single_1"
length = "*"
floor = 20

[[floor]]
task = "vt"
length = "*"
floor = 30
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A head without the resource and one worker node with two of it: two replicas, both on the
    worker."""
    pytest.importorskip("ray")
    saved = os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")
    os.environ.update(RAY_ENV)
    from ray.cluster_utils import Cluster

    # workers at the driver's priority, as --ray local starts them (Ray's default, niceness 15,
    # leaves the replicas a sliver of a core beside the other tests' processes)
    head = {"num_cpus": 1, "node_ip_address": "127.0.0.1"}
    c = Cluster(initialize_head=True, head_node_args={**head, "_system_config": AT_DRIVER_PRIORITY})
    c.worker = c.add_node(num_cpus=1, resources={RESOURCE: 2}, node_ip_address="127.0.0.1")
    c.wait_for_nodes()
    yield c
    c.shutdown()
    if saved is None:
        os.environ.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)


def on_ray(cluster: Any, *args: str) -> tuple[str, ...]:
    return (*args, "--ray", cluster.address, "--ray-resource", RESOURCE)


def run(cwd: Path, *args: str, model: Path | str = TINY) -> subprocess.CompletedProcess[str]:
    return launch_suite(*args, model=model, cwd=cwd, env=RAY_ENV, timeout=600)


def summary(out: str) -> dict[str, Any]:
    """The run's Ray line: each replica's node and pid, and the queue's counts."""
    line = next(x for x in out.splitlines() if x.startswith("ctxgate: Ray cluster"))
    replicas = re.findall(r"127\.0\.0\.1 node (\w+) pid (\d+)( \(lost\))?", line)
    counts = re.search(
        r"(\d+) generated, (\d+) retried after a lost replica, (\d+) withdrawn", line
    )
    assert counts, line
    return {
        "nodes": [n for n, _, _ in replicas],
        "pids": [int(p) for _, p, _ in replicas],
        "lost": sum(bool(lost) for _, _, lost in replicas),
        "generated": int(counts[1]),
        "retried": int(counts[2]),
        "withdrawn": int(counts[3]),
    }


def without_timings(text: str) -> str:
    """A report or predictions file with its timings (and the file's own name and time) blanked,
    byte for byte otherwise."""
    text = re.sub(
        r'"(seconds|build_seconds|engine_seconds|created)": ("[^"]*"|[0-9.e-]+|null)',
        r'"\1": _',
        text,
    )
    text = re.sub(r'"throughput": \{[^}]*\}', '"throughput": _', text)
    return re.sub(r'"predictions": "[^"]*"', '"predictions": _', text)


def replica_processes() -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        if any("ReplicaWorker" in part for part in p.info["cmdline"] or ()):
            found.append(p)
    return found


def replicas_in(folder: Path) -> list[int]:
    """The replicas of runs started in ``folder`` (a replica loads there): not another run's."""
    found = []
    for p in replica_processes():
        with contextlib.suppress(psutil.Error):
            if Path(p.cwd()) == folder:
                found.append(p.pid)
    return found


def gone(pids: list[int], within: float = 30.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(
            psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
            for p in pids
        ):
            return True
        time.sleep(0.5)
    return False


def signalled(proc: subprocess.Popen[str], *signals: signal.Signals) -> str:
    """``signals[0]``, then each of ``signals`` in turn every 0.2 s until ``proc`` ends (a user
    pressing on, a scheduler repeating its SIGTERM): its output."""
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.communicate(timeout=300)[0]))
    reader.start()
    for sig in itertools.cycle(signals):
        if proc.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)
        time.sleep(0.2)
    reader.join()
    return out[0]


def cached(cache: Path) -> int:
    try:
        with sqlite3.connect(cache / "generations.sqlite", timeout=5) as db:
            return int(db.execute("SELECT COUNT(*) FROM generations").fetchone()[0])
    except sqlite3.Error:
        return 0


def test_the_cluster_gives_the_serial_files_byte_for_byte_from_replicas_only_on_the_resource(
    cluster, real_suite, pytester
):
    tmp_path = pytester.path
    serial = real_suite(*CASES, "--samples", "6", "--report", "serial.json", "--no-cache")
    ray = run(
        tmp_path, *on_ray(cluster, *CASES, "--samples", "6", "--report", "ray.json", "--no-cache")
    )
    assert serial.ret == ray.returncode == 0, ray.stdout[-3000:] + ray.stderr[-3000:]
    for suffix in (".json", ".predictions.jsonl"):
        a = without_timings((tmp_path / f"serial{suffix}").read_text())
        b = without_timings((tmp_path / f"ray{suffix}").read_text())
        assert a == b
    cases = json.loads((tmp_path / "ray.json").read_text())["cases"]
    assert len(cases) == 4 and all(c["verdict"] == "pass" and c["n"] == 6 for c in cases)
    placed = summary(ray.stdout)
    assert (
        placed["nodes"] == [cluster.worker.node_id[:12]] * 2
    )  # the head has no fake_gpu: nothing there
    assert placed["generated"] == 24 and placed["retried"] == 0
    assert gone(placed["pids"]), "a replica outlived its session"


def test_sequential_cancels_a_decided_cases_queue_and_gives_the_serial_verdicts(
    cluster, real_suite, pytester
):
    tmp_path = pytester.path
    (tmp_path / "thresholds.toml").write_text(THRESHOLDS)
    select = (
        *CASES,
        "--samples",
        "30",
        "--thresholds",
        "thresholds.toml",
        "--sequential",
        "--no-cache",
    )
    serial = real_suite(*select, "--report", "serial.json")
    ray = run(tmp_path, *on_ray(cluster, *select, "--report", "ray.json"))
    assert serial.ret == ray.returncode == 1, ray.stdout[
        -3000:
    ]  # vt is certain to be below its floor

    def cases(name: str) -> dict[tuple[str, int], Any]:
        return {
            (c["task"], c["length"]): c for c in json.loads((tmp_path / name).read_text())["cases"]
        }

    a, b = cases("serial.json"), cases("ray.json")
    assert {k: c["verdict"] for k, c in a.items()} == {k: c["verdict"] for k, c in b.items()}
    # the same samples decide, so the same score: what else was in flight when a case decided is not
    # counted
    assert {k: (c["score"], c["stop"]["used"]) for k, c in a.items()} == {
        k: (c["score"], c["stop"]["used"]) for k, c in b.items()
    }
    assert any(c["stop"]["used"] < 30 for c in b.values())
    counts = summary(ray.stdout)
    assert counts["generated"] < 4 * 30
    assert (
        counts["generated"] <= sum(c["stop"]["used"] for c in b.values()) + 4 * 2
    )  # at most 2 in flight


def test_a_node_lost_mid_run_has_its_samples_rerun_elsewhere_none_lost_none_twice(
    cluster, real_suite, pytester
):
    tmp_path = pytester.path
    extra = cluster.add_node(num_cpus=1, resources={RESOURCE: 1}, node_ip_address="127.0.0.1")
    cluster.wait_for_nodes()
    select = ("-k", "niah_single_1 or vt", "--lengths", "1k,2k", "--samples", "10")
    assert real_suite(*select, "--report", "serial.json", "--no-cache").ret == 0
    cache = tmp_path / "cache"
    proc = start_suite(
        *on_ray(cluster, *select, "--report", "ray.json", "--cache-dir", str(cache)),
        cwd=tmp_path,
        env=RAY_ENV,
    )
    try:
        deadline = time.monotonic() + 300
        while cached(cache) < 6 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        cluster.remove_node(extra)
        out, _ = proc.communicate(timeout=600)
    finally:
        proc.kill()
    assert proc.returncode == 0, out[-3000:]
    lost = summary(out)
    assert lost["lost"] == 1 and len(lost["nodes"]) == 3
    report = json.loads((tmp_path / "ray.json").read_text())
    assert report["complete"] and all(c["n"] == 10 for c in report["cases"])
    rows = [
        json.loads(line) for line in (tmp_path / "ray.predictions.jsonl").read_text().splitlines()
    ]
    keys = [(r["task"], r["length"], r["index"]) for r in rows]
    assert len(keys) == len(set(keys)) == 4 * 10
    assert without_timings((tmp_path / "ray.predictions.jsonl").read_text()) == without_timings(
        (tmp_path / "serial.predictions.jsonl").read_text()
    )


def test_vllm_replicas_start_a_server_each_on_their_node_and_answer_as_the_hf_backend(
    cluster, real_suite, pytester
):
    """--backend vllm on the cluster: each replica starts its own vLLM server (CPU here) for the
    GPUs Ray gave it; --tp 2 makes one replica span the worker's two units. The outputs are the HF
    backend's, and no server outlives the run."""
    tmp_path = pytester.path
    select = (*CASES, "--samples", "4", "--no-cache")
    hf = real_suite(*select, "--report", "hf.json")
    ray = run(
        tmp_path,
        *on_ray(cluster, *select, "--backend", "vllm", "--tp", "2", "--report", "vllm.json"),
    )
    assert hf.ret == ray.returncode == 0, ray.stdout[-3000:]

    def outputs(name: str) -> list[tuple[Any, ...]]:
        rows = [json.loads(line) for line in (tmp_path / name).read_text().splitlines()]
        return [
            (r["task"], r["length"], r["index"], r["prediction"], r["score"], r["finish_reason"])
            for r in rows
        ]

    assert outputs("vllm.predictions.jsonl") == outputs("hf.predictions.jsonl")
    report = json.loads((tmp_path / "vllm.json").read_text())
    assert report["run"]["backend"]["backend"] == "vllm"
    placed = summary(ray.stdout)
    assert placed["nodes"] == [
        cluster.worker.node_id[:12]
    ]  # one replica, two units of the resource
    assert gone(placed["pids"])
    # this run's servers: their window is the longest length plus the largest generation budget of
    # any task
    from ctxgate.tasks.registry import all_tasks

    window = f"--max-model-len {1024 + max(t.tokens_to_generate for t in all_tasks())} "
    servers = [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if "vllm.entrypoints" in (line := " ".join(p.info["cmdline"] or ()) + " ")
        and window in line
    ]
    assert gone(servers), "a replica's vLLM server outlived the run"
    # nor did its engine processes (they rename themselves VLLM::EngineCore, VLLM::Worker), which
    # run where the replica ran: in the session's folder
    engines = []
    for p in psutil.process_iter(["name", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            title = " ".join(p.info["cmdline"] or ()) or p.info["name"] or ""
            if title.startswith("VLLM::") and Path(p.cwd()) == tmp_path:
                engines.append(p.pid)
    assert gone(engines), "a replica's vLLM engine processes outlived the run"


def test_a_killed_driver_keeps_every_finished_sample_and_a_rerun_as_a_ray_job_resumes(
    cluster, tmp_path
):
    """The rerun is started as in a Ray job's entrypoint: ``--ray auto``, which joins the cluster
    RAY_ADDRESS names (its replicas on the worker node, as the killed run's)."""
    given = (*CASES, "--samples", "12", "--report", "r.json", "--cache-dir", "cache")
    proc = start_suite(
        *on_ray(cluster, *given), cwd=tmp_path, env=RAY_ENV, stdout=subprocess.DEVNULL, stderr=None
    )
    try:
        deadline = time.monotonic() + 300
        while (
            cached(tmp_path / "cache") < 8 and proc.poll() is None and time.monotonic() < deadline
        ):
            time.sleep(0.1)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        proc.kill()
    done = cached(tmp_path / "cache")
    assert done >= 8
    assert gone([p.pid for p in replica_processes()]), "a replica outlived its killed driver"
    rerun = launch_suite(
        *given, "--ray", "auto", "--ray-resource", RESOURCE,
        cwd=tmp_path, env={**RAY_ENV, "RAY_ADDRESS": cluster.address}, timeout=600,
    )  # fmt: skip
    assert rerun.returncode == 0, rerun.stdout[-3000:]
    cases = json.loads((tmp_path / "r.json").read_text())["cases"]
    assert sum(c["samples_from_cache"] for c in cases) >= done
    placed = summary(rerun.stdout)
    assert placed["generated"] == 4 * 12 - sum(c["samples_from_cache"] for c in cases)
    assert placed["nodes"] == [cluster.worker.node_id[:12]] * 2


def test_a_replica_that_cannot_load_is_one_error_naming_its_node_and_the_gate_fails(
    cluster, tmp_path
):
    """The config claims a wider MLP than the weights hold: the session's checks pass (they read
    headers), the replica's load fails."""
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in TINY.iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    config = json.loads((broken / "config.json").read_text())
    config["intermediate_size"] *= 2
    (broken / "config.json").write_text(json.dumps(config))
    result = run(
        tmp_path, *on_ray(cluster, *CASES, "--samples", "2", "--report", "r.json"), model=broken
    )
    assert (
        result.returncode == 2
    )  # interrupted: no case can run without the model, as for a local load
    assert (
        "the model replica on node 127.0.0.1" in result.stdout
        and "do not match config.json" in result.stdout
    )
    assert "Traceback" not in result.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    assert not report["complete"] and all(c["verdict"] != "pass" for c in report["cases"])
    assert gone([p.pid for p in replica_processes()])


def test_ray_local_starts_a_cluster_for_the_run_and_leaves_no_process(tmp_path):
    """--ray local on this machine: without a GPU, the default resource is absent and the line names
    the fix; with --ray-resource CPU, docs/distributed.md's command runs as written, and every
    process it started is gone when it ends."""
    before = {p.pid for p in psutil.process_iter()}
    missing = run(tmp_path, *CASES, "--samples", "2", "--ray", "local", "--no-cache")
    assert missing.returncode == 2
    assert "has no 'GPU' resource" in missing.stdout and "--ray-resource CPU" in missing.stdout
    # the run's own replicas, granted their CPUs, not started within the timeout: named as such
    slow = launch_suite(
        *CASES, "--samples", "2", "--ray", "local", "--ray-resource", "CPU", "--no-cache",
        model=TINY, cwd=tmp_path, env={**RAY_ENV, "CTXGATE_RAY_START_TIMEOUT": "0.01"},
        timeout=600,
    )  # fmt: skip
    assert slow.returncode == 2, slow.stdout[-3000:]
    assert "0 taken by other work when the run asked, so the run's own " in slow.stdout
    assert "replica(s) were still starting; set CTXGATE_RAY_START_TIMEOUT higher than 0.01s" in (
        slow.stdout
    )
    documented = next(
        c for _, c in commands(ROOT / "docs" / "distributed.md") if "--ray-resource CPU" in c
    )
    argv = shlex.split(documented)
    assert argv[:3] == ["pytest", "--model", "path/to/ckpt"], documented
    proc = start_suite(*argv[3:], cwd=tmp_path, env=RAY_ENV)
    started: set[int] = set()
    while proc.poll() is None:
        try:
            started |= {c.pid for c in psutil.Process(proc.pid).children(recursive=True)}
        except psutil.NoSuchProcess:
            break
        time.sleep(0.2)
    out = proc.communicate()[0]
    assert proc.returncode == 0, out[-3000:]
    assert started and gone(sorted(started - before)), (
        "a process of the run's own cluster was left behind"
    )


def test_ray_is_refused_with_xdist_and_without_an_address(tmp_path):
    xdist = run(tmp_path, *CASES, "--ray", "local", "-n", "2")
    assert xdist.returncode == 4 and "drop -n" in xdist.stderr
    empty = run(tmp_path, *CASES, "--ray=")
    assert empty.returncode == 4 and "--ray is empty" in empty.stderr


def test_an_address_where_no_cluster_answers_is_one_line_within_seconds(
    real_suite, pytester, monkeypatch, checkpoint_sequence
):
    """Ray itself retries an absent head for many minutes: the address is checked first, given
    (--ray) or taken from RAY_ADDRESS (--ray auto), from pytest and from a verb."""
    fix = "or pass --ray local for a cluster of this machine"
    # something else at the address (a dashboard's HTTP port), on the loopback at an address Ray
    # takes as given (it turns 127.0.0.1 into this machine's interface address)
    web = http.server.ThreadingHTTPServer(("127.0.0.2", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    dashboard = f"127.0.0.2:{web.server_address[1]}"

    def one_line(out: str, said: str) -> None:
        assert "Traceback" not in out and "SystemExit" not in out, out[-3000:]
        lines = [x for x in out.splitlines() if "no Ray cluster answers" in x]
        assert lines and all(said in x and fix in x for x in lines), out[-3000:]

    for address, env, said in (
        ("127.0.0.1:1", "", "--ray 127.0.0.1:1: no Ray cluster answers"),
        ("auto", "127.0.0.1:1", "--ray auto: RAY_ADDRESS=127.0.0.1:1: no Ray cluster answers"),
        (dashboard, "", f"{dashboard}: no Ray cluster answers (it answers, but not as a Ray head"),
    ):
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
        if env:
            monkeypatch.setenv("RAY_ADDRESS", env)
        started = time.monotonic()
        result = real_suite(*CASES, "--samples", "2", "--no-cache", "--ray", address)
        assert time.monotonic() - started < 30
        assert result.ret == 2  # interrupted: no case can run, as when a local model cannot load
        one_line(result.stdout.str() + result.stderr.str(), said)
        if env:
            assert "set RAY_ADDRESS to the address of a running head" in result.stdout.str()
    web.shutdown()
    started = time.monotonic()
    bisect = call_ctxgate(
        "bisect", str(checkpoint_sequence), "-k", "niah_single_1", "--lengths", "256",
        "--ray", "127.0.0.1:1", cwd=pytester.path,
    )  # fmt: skip
    assert time.monotonic() - started < 30
    assert bisect.returncode == 2 and bisect.stderr.count("\n") == 1, bisect.stderr
    one_line(bisect.stdout + bisect.stderr, "ctxgate bisect: --ray 127.0.0.1:1: no Ray cluster")
    # watch passes --ray to each pytest it starts: that run's line, and watch's own verdict
    shutil.copytree(TINY, pytester.path / "run" / "checkpoint-100")
    started = time.monotonic()
    watched = run_ctxgate(
        "watch", "run", "--once", "--settle", "0", "--",
        "-k", "niah_single_1", "--lengths", "256", "--ray", "127.0.0.1:1",
        cwd=pytester.path, timeout=120,
    )  # fmt: skip
    assert time.monotonic() - started < 60  # two Python starts, each well under 30 s
    assert watched.returncode == 1, watched.stdout[-3000:]
    assert "checkpoint-100 was not evaluated completely (exit 2)" in watched.stdout
    one_line(watched.stdout + watched.stderr, "--ray 127.0.0.1:1: no Ray cluster answers")


def test_sigterm_to_the_driver_ends_as_without_ray_and_a_run_waiting_for_the_resource_says_so(
    cluster, tmp_path
):
    """A session holds both units of the resource; a second one waits for them and says so at its
    start timeout; SIGTERM then ends the first as without Ray (tests/test_fail_closed.py), not
    through Ray's own handler."""
    select = on_ray(
        cluster, *CASES, "--samples", "300", "--report", "r.json", "--cache-dir", "cache"
    )
    proc = start_suite(*select, cwd=tmp_path, env=RAY_ENV)
    try:
        deadline = time.monotonic() + 300
        while (
            cached(tmp_path / "cache") < 4 and proc.poll() is None and time.monotonic() < deadline
        ):
            time.sleep(0.1)
        assert proc.poll() is None, "the run ended before the signal"
        waiting = launch_suite(
            *on_ray(cluster, *CASES, "--samples", "2", "--no-cache"),
            cwd=tmp_path, env={**RAY_ENV, "CTXGATE_RAY_START_TIMEOUT": "3"}, timeout=300,
        )  # fmt: skip
        replicas = replicas_in(tmp_path)
        out = signalled(proc, signal.SIGTERM)  # repeated while the report is written: ignored
    finally:
        proc.kill()
    assert waiting.returncode == 2, waiting.stdout[-3000:]
    assert (
        f"waiting for a {RESOURCE!r} resource, the cluster has 2 of it, 2 taken by other work; "
        "free them" in waiting.stdout
    )
    assert "CTXGATE_RAY_START_TIMEOUT higher than 3s" in waiting.stdout
    assert proc.returncode == 2, out[-3000:]
    assert "received SIGTERM" in out, out[-3000:]
    assert "Traceback" not in out and "SystemExit" not in out, out[-3000:]
    assert "INCOMPLETE: not every selected case finished" in out and "Gate cases: FAIL" in out
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["complete"] is False and cached(tmp_path / "cache") >= 4
    assert not (tmp_path / ".r.json.lock").exists()
    assert len(replicas) == 2 and gone(replicas), "a replica outlived its signalled driver"


def test_signals_repeated_under_ray_local_end_the_run_with_its_summary(tmp_path):
    """The run's own cluster stops while the report is written: SIGTERM and SIGHUP, again and
    again, still end with the summary, exit 2 and no lock, as a run without Ray does."""
    proc = start_suite(
        *CASES, "--samples", "300", "--ray", "local", "--ray-resource", "CPU", "--report",
        "r.json", "--cache-dir", "cache", cwd=tmp_path, env=RAY_ENV,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while cached(tmp_path / "cache") < 2 and proc.poll() is None:
            assert time.monotonic() < deadline, "no sample was generated in 300 s"
            time.sleep(0.1)
        out = signalled(proc, signal.SIGTERM, signal.SIGHUP)
    finally:
        proc.kill()
    assert proc.returncode == 2, out[-3000:]
    assert "INCOMPLETE: not every selected case finished" in out and "Gate cases: FAIL" in out
    assert json.loads((tmp_path / "r.json").read_text())["complete"] is False
    assert not (tmp_path / ".r.json.lock").exists()


def test_a_replica_still_loading_at_the_start_timeout_is_named_as_loading(cluster, tmp_path):
    """The checkpoint's own model code (--trust-remote-code) takes ten minutes to import: the
    replicas are placed at once, and their load outlasts the start timeout."""
    slow = tmp_path / "slow"
    shutil.copytree(TINY, slow)
    config = json.loads((slow / "config.json").read_text())
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_slow.SlowLlama"}
    (slow / "config.json").write_text(json.dumps(config))
    (slow / "modeling_slow.py").write_text(
        "import time\n\nfrom transformers import LlamaForCausalLM\n\ntime.sleep(600)\n\n\n"
        "class SlowLlama(LlamaForCausalLM):\n    pass\n"
    )
    result = launch_suite(
        *on_ray(cluster, *CASES, "--samples", "2", "--no-cache", "--trust-remote-code"),
        model=slow, cwd=tmp_path, env={**RAY_ENV, "CTXGATE_RAY_START_TIMEOUT": "20"}, timeout=300,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout[-3000:]
    assert "loading the model on node 127.0.0.1" in result.stdout, result.stdout[-3000:]
    assert "took longer than 20s (the replicas were placed" in result.stdout
    assert "waiting for" not in result.stdout and "Traceback" not in result.stdout
    assert gone(replicas_in(tmp_path))


def test_without_ray_installed_the_option_names_the_extra(monkeypatch):
    import importlib.util

    from ctxgate.gate.plan import make_plan
    from ctxgate.run.flags import OptionError

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a)
    )
    given = {"ray": "auto", "model": str(TINY)}
    with pytest.raises(
        OptionError,
        match=re.escape(
            "--ray auto needs Ray, which is not installed here: pip install 'ctxgate[ray]'"
        ),
    ):
        make_plan(given.get, Path.cwd(), gated=False)


def test_bisect_on_the_cluster_probes_side_by_side_and_names_the_serial_bisects_checkpoint(
    cluster, checkpoint_sequence, tmp_path
):
    def bisect(*args: str, on: Any = run_ctxgate) -> dict[str, Any]:
        done = on(
            "bisect", str(checkpoint_sequence), "-k", "niah_single_1", "--lengths", "256",
            "--samples", "12",
            "--no-cache", "--json", "out.json", *args,
            cwd=tmp_path, env=RAY_ENV,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return json.loads((tmp_path / "out.json").read_text())

    serial = bisect(on=call_ctxgate)  # the reference starts no process: run in this one
    ray = bisect(
        "--ray", cluster.address, "--ray-resource", RESOURCE
    )  # two replicas: two probes a round
    assert ray["first_bad_index"] == serial["first_bad_index"] == 5
    assert ray["rounds"] < serial["rounds"] == serial["evaluations"]


def test_the_simulation_at_scale_puts_the_dynamic_queue_at_the_flop_limit_static_shards_behind():
    from bench.distributed import dynamic, full_ruler, static

    costs = full_ruler()
    for gpus in (8, 32, 128):
        limit = sum(costs) / gpus
        assert (
            limit <= dynamic(costs, gpus) <= limit + max(costs)
        )  # list scheduling's bound, longest first
        assert static(costs, gpus) > dynamic(costs, gpus)


def test_watch_passes_ray_to_each_evaluation_and_gates_as_without_it(cluster, tmp_path):
    """``ctxgate watch RUN -- --ray ADDRESS``: each new checkpoint is evaluated on the cluster (its
    replicas on the worker node), with the verdicts the sequence is built to give: the first
    checkpoint retrieves, the second has lost it (tests/ext/checkpoints/test_checkpoint_kinds.py:
    watch gives a sequence's verdicts as pytest does)."""
    from fixtures.checkpoint_sequence import build_sequence

    build_sequence(tmp_path / "run", count=2, break_at=1)  # checkpoint-200 has lost retrieval
    (tmp_path / "thresholds.toml").write_text(THRESHOLDS)
    gated = ("-k", "niah_single_1", "--lengths", "512", "--samples", "10", "--no-cache")

    def watch(where: str, *args: str) -> tuple[dict[str, str], str]:
        done = run_ctxgate(
            "watch", "run", "--once", "--settle", "0", "--reports", where, "--", *gated, *args,
            cwd=tmp_path, env=RAY_ENV, timeout=900,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        verdicts = {}
        for report in sorted((tmp_path / where).glob("checkpoint-*.json")):
            (case,) = json.loads(report.read_text())["cases"]
            verdicts[report.stem] = case["verdict"]
        return verdicts, done.stdout

    there, out = watch("cluster", "--ray", cluster.address, "--ray-resource", RESOURCE)
    assert there == {"checkpoint-100": "pass", "checkpoint-200": "fail"}
    lines = [x for x in out.splitlines() if x.startswith("ctxgate: Ray cluster")]
    assert len(lines) == 2  # one evaluation per checkpoint, each on the cluster
    assert all(summary(line)["nodes"] == [cluster.worker.node_id[:12]] * 2 for line in lines)
