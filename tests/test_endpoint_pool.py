"""The endpoint pool: ``--backend openai`` with ``--base-url`` given several times balances a run's
samples over real OpenAI-compatible HTTP servers on 127.0.0.1 (fixtures/completions_server.py), and
a server that dies mid-run has its samples moved to the others.

The servers run no model: each answers a prompt with a text of its own (``echo``: a digest of the
prompt's token ids), so an output tells which prompt it answered. A run against one server, one
request at a time, is the reference: a pooled run must give every sample the same output, each
exactly once, and the servers' own counts say who answered what. (Outputs of a real engine behind
the pool: tests/test_engines.py.)"""

from __future__ import annotations

import json
import re
import subprocess
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import HOTPOT, SQUAD, launch_suite

SAMPLES = 12
CASES = ("-k", "vt or niah_single_1", "--lengths", "1k", "--samples", str(SAMPLES))  # 2 cases
TOTAL = 2 * SAMPLES


def start_servers(count: int, **script: Any) -> list[tuple[str, Any]]:
    """``count`` echo servers, each with ``script`` (see the fixture): their URLs and
    ``_State``s."""
    from fixtures.completions_server import start

    started = []
    for _ in range(count):
        url, httpd = start()
        plan = json.dumps({"echo": True, **script}).encode()
        request = urllib.request.Request(
            url.removesuffix("/v1") + "/_script", data=plan, method="POST"
        )
        urllib.request.urlopen(request, timeout=10).read()
        started.append((url, httpd))
    return started


@pytest.fixture
def servers() -> Iterator[Callable[..., list[tuple[str, Any]]]]:
    """``servers(count, **script)``: that many, stopped after the test (a dead one is already
    closed)."""
    started: list[tuple[str, Any]] = []

    def make(count: int, **script: Any) -> list[tuple[str, Any]]:
        made = start_servers(count, **script)
        started.extend(made)
        return [(url, httpd.RequestHandlerClass.state) for url, httpd in made]

    yield make
    for _, httpd in started:
        httpd.shutdown()
        httpd.server_close()


def run_pool(cwd: Path, urls: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    """The suite from ``cwd`` against the servers, retrying once and re-probing a dropped one after
    0.5 s."""
    flags = [arg for url in urls for arg in ("--base-url", url)]
    result = launch_suite(
        *CASES,
        "--squad",
        str(SQUAD),
        "--hotpotqa",
        str(HOTPOT),
        "--backend",
        "openai",
        *flags,
        "--served-model",
        "tiny",
        "--request-retries",
        "1",
        "--no-cache",
        "--report",
        "out/r.json",
        *args,
        cwd=cwd,
        env={"CTXGATE_REPROBE_S": "0.5"},
        timeout=180,
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    assert "Traceback" not in out and "During handling" not in out and "Run error" not in out, out[
        -3000:
    ]
    return result


def predictions(cwd: Path) -> dict[tuple[str, int, int], str]:
    """Each sample's output, by (task, length, index); a sample twice in the file fails."""
    rows = [
        json.loads(line) for line in (cwd / "out" / "r.predictions.jsonl").read_text().splitlines()
    ]
    keys = Counter((r["task"], r["length"], r["index"]) for r in rows)
    assert all(n == 1 for n in keys.values()), [k for k, n in keys.items() if n > 1]
    return {(r["task"], r["length"], r["index"]): r["prediction"] for r in rows}


def complete_report(cwd: Path, urls: list[str]) -> dict[str, Any]:
    report = json.loads((cwd / "out" / "r.json").read_text())
    assert report["complete"], report.get("error")
    assert sorted(c["task"] for c in report["cases"]) == ["niah_single_1", "vt"]
    assert all(c["verdict"] == "pass" and c["n"] == SAMPLES for c in report["cases"]), report[
        "cases"
    ]
    assert report["run"]["backend"]["endpoints"] == urls
    return report


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int, int], str]:
    """The outputs from one server, one request at a time."""
    cwd = tmp_path_factory.mktemp("serial")
    [(url, httpd)] = start_servers(1)
    try:
        run_pool(cwd, [url], "--concurrency", "1")
        stats = httpd.RequestHandlerClass.state.stats
    finally:
        httpd.shutdown()
        httpd.server_close()
    outputs = predictions(cwd)
    assert len(outputs) == TOTAL and stats["answered"] == TOTAL
    assert Counter(outputs.values()) == Counter(stats["answers"])
    assert (
        len(set(outputs.values())) == TOTAL
    )  # every prompt is its own: an output names the sample it answered
    return outputs


