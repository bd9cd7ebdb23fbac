"""Sharded training checkpoints as --model: an FSDP-style torch distributed checkpoint (written with
torch.distributed.checkpoint in one process, as Accelerate lays it out) predicts as the Hugging Face
folder it was saved from, and a DeepSpeed ZeRO-3 checkpoint (a real one-process DeepSpeed run) as
the folder of the weights DeepSpeed gathers; a missing config, shard, tensor, extra or consent is
one line each, before any model loads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import TINY

CASES = ("-k", "niah_single_1", "--lengths", "1k", "--samples", "4", "--no-cache")


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``run/checkpoint-10/pytorch_model_fsdp_0`` with the tokenizer beside the shards and
    config.json in ``run/``, where a training run keeps it."""
    from fixtures.training_runs import fsdp_sharded

    run = tmp_path_factory.mktemp("run")
    fsdp_sharded(run / "checkpoint-10")
    shutil.copy(TINY / "config.json", run / "config.json")
    return run


def _predictions(report: Path) -> list[str]:
    rows = report.with_suffix(".predictions.jsonl").read_text().splitlines()
    return [json.loads(line)["prediction"] for line in rows if line.strip()]


def _out(result: pytest.RunResult) -> str:
    out = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in out, out[-3000:]
    return out


def test_a_distributed_checkpoint_predicts_as_its_hugging_face_folder(
    run_folder, real_suite, pytester
):
    sharded = real_suite(
        *CASES, "--allow-pickle", "--report", "sharded.json", model=run_folder / "checkpoint-10"
    )
    assert sharded.ret == 0, sharded.stdout.str()[-2000:]
    folder = real_suite(*CASES, "--report", "folder.json", model=TINY)
    assert folder.ret == 0
    assert _predictions(pytester.path / "sharded.json") == _predictions(
        pytester.path / "folder.json"
    )
    run = json.loads((pytester.path / "sharded.json").read_text())["run"]
    assert run["backend"]["checkpoint"]["format"] == "torch_distributed_checkpoint"
    assert run["backend"]["checkpoint"]["config"] == str(run_folder)


