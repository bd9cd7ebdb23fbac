"""A fingerprint of a checkpoint: its config, tokenizer, chat template, weights, and any model code it ships
(``*.py`` named by ``auto_map``: editing that code changes the outputs, so it must change the cache key too).

Weights are hashed fully up to 64 MiB a file; above that, the size plus 16 evenly spaced 1 MiB chunks, so a
70B checkpoint fingerprints in seconds. Any retraining changes the sampled chunks; this is an identity for
reports and caches, not a tamper-proof digest.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

_META = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja",
         "special_tokens_map.json", "tokenizer.model", "model.safetensors.index.json")
_FULL_LIMIT = 64 * 1024 * 1024
_CHUNK = 1024 * 1024


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    size = path.stat().st_size
    h.update(str(size).encode())
    with path.open("rb") as f:
        if size <= _FULL_LIMIT:
            for block in iter(lambda: f.read(_CHUNK), b""):
                h.update(block)
        else:
            for k in range(16):
                f.seek((size - _CHUNK) * k // 15)
                h.update(f.read(_CHUNK))
    return h.hexdigest()


def checkpoint_fingerprint(model: str) -> dict[str, str]:
    path = Path(model)
    if not path.is_dir():
        return {"model_id": model, "sha256": hashlib.sha256(model.encode()).hexdigest()}
    parts: dict[str, str] = {}
    for name in _META:
        if (path / name).is_file():
            parts[name] = _file_digest(path / name)
    for weights in sorted([*path.glob("*.safetensors"), *path.glob("*.bin")]):
        parts[weights.name] = _file_digest(weights)
    for code in sorted(path.glob("*.py")):
        parts[code.name] = _file_digest(code)
    overall = hashlib.sha256("\n".join(f"{k}:{v}" for k, v in sorted(parts.items())).encode()).hexdigest()
    return {"sha256": overall, **{f"file:{k}": v for k, v in parts.items()}}
