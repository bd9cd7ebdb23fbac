"""One rule for a checkpoint's training step (ctxgate/steps.py), read the same way by bisect, watch,
trend and the trackers: --step, then Trainer's trainer_state.json, then a step word in the folder's
name. The table runs it on the folders training runs really write (a Trainer run, an FSDP
checkpoint, a DeepSpeed ZeRO checkpoint) and on oddly named ones."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ctxgate.ext.training.run_folder import BisectError, step_of
from ctxgate.steps import training_step

STATE = "trainer_state.json"
NONE = "none"


# Hand-written folders with the files the step rule reads, laid out and named as the trainers write
# them (the real runs' folders give the same steps: test_adapters.py reads a LoRA Trainer run's,
# test_sharded.py a DeepSpeed ZeRO-3 run's). Training a run to read a number from a file it writes
# would add half a minute and prove nothing more about the rule.


def trainer_state(global_step: int) -> dict[str, object]:
    """trainer_state.json as transformers' Trainer saves it at ``global_step`` (save_steps 2, one
    log a step)."""
    return {
        "best_global_step": None,
        "best_metric": None,
        "best_model_checkpoint": None,
        "epoch": global_step / 8,
        "eval_steps": 500,
        "global_step": global_step,
        "is_hyper_param_search": False,
        "is_local_process_zero": True,
        "is_world_process_zero": True,
        "log_history": [
            {"epoch": s / 8, "grad_norm": 1.0, "learning_rate": 0.02, "loss": 5.0, "step": s}
            for s in range(1, global_step + 1)
        ],
        "logging_steps": 1,
        "max_steps": global_step,
        "num_input_tokens_seen": 0,  # unless the run counted them (include_num_input_tokens_seen)
        "num_train_epochs": 1,
        "save_steps": 2,
        "stateful_callbacks": {"TrainerControl": {"args": {"should_save": True}, "attributes": {}}},
        "total_flos": 1024.0,
        "train_batch_size": 2,
        "trial_name": None,
        "trial_params": None,
    }


def _empty(target: Path) -> None:
    target.mkdir()


def _trainer(target: Path) -> None:
    """A LoRA Trainer run's checkpoint-4/: the adapter, the optimizer's state and trainer_state.json
    saying step 4."""
    target.mkdir()
    for name in (
        "adapter_config.json",
        "adapter_model.safetensors",
        "optimizer.pt",
        "rng_state.pth",
        "scheduler.pt",
        "training_args.bin",
        "tokenizer.json",
        "tokenizer_config.json",
    ):
        (target / name).write_bytes(b"")
    (target / STATE).write_text(json.dumps(trainer_state(4), indent=2))


def _fsdp(target: Path) -> None:
    """Accelerate's FSDP save with SHARDED_STATE_DICT: pytorch_model_fsdp_0/ of
    torch.distributed.checkpoint files."""
    shards = target / "pytorch_model_fsdp_0"
    shards.mkdir(parents=True)
    (shards / ".metadata").write_bytes(b"")
    (shards / "__0_0.distcp").write_bytes(b"")


def _zero_files(tag: Path) -> None:
    """A one-process ZeRO-3 tag folder: the rank's model states and its partition of the
    optimizer's."""
    tag.mkdir(parents=True)
    (tag / "zero_pp_rank_0_mp_rank_00_model_states.pt").write_bytes(b"")
    (tag / "zero_pp_rank_0_mp_rank_00_optim_states.pt").write_bytes(b"")


def _zero(target: Path) -> None:
    """engine.save_checkpoint(target, tag="global_step2"): ``latest`` naming the tag, and the tag's
    folder."""
    _zero_files(target / "global_step2")
    (target / "latest").write_text("global_step2")
    (target / "config.json").write_text("{}")


def _zero_tag(target: Path) -> None:
    _zero_files(target)


Build = Callable[[Path], None]

# (what the folder holds, its name, the step, where the step comes from)
FOLDERS: list[tuple[Build, str, int | None, str]] = [
    (_trainer, "checkpoint-4", 4, STATE),  # Trainer
    (
        _trainer,
        "llama3-8b-long",
        4,
        STATE,
    ),  # a name with no step: trainer_state.json still gives it
    (
        _trainer,
        "checkpoint-1200",
        4,
        STATE,
    ),  # trainer_state.json disagrees with the name: the state wins
    (_fsdp, "step_300", 300, "name"),  # Accelerate's FSDP save: pytorch_model_fsdp_0/ of *.distcp
    (_fsdp, "llama3-8b", None, NONE),
    (_zero, "checkpoint-2", 2, "name"),  # DeepSpeed under Trainer: latest and global_step2/
    (_zero_tag, "global_step2", 2, "name"),  # DeepSpeed's tag folder itself
    (
        _zero,
        "zero-run",
        2,
        "DeepSpeed's latest (global_step2)",
    ),  # engine.save_checkpoint("zero-run/"): its latest
    (_empty, "checkpoint-1200", 1200, "name"),
    (_empty, "checkpoint-00500", 500, "name"),  # zero-padded
    (_empty, "global_step300", 300, "name"),  # DeepSpeed's tag word
    (_empty, "step_2000", 2000, "name"),  # Accelerate / FSDP / DCP scripts
    (_empty, "step-12", 12, "name"),
    (_empty, "epoch=2-step=1200", 1200, "name"),  # Lightning
    (_empty, "iter_0004000", 4000, "name"),  # Megatron
    (_empty, "run7_ckpt-900", 900, "name"),
    (_empty, "1500", 1500, "name"),
    (_empty, "step_2000_v2", 2000, "name"),  # a suffix after the step is no step
    (_empty, "llama3-8b", None, NONE),  # nor is a size or a version
    (_empty, "run-final", None, NONE),
    (_empty, "checkpoint-final", None, NONE),
    (_empty, "final", None, NONE),
]


@pytest.mark.parametrize(
    ("build", "name", "step", "source"),
    FOLDERS,
    ids=[f"{b.__name__.strip('_')}-{n}" for b, n, *_ in FOLDERS],
)
def test_a_checkpoint_folder_gives_its_step_by_the_one_rule(tmp_path, build, name, step, source):
    folder = tmp_path / name
    build(folder)
    found = training_step(folder)
    said = f"the folder's name ({name})" if source == "name" else source
    assert (found.value, found.source) == (step, said)
    assert training_step(str(folder)) == found
    if step is None:
        with pytest.raises(BisectError, match="no step number"):
            step_of(folder)
    else:
        assert step_of(folder) == step
    assert training_step(folder, 7).value == 7  # --step says otherwise: the user's word


@pytest.mark.parametrize(
    "state", ["{not json", json.dumps([1, 2]), json.dumps({"global_step": True})]
)
def test_an_unreadable_trainer_state_leaves_the_name_to_decide(tmp_path, state):
    folder = tmp_path / "checkpoint-50"
    folder.mkdir()
    (folder / "trainer_state.json").write_text(state)
    assert training_step(folder).value == 50
