"""Haystack text: RULER's noise line, the shipped Wikipedia prose (``haystack_wikipedia.SOURCE.md``;
RULER fetches Paul Graham essays; volume 2 is read only when a prompt needs more), or the user's
(``--haystack``). Its name and hash go into the report: runs on other haystacks never compare."""

from __future__ import annotations

import bisect
import hashlib
import json
import lzma
import re
import threading
import weakref
from array import array
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from ctxgate.memo import is_dir, is_file, memo
from ctxgate.refusal import Refusal
from ctxgate.sources import door
from ctxgate.tokens.codec import PieceEncoder

NOISE_LINE = (
    "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
DEFAULT = "haystack_wikipedia.json"  # the manifest: the volumes, in order, and their hashes
_DATASET_KINDS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}
_DATASET_FIX = (
    "give a UTF-8 .txt file, or a .jsonl/.parquet/.csv or save_to_disk folder with a 'text' column"
)


class HaystackError(Refusal, ValueError):
    cause = "data_unreadable"


@dataclass(frozen=True)
class Volume:
    """Part of an essay: its sentences, or a packaged file read (and checked) on first use."""

    sentences_now: tuple[str, ...] | None = None
    resource: str | None = None
    sha256: str | None = None

    def sentences(self) -> tuple[str, ...]:
        if self.sentences_now is not None:
            return self.sentences_now
        assert self.resource is not None and self.sha256 is not None
        return _packaged_sentences(self.resource, self.sha256)


@dataclass(frozen=True)
class Essay:
    """Collapsed sentences in volumes read in order; ``sha256`` of the volumes joined by a space."""

    volumes: tuple[Volume, ...]
    sha256: str
    source: str

    @property
    def sentences(self) -> tuple[str, ...]:
        return tuple(s for v in self.volumes for s in v.sentences())


def _sentences(text: str) -> tuple[str, tuple[str, ...]]:
    collapsed = re.sub(r"\s+", " ", text).strip()
    return collapsed, tuple(s for s in _SENTENCE_END.split(collapsed) if s)


def _split(text: str, source: str) -> Essay:
    collapsed, sentences = _sentences(text)
    if len(sentences) < 8:
        raise HaystackError(
            f"the haystack {source} has {len(sentences)} sentences; essays need at least 8: "
            "point --haystack at a longer text"
        )
    return Essay((Volume(sentences),), _sha256(collapsed), source)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@lru_cache(maxsize=4)
def _packaged_sentences(resource: str, sha256: str) -> tuple[str, ...]:
    raw = resources.files("ctxgate.data").joinpath(resource).read_bytes()
    text = (lzma.decompress(raw) if resource.endswith(".xz") else raw).decode("utf-8")
    if _sha256(text) != sha256:
        raise HaystackError(
            f"the shipped haystack volume ctxgate/data/{resource} does not match its sha256 in "
            f"{DEFAULT}: reinstall ctxgate, or rebuild the haystack with scripts/build_haystack.py"
        )
    return _sentences(text)[1]


@lru_cache(maxsize=1)
def _default_essay() -> Essay:
    manifest = json.loads(resources.files("ctxgate.data").joinpath(DEFAULT).read_text("utf-8"))
    volumes = tuple(Volume(resource=v["file"], sha256=v["sha256"]) for v in manifest["volumes"])
    return Essay(volumes, manifest["sha256"], f"ctxgate:{DEFAULT.removesuffix('.json')}")


@memo(4)
def load_essay(path: str | None = None) -> Essay:
    """The default essay, or ``path``: a text file, or a data file/folder with a ``text`` column."""
    if path is None:
        return _default_essay()
    p = Path(path)
    if door.absent(p):
        raise _refused(path, " does not exist: give a .txt file or a dataset with a 'text' column")
    if not is_dir(p) and (problem := door.entry_problem(p)):  # a link to nothing, a FIFO
        raise HaystackError(f"--haystack {problem}; {_DATASET_FIX}")
    if is_file(p) and p.suffix.lower() in (".txt", ".md"):
        try:
            return _split(p.read_text("utf-8"), str(p))
        except UnicodeDecodeError as exc:
            raw = p.read_bytes()
            line = raw[: exc.start].count(b"\n") + 1
            raise _refused(
                path,
                f" line {line} is not UTF-8 text (byte {raw[exc.start]:#04x} at offset "
                f"{exc.start}): convert it to UTF-8, e.g. iconv -f latin1 -t utf-8",
            ) from None
        except OSError as exc:
            raise _refused(path, f" cannot be read ({exc.strerror or exc})") from None
    problem = door.problem(p) if is_file(p) and p.suffix.lower() in door.RECORD_FILES else None
    if problem:  # the door's line: datasets' own names neither the line nor what is wrong
        raise HaystackError(f"--haystack {problem}; {_DATASET_FIX}")
    try:
        return _split(_dataset_text(p), str(p))
    except HaystackError:
        raise
    except Exception as exc:  # noqa: BLE001 - datasets and pyarrow raise many types
        text = " ".join(str(exc).split())[:200]
        raise _refused(
            path,
            f" cannot be read as a dataset ({type(exc).__name__}: {text}): {_DATASET_FIX}",
        ) from None


