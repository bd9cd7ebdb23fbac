"""A case that could not run for a reason the checkpoint or the inputs caused never lets a gate
pass, and no input falls back silently to something weaker. Each test runs the real suite on the
tiny checkpoint in a subprocess (or a real CLI verb) and reads what the user sees: the exit status,
one line, the report."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import psutil
import pytest
from safetensors.torch import load_file, save_file

from ctxgate.tasks.chance import chance_at
from ctxgate.tasks.registry import all_tasks
from tests.conftest import (
    HELMET_DATA,
    ROOT,
    TINY,
    call_ctxgate,
    in_process,
    launch_suite,
    process_state,
    start_suite,
    stored_report,
)

# a floor on every case at 1K, above every task's chance score there (a floor at or below it is
# refused)
FLOOR_ALL = (
    f'[[floor]]\ntask = "*"\nfloor = {max(chance_at(t, 1024).high for t in all_tasks()) + 1:.0f}\n'
)


def _report(pytester: pytest.Pytester, name: str = "r.json") -> dict:
    return json.loads((pytester.path / "out" / name).read_text())


def _gates(report: dict) -> dict[str, str]:
    return {g["name"]: g["verdict"] for g in report["gates"]}


def _one_line_error(result: pytest.RunResult) -> str:
    out = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out, out[-3000:]
    return out


# 1. Skips that passed -----------------------------------------------------------------------------


def test_a_shrunken_window_fails_the_run_and_against_a_baseline_that_scored_the_length(
    real_suite, pytester, ckpt
):
    base = real_suite(
        "-k",
        "niah_single_1",
        "--lengths",
        "256,512",
        "--samples",
        "3",
        "--report",
        "out/base.json",
        model=ckpt,
    )
    assert base.ret == 0
    config = json.loads((ckpt / "config.json").read_text())
    config["max_position_embeddings"] = 300
    (ckpt / "config.json").write_text(json.dumps(config))
    result = real_suite(
        "-k",
        "niah_single_1",
        "--lengths",
        "256,512",
        "--samples",
        "3",
        "--report",
        "out/r.json",
        "--baseline",
        "out/base.json",
        model=ckpt,
    )
    out = _one_line_error(result)
    assert result.ret == 1
    report = _report(pytester)
    case = next(c for c in report["cases"] if c["length"] == 512)
    assert (case["verdict"], case["error_kind"]) == ("error", "window")
    assert (
        "max_position_embeddings (300)" in case["message"] and "--force-lengths" in case["message"]
    )
    gates = _gates(report)
    assert gates["cases"] == gates["baseline"] == gates["floors"] == "fail"
    assert (
        "Gate baseline: FAIL - 1 case(s) the baseline scored have no score now: niah_single_1-512 "
        "(window)" in out
    )


def test_a_corrupt_data_line_fails_the_case_naming_file_and_line(real_suite, pytester, tmp_path):
    data = tmp_path / "helmet_data"
    shutil.copytree(HELMET_DATA, data)
    test_file = data / "icl" / "trec" / "test.jsonl"
    lines = test_file.read_text().splitlines()
    lines[2] = lines[2][: len(lines[2]) // 2]  # one record cut in half
    test_file.write_text("\n".join(lines) + "\n")
    (pytester.path / "thresholds.toml").write_text(FLOOR_ALL)
    result = real_suite(
        "-k",
        "icl_trec_coarse",
        "--lengths",
        "1k",
        "--samples",
        "2",
        "--data-dir",
        str(data),
        "--report",
        "out/r.json",
    )
    _one_line_error(result)
    assert result.ret == 1
    (case,) = _report(pytester)["cases"]
    assert (case["verdict"], case["error_kind"]) == ("error", "data_unreadable")
    assert f"{test_file}:3: not valid JSON" in case["message"]
    # the fix it suggests runs, on the data folder (not the file's own subfolder), and finds the
    # damage
    (fix,) = re.findall(r"`(ctxgate [^`]+)`", case["message"])
    assert fix == f"ctxgate data verify {data}"
    checked = call_ctxgate(*fix.split()[1:])
    assert checked.returncode == 1 and "icl/trec/test.jsonl" in checked.stdout, checked.stdout[
        -2000:
    ]


def test_a_judged_case_with_a_floor_and_no_judge_fails(real_suite, pytester):
    (pytester.path / "thresholds.toml").write_text('[[floor]]\ntask = "alce_asqa"\nfloor = 10\n')
    result = real_suite(
        "-k",
        "alce_asqa",
        "--lengths",
        "2k",
        "--samples",
        "2",
        "--data-dir",
        str(HELMET_DATA),
        "--report",
        "out/r.json",
    )
    out = _one_line_error(result)
    assert result.ret == 1, out[-2000:]
    (case,) = _report(pytester)["cases"]
    assert (case["verdict"], case["error_kind"]) == ("error", "judge_not_given")
    assert "a floor of 10" in case["message"] and case["judge"]["status"] == "pending"
    assert "Gate floors: FAIL" in out


def test_without_a_floor_a_case_whose_input_was_not_given_is_a_skip(
    real_suite, pytester, judge_server
):
    result = real_suite(
        "-k",
        "alce_asqa",
        "--lengths",
        "2k",
        "--samples",
        "2",
        "--data-dir",
        str(HELMET_DATA),
        "--report",
        "out/r.json",
    )
    (case,) = _report(pytester)["cases"]
    assert (case["verdict"], case["skip_kind"]) == ("skip", "judge_not_given")
    assert result.ret == 0
    # the command it suggests runs as written where the judge's API answers (here the offline judge
    # server, which the openai client reaches through OPENAI_BASE_URL as it would OpenAI's)
    (fix,) = re.findall(r"`(ctxgate judge [^`]+)`", case["message"])
    assert fix == "ctxgate judge out/r.json --judge-model gpt-4o-2024-05-13"
    url, _ = judge_server
    judged = call_ctxgate(
        *fix.split()[1:],
        cwd=pytester.path,
        env={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": url},
    )
    assert judged.returncode == 0, judged.stdout[-2000:] + judged.stderr[-2000:]
    (case,) = _report(pytester)["cases"]
    assert case["judge"]["status"] == "judged" and case["score"] is not None


# 2. Silent fallbacks ------------------------------------------------------------------------------


def test_thresholds_are_found_from_a_subfolder_and_named_in_the_header(real_suite, pytester):
    (pytester.path / "pyproject.toml").write_text(
        "[tool.pytest.ini_options]\ntestpaths = ['tests_longctx']\n"
    )
    (pytester.path / "tox.ini").unlink()
    (pytester.path / "thresholds.toml").write_text('[[floor]]\ntask = "vt"\nfloor = 100\n')
    sub = pytester.path / "ci"
    sub.mkdir()
    with process_state():
        os.chdir(sub)  # started from the subfolder, as a user in ci/ starts it
        result = pytester.runpytest(
            f"--model={TINY}", "-p", "no:cacheprovider",
            "-k", "vt", "--lengths", "1k", "--samples", "2", "--no-cache",
            str(pytester.path / "tests_longctx"),
        )  # fmt: skip
    out = result.stdout.str()
    assert f"ctxgate thresholds: {pytester.path / 'thresholds.toml'} (found 1 up" in out
    assert result.ret == 1 and "below" in out  # vt scores under 100 on this checkpoint


def test_no_thresholds_file_is_said_in_the_header(real_suite, pytester):
    result = real_suite("-k", "vt", "--lengths", "1k", "--samples", "1")
    assert "floors gate checks nothing" in result.stdout.str()


def test_a_thresholds_file_without_a_floor_is_said_in_the_header(real_suite, pytester):
    pytester.makefile(".toml", thresholds='[defaults]\nrule = "upper"\n')
    result = real_suite(
        "-k", "vt", "--lengths", "1k", "--samples", "1", "--thresholds", "thresholds.toml"
    )
    result.stdout.fnmatch_lines(
        ["*ctxgate thresholds: thresholds.toml*no floor is above 0, so the floors gate*"]
    )


def test_a_thresholds_file_the_ini_names_must_exist(real_suite, pytester):
    pytester.makeini(
        "[pytest]\ntestpaths = tests_longctx\nctxgate_thresholds = gates/thresholds.toml\n"
    )
    # --model=PATH in one word: pytest would read a separate absolute path as a test path and take
    # another ini
    result = pytester.runpytest(f"--model={TINY}", "-k", "vt", "--lengths", "1k")
    assert result.ret == 4 and "gates/thresholds.toml does not exist" in result.stderr.str()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "is empty"),
        ("# only comments\n", "is empty"),
        ("[defaults]\nfloor = 0.5\n", "looks like a fraction, but floors are percent"),
        ('[[floor]]\ntask = "vt"\nfloor = 0.9\n', "write floor = 90 for 90%"),
    ],
)
def test_an_empty_file_and_a_fractional_floor_are_refused(real_suite, pytester, text, expected):
    (pytester.path / "thresholds.toml").write_text(text)
    result = real_suite("-k", "vt", "--lengths", "1k")
    assert result.ret == 4 and expected in result.stderr.str(), result.stderr.str()


def test_a_missing_tensor_is_refused_in_one_line_unless_allowed(real_suite, pytester, ckpt):
    weights = load_file(ckpt / "model.safetensors")
    del weights["model.layers.3.mlp.up_proj.weight"]
    save_file(weights, ckpt / "model.safetensors", metadata={"format": "pt"})
    result = real_suite(
        "-k", "vt", "--lengths", "1k", "--samples", "1", "--report", "out/r.json", model=ckpt
    )
    out = _one_line_error(result)
    assert (
        result.ret == 2 and "LOAD REPORT" not in out
    )  # the model would not load: the session stops
    assert "Run error: ctxgate: the model" in out
    assert "tensor model.layers.3.mlp.up_proj.weight is missing from the weights" in out
    assert "--allow-weight-mismatch" in out
    allowed = real_suite(
        "-k",
        "vt",
        "--lengths",
        "1k",
        "--samples",
        "1",
        "--allow-weight-mismatch",
        "--report",
        "out/a.json",
        model=ckpt,
    )
    assert allowed.ret == 0
    assert (
        "model.layers.3.mlp.up_proj.weight"
        in _report(pytester, "a.json")["run"]["weights_mismatch"]
    )


def test_a_config_of_another_size_names_the_tensor(real_suite, ckpt):
    config = json.loads((ckpt / "config.json").read_text())
    config["vocab_size"] = 5000
    (ckpt / "config.json").write_text(json.dumps(config))
    out = _one_line_error(real_suite("-k", "vt", "--lengths", "1k", "--samples", "1", model=ckpt))
    assert (
        "model.embed_tokens.weight is (4096, 128) in the weights but (5000, 128) by config.json"
        in out
    )


@pytest.mark.parametrize(
    "name", ["generation_config.json", "tokenizer_config.json", "special_tokens_map.json"]
)
def test_a_json_file_of_the_checkpoint_that_does_not_parse_is_named_with_its_line(
    real_suite, ckpt, name
):
    (ckpt / name).write_text('{\n  "eos_token_id": 2,\n  oops\n}\n')
    result = real_suite("-k", "vt", "--lengths", "1k", model=ckpt)
    out = _one_line_error(result)
    assert result.ret == 1 and out.count(f"{name}:3: not valid JSON") == 1


def test_diff_refuses_a_report_of_another_schema(tmp_path):
    old = {
        "schema_version": 0,
        "run": {},
        "cases": [{"task": "vt", "length": 1024, "verdict": "pass"}],
    }
    (tmp_path / "old.json").write_text(json.dumps(old))
    proc = call_ctxgate("diff", str(tmp_path / "old.json"), str(tmp_path / "old.json"), cwd=ROOT)
    assert (
        proc.returncode == 2
        and "schema_version 0" in proc.stderr
        and "Traceback" not in proc.stderr
    )


def test_a_missing_local_data_file_never_reaches_for_the_hub(
    real_suite, pytester, tmp_path, monkeypatch
):
    """With the hub switched on, a task whose local file is missing fails without a single
    connection: the hub endpoint is a socket of ours that counts what reaches it."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.2)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{listener.getsockname()[1]}")
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "0")
    data = tmp_path / "helmet_data"
    shutil.copytree(HELMET_DATA, data)
    (data / "icl" / "trec" / "test.jsonl").unlink()
    (pytester.path / "thresholds.toml").write_text(FLOOR_ALL)
    result = real_suite(
        "-k",
        "icl_trec_coarse",
        "--lengths",
        "1k",
        "--samples",
        "1",
        "--data-dir",
        str(data),
        "--report",
        "out/r.json",
    )
    (case,) = _report(pytester)["cases"]
    assert (case["verdict"], case["error_kind"]) == ("error", "data_not_given") and result.ret == 1
    assert f"{data / 'icl' / 'trec' / 'test.jsonl'} does not exist" in case["message"]
    with pytest.raises(TimeoutError):
        listener.accept()  # nobody knocked
    listener.close()


