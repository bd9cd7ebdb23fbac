"""An adapter folder's own files, read through the checkpoint's one door before anything loads: its
adapter_config.json, the tokenizer files saved beside it, and a config.json or a whole model's
weights beside it. Each refusal is one line naming
the file or the flag, what is wrong and the fix."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from ctxgate.backends.checkpoint import CheckpointError
from ctxgate.backends.formats import Checkpoint, WrongFlag, locate
from ctxgate.ext.checkpoints.settings import NAME, CheckpointOptions
from tests.conftest import TINY

CASES = ("-k", "vt", "--lengths", "1k", "--samples", "1", "--no-cache")


def _located(folder: Path, base_model: str) -> Checkpoint:
    """``folder`` located as with ``--base-model base_model``."""
    return locate(folder, extras={NAME: CheckpointOptions(base_model=base_model)})


# an adapter folder with a config.json -------------------------------------------------------------


def _adapter(folder: Path, *, config: bool = False) -> Path:
    """An adapter folder as PEFT saves one on the shipped checkpoint (weights: a header with no
    tensors, enough for the checks before loading); ``config``: the base's config.json beside it,
    as some trainers save it."""
    folder.mkdir(parents=True)
    adapter = {"peft_type": "LORA", "base_model_name_or_path": str(TINY), "r": 4}
    (folder / "adapter_config.json").write_text(json.dumps(adapter))
    (folder / "adapter_model.safetensors").write_bytes(struct.pack("<Q", 2) + b"{}")
    if config:
        shutil.copy(TINY / "config.json", folder)
    return folder


def test_an_adapter_folder_with_a_config_json_is_read_as_the_adapter_as_peft_does(tmp_path):
    found = locate(_adapter(tmp_path / "adapter", config=True))
    assert found.kind == "adapter" and found.part is not None
    assert found.part.base == TINY and found.config_dir == TINY


def test_an_adapter_folder_with_a_whole_models_weights_names_both_readings(tmp_path):
    folder = _adapter(tmp_path / "adapter", config=True)
    shutil.copy(TINY / "model.safetensors", folder)
    with pytest.raises(WrongFlag) as refused:
        locate(folder)
    assert str(refused.value).startswith(
        f"{folder} holds a PEFT adapter (adapter_config.json) and a whole model's weights: PEFT "
        "reads it as the adapter on the base its config names, transformers as the adapter on the "
        "weights beside it. Pass --base-model"
    )
    shutil.copy(TINY / "tokenizer.json", folder)
    on_its_own = _located(folder, str(folder))
    assert on_its_own.part is not None and on_its_own.part.base == folder
    assert _located(folder, str(TINY)).config_dir == TINY


def test_the_files_saved_beside_an_adapter_pass_the_same_door(tmp_path):
    folder = _adapter(tmp_path / "adapter")
    (folder / "vocab.json").write_text('{"a": 0}')  # its own tokenizer, saved in part
    with pytest.raises(CheckpointError, match=f"{folder} has vocab.json but not merges.txt"):
        locate(folder)
    (folder / "vocab.json").unlink()
    (folder / "tokenizer_config.json").write_bytes(b"\xff\xfe{}")
    with pytest.raises(CheckpointError, match=r"tokenizer_config.json: not UTF-8 text"):
        locate(folder)


def test_pytest_refuses_the_two_readings_as_a_usage_error(real_suite, tmp_path):
    folder = _adapter(tmp_path / "adapter", config=True)
    shutil.copy(TINY / "model.safetensors", folder)
    result = real_suite(*CASES, model=folder)
    err = result.stderr.str()
    assert result.ret == 4 and "Traceback" not in err + result.stdout.str()
    assert f"ERROR: {folder} holds a PEFT adapter" in err


def test_an_adapter_config_that_is_no_json_object_names_it(tmp_path):
    folder = _adapter(tmp_path / "adapter")
    (folder / "adapter_config.json").write_bytes(b'{"peft_type": ' * 50_000)
    with pytest.raises(CheckpointError, match=r"adapter_config.json: not readable JSON \(nested"):
        locate(folder)
    (folder / "adapter_config.json").write_text('"LORA"')
    with pytest.raises(CheckpointError, match="holds a JSON string, not a JSON object: restore it"):
        locate(folder)
