"""Reading records, always through ``datasets``: a local file or ``save_to_disk`` folder, or a hub dataset."""

from __future__ import annotations

import hashlib
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from ctxgate.sources.errors import DataUnavailable

FETCH_HINT = ("run `ctxgate data fetch --to data/helmet` (hub access, or --archive data.tar.gz) and pass "
              "--data-dir data/helmet; the shipped fixtures: --data-dir fixtures/helmet_data")

_FAILED: dict[tuple[str, str, str | None], DataUnavailable] = {}  # a hub source that failed once is not retried


def load_rows(source: str, split: str, config: str | None, fix: str) -> tuple[dict[str, Any], ...]:
    """The records of ``source``: a .jsonl/.json/.parquet file, a ``save_to_disk`` folder, or a hub id (``split``,
    ``config``). A failure is remembered, so a run without hub access pays the timeout once, not once per case; its
    message ends with ``fix``."""
    key = (source, split, config)
    if key in _FAILED:
        raise _FAILED[key]
    try:
        return _load(source, split, config, fix)
    except DataUnavailable as exc:
        _FAILED[key] = exc
        raise


@lru_cache(maxsize=32)
def _load(source: str, split: str, config: str | None, fix: str) -> tuple[dict[str, Any], ...]:
    p = Path(source)
    local = p.is_dir() or p.is_file()
    if not local and os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        raise DataUnavailable(f"cannot load {source!r}: it is not a local path and the hub is off (HF_HUB_OFFLINE); "
                              f"{fix}")
    import datasets  # heavy: only when a task that needs data is built

    try:
        if p.is_dir():
            ds = datasets.load_from_disk(str(p))
            if isinstance(ds, datasets.DatasetDict):
                ds = ds[split] if split in ds else ds[next(iter(ds))]
        elif p.is_file():
            kind = {".jsonl": "json", ".json": "json", ".parquet": "parquet"}.get(p.suffix.lower(), "json")
            ds = datasets.load_dataset(kind, data_files=str(p), split="train")
        else:
            ds = datasets.load_dataset(source, config, split=split)
    except Exception as exc:  # the datasets library raises many types for "not reachable" or "not readable"
        raise DataUnavailable(f"cannot load {source!r} ({type(exc).__name__}: {str(exc)[:200]}); {fix}") from exc
    return tuple(ds)


def read_jsonl(path: Path) -> tuple[dict[str, Any], ...]:
    """All records of one JSON-lines file of a data folder, in file order."""
    return load_rows(str(path), "train", None, f"check it with `ctxgate data verify {path.parent}`")


def read_local_or_hub(local: Path, hub_id: str, config: str | None, split: str, fix: str
                      ) -> tuple[dict[str, Any], ...]:
    """``local`` (JSON lines in the hub's layout) when it exists, else the hub dataset."""
    return load_rows(str(local) if local.is_file() else hub_id, split, config, fix)


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def largest_k(folder: Path, pattern: str) -> Path | None:
    """Of the files matching ``pattern`` (a regex with one ``(\\d+)`` group for k), the one with the most passages:
    ctxgate fits passages to the model at each length, so the biggest pool serves every length it can hold."""
    if not folder.is_dir():
        return None
    best: tuple[int, Path] | None = None
    regex = re.compile(pattern)
    for p in folder.iterdir():
        m = regex.fullmatch(p.name)
        if m and (best is None or int(m.group(1)) > best[0]):
            best = (int(m.group(1)), p)
    return best[1] if best else None
