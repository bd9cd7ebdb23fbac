"""A training run's folder as bisect and watch read it: its checkpoints in step order, and every
other folder named with why it has no place in the sequence."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ctxgate.api import CtxgateError, checkpoint_kinds, checkpoint_written, training_step

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
        kinds = ", ".join(["model folders", *(k.described for k in checkpoint_kinds())])
        raise BisectError(
            f"bisect needs at least two checkpoints ({kinds}), found {len(items)} in "
            f"{', '.join(map(str, paths))}"
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
    if checkpoint_written(folder):
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
    kinds = checkpoint_kinds()
    for kind in kinds:  # what a save of an extra's kind cut short left
        if (left := kind.unfinished(folder, names)) is not None:
            return f"{left}: {unfinished}"
    if (folder / "config.json").is_file():
        return f"config.json without weights (model.safetensors, pytorch_model*.bin): {unfinished}"
    if weights := [n for n in names if n.endswith(".safetensors") or n.startswith("pytorch_model")]:
        configs = " or ".join(["config.json", *(c for k in kinds for c in k.configs)])
        return (
            f"weights ({', '.join(weights[:3])}) without {configs}: copy the config the run saved "
            "beside them to include it"
        )
    marks = ["config.json", *(m for k in kinds for m in k.marks)]
    listed = f"{', '.join(marks[:-1])} or {marks[-1]}" if len(marks) > 1 else marks[0]
    return f"not a checkpoint (no {listed} in it)"
