"""``ctxgate data fetch`` and ``ctxgate data verify``: a HELMET data folder filled from HELMET's
released ``data.tar.gz`` (princeton-nlp/HELMET, or ``--archive``) member by member, none landing
outside the target, and checked for what it must hold: records' fields, and checksums pinned in
``ctxgate-data.lock.json`` beside the data (``--write-lock``, from a copy you trust). A file
whose bytes differ from its pin fails: results from different data are not comparable."""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ctxgate.hooks import flat, hook
from ctxgate.sources import door, helmet_files, icl, judged, kilt
from ctxgate.sources.errors import DataUnavailable
from ctxgate.sources.files import DataFile, load_rows, sha256_of

LOCK_NAME = "ctxgate-data.lock.json"
ESSAYS_FILE = "ruler/paul_graham_essays.txt"  # under the data folder; pass it as --haystack
HUB_REPO = "princeton-nlp/HELMET"
ARCHIVE = "data.tar.gz"
WANTED = ("kilt", "msmarco", "alce", "json_kv", "ruler", "multi_lexsum", "infbench")


# every file a task reads, as the module that reads it declares it (its ``DATA_FILES``)
READERS = (kilt, icl, judged, helmet_files)


def expected() -> tuple[DataFile, ...]:
    """The spine's readers' files, then the extras' (``hookspec.ctxgate_data_files``)."""
    spine = [f for reader in READERS for f in reader.DATA_FILES]
    return (*spine, *flat(hook().ctxgate_data_files()))


@dataclass(frozen=True)
class Finding:
    task: str
    path: str
    status: str  # ok | unpinned | changed | missing | hub | optional | bad
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.status in ("changed", "missing", "bad")


def _check_records(path: Path, entry: DataFile) -> str:
    """'' when the file reads through the door (``sources.door``) and every record (line, .json
    element, or parquet row by its columns) has ``fields``, else why not."""
    problem = door.problem(path)
    if problem:
        return problem.removeprefix(f"{path}:").strip()
    records: Iterable[tuple[int, object]]
    if path.suffix == ".parquet":  # its columns; each row's values are the reader's to check
        import pyarrow.parquet

        missing = [f for f in entry.fields if f not in pyarrow.parquet.read_schema(path).names]
        return f"lacks the column(s) {', '.join(missing)}" if missing else ""
    text = path.read_text(encoding="utf-8")
    data: object = None
    if path.suffix == ".json":
        with contextlib.suppress(ValueError):  # JSON lines under a .json name: read as lines
            data = json.loads(text)
    if data is not None:
        what, records = "record", enumerate(data if isinstance(data, list) else [data], start=1)
    else:  # the file's lines, as iterating over it reads them
        lines = enumerate(text.split("\n"), start=1)
        what, records = "line", ((n, json.loads(line)) for n, line in lines if line.strip())
    return next((f"{what} {n} {fault}" for n, r in records if (fault := entry.fault(r))), "")


def _pins(root: Path) -> dict[str, str]:
    """The lock's checksums by path; a lock that cannot be read is refused in the door's words."""
    lock = root / LOCK_NAME
    fix = f"delete it and run `ctxgate data verify {root} --write-lock` again"
    if door.absent(lock):
        return {}
    doc = door.json_document(lock, fix)
    pins = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(pins, dict) or not all(isinstance(v, str) for v in pins.values()):
        raise DataUnavailable(f"{lock}: not a lock file (no 'files' table of checksums); {fix}")
    return pins


def verify(root: Path) -> list[Finding]:
    pins = _pins(root)
    findings: list[Finding] = []
    seen: set[str] = set()
    for e in expected():
        paths = e.every(root)
        if not paths and e.hub:
            findings.append(Finding(e.task, e.where, "hub", f"read from the hub: {e.hub}"))
        elif not paths and e.optional:
            findings.append(Finding(e.task, e.where, "optional", f"absent: {e.optional}"))
        elif not paths:
            findings.append(Finding(e.task, e.where, "missing", "no such file; its task reads it"))
        for p in paths:
            rel = p.relative_to(root).as_posix()
            if rel in seen:  # a demo file can match the test pattern too (msmarco k10)
                continue
            seen.add(rel)
            problem = _check_records(p, e)
            if problem:
                findings.append(Finding(e.task, rel, "bad", problem))
            elif rel not in pins:
                findings.append(Finding(e.task, rel, "unpinned", "no checksum in " + LOCK_NAME))
            elif pins[rel] != sha256_of(p):
                changed = f"sha256 differs from the pin {pins[rel][:12]}..."
                findings.append(Finding(e.task, rel, "changed", changed))
            else:
                findings.append(Finding(e.task, rel, "ok"))
    absent = f"pinned in {LOCK_NAME} but absent"
    findings += [Finding("-", rel, "missing", absent) for rel in sorted(set(pins) - seen)]
    return findings


def write_lock(root: Path) -> Path:
    paths = [p for e in expected() for p in e.every(root) if p.is_file()]  # a folder is verify's
    files = {p.relative_to(root).as_posix(): sha256_of(p) for p in paths}
    path = root / LOCK_NAME
    path.write_text(json.dumps({"files": dict(sorted(files.items()))}, indent=1) + "\n")
    return path


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
