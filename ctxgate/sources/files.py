"""Reading records, always through ``datasets``: a local file or ``save_to_disk`` folder, or a hub
dataset already in the local cache. A run never downloads: a source that is neither fails at once,
naming the path that was expected (docs/gates.md, "Which cases count")."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxgate.memo import is_dir, is_file, memo, noted
from ctxgate.sources import door
from ctxgate.sources.door import RECORD_FILES
from ctxgate.sources.errors import DataNotGiven, DataUnavailable

Rows = tuple[dict[str, Any], ...]
Kinds = tuple[tuple[str, str], ...]  # (field, its JSON kind: a key of KINDS)
KINDS: dict[str, type | tuple[type, ...]] = {
    "text": str,
    "list": list,
    "object": dict,
    "number": (int, float),
    "objects": list,  # of objects
}
FETCH_HINT = (
    "run `ctxgate data fetch --to data/helmet` (hub access, or --archive data.tar.gz) and pass "
    "--data-dir data/helmet; the shipped fixtures: --data-dir fixtures/helmet_data"
)
# the top folders of HELMET's data layout (its release, plus the suite's local copies of hub data)
LAYOUT = tuple(
    "alce babilong icl infbench json_kv kilt mrcr msmarco multi_lexsum narrativeqa nolima "
    "ruler".split()
)


def go_offline() -> None:
    """Both libraries read their offline switch once at import; a run flips them for good."""
    import datasets
    import huggingface_hub.constants

    datasets.config.HF_HUB_OFFLINE = True
    datasets.config.HF_DATASETS_OFFLINE = True
    huggingface_hub.constants.HF_HUB_OFFLINE = True


@memo(32)
def load_rows(source: str, split: str, config: str | None, fix: str) -> Rows:
    """The records of a .jsonl/.json/.parquet file, a ``save_to_disk`` folder, or a cached hub id.
    A local file comes through the door (``sources.door``) first. Failures are not remembered
    (``ctxgate.memo``), so a file fixed between two runs is seen."""
    return tuple(iter_rows(source, split, config, fix))


def iter_rows(source: str, split: str, config: str | None, fix: str) -> Iterator[dict[str, Any]]:
    """``load_rows``' records one at a time, none kept here: for a caller that keeps only what it
    derives from a large file (HotpotQA's train split is some 3 GB as rows, its paragraphs 0.6)."""
    ds = _dataset(source, split, config, fix)
    read = 0
    with _contents(source, fix, lambda: read):  # rows are decoded as they are iterated
        for row in _records(ds):
            yield row
            read += 1


def _records(ds: Any) -> Iterator[dict[str, Any]]:
    """The rows ``for row in ds`` gives, read a batch at a time from the dataset's Arrow files
    rather than through datasets' memory map of them, which keeps every page read resident in the
    process for as long as the dataset lives (some 600 MB of a 657 MB file); datasets' own
    iteration where the dataset is not its files as written."""
    import pyarrow as pa
    from datasets.features.features import require_decoding

    files = [c["filename"] for c in ds.cache_files]
    if not _as_written(ds, files):
        yield from ds
        return
    decoded = any(map(require_decoding, ds.features.values()))
    for name in files:
        with pa.OSFile(name) as stream:
            for batch in pa.ipc.open_stream(stream):
                some = batch.to_pylist()
                yield from map(ds.features.decode_example, some) if decoded else some


def _as_written(ds: Any, files: list[str]) -> bool:
    """Whether the dataset is ``files`` as written: not in memory, no format set, no rows or
    columns chosen since, each file an Arrow stream of its schema."""
    return (
        bool(files)
        and ds.format["type"] is None
        and ds.format["columns"] == ds.column_names
        and ds.data.num_rows == ds.num_rows
        and all(_schema(f) == ds.data.schema for f in files)
    )


def _schema(name: str) -> Any:
    """The schema of an Arrow stream file; None where it is none (datasets then reads it)."""
    import pyarrow as pa

    try:
        with pa.OSFile(name) as stream:
            return pa.ipc.open_stream(stream).schema
    except (OSError, pa.ArrowException):
        return None


def _dataset(source: str, split: str, config: str | None, fix: str) -> Any:
    p = Path(source)
    # every local entry but a save_to_disk folder: a link to nothing or itself, a FIFO, named
    if not door.absent(p) and (p.suffix.lower() in RECORD_FILES or not is_dir(p)):
        verify = verify_hint(p, ", then ")  # a data folder's file: restore it and check the rest
        door.check(p, f"restore the file{verify}" if verify else fix)
    import datasets  # heavy: only when a task that needs data is built

    go_offline()
    if is_dir(p):
        with _contents(source, fix):
            ds = datasets.load_from_disk(str(p))
            if isinstance(ds, datasets.DatasetDict):
                ds = ds[split] if split in ds else ds[next(iter(ds))]
        return ds
    if is_file(p):
        kind = "parquet" if p.suffix.lower() == ".parquet" else "json"
        with _contents(source, fix):
            return datasets.load_dataset(kind, data_files=str(p), split="train")
    if source.startswith(("/", ".", "~")) or source.count("/") > 1 or p.suffix in RECORD_FILES:
        raise DataNotGiven(f"{source} does not exist; {fix}")
    try:
        return datasets.load_dataset(source, config, split=split)
    except Exception as exc:  # noqa: BLE001 - "not in the cache" comes as many types
        raise DataNotGiven(
            f"{source!r} is not a local path and not in the local hub cache (a run never "
            f"downloads: {type(exc).__name__}); {fix}"
        ) from None


@contextlib.contextmanager
def _contents(source: str, fix: str, read: Callable[[], int] | None = None) -> Iterator[None]:
    """Around datasets' calls that read a file's bytes, and only those: datasets and pyarrow raise
    any type on contents they cannot take (a KeyError for a NUL in a key, ArrowInvalid, their own
    DatasetGenerationError), each the door's one line naming the file and the record it was on."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - the libraries' types are open-ended, see above
        at = f", record {read() + 1}" if read is not None else ""
        raise unreadable(f"{source}{at}", exc, fix) from None


def unreadable(source: object, exc: BaseException, fix: str) -> DataUnavailable:
    while exc.__cause__ is not None:  # datasets wraps pyarrow's words, which name the row
        exc = exc.__cause__
    return door.refuse(source, f"cannot be read ({type(exc).__name__}: {door.said(exc)})", fix)


def open_table(path: Path, columns: tuple[str, ...], fix: str) -> Any:
    """A parquet file as a ``datasets`` table, its rows decoded only as they are read (a family's
    files hold prompts of a million tokens): one line naming the file where it cannot be read or
    lacks one of ``columns``. The caller checks the path first (``door.check``)."""
    import datasets  # heavy: only when a file is read

    go_offline()
    try:
        table = datasets.load_dataset("parquet", data_files=str(path), split="train")
    except Exception as exc:  # noqa: BLE001 - datasets and pyarrow raise many types
        raise unreadable(path, exc, fix) from None
    absent = [c for c in columns if c not in table.column_names]
    if absent:
        raise DataUnavailable(
            f"{path} has no column {', '.join(absent)} (it has {', '.join(table.column_names)}); "
            f"{fix}"
        )
    return table


def read_jsonl(path: Path) -> Rows:
    if door.absent(path):
        raise DataNotGiven(f"{path} does not exist; {FETCH_HINT}")
    return load_rows(str(path), "train", None, verify_hint(path, "") or "restore the file")


@dataclass(frozen=True)
class DataFile:
    """Files a task reads under ``--data-dir``, declared once, by the module that reads them: its
    loader finds them with ``find`` and checks their records for ``fields``, and ``ctxgate data
    verify`` checks and pins every file ``every`` finds. ``layouts``: the paths the loader accepts,
    in its order, each a '/'-separated regex per folder level, whose named groups are the values a
    loader asks for (a length's set, a k)."""

    task: str
    layouts: tuple[str, ...]
    fields: tuple[str, ...]  # every record has these
    hub: str | None = None  # where the task reads from when the folder lacks the file
    optional: str | None = None  # what the task does without the file (no failure then)
    kinds: Kinds = ()  # the fields whose JSON kind the loader relies on

    def fault(self, record: object) -> str:
        """What is wrong with a record: a field absent or null, or of another kind; '' if none."""
        if not isinstance(record, dict):
            return f"is a {door.kind(record)}, not an object"
        missing = missing_fields(record, self.fields)
        if missing:
            return f"lacks {', '.join(missing)}"
        for field, kind in self.kinds:
            value = record.get(field)  # JSON's true and false are no numbers, though bools are ints
            if value is not None and (
                not isinstance(value, KINDS[kind]) or (kind == "number" and isinstance(value, bool))
            ):
                return f"has {field} as a {door.kind(value)}, not {kind}"
            if isinstance(value, list) and kind == "objects":
                if not all(isinstance(v, dict) for v in value):
                    return f"has {field} as a list of other things than objects"
        return ""

    def find(self, root: Path, **values: str) -> tuple[Path, ...]:
        """The entries of the first layout that has any, by name, with ``values`` for its groups.
        A folder where a file goes is one of them: the door refuses it (``sources.door``)."""
        return next((found for lay in self.layouts if (found := _walk(root, lay, values))), ())

    def every(self, root: Path) -> tuple[Path, ...]:
        """Every entry of every layout: what the loader may read, whatever it is asked."""
        return tuple(dict.fromkeys(p for lay in self.layouts for p in _walk(root, lay, {})))

    @property
    def where(self) -> str:
        """The layouts as a reader writes paths: a group as ``{name}``, ``.*`` as ``*``."""
        return " or ".join(map(_shown, self.layouts))


def _shown(layout: str) -> str:
    named = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", layout).replace(".*", "*")
    return re.sub(r"\\(.)", r"\1", named)


def _walk(root: Path, layout: str, values: dict[str, str]) -> tuple[Path, ...]:
    found = [root]
    for level in layout.split("/"):
        regex = re.compile(level)
        found = [
            entry
            for folder in found
            if is_dir(folder)
            for entry in sorted(folder.iterdir())
            if (m := regex.fullmatch(entry.name))
            and all(m.groupdict().get(k, v) == v for k, v in values.items())
        ]
    return tuple(found)


def hub_splits(
    task: str,
    folder: str,
    hub: str,
    fields: tuple[str, ...],
    splits: Iterable[str],
    kinds: Kinds = (),
) -> dict[str, DataFile]:
    """A hub dataset's splits (or subsets) as local copies in ``folder`` (``{split}.jsonl``)."""
    return {
        s: DataFile(
            task, (f"{folder}/{re.escape(s)}\\.jsonl",), fields, f"{hub} ({s})", kinds=kinds
        )
        for s in splits
    }


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


def read_local_or_hub(
    local: DataFile, data_dir: str | None, hub_id: str, config: str | None, split: str, fix: str
) -> Rows:
    """The ``local`` copy under ``data_dir`` if there is one, else the cached hub dataset; a
    source in neither names the local path."""
    root = Path(data_dir or ".")
    found = local.find(root)  # a folder in its place is refused when read, not read around
    if found:
        return load_rows(str(found[0]), split, config, fix)
    try:
        return load_rows(hub_id, split, config, fix)
    except DataNotGiven:
        raise DataNotGiven(
            f"{root / local.where} does not exist, and {hub_id!r} is not in the local hub cache (a "
            f"run never downloads); {fix}"
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


def largest_k(paths: Iterable[Path]) -> Path | None:
    """The file with the largest k (``_k{K}_`` in its name), of equal k the first: passages are
    fitted per length, so the biggest pool serves them all."""
    ks = {p: int(m[1]) if (m := re.search(r"_k(\d+)_", p.name)) else 0 for p in paths}
    return max(ks, key=ks.__getitem__, default=None)  # max keeps the first of equal k