# 3. Crashes ---------------------------------------------------------------------------------------


def test_a_case_whose_every_verdict_failed_is_a_table_cell_not_a_crash(
    real_suite, pytester, judge_server, helmet_data_long
):
    from tests.conftest import script_faults

    url, _ = judge_server
    script_faults(url, [{"status": 500}] * 200)  # the server is down for good: every verdict fails
    result = in_process(
        pytester,
        f"--model={TINY}",
        "-k",
        "infbench_sum",
        "--lengths",
        "2k",
        "--samples",
        "2",
        "--data-dir",
        str(helmet_data_long),
        "--judge-model",
        "ctxgate-lexical-judge",
        "--judge-base-url",
        url,
        "--judge-retries",
        "0",
        "--report",
        "out/r.json",
        "--no-cache",
    )
    out = _one_line_error(result)
    assert result.ret == 1, out[-3000:]
    (case,) = _report(pytester)["cases"]
    assert (
        case["verdict"] == "fail" and case["score"] is None and case["judge"]["status"] == "failed"
    )
    assert "infbench_sum  no score ✗" in out and "2 of 2 verdicts failed" in out
    assert "no score ✗" in (pytester.path / "out" / "r.md").read_text()


def _start_suite(cwd: Path) -> subprocess.Popen[str]:
    return start_suite(
        "-k", "niah_single_1 or "
              "vt", "--lengths", "512", "--samples", "400", "-n", "2", "--report", "out/r.json",
        "--cache-dir", "cache",
        cwd=cwd, ctrl_c=True,
    )  # fmt: skip


