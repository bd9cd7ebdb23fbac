"""The training step a checkpoint belongs to: one rule for bisect, watch, trend and the trackers.

An explicit ``--step`` wins. Then Trainer's ``trainer_state.json`` (``global_step``, and
``num_input_tokens_seen`` when the run counted tokens), when the folder has one. Then the folder's
name, where a step follows a word the trainers write: ``checkpoint-1200`` (Trainer),
``global_step1200`` (DeepSpeed), ``step_1200`` or ``step-1200`` (Accelerate, FSDP and DCP scripts),
``step=1200`` (Lightning), ``iter_0001200`` (Megatron), ``ckpt-1200``; the last such word counts. A
name that is only digits is that step. Any other number in a name is not a step: ``llama3-8b`` has
none, and ``step_2000_v2`` is step 2000. Last, for a DeepSpeed folder saved under a name of the
user's (``engine.save_checkpoint("zero-run/")``), the tag its ``latest`` file names
(``global_step1200``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

_NAMED = re.compile(r"(?:checkpoint|global_step|step|iter|ckpt)[-_=]?(\d+)(?!\d)", re.IGNORECASE)
TRAINER_STATE = "trainer_state.json"
ZERO_LATEST = "latest"  # DeepSpeed's pointer to the newest tag in a checkpoint folder


@dataclass(frozen=True)
class Step:
    value: int | None
    source: str  # where it came from: --step, trainer_state.json, the folder's name, or none
    tokens_seen: int | None = None


def step_in_name(name: str) -> int | None:
    """The step a checkpoint folder's name gives, or None."""
    if name.isdigit():
        return int(name)
    found = _NAMED.findall(name)
    return int(found[-1]) if found else None


def training_step(folder: str | Path | None, given: int | None = None) -> Step:
    """``given`` (``--step``), else ``trainer_state.json`` in ``folder``, else ``folder``'s name."""
    path = Path(folder) if folder else None
    state = _trainer_state(path) if path is not None else {}
    seen = state.get("num_input_tokens_seen")
    tokens = (
        int(seen)
        if isinstance(seen, (int, float)) and not isinstance(seen, bool) and seen > 0
        else None
    )
    if given is not None:
        return Step(given, "--step", tokens)
    step = state.get("global_step")
    if isinstance(step, int) and not isinstance(step, bool) and step >= 0:
        return Step(step, TRAINER_STATE, tokens)
    if path is not None and (named := step_in_name(path.resolve().name)) is not None:
        return Step(named, f"the folder's name ({path.name})", tokens)
    tag = zero_latest(path) if path is not None else None
    if tag is not None and (tagged := step_in_name(tag)) is not None:
        return Step(tagged, f"DeepSpeed's {ZERO_LATEST} ({tag})", tokens)
    return Step(None, "none", tokens)


def zero_latest(folder: Path) -> str | None:
    """The tag DeepSpeed's ``latest`` file in ``folder`` names, when it names a folder beside it;
    else None."""
    try:
        tag = (folder / ZERO_LATEST).read_text("utf-8", errors="replace").strip()
    except OSError:
        return None
    return tag if tag and "/" not in tag and (folder / tag).is_dir() else None


def _trainer_state(folder: Path) -> dict[str, object]:
    try:
        state = json.loads((folder / TRAINER_STATE).read_text("utf-8"))
    except (OSError, ValueError):  # none, unreadable or torn: the name decides
        return {}
    return state if isinstance(state, dict) else {}
