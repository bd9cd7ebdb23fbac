"""Failures on the real checkpoint: a worker killed mid-case, broken checkpoints, bad options, an
unwritable cache. Each ends as one clear message, or as a report that says it is incomplete, never
as a passing gate."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import HOTPOT, SQUAD, start_suite

NEED_512 = '[session]\nmin_effective_length = "512"\n'


def test_kill_9_of_a_real_worker_mid_case_fails_the_run(real_suite, pytester):
    """The issue's reproduction: two cases on two workers, one worker killed while it generates."""
    (pytester.path / "thresholds.toml").write_text(NEED_512)
    # 120 samples a case: at 40 cached, however the two workers split them, the one killed is still
    # mid-case, and the one left has little to finish
    proc = start_suite(
        "--squad", str(SQUAD), "--hotpotqa", str(HOTPOT), "-k", "niah_single_1 or "
                                                                "vt", "--lengths", "512",
        "--samples", "120", "-n", "2", "--report", "out/r.json", "--cache-dir", "cache",
        cwd=pytester.path,
    )  # fmt: skip
    db = pytester.path / "cache" / "generations.sqlite"
    deadline = time.time() + 240
    rows = 0
    while (
        rows < 40 and time.time() < deadline and proc.poll() is None
    ):  # both workers are generating by then
        time.sleep(0.2)
        try:
            rows = (
                sqlite3.connect(db, timeout=1)
                .execute("SELECT COUNT(*) FROM generations")
                .fetchone()[0]
            )
        except sqlite3.Error:
            rows = 0
    workers = subprocess.run(
        ["pgrep", "-P", str(proc.pid)], capture_output=True, text=True
    ).stdout.split()
    assert len(workers) == 2, workers
    os.kill(int(workers[0]), signal.SIGKILL)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 1, out[-3000:]
    report = json.loads((pytester.path / "out" / "r.json").read_text())
    assert {c["task"] for c in report["cases"]} == {"niah_single_1", "vt"}
    crashed = [c for c in report["cases"] if c.get("error_kind") == "crash"]
    assert len(crashed) == 1 and "crashed while running" in crashed[0]["message"]
    assert report["complete"] is False
    assert all(g["verdict"] == "fail" for g in report["gates"]), report["gates"]
    assert "Gate min_effective_length: FAIL" in out and "INCOMPLETE" in out


def test_a_truncated_checkpoint_ends_as_one_message_and_a_report(real_suite, pytester, ckpt):
    weights = ckpt / "model.safetensors"
    with weights.open("r+b") as f:
        f.truncate(weights.stat().st_size // 2)
    result = real_suite(
        "-k",
        "niah_single_1 or vt",
        "--lengths",
        "512",
        "-n",
        "2",
        "--report",
        "out/r.json",
        model=ckpt,
    )
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == 1
    assert "Traceback" not in out and len(out.splitlines()) < 40, out
    assert out.count("is truncated") == 1 and "re-copy the file" in out
    report = json.loads((pytester.path / "out" / "r.json").read_text())
    assert "model.safetensors is truncated" in report["error"]["message"]
    assert [c["error_kind"] for c in report["cases"]] == ["not_run", "not_run"] and not report[
        "complete"
    ]
    assert not (pytester.path / "out" / "r.partial.jsonl").exists()


@pytest.mark.parametrize(
    "damage, expected",
    [
        ("tokenizer", "has no tokenizer"),
        ("auto_map", "auto_map names the checkpoint's own model code"),
        ("config", "config.json is missing"),
    ],
)
def test_a_broken_checkpoint_names_the_file_and_the_fix(
    real_suite, pytester, ckpt, damage, expected
):
    if damage == "tokenizer":
        for name in ("tokenizer.json", "tokenizer_config.json"):
            (ckpt / name).unlink()
    elif damage == "auto_map":
        config = json.loads((ckpt / "config.json").read_text())
        config["auto_map"] = {"AutoModelForCausalLM": "modeling_mine.MineForCausalLM"}
        (ckpt / "config.json").write_text(json.dumps(config))
    else:
        (ckpt / "config.json").unlink()
    result = real_suite("-k", "vt", "--lengths", "512", model=ckpt)
    out = result.stdout.str()
    assert result.ret == 1 and expected in out and "Traceback" not in out
    assert "sentencepiece" not in out
    if damage == "auto_map":
        assert "--trust-remote-code" in out and "--ignore-remote-code" in out
        real_suite(
            "-k", "vt", "--lengths", "1k", "--samples", "2", "--ignore-remote-code", model=ckpt
        ).assert_outcomes(passed=1)


@pytest.mark.parametrize(
    "args, expected",
    [
        (("--dtype", "nonsense"), "--dtype 'nonsense' is not one of auto, bf16, fp16, fp32"),
        (
            ("--samples", "100000000"),
            "--samples '100000000' is not a whole number from 1 to 100,000",
        ),
        (("--report", "out"), "--report out is a folder; give a file path such as out/run.json"),
    ],
)
def test_bad_options_stop_before_the_model_loads(real_suite, pytester, args, expected):
    (pytester.path / "out").mkdir()
    result = real_suite("--lengths", "512", *args)
    assert result.ret == 4 and expected in result.stderr.str()
    assert "collected" not in result.stdout.str()  # nothing collected, so no model was loaded


def test_a_model_name_that_is_no_folder_fails_at_once(real_suite, pytester):
    result = real_suite("--lengths", "512", model=Path("some_name"))
    assert result.ret == 4 and "collected" not in result.stdout.str()
    result.stderr.fnmatch_lines(
        [
            "*--model 'some_name': there is no folder of that name in*, and no hub model "
            "'some_name' in the local Hugging Face cache*hf download some_name*"
        ]
    )


def test_an_unwritable_cache_means_no_cache_and_one_warning(real_suite, pytester):
    (pytester.path / "a_file").write_text("not a folder")
    result = real_suite(
        "-k",
        "vt",
        "--lengths",
        "1k",
        "--samples",
        "2",
        "--cache-dir",
        "a_file/cache",
        "--report",
        "r.json",
        "-W",
        "always::UserWarning",
    )
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert out.count("running without a cache") == 1 and "Traceback" not in out
    assert (
        "a_file/cache"
        in json.loads((pytester.path / "r.json").read_text())["run"]["cache"]["disabled"]
    )
