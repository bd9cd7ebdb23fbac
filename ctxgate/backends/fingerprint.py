"""A fingerprint of a checkpoint: its config, tokenizer, chat template, weights, and any model code
it ships. Every file is hashed in full (a partial fine-tune can leave every sampled chunk as its
parent's); digests are remembered by (path, size, mtime, inode) in ``$CTXGATE_HASH_CACHE`` (default
``~/.cache/ctxgate/file-hashes``), hashed once under a lock."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

from ctxgate.backends.checkpoint import TOKENIZER_FILES

# every tokenizer file transformers builds from, as the checks know them
_META = (
    *"config.json generation_config.json tokenizer_config.json chat_template.jinja".split(),
    *"special_tokens_map.json model.safetensors.index.json".split(),
    *TOKENIZER_FILES,
)
_BLOCK = 8 * 1024 * 1024
_MEMO_MIN = 1024 * 1024  # smaller files are hashed each time: cheaper than the memo's own file


def _memo_dir() -> Path:
    if given := os.environ.get("CTXGATE_HASH_CACHE"):
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ctxgate" / "file-hashes"


def _hash(path: Path) -> str:
    h = hashlib.sha256()
    h.update(str(path.stat().st_size).encode())
    with path.open("rb") as f:
        for block in iter(lambda: f.read(_BLOCK), b""):
            h.update(block)
    return h.hexdigest()


def file_digest(path: Path) -> str:
    """The sha256 of the file's size and content; a memo that cannot be read or written only costs a
    re-hash (new bytes change the mtime, size or inode: the memo never serves an old digest)."""
    st = path.stat()
    if st.st_size < _MEMO_MIN:
        return _hash(path)
    identity = f"{path.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\0{st.st_dev}"
    memo = _memo_dir() / hashlib.sha256(identity.encode()).hexdigest()
    try:
        from filelock import FileLock, Timeout

        memo.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(memo) + ".lock", timeout=3600):
            if memo.is_file():
                known = memo.read_text("ascii").strip()
                if len(known) == 64:
                    return known
            digest = _hash(path)
            tmp = memo.with_name(f"{memo.name}.{os.getpid()}.tmp")
            tmp.write_text(digest, "ascii")
            os.replace(tmp, memo)
            return digest
    except (OSError, Timeout, UnicodeDecodeError):
        return _hash(path)


def with_changes(
    fingerprint: Mapping[str, object], changes: Mapping[str, object]
) -> dict[str, object]:
    """The checkpoint's fingerprint with what the extras change in the model past its files, as
    asked (JSON; ``hookspec.ctxgate_model_changes``): two RoPE settings are two models."""
    if not changes:
        return dict(fingerprint)
    asked = hashlib.sha256(json.dumps(changes, sort_keys=True).encode()).hexdigest()
    combined = hashlib.sha256(f"{fingerprint['sha256']}\0{asked}".encode()).hexdigest()
    own = fingerprint["sha256"]
    return {**fingerprint, "sha256": combined, "checkpoint_sha256": own, **changes}


def checkpoint_fingerprint(model: str) -> dict[str, object]:
    path = Path(model)
    if not path.is_dir():
        return {"model_id": model, "sha256": hashlib.sha256(model.encode()).hexdigest()}
    files = [path / name for name in _META if (path / name).is_file()]
    files += sorted([*path.glob("*.safetensors"), *path.glob("*.bin")]) + sorted(path.glob("*.py"))
    parts = {p.name: file_digest(p) for p in files}
    overall = hashlib.sha256(
        "\n".join(f"{k}:{v}" for k, v in sorted(parts.items())).encode()
    ).hexdigest()
    return {"sha256": overall, **{f"file:{k}": v for k, v in parts.items()}}
