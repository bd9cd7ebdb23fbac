"""What bench/gpu.py and the runs it starts (bench/gpu_suite.py, bench/gpu_vllm.py) share: the
Llama shapes measured with the matrix-product FLOPs each does, counted from its shape, and the clock
that keeps the deadline and every figure printed."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Shape:
    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    positions: int
    lengths: tuple[tuple[int, int], ...]  # (input length, samples per case)

    def config(self) -> Any:
        from transformers import LlamaConfig

        return LlamaConfig(
            hidden_size=self.hidden,
            num_hidden_layers=self.layers,
            num_attention_heads=self.heads,
            num_key_value_heads=self.kv_heads,
            intermediate_size=self.intermediate,
            vocab_size=self.vocab,
            max_position_embeddings=self.positions,
            rope_theta=500000.0,
            tie_word_embeddings=False,
            bos_token_id=0,
            eos_token_id=0,
            pad_token_id=0,
        )


def prefill_flops(shape: Shape, tokens: int) -> float:
    """Matrix-product FLOPs of one causal prefill: the layers' weights, and attention's scores and
    values over the causal half of the square."""
    head = shape.hidden // shape.heads
    per_layer = (
        shape.hidden * shape.hidden * 2  # q and o
        + 2 * shape.hidden * shape.kv_heads * head  # k and v
        + 3 * shape.hidden * shape.intermediate
    )
    weights = 2 * shape.layers * per_layer * tokens
    attention = 2 * shape.layers * shape.hidden * tokens * tokens  # 2 products x 2n²d / 2
    return float(weights + attention)


def flops(shape: Shape, prompt: float, generated: float) -> float:
    """Matrix-product FLOPs of one sample: its prefill, then each generated token's step over the
    context so far (weights, attention over every earlier token, and the output projection)."""
    step = (
        prefill_flops(shape, 1) - 2 * shape.layers * shape.hidden + 2 * shape.hidden * shape.vocab
    )
    context = 4 * shape.layers * shape.hidden * (generated * prompt + generated**2 / 2)
    return prefill_flops(shape, round(prompt)) + generated * step + context


class Clock:
    """Seconds since the start against the deadline; each figure printed and kept as it comes."""

    def __init__(self, deadline: float, out: Path) -> None:
        self.start, self.deadline, self.out = time.monotonic(), deadline, out
        self.skipped: list[str] = []
        self.limit = 0.0  # TFLOP/s: the matrix-product rate measured first
        out.write_text("")

    def remaining(self) -> float:
        return max(1.0, self.deadline - (time.monotonic() - self.start))

    def left(self, what: str) -> bool:
        if time.monotonic() - self.start < self.deadline:
            return True
        self.skipped.append(what)
        return False

    def emit(self, line: str, **record: object) -> None:
        print(line, flush=True)
        with self.out.open("a") as f:
            f.write(json.dumps({"line": line, **record}) + "\n")
