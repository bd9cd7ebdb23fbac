"""Regenerates the parity goldens of test_longbench2.py by running THUDM/LongBench's own pred.py
(its v2 code) on the fixture's records: the user message it sends (its template filling and middle
truncation, with the tiny tokenizer, at a max_len) for the plain and chain-of-thought prompts and
the answer step, and its ``extract_answer`` on drawn outputs.

    git clone https://github.com/THUDM/LongBench /tmp/LongBench
    python tests/ext/longbench2/make_goldens.py /tmp/LongBench

pred.py is executed as it is, with stand-ins for those of its imports that are not installed and
that these paths never use (openai, tiktoken, datasets, torch); transformers is the real one.
Prints JSON: write it to tests/ext/longbench2/goldens.json."""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
TINY = ROOT / "fixtures" / "tiny-llama-niah"
BUDGETS = (100000, 1875, 896)  # no cut; the reference rule at 2K and at 1K
COT = "The banner colors are listed.\nSo the answer follows from the list."


def _stubs() -> None:
    """Stand-ins for the modules pred.py imports that are not installed (never used here)."""
    import importlib

    for name in ("openai", "tiktoken", "datasets", "tqdm", "torch", "torch.multiprocessing"):
        try:
            importlib.import_module(name)
        except ImportError:
            module = types.ModuleType(name)
            module.OpenAI = module.load_dataset = module.tqdm = object  # type: ignore[attr-defined]
            sys.modules[name] = module


def _reference(checkout: Path) -> dict[str, Any]:
    _stubs()
    os.chdir(checkout)
    scope: dict[str, Any] = {"__name__": "pred"}
    exec(compile((checkout / "pred.py").read_text("utf-8"), "pred.py", "exec"), scope)  # noqa: S102
    return scope


class _Client:
    """Records each user message pred.py sends; answers from a script."""

    def __init__(self, replies: list[str]) -> None:
        self.sent: list[str] = []
        self.replies = replies
        self.chat = types.SimpleNamespace(completions=types.SimpleNamespace(create=self._create))

    def _create(self, messages: list[dict[str, str]], **_: object) -> Any:
        self.sent.append(messages[0]["content"])
        message = types.SimpleNamespace(content=self.replies.pop(0))
        return types.SimpleNamespace(choices=[types.SimpleNamespace(message=message)])


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _ask(ref: dict[str, Any], record: dict[str, Any], cot: bool, replies: list[str]) -> list[str]:
    """The user messages pred.py's get_pred sends for one record."""
    client = _Client(replies)
    ref["OpenAI"] = lambda **_: client
    args = types.SimpleNamespace(model="tiny", rag=0, no_context=False, cot=cot)
    with open(os.devnull, "w") as sink:
        ref["get_pred"]([dict(record)], args, sink)
    return client.sent


def prompts(ref: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(TINY))
    ref["model_map"]["tiny"] = str(TINY)
    ref["AutoTokenizer"] = types.SimpleNamespace(from_pretrained=lambda *a, **k: tokenizer)
    out: dict[str, Any] = {}
    for budget in BUDGETS:
        ref["maxlen_map"]["tiny"] = budget
        for record in records:
            plain = _ask(ref, record, False, ["The correct answer is (A)"])
            cot = _ask(ref, record, True, [COT, "The correct answer is (B)"])
            out[f"{record['_id']}@{budget}"] = [_sha(plain[0]), *map(_sha, cot)]
    return out


def outputs() -> list[str]:
    """Outputs drawn around the two patterns: markdown, case, brackets, letters past D."""
    rng = random.Random(7)
    heads = ("", "Thinking... ", "**", "the ", "The correct answer is: ", "So, ")
    bodies = ("The correct answer is ", "The Correct answer is ", "The correct answer is**")
    tails = ("(A)", "(B)**", "C", "(E)", "(c)", " (D)", "*(D)*", "[B]", "D.", "")
    return [
        rng.choice(heads) + rng.choice(bodies) + rng.choice(tails) + rng.choice(("", " because"))
        for _ in range(60)
    ]


def main(argv: list[str]) -> None:
    sys.path.insert(0, str(ROOT))
    from fixtures.make_longbench2_fixture import records

    ref = _reference(Path(argv[0]).resolve())
    drawn = outputs()
    golden = {
        "prompts": prompts(ref, records()),
        "extract": [[o, ref["extract_answer"](o)] for o in drawn],
    }
    print(json.dumps(golden, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv[1:])
