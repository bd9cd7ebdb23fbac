"""Checkpoint checks before loading (ctxgate/backends/checkpoint.py), the fingerprint's coverage of
checkpoint code, and samples built as they are generated."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxgate.backends.checkpoint import (
    CheckpointError,
    ModelNotFound,
    check_checkpoint,
    check_safetensors,
    resolve_model,
)
from ctxgate.backends.fingerprint import checkpoint_fingerprint
from tests.conftest import TINY

SIZE = (TINY / "model.safetensors").stat().st_size


@pytest.fixture
def ckpt(tmp_path: Path) -> Path:
    target = tmp_path / "ckpt"
    shutil.copytree(TINY, target, ignore=shutil.ignore_patterns("training_log.json"))
    return target


def test_the_shipped_checkpoint_passes(ckpt):
    check_checkpoint(ckpt)


@settings(max_examples=30, deadline=None)
@given(keep=st.integers(min_value=0, max_value=SIZE - 1))
def test_any_truncation_of_the_weights_is_caught(tmp_path_factory, keep):
    path = tmp_path_factory.mktemp("cut") / "model.safetensors"
    path.write_bytes((TINY / "model.safetensors").read_bytes()[:keep])
    with pytest.raises(CheckpointError, match="re-copy the file"):
        check_safetensors(path)


def test_a_header_that_is_json_but_not_tensors_is_refused(tmp_path):
    path = tmp_path / "model.safetensors"
    path.write_bytes((2).to_bytes(8, "little") + b"[]")
    with pytest.raises(CheckpointError, match="not a table of tensors"):
        check_safetensors(path)


def test_missing_shards_are_named(ckpt):
    (ckpt / "model.safetensors").rename(ckpt / "model-00001-of-00002.safetensors")
    (ckpt / "model.safetensors.index.json").write_text(
        json.dumps(
            {
                "weight_map": {
                    "a": "model-00001-of-00002.safetensors",
                    "b": "model-00002-of-00002.safetensors",
                }
            }
        )
    )
    with pytest.raises(CheckpointError, match="model-00002-of-00002.safetensors is not in"):
        check_checkpoint(ckpt)


def test_pickle_only_weights_need_the_flag(ckpt):
    (ckpt / "model.safetensors").rename(ckpt / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="--allow-pickle"):
        check_checkpoint(ckpt)
    check_checkpoint(ckpt, allow_pickle=True)


def test_a_run_folder_is_not_a_checkpoint_and_says_which_are(tmp_path, ckpt):
    from ctxgate.backends.formats import locate

    adapter = tmp_path / "adapter-10"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text('{"peft_type": "LORA"}')
    with pytest.raises(
        CheckpointError, match=r"is a training run.*\(adapter-10, ckpt, \.\.\.\); pass one of them"
    ):
        locate(tmp_path)


def test_a_model_name_that_is_no_folder_nor_in_the_hub_cache_says_so_in_one_line(
    tmp_path, monkeypatch
):
    from ctxgate.backends.checkpoint import ModelNotFound, resolve_model

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(ModelNotFound, match="no-such-org/no-such-model"):
        resolve_model("no-such-org/no-such-model")


def test_own_model_code_needs_a_decision(ckpt):
    config = json.loads((ckpt / "config.json").read_text())
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_mine.MineForCausalLM"}
    (ckpt / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="would run its built-in 'llama' class instead"):
        check_checkpoint(ckpt)
    check_checkpoint(ckpt, ignore_remote_code=True)
    with pytest.raises(CheckpointError, match="modeling_mine.py, which is not in"):
        check_checkpoint(ckpt, trust_remote_code=True)
    (ckpt / "modeling_mine.py").write_text("# the checkpoint's own code\n")
    check_checkpoint(ckpt, trust_remote_code=True)


def test_editing_the_checkpoints_code_changes_its_fingerprint(ckpt):
    (ckpt / "modeling_mine.py").write_text("SCALE = 1.0\n")
    before = checkpoint_fingerprint(str(ckpt))["sha256"]
    (ckpt / "modeling_mine.py").write_text("SCALE = 2.0\n")
    assert checkpoint_fingerprint(str(ckpt))["sha256"] != before


def test_names_resolve_without_the_network(tmp_path, monkeypatch, ckpt):
    import socket

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a connection was attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.chdir(tmp_path)
    assert resolve_model("ckpt") == Path("ckpt")
    with pytest.raises(ModelNotFound, match="no folder of that name in .*no hub model 'org/model'"):
        resolve_model("org/model")
    with pytest.raises(ModelNotFound, match="does not exist"):
        resolve_model("./nope/ckpt")
    with pytest.raises(ModelNotFound, match="is a file"):
        resolve_model(str(ckpt / "config.json"))


def test_a_cached_hub_model_resolves_to_its_snapshot(tmp_path, monkeypatch):
    """The hub cache's own layout (models--org--name/snapshots/REV), found offline."""
    cache = tmp_path / "hub"
    snapshot = cache / "models--org--tiny" / "snapshots" / "0123abcd"
    shutil.copytree(TINY, snapshot)
    (cache / "models--org--tiny" / "refs").mkdir()
    (cache / "models--org--tiny" / "refs" / "main").write_text("0123abcd")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(cache))
    assert resolve_model("org/tiny") == snapshot


def test_samples_are_built_as_they_are_generated(hf_encoder):
    """A huge --samples would otherwise build every prompt before the first generation (memory, then
    nothing)."""
    from ctxgate.backends.base import Generation
    from ctxgate.run.case import Session, run_case
    from ctxgate.tasks import BuildContext, get_task

    built: list[int] = []
    spec = get_task("niah_single_1")

    class Counting:
        name, max_positions = "count", None

        def generate(self, requests, params):
            built.append(len(seen))
            return [Generation("x", 1, "stop")]

        def describe(self):
            return {}

    seen: list[int] = []
    original = spec.build

    def build(ctx, job):
        seen.append(job.index)
        return original(ctx, job)

    ctx = BuildContext(encoder=hf_encoder, chat=False, seed=42)
    result = run_case(replace(spec, build=build), Session(Counting(), ctx), 1024, 5)
    assert result.n == 5 and built == [1, 2, 3, 4, 5]
