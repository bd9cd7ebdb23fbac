"""Reading records, always through ``datasets``: a local file or ``save_to_disk`` folder, or a hub
dataset already in the local cache. A run never downloads: a source that is neither fails at once,
naming the path that was expected (docs/gates.md, "Which cases count")."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxgate.memo import is_dir, is_file, memo, noted
from ctxgate.sources.errors import DataNotGiven, DataUnavailable

Rows = tuple[dict[str, Any], ...]
FETCH_HINT = (
    "run `ctxgate data fetch --to data/helmet` (hub access, or --archive data.tar.gz) and pass "
    "--data-dir data/helmet; the shipped fixtures: --data-dir fixtures/helmet_data"
)
# the top folders of HELMET's data layout (its release, plus the suite's local copies of hub data)
LAYOUT = tuple("alce icl infbench json_kv kilt msmarco multi_lexsum narrativeqa ruler".split())


def _go_offline() -> None:
    """Both libraries read their offline switch once at import; a run flips them for good."""
    import datasets
    import huggingface_hub.constants

    datasets.config.HF_HUB_OFFLINE = True
    datasets.config.HF_DATASETS_OFFLINE = True
    huggingface_hub.constants.HF_HUB_OFFLINE = True


@memo(32)
def load_rows(source: str, split: str, config: str | None, fix: str) -> Rows:
    """The records of a .jsonl/.json/.parquet file, a ``save_to_disk`` folder, or a cached hub id.
    Failures are not remembered (``ctxgate.memo``), so a file fixed between two runs is seen."""
    p = Path(source)
    if is_file(p) and p.suffix.lower() in (".jsonl", ".json"):
        # datasets' own message for these names neither the line nor the fix
        problem = first_bad_line(p)
        if problem:
            raise DataUnavailable(
                f"{problem}; restore the file (HELMET's release, or the hub dataset's split)"
                + verify_hint(p, ", then ")
            )
    import datasets  # heavy: only when a task that needs data is built

    _go_offline()
    try:
        if is_dir(p):
            ds = datasets.load_from_disk(str(p))
            if isinstance(ds, datasets.DatasetDict):
                ds = ds[split] if split in ds else ds[next(iter(ds))]
        elif is_file(p):
            kind = "parquet" if p.suffix.lower() == ".parquet" else "json"
            ds = datasets.load_dataset(kind, data_files=str(p), split="train")
        elif (
            source.startswith(("/", ".", "~"))
            or source.count("/") > 1
            or p.suffix in (".jsonl", ".json", ".parquet")
        ):
            raise DataNotGiven(f"{source} does not exist; {fix}")
        else:
            try:
                ds = datasets.load_dataset(source, config, split=split)
            except Exception as exc:  # noqa: BLE001 - "not in the cache" comes as many types
                raise DataNotGiven(
                    f"{source!r} is not a local path and not in the local hub cache (a run never "
                    f"downloads: {type(exc).__name__}); {fix}"
                ) from None
    except DataUnavailable:
        raise
    except Exception as exc:  # noqa: BLE001 - datasets raises many types for "not readable"
        raise unreadable(source, exc, fix) from None
    return tuple(ds)


def unreadable(source: object, exc: Exception, fix: str) -> DataUnavailable:
    message = " ".join(str(exc).split())[:200] or "no message"
    return DataUnavailable(f"cannot read {source} ({type(exc).__name__}: {message}); {fix}")


def first_bad_line(path: Path) -> str | None:
    """Why a .json/.jsonl file cannot be read, naming its line; None when every record parses."""
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8")
    except OSError as exc:
        return f"{path}: cannot be read ({exc.strerror or exc})"
    except UnicodeDecodeError as exc:
        lineno = raw[: exc.start].count(b"\n") + 1
        return f"{path}:{lineno}: not UTF-8 text (byte {raw[exc.start]:#04x} at offset {exc.start})"
    if not text.strip():
        return f"{path}: is empty (0 records)"
    if path.suffix.lower() == ".json":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError:
            pass  # JSON lines under a .json name: checked line by line below
        else:
            if isinstance(doc, (list, dict)):
                return None
            return f"{path}: holds a JSON {type(doc).__name__}, not records"
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            return f"{path}:{number}: not valid JSON ({exc.msg} at column {exc.colno})"
        if not isinstance(record, dict):
            return f"{path}:{number}: a JSON {type(record).__name__}, not a record (an object)"
    return None


def read_jsonl(path: Path) -> Rows:
    if not is_file(path):
        raise DataNotGiven(f"{path} does not exist; {FETCH_HINT}")
    return load_rows(str(path), "train", None, verify_hint(path, "") or "restore the file")


@dataclass(frozen=True)
class DataFile:
    """A file a task reads under ``--data-dir``, declared by the module that reads it: its loader
    checks records for ``fields``, and ``ctxgate data verify`` checks and pins the same files."""

    task: str
    folder: str
    pattern: str  # regex over file names in ``folder``
    fields: tuple[str, ...]  # every record has these
    hub: str | None = None  # where the task reads from when the folder lacks the file
    optional: str | None = None  # what the task does without the file (no failure then)


def hub_splits(
    task: str, folder: str, hub: str, fields: tuple[str, ...], splits: Iterable[str]
) -> tuple[DataFile, ...]:
    """A hub dataset's splits (or subsets) as local copies in ``folder`` (``{split}.jsonl``)."""
    return tuple(
        DataFile(task, folder, re.escape(f"{s}.jsonl"), fields, f"{hub} ({s})") for s in splits
    )