def answered_by(out: str) -> tuple[dict[str, int], list[str]]:
    """The end-of-run lines of the servers (one per xdist worker): requests each URL answered,
    summed over the lines, and the lines."""
    lines = re.findall(r"^ctxgate: (?:gw\d+: )?servers: (.*)$", out, re.MULTILINE)
    answered: Counter[str] = Counter()
    for line in lines:
        for url, count in re.findall(r"(http://\S+) answered (\d+)", line):
            answered[url] += int(count)
    return dict(answered), lines


def test_samples_are_balanced_over_the_servers(servers, reference, tmp_path):
    """Three servers, requests overlapping (each answer takes 50 ms), two xdist workers: each server
    gets its share of the 24 samples, every sample is answered once, by one of them, with its own
    prompt's output; each worker's last line says how its requests were shared."""
    pool = servers(3, delay_s=0.05)
    urls = [url for url, _ in pool]
    result = run_pool(tmp_path, urls, "-n", "2")
    complete_report(tmp_path, urls)
    outputs = predictions(tmp_path)
    assert outputs == reference  # each sample exactly once, with the output of its own prompt
    counts = [state.stats["answered"] for _, state in pool]
    assert sum(counts) == TOTAL and min(counts) >= TOTAL // 3 - 2, counts
    served = Counter(text for _, state in pool for text in state.stats["answers"])
    assert served == Counter(
        outputs.values()
    )  # no sample was generated twice, on one server or two
    for _, state in pool:  # no request failed, so none was sent twice
        assert state.stats["completions"] == state.stats["answered"]
    answered, lines = answered_by(result.stdout)
    assert len(lines) == 2 and "dropped" not in " ".join(lines), lines
    assert answered == {url: state.stats["answered"] for url, state in pool}


def test_a_server_that_dies_mid_run_has_its_samples_moved_to_the_others(
    servers, reference, tmp_path
):
    """The first of three servers crashes after answering 3 completions: the next request sent to it
    goes unanswered and its port then refuses connections. The pool drops it (re-probing it every
    0.5 s until it gives it up) and the other two answer every remaining sample, that one included:
    the run passes as if nothing had happened."""
    died_after = 3
    dying, *others = servers(3, delay_s=0.05)
    dying[1].die_after = died_after
    urls = [dying[0], *(url for url, _ in others)]
    result = run_pool(tmp_path, urls)
    complete_report(tmp_path, urls)
    outputs = predictions(tmp_path)
    assert outputs == reference  # every sample exactly once, with its own output
    answered, [line] = answered_by(result.stdout)  # the run's last word names the server it lost
    assert re.search(
        rf"{re.escape(dying[0])} answered {died_after}, dropped \d+ time\(s\)(, given up)? "
        r"\(last: ",
        line,
    )
    assert answered == {url: state.stats["answered"] for url, state in (dying, *others)}
    assert dying[1].dead and dying[1].stats["answered"] == died_after
    assert (
        dying[1].stats["completions"] > died_after
    )  # it did die mid-run, with requests sent to it
    moved = [state.stats["answered"] for _, state in others]
    assert sum(moved) == TOTAL - died_after, moved
    assert min(moved) >= (TOTAL - died_after) // 2 - 2, (
        moved
    )  # shared between the two that are left
    served = Counter(text for _, state in (dying, *others) for text in state.stats["answers"])
    assert served == Counter(
        outputs.values()
    )  # what the dead one answered was kept, the rest answered once
    with pytest.raises(OSError):  # it is gone: its port refuses connections
        urllib.request.urlopen(dying[0].removesuffix("/v1") + "/v1/models", timeout=5)