def _workers_generating(proc: subprocess.Popen[str], cache: Path) -> list[psutil.Process]:
    """The two xdist workers, once both have cached a generation."""
    import sqlite3

    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            rows = (
                sqlite3.connect(cache, timeout=1)
                .execute("SELECT COUNT(*) FROM generations")
                .fetchone()[0]
            )
        except sqlite3.Error:
            rows = 0
        workers = psutil.Process(proc.pid).children()
        if rows >= 20 and len(workers) == 2:
            return workers
        time.sleep(0.2)
    raise AssertionError(f"the workers never started generating: {proc.communicate()[0][-3000:]}")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_end_the_run_like_ctrl_c(pytester, sig):
    (pytester.path / "tests_longctx").mkdir()
    shutil.copytree(ROOT / "tests_longctx", pytester.path / "tests_longctx", dirs_exist_ok=True)
    proc = _start_suite(pytester.path)
    workers = _workers_generating(proc, pytester.path / "cache" / "generations.sqlite")
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 2, out[-3000:]
    assert "INCOMPLETE" in out, out[-4000:]
    report = json.loads((pytester.path / "out" / "r.json").read_text())
    assert report["complete"] is False and all(g["verdict"] == "fail" for g in report["gates"])
    unrun = [c for c in report["cases"] if c.get("error_kind") == "not_run"]
    assert unrun and all(f"interrupted ({signal.Signals(sig).name})" in c["message"] for c in unrun)
    gone, alive = psutil.wait_procs(workers, timeout=60)
    assert not alive


