"""What identifies a generation and a judge verdict, and which failures are retried: a partial
fine-tune gets its own fingerprint, hashes are computed once per file, every engine spells its dtype
as it wants, a judge is its model on its server, a forced CPU is no GPU, and a programming error is
never mistaken for a busy server."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ctxgate.backends import fingerprint
from ctxgate.backends.vllm_server import EngineSpec
from tests.conftest import TINY


@pytest.fixture
def memo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "hashes"
    monkeypatch.setenv("CTXGATE_HASH_CACHE", str(folder))
    return folder


def _big_checkpoint(folder: Path, size: int = 80 * 2**20) -> Path:
    shutil.copytree(
        TINY, folder, ignore=shutil.ignore_patterns("model.safetensors", "training_log.json")
    )
    with (folder / "model.safetensors").open("wb") as f:
        f.write(os.urandom(2**20) * (size // 2**20))
    return folder


def test_a_change_anywhere_in_a_large_weights_file_changes_the_fingerprint(tmp_path, memo):
    """A fine-tune that touched one tensor far from any sampled chunk: the old sampled hash kept the
    parent's."""
    ckpt = _big_checkpoint(tmp_path / "ckpt")
    parent = fingerprint.checkpoint_fingerprint(str(ckpt))["sha256"]
    with (ckpt / "model.safetensors").open("r+b") as f:
        f.seek(
            40 * 2**20
        )  # between two of the 16 chunks the sampled hash read (at 36.9 and 42.1 MiB)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
    assert fingerprint.checkpoint_fingerprint(str(ckpt))["sha256"] != parent


def test_a_file_is_hashed_once_and_again_only_when_it_changes(tmp_path, memo, monkeypatch):
    ckpt = _big_checkpoint(tmp_path / "ckpt", 2 * 2**20)
    hashed: list[Path] = []
    real = fingerprint._hash
    monkeypatch.setattr(fingerprint, "_hash", lambda p: hashed.append(p) or real(p))
    weights = ckpt / "model.safetensors"
    first = fingerprint.file_digest(weights)
    assert fingerprint.file_digest(weights) == first and hashed == [
        weights
    ]  # the second from the memo
    with weights.open("ab") as f:
        f.write(b"x")
    assert fingerprint.file_digest(weights) != first and hashed == [weights, weights]


def test_an_unwritable_memo_only_costs_a_rehash(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("CTXGATE_HASH_CACHE", str(blocker / "hashes"))
    ckpt = _big_checkpoint(tmp_path / "ckpt", 2 * 2**20)
    assert len(fingerprint.file_digest(ckpt / "model.safetensors")) == 64


@pytest.mark.parametrize(
    ("dtype", "gpu", "expected"),
    [
        ("bf16", True, "bfloat16"),
        ("fp16", True, "float16"),
        ("fp32", False, "float32"),
        ("auto", True, "bfloat16"),
        ("auto", False, "float32"),
        ("bfloat16", True, "bfloat16"),
    ],
)
def test_vllm_gets_the_dtype_spelled_as_it_accepts(dtype, gpu, expected):
    spec = EngineSpec("python", "ckpt", 4096, devices=("0",) if gpu else None, dtype=dtype)
    command = spec.command(8000)
    assert command[command.index("--dtype") + 1] == expected


def test_the_judge_cache_key_names_the_server(tmp_path):
    from ctxgate.judge.client import JudgeClient, JudgeSettings

    keys = []
    for url in ("http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"):
        client = JudgeClient(JudgeSettings(model="judge", base_url=url, cache_dir=str(tmp_path)))
        seen: list[str] = []
        client.cache.get = lambda key, seen=seen: seen.append(key)  # type: ignore[method-assign]
        answer = type("R", (), {"text": "x"})()
        client._request = lambda prompt, answer=answer: answer  # type: ignore[method-assign]
        client.cache.put = lambda *a: None  # type: ignore[method-assign]
        client._reply("the same prompt", 0)
        keys.append(seen[0])
    assert keys[0] != keys[1]


def test_cuda_visible_devices_empty_means_no_gpu(monkeypatch):
    """The usual way to force the CPU: -n auto must not start one worker per physical GPU."""
    from types import SimpleNamespace

    from ctxgate.backends import devices
    from ctxgate_plugins import workers

    monkeypatch.setattr(devices, "gpu_count", lambda: 8)  # the machine has eight
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    config = SimpleNamespace(
        getoption=lambda name, default=None: {"--model": "ckpt"}.get(name, default)
    )
    assert workers.pytest_xdist_auto_num_workers(config) is None  # xdist's own default (CPU count)
    assert devices.visible_gpus() == []


@pytest.mark.parametrize(
    "error",
    [
        AttributeError("no attribute 'text'"),
        IndexError("list index out of range"),
        KeyError("choices"),
        TypeError("bad operand"),
    ],
)
def test_a_programming_error_is_not_retried_as_a_busy_server(error):
    import openai

    from ctxgate.retrying import call_with_retries

    calls = []

    def call() -> None:
        calls.append(1)
        raise error

    with pytest.raises(type(error)):
        call_with_retries(call, openai, max_retries=5, time_limit_s=60, sleep=lambda s: None)
    assert len(calls) == 1
