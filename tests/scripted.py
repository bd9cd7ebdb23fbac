"""A scripted backend for plumbing tests: no model, outputs decided by a JSON script. The suite runs
on it as on any backend of one's own, ``--backend tests.scripted:ScriptedBackend --model
SCRIPT.json`` (``SCRIPTED`` in conftest).

    {"max_positions": 4096, "default": 1.0,
     "accuracy": {"niah_single_1": {"512": 1.0, "2048": 0.0}, "vt": {"*": 0.5}},
     "calls_log": "calls.txt", "sleep": 0.0, "tokenizer": "fixtures/tiny-llama-niah"}

``tokenizer`` (optional, a folder, relative to the script's): prompts are built with that tokenizer,
as for the checkpoint it belongs to, instead of one token per byte; still no model runs.

``offset`` shifts which samples are answered right without changing the rate (run-to-run noise, for
tests). ``calls_log`` (optional) gets one line per generation, flushed at once, so tests can count
what was generated (and what a cache spared): task, length, index, xdist worker, and how many
generations were in flight when it started (``concurrency`` lets the runner send that many at once);
``sleep`` slows each call down, so a test can kill a run mid-case; ``raise``
(``{"vt": {"*": "message"}}``) makes a case's generations fail with that message, as a broken
backend would, and ``kill`` (``{"vt": {"*": true}}``, or a sample's index, ``{"vt": {"*": 3}}``)
kills the process running the case, as the kernel's OOM killer would.

For a case with accuracy p, sample i is answered right when floor((i + 1) * p) > floor(i * p), which
spreads round-down(p * n) right answers evenly over any n samples; the others get an empty string. A
right answer is what the task's metric scores in full, from the sample's references: the backend
builds the sample again, from the request's task, length and index and the run's options, as the
suite built it (the suite never hands a backend the gold). It is never evidence that a feature works
on a model.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import signal
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxgate.backends.base import Generation, GenerationParams, Request
from ctxgate.metrics import helmet
from ctxgate.run.facts import prompts
from ctxgate.run.loading import ModelSpec
from ctxgate.tasks.base import BuildContext
from ctxgate.tasks.build import build_sample
from ctxgate.tasks.registry import get_task
from ctxgate.tokens.chat import ChatTurns
from ctxgate.tokens.tokenizers import HFTokenizer, RawTokenizer


def right(metric: str, references: Sequence[str]) -> str:
    """An output ``metric`` scores in full, from a sample's references."""
    if metric == "ndcg_at_10":  # the passages by falling relevance
        qrels = helmet.qrels_from_references(references)
        return " " + " > ".join(sorted(qrels, key=lambda pid: -qrels[pid]))
    if metric in (
        "babilong_match",
        "mrcr_ratio",
        "nolima_one_name",
    ):  # the target (the rest are the rule's); the answer, string first; the gold name
        return references[0]
    if metric.startswith("graphwalks_"):  # the answer's nodes (its one reference, a JSON list)
        return "Final Answer: [" + ", ".join(json.loads(references[0])) + "]"
    if metric == "ruler2_multichoice":  # the letter, as eval_mcq reads it
        return f"Answer: {references[0]}"
    return " " + " ".join(references)


class ScriptedBackend:
    """``spec.model``: the script. ``context``: the prompts' build context where a test runs a case
    itself (by default, the run's, made from ``spec`` as the suite makes it)."""

    name = "scripted"

    def __init__(self, spec: ModelSpec, context: BuildContext | None = None) -> None:
        path = Path(spec.model)
        try:
            self.script = json.loads(path.read_text("utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(
                f"--backend scripted needs --model pointing at a JSON script; {path}: {exc}"
            ) from None
        self.spec, self._context = spec, context
        self.tokenizer: RawTokenizer = ByteTokenizer()
        if self.script.get("tokenizer"):
            from transformers import AutoTokenizer

            self.tokenizer = HFTokenizer(
                AutoTokenizer.from_pretrained(str(path.parent / self.script["tokenizer"]))
            )
        self.fingerprint = {"sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
        self.max_positions: int | None = self.script.get("max_positions")
        self.concurrency = int(self.script.get("concurrency", 1))
        self.calls = 0
        self._active = 0
        self._lock = threading.Lock()

    def _lookup(self, directive: str, r: Request, default: object = None) -> Any:
        table = self.script.get(directive, {}).get(r.task, {})
        return table.get(str(r.length), table.get("*", default))

    def generate(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        out = []
        for r in requests:
            with self._lock:
                self.calls += 1
                self._active += 1
                in_flight = self._active
            time.sleep(float(self.script.get("sleep", 0.0)))
            with self._lock:
                self._active -= 1
            if self.script.get("calls_log"):
                with open(self.script["calls_log"], "a", encoding="utf-8") as log:
                    log.write(
                        f"{r.task} {r.length} {r.index} "
                        f"{os.environ.get('PYTEST_XDIST_WORKER', '-')} {in_flight}\n"
                    )
            kill = self._lookup("kill", r)  # True: at its first generation; N: at sample N
            if kill is True or (type(kill) is int and r.index >= kill):  # out of memory, a segfault
                if str(os.getpid()) == os.environ.get("CTXGATE_TESTS_PID"):
                    raise RuntimeError("a scripted kill needs the run in workers of its own: -n 2")
                os.kill(os.getpid(), signal.SIGKILL)
            if message := self._lookup("raise", r):
                raise RuntimeError(message)
            p = float(self._lookup("accuracy", r, self.script.get("default", 1.0)))
            i = r.index + int(
                self.script.get("offset", 0)
            )  # another offset: same rate, other samples right
            right = math.floor((i + 1) * p + 1e-9) > math.floor(i * p + 1e-9)
            text = self._right(r) if right else ""
            out.append(Generation(text, len(text.encode("utf-8")), "stop"))
        return out

    def _right(self, r: Request) -> str:
        """The output the request's sample scores in full with: its task's metric's, from the sample
        built again."""
        spec = get_task(r.task)
        with self._lock:
            if self._context is None:  # the context the run builds its prompts in
                self._context = prompts(self.spec, self.tokenizer)[0]
            context = self._context
        return right(
            spec.metric.name, build_sample(spec, context, r.length, r.index, context.seed).answers
        )

    def describe(self) -> dict[str, object]:
        return {"backend": self.name, "script": self.script}


class ByteTokenizer:
    """One token per UTF-8 byte (ids 0-255, EOS 256): a dependency-free tokenizer for tests."""

    EOS = 256

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [list(t.encode("utf-8")) for t in texts]

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")

    def prefix_ids(self) -> list[int]:
        return []

    def chat_parts(self) -> tuple[str, str] | None:
        return ("<user>\n", "\n</user>\n<assistant>\n")

    def chat_turns(self) -> ChatTurns | None:
        return ChatTurns(
            "<user>\n",
            "\n</user>\n<assistant>\n",
            "\n</assistant>\n<user>\n",
            "\n</user>\n<user>\n",
            "\n</user>\n<assistant>\n",
        )

    def eos_ids(self) -> list[int]:
        return [self.EOS]

    def identity(self) -> str:
        return "byte-tokenizer-v1"
