"""``ctxgate data fetch``: HELMET's released ``data.tar.gz`` (princeton-nlp/HELMET on the hub) into a data folder.

Only the folders ctxgate reads (``kilt/``, ``msmarco/``) are extracted, member by member, refusing any path that
would land outside the target. ``--archive`` takes an archive already downloaded (machines without hub access).
"""

from __future__ import annotations

import tarfile
from pathlib import Path, PurePosixPath

from ctxgate.sources.errors import DataUnavailable

HUB_REPO = "princeton-nlp/HELMET"
ARCHIVE = "data.tar.gz"
WANTED = ("kilt", "msmarco")


def download(revision: str | None) -> Path:
    try:
        from huggingface_hub import hf_hub_download

        return Path(hf_hub_download(HUB_REPO, ARCHIVE, repo_type="dataset", revision=revision))
    except Exception as exc:  # offline, gated, moved: one message with the way around it
        raise DataUnavailable(f"cannot download {HUB_REPO}/{ARCHIVE} ({type(exc).__name__}: {str(exc)[:160]}); "
                              f"download it where the hub is reachable and pass --archive PATH") from exc


def extract(archive: Path, target: Path) -> list[str]:
    """Extract the wanted members (``data/kilt/...`` or ``kilt/...``) under ``target``; returns what was written."""
    written = []
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "r:*") as tar:
        for member in tar:
            parts = PurePosixPath(member.name).parts
            parts = parts[1:] if parts and parts[0] == "data" else parts
            if not member.isfile() or not parts or parts[0] not in WANTED or ".." in parts:
                continue
            dest = target.joinpath(*parts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            assert source is not None  # a regular file always has content
            with source, dest.open("wb") as out:
                while block := source.read(1 << 20):
                    out.write(block)
            written.append("/".join(parts))
    if not written:
        raise DataUnavailable(f"{archive} holds no kilt/ or msmarco/ files; is it HELMET's {ARCHIVE}?")
    return written