def test_workers_exit_when_their_controller_is_killed(pytester):
    """Orphaned workers used to go on generating (and caching) a case nobody would read; now they
    stop with their controller: at most the samples in flight when it died reach the cache."""
    import sqlite3

    shutil.copytree(ROOT / "tests_longctx", pytester.path / "tests_longctx")
    proc = _start_suite(pytester.path)
    cache = pytester.path / "cache" / "generations.sqlite"
    workers = _workers_generating(proc, cache)
    proc.kill()
    proc.communicate(timeout=60)

    def rows() -> int:
        return (
            sqlite3.connect(cache, timeout=30)
            .execute("SELECT COUNT(*) FROM generations")
            .fetchone()[0]
        )

    at_kill = rows()
    gone, alive = psutil.wait_procs(workers, timeout=120)
    assert not alive, [p.pid for p in alive]
    assert rows() - at_kill <= 2  # one sample in flight per worker, at most


def test_a_full_disk_while_writing_the_report_is_one_line_and_leaves_no_half_file(
    real_suite, pytester
):
    """The file size limit makes every write past 6 KB fail with EFBIG, as a full disk does with
    ENOSPC."""
    import resource

    out_dir = pytester.path / "out"
    out_dir.mkdir()
    (out_dir / "r.json").write_text('{"created": "earlier"}')

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (6_000, 6_000))

    proc = launch_suite(
        "-k", "niah_single_1 or "
              "vt", "--lengths", "512", "--samples", "60", "--report", "out/r.json", "--no-cache",
        cwd=pytester.path, preexec_fn=small_files, timeout=600,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Traceback" not in out and "INTERNALERROR" not in out, out[
        -3000:
    ]
    assert "ERROR: the report could not be written to out/r.json" in out
    assert (out_dir / "r.json").read_text() == '{"created": "earlier"}'  # the old report, whole
    assert not [
        p.name for p in out_dir.iterdir() if p.name.endswith(".tmp") or p.name.endswith(".lock")
    ]
    partial = out_dir / "r.partial.jsonl"
    if partial.exists():  # whatever it kept is whole records
        assert all(json.loads(line) for line in partial.read_text().splitlines())


