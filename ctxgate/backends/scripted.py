"""A scripted backend for plumbing tests: no model, outputs decided by a JSON script.

    {"max_positions": 4096, "default": 1.0,
     "accuracy": {"niah_single_1": {"512": 1.0, "2048": 0.0}, "vt": {"*": 0.5}}}

For a case with accuracy p, sample i is answered right when floor((i + 1) * p) > floor(i * p), which spreads
round-down(p * n) right answers evenly over any n samples; the others get an empty string. It is never evidence that a feature works on a model.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

from ctxgate.backends.base import Generation, GenerationParams, Request
from ctxgate.textcodec import ByteTokenizer


class ScriptedBackend:
    name = "scripted"

    def __init__(self, script_path: str) -> None:
        path = Path(script_path)
        try:
            self.script = json.loads(path.read_text("utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"--backend scripted needs --model pointing at a JSON script; {path}: {exc}") from None
        self.tokenizer = ByteTokenizer()
        self.max_positions: int | None = self.script.get("max_positions")
        self.calls = 0

    def accuracy(self, task: str, length: int) -> float:
        table = self.script.get("accuracy", {}).get(task, {})
        return float(table.get(str(length), table.get("*", self.script.get("default", 1.0))))

    def generate(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        out = []
        for r in requests:
            self.calls += 1
            p = self.accuracy(r.task, r.length)
            right = math.floor((r.index + 1) * p + 1e-9) > math.floor(r.index * p + 1e-9)
            text = (" " + " ".join(r.answers)) if right else ""
            out.append(Generation(text, len(text.encode("utf-8")), "stop"))
        return out

    def describe(self) -> dict[str, object]:
        return {"backend": self.name, "script": self.script}
