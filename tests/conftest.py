"""Shared fixtures for the project's own tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxgate.textcodec import ByteTokenizer, HFTokenizer, PieceEncoder

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "fixtures" / "tiny-llama-niah"
SQUAD = ROOT / "fixtures" / "data" / "squad_v2_validation_tiny.jsonl"
HOTPOT = ROOT / "fixtures" / "data" / "hotpotqa_distractor_validation_tiny.jsonl"

pytest_plugins = ["pytester"]


@pytest.fixture(scope="session")
def hf_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(TINY))


@pytest.fixture(scope="session")
def hf_encoder(hf_tokenizer) -> PieceEncoder:
    return PieceEncoder(HFTokenizer(hf_tokenizer))


@pytest.fixture(scope="session")
def byte_encoder() -> PieceEncoder:
    return PieceEncoder(ByteTokenizer())
