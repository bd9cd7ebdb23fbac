"""The training step a checkpoint belongs to: one rule for bisect, watch, trend and the trackers.

An explicit ``--step`` wins; then Trainer's ``trainer_state.json`` (``global_step``, and
``num_input_tokens_seen`` when counted); then the folder's name, where a step follows the last word
a trainer writes (``checkpoint-1200``, ``global_step1200``, ``step_1200``, ``step-1200``,
``step=1200``, ``iter_0001200``, ``ckpt-1200``) or is the whole name (any other number is none:
``llama3-8b``); last, the tag DeepSpeed's ``latest`` file names, for a folder of the user's name.
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
    if name.isdigit():
        return int(name)
    found = _NAMED.findall(name)
    return int(found[-1]) if found else None


def training_step(folder: str | Path | None, given: int | None = None) -> Step:
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
    """The tag DeepSpeed's ``latest`` file in ``folder`` names, when it is a folder beside it."""
    try:
        tag = (folder / ZERO_LATEST).read_text("utf-8", errors="replace").strip()
    except OSError:
        return None
    return tag if tag and "/" not in tag and (folder / tag).is_dir() else None


def _trainer_state(folder: Path) -> dict[str, object]:
    try:
        state = json.loads((folder / TRAINER_STATE).read_text("utf-8"))
    except (OSError, ValueError, RecursionError):  # none, unreadable, torn: the name decides
        return {}
    return state if isinstance(state, dict) else {}