def test_a_report_path_that_is_a_device_is_refused(real_suite):
    result = real_suite("-k", "vt", "--lengths", "1k", "--report", "/dev/full")
    assert result.ret == 4 and "/dev/full exists and is not a regular file" in result.stderr.str()


def test_a_haystack_that_is_not_utf8_is_one_line(real_suite, pytester):
    (pytester.path / "hay.txt").write_bytes(b"Good text. " * 20 + b"\xff\xfe bad bytes.\n")
    result = real_suite("-k", "vt", "--lengths", "1k", "--haystack", "hay.txt")
    assert result.ret == 4 and "line 1 is not UTF-8 text" in result.stderr.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize("content", [b"", b"\xff\xfe\x00garbage\n"], ids=["empty", "not-utf8"])
def test_an_empty_or_binary_data_file_is_one_line(real_suite, pytester, tmp_path, content):
    data = tmp_path / "helmet_data"
    shutil.copytree(HELMET_DATA, data)
    (data / "infbench" / "longbook_qa_eng.jsonl").write_bytes(content)
    result = real_suite(
        "-k",
        "infbench_qa",
        "--lengths",
        "2k",
        "--samples",
        "1",
        "--data-dir",
        str(data),
        "--report",
        "out/r.json",
    )
    _one_line_error(result)
    (case,) = _report(pytester)["cases"]
    assert case["error_kind"] == "data_unreadable" and "longbook_qa_eng.jsonl" in case["message"]
    assert ("is empty" if not content else "not UTF-8") in case["message"] and result.ret == 1


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["metrics", "{empty}"], "is empty"),
        (["metrics", "{truncated}"], ":1: not valid JSON"),
        (["trend", "{good}", "{truncated}"], "truncated.json:1: not valid JSON"),
        (["watch", "{missing}", "--once"], "is not a folder"),
        (["bisect", "{missing}"], "is not a folder"),
        (
            ["data", "fetch", "--archive", "{empty}", "--to", "{out}"],
            "is not a readable tar archive",
        ),
    ],
)
def test_every_cli_verb_answers_an_unreadable_input_in_one_line(tmp_path, argv, expected):
    (tmp_path / "empty.json").write_text("")
    (tmp_path / "truncated.json").write_text('{"schema_version": 1, "cases": [')
    (tmp_path / "good.json").write_text(json.dumps(stored_report([])))
    paths = {
        "empty": tmp_path / "empty.json",
        "truncated": tmp_path / "truncated.json",
        "good": tmp_path / "good.json",
        "missing": tmp_path / "nope",
        "out": tmp_path / "out",
    }
    proc = call_ctxgate(*[a.format(**paths) for a in argv], cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert expected in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        (
            "{% for m in messages %}{{ m.content }",
            "chat_template.jinja:1: the chat template does not parse",
        ),
        ("{{ raise_exception('no user turns here') }}", "fails on a one-message chat"),
    ],
)
def test_a_broken_chat_template_is_one_line_naming_its_file(real_suite, ckpt, template, expected):
    (ckpt / "chat_template.jinja").write_text(template)
    result = real_suite(
        "-k", "vt", "--lengths", "1k", "--samples", "1", "--chat-template", "on", model=ckpt
    )
    out = _one_line_error(result)
    assert (
        result.ret in (1, 2) and expected in out
    )  # refused before workers start (1), or when it loads (2)


