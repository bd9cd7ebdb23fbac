"""Prints the golden values ``test_mrcr2_parity.py`` pins: the sha256 of eval_hub's own
``generate_mrcr_v2`` output (every sample's prompt, answer and token positions) on ctxgate's
stand-in texts with the tiny checkpoint's tokenizer, per case of ``CASES``.

    python tests/ext/mrcr2/regenerate_goldens.py /path/to/eval_hub/eval_hub/mrcr_v2

The reference folder is a checkout of google-deepmind/eval_hub (its mrcr_utils.py is imported;
it needs pandas). Nothing here reaches the network."""

from __future__ import annotations

import hashlib
import json
import random
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
TINY = ROOT / "fixtures" / "tiny-llama-niah"
# (needles, seed, low, high, static few-shot, JSON transcript)
CASES = (
    (2, 42, 1500, 3000, False, False),
    (4, 7, 2048, 4096, False, False),
    (8, 42, 4096, 8192, False, False),
    (4, 42, 3000, 6000, False, True),
    (2, 42, 65536, 131072, False, False),
)
FIELDS = (
    "queries",
    "answer",
    "context_len",
    "answer_token_count",
    "view_ops",
    "num_relevant",
    "answer_context_position",
    "index_positions_of_seeds",
    "relevant_context_positions",
)


def digest(rows: Iterable[Mapping[str, Any]]) -> str:
    """The rows' fields as JSON lines (tuples as lists), hashed."""
    h = hashlib.sha256()
    for row in rows:
        h.update(json.dumps([row[f] for f in FIELDS], default=list).encode("utf-8") + b"\n")
    return h.hexdigest()


def tokenizer() -> Callable[[str], tuple[list[int], int]]:
    from transformers import AutoTokenizer

    from ctxgate.api import HFTokenizer, PieceEncoder

    enc = PieceEncoder(HFTokenizer(AutoTokenizer.from_pretrained(str(TINY))))

    def tokenize(text: str) -> tuple[list[int], int]:
        ids = list(enc.encode_fresh([text])[0])
        return ids, len(ids)

    return tokenize


def texts() -> tuple[Any, Any, Any]:
    folder = ROOT / "ctxgate" / "ext" / "mrcr2" / "sample" / "mrcr_v2" / "mrcr_text_blocks"
    kinds = ("relevant", "filler", "fewshot")
    return tuple(json.loads((folder / f"mrcr_{k}_texts.json").read_text("utf-8")) for k in kinds)  # type: ignore[return-value]


def reference_rows(reference: Path, case: tuple[int, int, int, int, bool, bool]) -> list[Any]:
    sys.path.insert(0, str(reference))
    import mrcr_utils  # type: ignore[import-not-found]

    needles, seed, low, high, static, json_style = case
    relevant, filler, fewshot = texts()
    random.seed(seed)
    buckets, _ = mrcr_utils.generate_mrcr_v2(
        relevant, filler, fewshot, needles, 100, [(low, high)], static, json_style, tokenizer()
    )
    return list(buckets[(low, high)])


def main(argv: list[str]) -> None:
    reference = Path(argv[0])
    for case in CASES:
        print(f"{case}: {digest(reference_rows(reference, case))!r},")


if __name__ == "__main__":
    main(sys.argv[1:])
