"""One rule for a checkpoint's training step (ctxgate/steps.py), read the same way by bisect, watch, trend and the
trackers: --step, then Trainer's trainer_state.json, then a step word in the folder's name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxgate.steps import training_step
from ctxgate.workflows.bisect import BisectError, step_of


@pytest.fixture(scope="module")
def trainer_run(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """A real LoRA run of transformers' Trainer: checkpoint-2/ and checkpoint-4/, each with its trainer_state.json."""
    from fixtures.training_runs import lora_run

    return lora_run(tmp_path_factory.mktemp("trainer") / "run", steps=4, save_every=2)


NAMES = [
    ("checkpoint-1200", 1200),  # Trainer
    ("global_step300", 300),  # DeepSpeed's tag folders
    ("step_2000", 2000),  # Accelerate / FSDP / DCP scripts
    ("step-12", 12),
    ("epoch=2-step=1200", 1200),  # Lightning
    ("iter_0004000", 4000),  # Megatron
    ("run7_ckpt-900", 900),
    ("1500", 1500),
    ("step_2000_v2", 2000),  # a suffix after the step is no step
    ("llama3-8b", None),  # nor is a size or a version
    ("checkpoint-final", None),
    ("final", None),
]


@pytest.mark.parametrize(("name", "step"), NAMES)
def test_a_folder_name_gives_its_step_word_or_none(tmp_path, name, step):
    folder = tmp_path / name
    folder.mkdir()
    assert training_step(folder).value == step
    if step is None:
        with pytest.raises(BisectError, match="no step number"):
            step_of(folder)
    else:
        assert step_of(folder) == step


def test_trainer_state_comes_before_the_name(trainer_run, tmp_path):
    for checkpoint in trainer_run:
        state = json.loads((checkpoint / "trainer_state.json").read_text())
        assert training_step(checkpoint) == training_step(str(checkpoint))
        assert (training_step(checkpoint).value, training_step(checkpoint).source) == (
            state["global_step"],
            "trainer_state.json",
        )
    renamed = tmp_path / "llama3-8b-long"  # a name with no step: trainer_state.json still gives it
    trainer_run[-1].rename(renamed)
    assert step_of(renamed) == 4
    assert training_step(renamed, 7).value == 7  # --step says otherwise: the user's word


@pytest.mark.parametrize("state", ["{not json", json.dumps([1, 2]), json.dumps({"global_step": True})])
def test_an_unreadable_trainer_state_leaves_the_name_to_decide(tmp_path, state):
    folder = tmp_path / "checkpoint-50"
    folder.mkdir()
    (folder / "trainer_state.json").write_text(state)
    assert training_step(folder).value == 50


def test_a_sharded_checkpoint_folder_is_read_by_its_name(tmp_path):
    from fixtures.training_runs import fsdp_sharded

    folder = fsdp_sharded(tmp_path / "step_300")
    assert step_of(folder) == training_step(folder).value == 300
