"""``ctxgate data fetch``: the folders HELMET's tasks read, from its released ``data.tar.gz``
(princeton-nlp/HELMET, or ``--archive``), member by member, none landing outside the target."""

from __future__ import annotations

import hashlib
import shutil
import tarfile
from pathlib import Path, PurePosixPath

from ctxgate.sources.errors import DataUnavailable

ESSAYS_FILE = "ruler/paul_graham_essays.txt"  # under the data folder; pass it as --haystack
HUB_REPO = "princeton-nlp/HELMET"
ARCHIVE = "data.tar.gz"
WANTED = ("kilt", "msmarco", "alce", "json_kv", "ruler", "multi_lexsum", "infbench")


def download(revision: str | None) -> Path:
    try:
        from huggingface_hub import hf_hub_download

        return Path(hf_hub_download(HUB_REPO, ARCHIVE, repo_type="dataset", revision=revision))
    except Exception as exc:  # offline, gated, moved: one message with the way around it
        raise DataUnavailable(
            f"cannot download {HUB_REPO}/{ARCHIVE} ({type(exc).__name__}: {str(exc)[:160]}); "
            f"download it where the hub is reachable and pass --archive PATH"
        ) from exc


def extract(archive: Path, target: Path) -> list[str]:
    """Extract the wanted members (``data/kilt/...`` or ``kilt/...``); returns what was written."""
    written = []
    target.mkdir(parents=True, exist_ok=True)
    try:
        tar = tarfile.open(archive, "r:*")  # noqa: SIM115 - closed by the with below
    except (tarfile.TarError, OSError) as exc:
        raise DataUnavailable(
            f"{archive} is not a readable tar archive ({' '.join(str(exc).split())}): pass "
            f"HELMET's {ARCHIVE} (download it again if it was cut short)"
        ) from None
    with tar:
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
                shutil.copyfileobj(source, out, 1 << 20)
            written.append("/".join(parts))
    if not written:
        raise DataUnavailable(
            f"{archive} holds none of the folders HELMET's tasks read ({', '.join(WANTED)}); is it "
            f"HELMET's {ARCHIVE}?"
        )
    return written


def fetch_essays(source: str, target: Path, expected_sha256: str | None) -> tuple[Path, str]:
    """RULER's own haystack for exact RULER runs: the ``text`` column of a dataset, one essay per
    paragraph, written to ``target/ruler/paul_graham_essays.txt``. A copy other than
    ``expected_sha256`` is refused, so two teams' "exact" runs read the same text."""
    from ctxgate.sources.files import load_rows

    fix = "give a hub dataset or a local .jsonl/.parquet with a 'text' column, one essay per record"
    rows = load_rows(source, "train", None, fix)
    essays = (str(r["text"]).strip() for r in rows if str(r.get("text") or "").strip())
    text = "\n\n".join(essays) + "\n"
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if expected_sha256 and digest != expected_sha256.lower():
        raise DataUnavailable(
            f"{source}: the essays' sha256 is {digest}, not the --essays-sha256 {expected_sha256}: "
            "a different copy; fetch the pinned one or drop --essays-sha256 to pin this one"
        )
    out = target / ESSAYS_FILE
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out, digest