class _Payload:
    """Unpickled, it writes a file: what a hostile .metadata could do instead."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "ran"))


def test_a_distributed_checkpoint_asks_consent_before_its_pickled_metadata_is_read(
    run_folder, real_suite, tmp_path
):
    import pickle

    hostile = tmp_path / "run"
    shutil.copytree(run_folder, hostile)
    marker = tmp_path / "marker"
    (hostile / "checkpoint-10" / "pytorch_model_fsdp_0" / ".metadata").write_bytes(
        pickle.dumps(_Payload(marker))
    )
    result = real_suite(*CASES, model=hostile / "checkpoint-10")
    out = _out(result)
    assert result.ret != 0 and not marker.exists()
    assert (
        "whose .metadata is a pickle that can run code when loaded: pass --allow-pickle if you "
        "trust it" in out
    )


def test_a_distributed_checkpoint_without_its_config_names_the_flag(
    run_folder, real_suite, tmp_path
):
    alone = tmp_path / "checkpoint-10"
    shutil.copytree(run_folder / "checkpoint-10", alone)
    out = _out(real_suite(*CASES, model=alone))
    assert (
        "is a torch distributed checkpoint without the model's config.json" in out
        and "--config-from" in out
    )
    fixed = real_suite(*CASES, "--allow-pickle", "--config-from", str(TINY), model=alone)
    assert fixed.ret == 0, fixed.stdout.str()[-2000:]


def test_a_missing_shard_is_named(run_folder, real_suite, tmp_path):
    broken = tmp_path / "run"
    shutil.copytree(run_folder, broken)
    next((broken / "checkpoint-10" / "pytorch_model_fsdp_0").glob("*.distcp")).unlink()
    out = _out(real_suite(*CASES, "--allow-pickle", model=broken / "checkpoint-10"))
    assert (
        "__0_0.distcp is missing (named by .metadata)" in out
        and "restore it from the training run" in out
    )


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            ("num_hidden_layers", 2),
            ("tensor model.model.layers.2.", "is in the checkpoint but not in the model built"),
        ),
        (
            ("intermediate_size", 1024),
            ("mlp.gate_proj.weight is (512, 128) in the checkpoint and (1024, 128) in",),
        ),
    ],
    ids=["fewer-layers", "wider-mlp"],
)
def test_a_config_of_another_model_is_refused_naming_a_tensor(
    run_folder, real_suite, tmp_path, change, said
):
    other = tmp_path / "other"
    other.mkdir()
    config = json.loads((TINY / "config.json").read_text())
    config[change[0]] = change[1]
    (other / "config.json").write_text(json.dumps(config))
    result = real_suite(
        *CASES, "--allow-pickle", "--config-from", str(other), model=run_folder / "checkpoint-10"
    )
    out = _out(result)
    assert result.ret != 0 and all(part in out for part in said), out[-2000:]


@pytest.fixture(scope="module")
def zero_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    pytest.importorskip(
        "deepspeed", reason="DS_BUILD_OPS=0 pip install --no-build-isolation deepspeed"
    )
    from fixtures.training_runs import deepspeed_zero

    return deepspeed_zero(tmp_path_factory.mktemp("zero"))


def test_a_deepspeed_checkpoint_predicts_as_the_weights_deepspeed_gathers(
    zero_run, real_suite, pytester
):
    checkpoint, gathered = zero_run
    assert not any(checkpoint.glob("*.safetensors"))  # ZeRO-3: only each rank's partition was saved
    zero = real_suite(*CASES, "--allow-pickle", "--report", "zero.json", model=checkpoint)
    assert zero.ret == 0, zero.stdout.str()[-2000:]
    assert real_suite(*CASES, "--report", "gathered.json", model=gathered).ret == 0
    assert real_suite(*CASES, "--report", "tiny.json", model=TINY).ret == 0
    predicted = _predictions(pytester.path / "zero.json")
    assert predicted == _predictions(pytester.path / "gathered.json")
    assert predicted != _predictions(
        pytester.path / "tiny.json"
    )  # the training steps changed the weights
    run = json.loads((pytester.path / "zero.json").read_text())["run"]
    assert run["backend"]["checkpoint"]["format"] == "deepspeed_zero"
    assert run["backend"]["checkpoint"]["shards"] == str(checkpoint / "global_step2")


def test_the_deepspeed_runs_checkpoint_gives_its_step_by_its_name_its_tag_and_its_latest(
    zero_run, tmp_path
):
    """The real run behind tests/test_steps.py's hand-written ZeRO folders: the checkpoint folder,
    its tag folder, and the folder under a name of the user's (the step then comes from ``latest``).
    """
    from ctxgate.steps import training_step

    checkpoint, _ = zero_run
    tag = checkpoint / "global_step2"
    assert (checkpoint / "latest").read_text().strip() == tag.name
    assert list(tag.glob("*_model_states.pt")) and list(tag.glob("*_optim_states.pt")), sorted(
        tag.iterdir()
    )
    assert training_step(checkpoint).value == training_step(tag).value == 2
    renamed = tmp_path / "zero-run"
    shutil.copytree(checkpoint, renamed, symlinks=True)
    assert (training_step(renamed).value, training_step(renamed).source) == (
        2,
        "DeepSpeed's latest (global_step2)",
    )


def test_a_deepspeed_checkpoint_asks_consent_and_names_a_missing_partition(
    zero_run, real_suite, tmp_path
):
    checkpoint, _ = zero_run
    out = _out(real_suite(*CASES, model=checkpoint))
    assert (
        "is a DeepSpeed ZeRO checkpoint, whose *.pt files are pickles" in out
        and "--allow-pickle" in out
    )
    broken = tmp_path / "checkpoint-2"
    shutil.copytree(checkpoint, broken)
    next((broken / "global_step2").glob("*optim_states.pt")).unlink()
    out = _out(real_suite(*CASES, "--allow-pickle", model=broken))
    assert (
        "has no *optim_states.pt (ZeRO keeps the fp32 weights there)" in out and "restore it" in out
    )


def _zero_folder(root: Path, *, config: bool = True) -> Path:
    folder = root / "checkpoint-5"
    (folder / "global_step5").mkdir(parents=True)
    (folder / "global_step5" / "mp_rank_00_model_states.pt").write_bytes(b"\0")
    (folder / "global_step5" / "zero_pp_rank_0_mp_rank_00_optim_states.pt").write_bytes(b"\0")
    (folder / "latest").write_text("global_step5")
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json") if config else ():
        shutil.copy(TINY / name, folder / name)
    return folder


def test_without_deepspeed_its_checkpoint_names_the_extra(tmp_path, monkeypatch):
    import importlib.util

    from ctxgate.backends.checkpoint import CheckpointError
    from ctxgate.backends.formats import locate

    folder = _zero_folder(tmp_path)
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "deepspeed" else real(name, *a),
    )
    with pytest.raises(
        CheckpointError,
        match=r"the deepspeed extra \(DS_BUILD_OPS=0 pip install --no-build-isolation",
    ):
        locate(folder, allow_pickle=True)


def test_a_deepspeed_folder_with_hugging_face_weights_loads_those(tmp_path):
    from ctxgate.backends.formats import locate

    folder = _zero_folder(tmp_path)
    shutil.copy(TINY / "model.safetensors", folder / "model.safetensors")
    assert locate(folder).kind == "hf"  # what Trainer saves beside a ZeRO-1/2 checkpoint


def test_a_cut_short_shard_is_one_line(run_folder, real_suite, tmp_path):
    broken = tmp_path / "run"
    shutil.copytree(run_folder, broken)
    shard = next((broken / "checkpoint-10" / "pytorch_model_fsdp_0").glob("*.distcp"))
    with shard.open("r+b") as f:
        f.truncate(shard.stat().st_size // 2)
    out = _out(real_suite(*CASES, "--allow-pickle", model=broken / "checkpoint-10"))
    assert (
        "could not be read (RuntimeError: " in out
        and "a shard is damaged or was cut short; restore it" in out
    )


def test_device_map_is_refused_for_a_sharded_checkpoint_before_anything_loads(tmp_path):
    """The model is built from its config and filled from the shards in memory: no device map."""
    from ctxgate.backends.formats import Checkpoint
    from ctxgate.backends.hf import BackendError, HFBackend, HFSettings
    from ctxgate.ext.checkpoints.kinds import ShardedPart
    from ctxgate.ext.checkpoints.sharded import DistributedCheckpoint

    part = ShardedPart(DistributedCheckpoint(tmp_path, tmp_path, TINY))
    with pytest.raises(BackendError) as refused:
        HFBackend(Checkpoint(tmp_path, TINY, TINY, part), HFSettings(device_map="auto"))
    assert str(refused.value) == (
        f"{tmp_path}: --device-map is not available for a sharded training checkpoint"
    )
