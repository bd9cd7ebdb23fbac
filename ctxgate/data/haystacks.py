"""Haystack text: RULER's noise line, the shipped essay text, or text the user supplies (``--haystack``).

RULER uses about 217 Paul Graham essays fetched from the web at generation time, never repeating a sentence.
ctxgate ships natural English prose from Wikipedia (``data/haystack_wikipedia.txt``, CC BY-SA 3.0, built from the
excerpt the gensim wheel carries by ``scripts/build_haystack.py``; its source and licence are in
``data/haystack_wikipedia.SOURCE.md``): 163K words, each sentence once, more than 128K tokens of any common
tokenizer. It accepts any text or dataset the user points at; the haystack's name and hash go into the report so
runs on different haystacks never compare silently.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ctxgate.memo import is_dir, is_file, memo, noted

NOISE_LINE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
DEFAULT = "haystack_wikipedia.txt"
_TEXT_SUFFIXES = {".txt", ".md"}


class HaystackError(ValueError):
    """The user's haystack cannot be read or is unusable."""


@dataclass(frozen=True)
class Essay:
    """Whitespace-collapsed essay text split into sentences, with a content hash."""

    sentences: tuple[str, ...]
    sha256: str
    source: str


def _split(text: str, source: str) -> Essay:
    collapsed = re.sub(r"\s+", " ", text).strip()
    sentences = tuple(s for s in _SENTENCE_END.split(collapsed) if s)
    if len(sentences) < 8:
        raise HaystackError(
            f"the haystack {source} has {len(sentences)} sentences; essays need at least 8: "
            "point --haystack at a longer text"
        )
    return Essay(sentences, hashlib.sha256(collapsed.encode("utf-8")).hexdigest(), source)


@memo(4)
def load_essay(path: str | None = None) -> Essay:
    """The default essay text, or ``path``: a text file, or a data file/dataset folder with a ``text`` column."""
    if path is None:
        text = resources.files("ctxgate.data").joinpath(DEFAULT).read_text("utf-8")
        return _split(text, f"ctxgate:{DEFAULT}")
    p = Path(path)
    if not noted(p) is not None:
        raise HaystackError(f"--haystack {path!r} does not exist: give a .txt file or a dataset with a 'text' column")
    if is_file(p) and p.suffix.lower() in _TEXT_SUFFIXES:
        try:
            return _split(p.read_text("utf-8"), str(p))
        except UnicodeDecodeError as exc:
            raw = p.read_bytes()
            line = raw[: exc.start].count(b"\n") + 1
            raise HaystackError(
                f"--haystack {path!r} line {line} is not UTF-8 text "
                f"(byte {raw[exc.start]:#04x} at offset {exc.start}): convert it to UTF-8, e.g. "
                f"iconv -f latin1 -t utf-8"
            ) from None
        except OSError as exc:
            raise HaystackError(f"--haystack {path!r} cannot be read ({exc.strerror or exc})") from None
    try:
        return _split(_dataset_text(p), str(p))
    except HaystackError:
        raise
    except Exception as exc:  # noqa: BLE001 - datasets and pyarrow raise many types for an unreadable file
        text = " ".join(str(exc).split())[:200]
        raise HaystackError(
            f"--haystack {path!r} cannot be read as a dataset ({type(exc).__name__}: {text}): give "
            "a UTF-8 .txt file, or a .jsonl/.parquet/.csv or save_to_disk folder with a 'text' "
            "column"
        ) from None


def _dataset_text(p: Path) -> str:
    import datasets  # heavy: only when a dataset haystack is asked for

    if is_dir(p):
        try:
            ds = datasets.load_from_disk(str(p))
        except FileNotFoundError:
            ds = datasets.load_dataset(str(p), split="train")
    else:
        kind = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}.get(p.suffix.lower())
        if kind is None:
            raise HaystackError(
                f"--haystack {str(p)!r}: unknown file type {p.suffix!r}; use .txt, .jsonl, .json, .parquet or .csv"
            )
        ds = datasets.load_dataset(kind, data_files=str(p), split="train")
    if isinstance(ds, datasets.DatasetDict):
        ds = ds[next(iter(ds))]
    if "text" not in ds.column_names:
        raise HaystackError(
            f"--haystack {str(p)!r} has columns {ds.column_names} but no 'text' column: rename the column to 'text'"
        )
    return "\n\n".join(str(t) for t in ds["text"])
