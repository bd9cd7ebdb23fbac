"""A training run's folder as bisect and watch read it: its checkpoints in step order, and every
other folder named with why it has no place in the sequence."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ctxgate.backends.adapters import ADAPTER_CONFIG, ADAPTER_WEIGHTS
from ctxgate.backends.formats import kind_of, written
from ctxgate.backends.sharded import DCP_METADATA, FSDP_DIR_PREFIX, ZERO_STEP
from ctxgate.records.refusal import CtxgateError
from ctxgate.steps import training_step

# exit status of bisect and watch when checkpoints they could not open leave the answer open:
# bisect's first bad checkpoint is a range, watch skipped a checkpoint
SKIPPED = 5


class BisectError(CtxgateError, ValueError):
    """Unusable checkpoints or ends; the message says what to pass."""


def step_of(path: Path) -> int:
    step = training_step(path).value
    if step is None:
        raise BisectError(
            f"cannot order {path}: it has no trainer_state.json and its name no step number "
            "(expected e.g. checkpoint-1000)"
        )
    return step


def order_checkpoints(paths: Sequence[str | Path]) -> list[Path]:
    items = [Path(p) for p in paths]
    missing = [str(p) for p in items if not p.is_dir()]
    if missing:
        raise BisectError(
            f"{', '.join(missing[:3])} {'is' if len(missing) == 1 else 'are'} not a folder: give a "
            "folder of checkpoints (checkpoint-100/, checkpoint-200/, ...) or the checkpoint "
            "folders"
        )
    # a run folder: its checkpoints (a folder a training run keeps its config.json in too)
    if len(items) == 1:
        outside = left_out(items[0])
        items = sorted(p for p in items[0].iterdir() if p.is_dir() and p not in outside)
    if len(items) < 2:
        raise BisectError(
            "bisect needs at least two checkpoints (model folders, PEFT adapters, FSDP or "
            f"DeepSpeed checkpoints), found {len(items)} in {', '.join(map(str, paths))}"
        )
    steps = [step_of(p) for p in items]
    if len(set(steps)) != len(steps):
        raise BisectError(
            "two checkpoints share a step number: " + ", ".join(sorted(p.name for p in items))
        )
    return [p for _, p in sorted(zip(steps, items))]


def left_out(run: Path) -> dict[Path, str]:
    """Each folder of a run folder that is not in its sequence of checkpoints, with why."""
    folders = sorted(p for p in run.iterdir() if p.is_dir()) if run.is_dir() else []
    return {p: why for p in folders if (why := why_left_out(p)) is not None}


def why_left_out(folder: Path) -> str | None:
    """Why ``folder`` has no place in a run's sequence, read from what it holds; None: it has."""
    if written(folder):
        if training_step(folder).value is not None:
            return None
        return (
            "no trainer_state.json and no step number in its name, so no place in the order; "
            "rename it with its step (e.g. checkpoint-1000) to include it"
        )
    try:
        names = sorted(p.name for p in folder.iterdir())
    except FileNotFoundError:  # a run's save_total_limit rotates checkpoints while it is read
        return "removed while it was read (the run rotated it away)"
    unfinished = "the save did not finish or was copied in part; restore it from the run"
    if kind_of(folder) == "adapter":
        return f"{ADAPTER_CONFIG} without adapter weights ({ADAPTER_WEIGHTS[0]}): {unfinished}"
    if (folder / "config.json").is_file():
        return f"config.json without weights (model.safetensors, pytorch_model*.bin): {unfinished}"
    dirs = [n for n in names if (folder / n).is_dir()]
    fsdp = [n for n in dirs if n.startswith(FSDP_DIR_PREFIX)]
    if fsdp or any(n.endswith(".distcp") for n in names):
        shards = f"{fsdp[0]}/" if fsdp else "shards (*.distcp)"
        return (
            f"{shards} without {DCP_METADATA}, which a distributed save writes last: {unfinished}"
        )
    if weights := [n for n in names if n.endswith(".safetensors") or n.startswith("pytorch_model")]:
        return (
            f"weights ({', '.join(weights[:3])}) without config.json or {ADAPTER_CONFIG}: copy "
            "the config the run saved beside them to include it"
        )
    zero = [n for n in dirs if n.startswith(ZERO_STEP)]
    if zero := [n for n in zero if not any((folder / n).glob("*model_states.pt"))]:
        return f"{zero[0]}/ without *model_states.pt: {unfinished}"
    return (
        f"not a checkpoint (no config.json, {ADAPTER_CONFIG}, {DCP_METADATA} or {ZERO_STEP}*/ in "
        "it)"
    )
