"""Reading records: JSON lines in a data folder, or a hub dataset, always through ``datasets``."""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from ctxgate.sources.errors import DataUnavailable

FETCH_HINT = ("run `ctxgate data fetch --to data/helmet` (hub access, or --archive data.tar.gz) and pass "
              "--data-dir data/helmet; the shipped fixtures: --data-dir fixtures/helmet_data")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """All records of one JSON-lines file, in file order."""
    return list(_read_jsonl(str(path)))


@lru_cache(maxsize=32)
def _read_jsonl(path: str) -> tuple[dict[str, Any], ...]:
    import datasets  # heavy: only when an application task is built

    try:
        ds = datasets.load_dataset("json", data_files=path, split="train")
    except Exception as exc:  # datasets raises many types for one bad file
        raise DataUnavailable(f"cannot read {path} ({type(exc).__name__}: {str(exc)[:200]}); check it with "
                              f"`ctxgate data verify {Path(path).parent}`") from exc
    return tuple(ds)


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


_HUB_FAILED: dict[tuple[str, str | None, str], DataUnavailable] = {}


def read_local_or_hub(local: Path, hub_id: str, config: str | None, split: str, flag_hint: str
                      ) -> list[dict[str, Any]]:
    """``local`` (JSON lines in the hub's layout) when it exists, else the hub dataset. A hub failure is remembered,
    so a run without access pays the timeout once, not once per case."""
    if local.is_file():
        return read_jsonl(local)
    key = (hub_id, config, split)
    if key in _HUB_FAILED:
        raise _HUB_FAILED[key]
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        raise DataUnavailable(f"no {local}, and the hub is off (HF_HUB_OFFLINE) so {hub_id!r} cannot be read; "
                              f"{flag_hint}")
    import datasets

    try:
        return list(datasets.load_dataset(hub_id, config, split=split))
    except Exception as exc:
        err = DataUnavailable(f"no {local} and the hub dataset {hub_id!r} ({split}) is not reachable "
                              f"({type(exc).__name__}); {flag_hint}")
        _HUB_FAILED[key] = err
        raise err from exc
