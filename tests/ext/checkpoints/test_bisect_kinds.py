"""``ctxgate bisect`` on training runs of the checkpoint kinds this extra adds: a LoRA run whose
retrieval breaks at a known checkpoint, with checkpoints it cannot open searched around and folders
that hold no checkpoint named; an FSDP run with a shard cut short; and --config-from given for
Hugging Face folders."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ctxgate.cli import main
from ctxgate.ext.training.run_folder import SKIPPED
from tests.conftest import call_ctxgate

# a LoRA run of five checkpoints, checkpoint-100 .. -500, whose retrieval breaks at checkpoint-400
LORA = (
    "-k",
    "niah_single_1",
    "--lengths",
    "256",
    "--samples",
    "10",
    "--no-cache",
    "--tolerance",
    "5",
)


def test_a_flag_that_does_not_fit_the_checkpoints_is_a_usage_error_not_a_bad_checkpoint(
    checkpoint_sequence, capsys
):
    args = [
        "bisect",
        str(checkpoint_sequence),
        "-k",
        "niah_single_1",
        "--lengths",
        "256",
        "--no-cache",
    ]
    assert main([*args, "--config-from", str(checkpoint_sequence / "checkpoint-100")]) == 2
    err = capsys.readouterr().err
    assert "--config-from is for a sharded checkpoint" in err and "drop --config-from" in err


@pytest.fixture(scope="module")
def lora_sequence(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from fixtures.training_runs import adapter_sequence

    run = tmp_path_factory.mktemp("lora") / "run"
    adapter_sequence(run, count=5, break_at=3)
    return run


@pytest.fixture
def run_copy(lora_sequence: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(lora_sequence, tmp_path / "run"))


def bad_line(path: Path) -> int:
    """The line where JSON's own reader finds ``path`` broken."""
    try:
        json.loads(path.read_text("utf-8"))
    except json.JSONDecodeError as exc:
        return exc.lineno
    raise AssertionError(f"{path} is valid JSON")


def _bisect(run: Path, *args: str) -> tuple[int, str, str, dict]:
    done = call_ctxgate("bisect", str(run), *LORA, "--json", str(run.parent / "b.json"), *args)
    taken = json.loads((run.parent / "b.json").read_text()) if done.returncode in (0, 5) else {}
    return done.returncode, done.stdout, done.stderr, taken


def test_bisect_searches_around_checkpoints_it_cannot_open_and_names_every_folder_left_out(
    run_copy,
):
    """checkpoint-200's adapter weights cut short before the break, checkpoint-500's
    adapter_config.json cut mid-JSON after it: the first bad checkpoint is still checkpoint-400;
    a DCP save without .metadata, adapter_config.json without weights and a log folder are named."""
    from fixtures.training_runs import FSDP, damage

    damage(run_copy / "checkpoint-200", "weights")
    cut = damage(run_copy / "checkpoint-500", "config")
    (run_copy / "checkpoint-600" / FSDP).mkdir(parents=True)
    (run_copy / "checkpoint-600" / FSDP / "__0_0.distcp").write_bytes(b"\0" * 64)
    (run_copy / "checkpoint-700").mkdir()
    shutil.copy(run_copy / "checkpoint-100" / "adapter_config.json", run_copy / "checkpoint-700")
    (run_copy / "runs").mkdir()
    code, out, err, taken = _bisect(run_copy)
    assert code == 0, out + err
    assert Path(taken["first_bad"]).name == "checkpoint-400" and taken["first_bad_index"] == 3
    left = {Path(k).name: why for k, why in taken["left_out"].items()}
    assert sorted(left) == ["checkpoint-600", "checkpoint-700", "runs"]
    assert f"{FSDP}/ without .metadata" in left["checkpoint-600"]
    assert "adapter_config.json without adapter weights" in left["checkpoint-700"]
    assert "not a checkpoint" in left["runs"]
    lines = err.splitlines()
    for name in left:  # one line each, with why
        (line,) = [x for x in lines if f"{name} is not in the sequence" in x]
        assert line.endswith(left[name])
    verdicts = {Path(p["checkpoint"]).name: p["bad"] for p in taken["path"]}
    assert verdicts == {
        "checkpoint-100": False,
        "checkpoint-200": None,
        "checkpoint-300": False,
        "checkpoint-400": True,
        "checkpoint-500": None,
    }
    skipped = {Path(p["checkpoint"]).name: p["skipped"] for p in taken["path"] if p["skipped"]}
    assert "adapter_model.safetensors" in skipped["checkpoint-200"]
    assert "truncated" in skipped["checkpoint-200"] or "cut short" in skipped["checkpoint-200"]
    # the line where the cut falls: the config holds the base model's absolute path
    assert f"adapter_config.json:{bad_line(cut)}: not valid JSON" in skipped["checkpoint-500"]
    assert "checkpoint-200: SKIP  cannot be opened: " in out and "counts as bad" not in err
    assert out.splitlines()[-1].startswith(f"first bad checkpoint: {run_copy / 'checkpoint-400'}")


def test_a_checkpoint_that_cannot_be_opened_at_the_boundary_makes_the_answer_a_range(run_copy):
    """The real first bad checkpoint (checkpoint-400) cut short: the first bad is checkpoint-400 or
    checkpoint-500, said so, with bisect's own exit status."""
    from fixtures.training_runs import damage

    damage(run_copy / "checkpoint-400", "weights")
    code, out, err, taken = _bisect(run_copy)
    assert code == SKIPPED == 5, out + err
    assert taken["first_bad"] is None and taken["first_bad_index"] is None
    assert [Path(c).name for c in taken["candidates"]] == ["checkpoint-400", "checkpoint-500"]
    last = out.splitlines()[-1]
    assert last.startswith("first bad checkpoint: one of checkpoint-400, checkpoint-500 (a range")
    assert "checkpoint-400 could not be opened" in last and "restore it" in last
    assert f"{SKIPPED}, skipped checkpoints sit right before the first bad one" in " ".join(
        call_ctxgate("bisect", "--help").stdout.split()
    )


def test_bisect_refuses_when_the_good_checkpoint_cannot_be_opened(run_copy):
    from fixtures.training_runs import damage

    damage(run_copy / "checkpoint-100", "config")
    code, _, err, _ = _bisect(run_copy)
    assert code == 2 and err.count("\n") == 1
    assert "the good checkpoint checkpoint-100 cannot be evaluated" in err and "--good" in err


def test_bisect_skips_an_fsdp_checkpoint_whose_shard_is_cut_short(tmp_path):
    """A shard cut short passes the checks made before loading (they read .metadata) and fails the
    load: skipped too, and the first bad checkpoint (checkpoint-500) is still found."""
    from fixtures.training_runs import damage, sharded_sequence

    run = tmp_path / "run"
    sharded_sequence(run, count=5, break_at=4)
    damage(run / "checkpoint-300", "weights")
    code, out, err, taken = _bisect(run, "--allow-pickle")
    assert code == 0, out + err
    assert Path(taken["first_bad"]).name == "checkpoint-500"
    (probe,) = [p for p in taken["path"] if p["skipped"]]
    assert Path(probe["checkpoint"]).name == "checkpoint-300" and probe["bad"] is None
    assert "could not be loaded" in probe["skipped"] and taken["left_out"] == {}