def _refused(path: object, problem: str) -> HaystackError:
    return HaystackError(f"--haystack {str(path)!r}{problem}")


def _dataset_text(p: Path) -> str:
    import datasets  # heavy: only when a dataset haystack is asked for

    if is_dir(p):
        try:
            ds = datasets.load_from_disk(str(p))
        except FileNotFoundError:
            ds = datasets.load_dataset(str(p), split="train")
    else:
        kind = _DATASET_KINDS.get(p.suffix.lower())
        if kind is None:
            use = "use .txt, .jsonl, .json, .parquet or .csv"
            raise _refused(p, f": unknown file type {p.suffix!r}; {use}")
        ds = datasets.load_dataset(kind, data_files=str(p), split="train")
    if isinstance(ds, datasets.DatasetDict):
        ds = ds[next(iter(ds))]
    if "text" not in ds.column_names:
        problem = f" has columns {ds.column_names} but no 'text' column"
        raise _refused(p, f"{problem}: rename the column to 'text'")
    return "\n\n".join(str(t) for t in ds["text"])


class EssayTokens:
    """An essay's sentences tokenized behind a separator, in order, as far as prompts have needed
    them (any prefix is the same whatever length asked first): one flat array, sliced per prompt."""

    BATCH = 512

    def __init__(self, enc: PieceEncoder, essay: Essay, sep: str) -> None:
        self.enc, self.essay, self.sep = enc, essay, sep
        self.ids = array("i")  # token ids < 2**31: 4 bytes each
        # the same ids as the encoder's int objects: a prompt's haystack is a slice of it, copied at
        # memory speed, where ints made anew from ``ids`` took half a 1M-token prompt's time
        self.id_list: list[int] = []
        self.ends = [0]  # ends[k]: tokens of the first k sentences
        self.sentences: list[str] = []
        self.longest = 0
        self.complete = False
        self._volumes_read = 0  # each volume is read only when the ones before are used up
        self._block: tuple[str, ...] = ()
        self._at = 0
        self._lock = threading.Lock()

    def fit(self, room: int) -> int:
        """How many leading sentences fit in ``room`` tokens (tokenizing more as needed)."""
        with self._lock:
            while self.ends[-1] <= room and not self.complete:
                self._more()
        return bisect.bisect_right(self.ends, room) - 1

    def _more(self) -> None:
        while self._at >= len(self._block):
            if self._volumes_read == len(self.essay.volumes):
                self.complete = True
                return
            # may raise: retried
            self._block, self._at = self.essay.volumes[self._volumes_read].sentences(), 0
            self._volumes_read += 1
        batch = self._block[self._at : self._at + self.BATCH]
        self._at += len(batch)
        for sentence, ids in zip(batch, self.enc.encode_fresh([self.sep + s for s in batch])):
            self.sentences.append(sentence)
            self.ids.extend(ids)
            self.id_list.extend(ids)
            self.ends.append(len(self.ids))
            self.longest = max(self.longest, len(ids))

    def span(self, start: int, stop: int) -> array:
        return self.ids[self.ends[start] : self.ends[stop]]

    def span_list(self, start: int, stop: int) -> list[int]:
        return self.id_list[self.ends[start] : self.ends[stop]]


_ESSAY_TOKENS = weakref.WeakKeyDictionary[PieceEncoder, dict[tuple[str, str, str], EssayTokens]]()


def essay_tokens(enc: PieceEncoder, essay: Essay, sep: str = " ") -> EssayTokens:
    per_encoder = _ESSAY_TOKENS.setdefault(enc, {})
    key = (essay.source, essay.sha256, sep)
    if key not in per_encoder:
        per_encoder[key] = EssayTokens(enc, essay, sep)
    return per_encoder[key]