# 4. Consent ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["pickle", "auto_map"])
def test_the_nli_model_passes_the_checks_of_model(real_suite, pytester, tmp_path, damage):
    nli = tmp_path / "nli"
    shutil.copytree(TINY, nli)
    if damage == "pickle":
        (nli / "model.safetensors").unlink()
        (nli / "pytorch_model.bin").write_bytes(b"not really a pickle")
        expected = "has only pickle weights"
    else:
        config = json.loads((nli / "config.json").read_text())
        config["auto_map"] = {"AutoModelForSequenceClassification": "modeling_x.XForNLI"}
        (nli / "config.json").write_text(json.dumps(config))
        expected = "auto_map names the checkpoint's own model code"
    result = real_suite("-k", "vt", "--lengths", "1k", "--nli-model", str(nli))
    assert result.ret == 4 and expected in result.stderr.str()


def test_a_report_whose_predictions_are_a_symlink_is_refused(tmp_path):
    outside = tmp_path / "outside.jsonl"
    outside.write_text('{"task": "vt", "length": 1024, "index": 0}\n')
    folder = tmp_path / "reports"
    folder.mkdir()
    report = stored_report(
        [{"task": "vt", "length": 1024, "verdict": "pass", "score": 1.0}],
        predictions="r.predictions.jsonl",
    )
    (folder / "r.json").write_text(json.dumps(report))
    (folder / "r.predictions.jsonl").symlink_to(outside)
    proc = call_ctxgate(
        "judge", str(folder / "r.json"), "--judge-model", "m",
        "--judge-base-url", "http://127.0.0.1:9/v1",
        cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 2 and "is a symbolic link" in proc.stderr, proc.stderr


# The rule itself
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cause", "floor", "baseline", "verdict"),
    [
        ("too_short", 90, True, "skip"),  # by design: never a failure
        ("data_not_given", 0, False, "skip"),
        ("data_not_given", 50, False, "error"),
        ("data_not_given", 0, True, "error"),
        ("judge_not_given", 0, False, "skip"),
        ("judge_not_given", 10, False, "error"),
        ("window", 0, False, "error"),
        ("data_unreadable", 0, False, "error"),
        ("judge_failed", 0, False, "error"),
    ],
)
def test_the_one_rule_for_a_case_without_a_score(cause, floor, baseline, verdict):
    from ctxgate.gate.verdicts import unscored_verdict

    assert unscored_verdict(cause, floor, baseline) == verdict


def test_every_cause_the_report_can_name_has_a_verdict():
    from ctxgate.gate.verdicts import unscored_verdict
    from ctxgate.records.io import report_schema
    from ctxgate.records.vocabulary import BROKEN, BY_DESIGN, NOT_GIVEN

    case = json.dumps(report_schema()["$defs"]["CaseRecord"]["properties"])
    for cause in (*BY_DESIGN, *NOT_GIVEN, *BROKEN):
        assert unscored_verdict(cause, 0, False) in ("skip", "error")
        assert f'"{cause}"' in case
    with pytest.raises(ValueError, match="unknown cause"):
        unscored_verdict("something_new", 0, False)


@pytest.mark.parametrize(
    ("change", "verb", "expected"),
    [
        (lambda r: r.pop("gates"), "html", "gates: Field required"),
        (
            lambda r: r["cases"].clear(),
            "html",
            "has no cases (its run selected none), so there is nothing to draw",
        ),
        (
            lambda r: r["cases"][0].update(score="80.0"),
            "html",
            "cases[0].score: Input should be a valid number (it is '80.0')",
        ),
        (
            lambda r: r["cases"][0].update(length="8k"),
            "html",
            "cases[0].length: Input should be a valid integer (it is '8k')",
        ),
        (
            lambda r: r["cases"][0].update(length="8k"),
            "published",
            "cases[0].length: Input should be a valid integer (it is '8k')",
        ),
    ],
    ids=["no-gates", "no-cases", "score-as-text", "length-as-text", "published-length-as-text"],
)
def test_a_report_that_does_not_fit_its_schema_is_one_line_naming_the_field(
    tmp_path, change, verb, expected
):
    report = stored_report(
        [{"task": "vt", "length": 8192, "verdict": "pass", "score": 80.0, "n": 2}]
    )
    change(report)
    (tmp_path / "r.json").write_text(json.dumps(report))
    argv = (
        ["html", "r.json"]
        if verb == "html"
        else ["published", "meta-llama/Llama-3.1-8B-Instruct", "--report", "r.json"]
    )
    proc = call_ctxgate(*argv, cwd=tmp_path)
    assert proc.returncode == 2 and expected in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not (tmp_path / "r.html").exists()