def missing_fields(record: object, fields: tuple[str, ...]) -> list[str]:
    """Fields absent or null (datasets fills a key a line lacks with None): the loaders' rule."""
    return [f for f in fields if not isinstance(record, dict) or record.get(f) is None]


def verify_hint(path: Path, lead: str) -> str:
    """``lead`` and the command that checks the data folder of ``path``; "" outside the layout."""
    root = next((folder.parent for folder in path.parents if folder.name in LAYOUT), None)
    return f"{lead}check the folder with `ctxgate data verify {root}`" if root is not None else ""


def hub_hint(what: str, where: object) -> str:
    return (
        f"put {what} at {where} and pass --data-dir (or have the hub dataset in the local cache); "
        "the shipped fixtures: --data-dir fixtures/helmet_data"
    )


def read_local_or_hub(local: Path, hub_id: str, config: str | None, split: str, fix: str) -> Rows:
    """``local`` if it exists, else the cached hub dataset; a source in neither names ``local``."""
    if is_file(local):
        return load_rows(str(local), split, config, fix)
    try:
        return load_rows(hub_id, split, config, fix)
    except DataNotGiven:
        raise DataNotGiven(
            f"{local} does not exist, and {hub_id!r} is not in the local hub cache (a run never "
            f"downloads); {fix}"
        ) from None


def as_texts(value: object) -> tuple[str, ...]:
    return tuple(map(str, value if isinstance(value, list) else [value]))


def sha256_of(path: Path) -> str:
    noted(path)
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sha256_of_files(*paths: Path) -> str:
    return hashlib.sha256("".join(sha256_of(p) for p in paths).encode()).hexdigest()


def sha256_of_json(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj).encode()).hexdigest()


def largest_k(folder: Path, pattern: str) -> Path | None:
    """The file matching ``pattern`` (k: its first group that matched) with the largest k, of equal
    k the first by name: passages are fitted per length, so the biggest pool serves them all."""
    if not is_dir(folder):
        return None
    regex = re.compile(pattern)
    ks = {
        p: next((int(g) for g in m.groups() if g is not None), 0)
        for p in sorted(folder.iterdir())
        if (m := regex.fullmatch(p.name))
    }
    return max(ks, key=ks.__getitem__, default=None)  # max keeps the first of equal k
