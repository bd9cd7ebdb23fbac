"""MRCR v2's texts, never downloaded: the three JSON files eval_hub's ``generate_mrcr_texts.py``
writes (``mrcr_text_blocks/``: relevant, filler and few-shot writings, each nested as
format -> topic -> style -> seed -> text), read from ``<data-dir>/mrcr_v2/mrcr_text_blocks/``.
ctxgate ships a small stand-in set built from its Wikipedia haystack (``sample/``, see
``sample.SOURCE.md``), which ``--data-dir`` names like any other."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import NamedTuple

from ctxgate.api import (
    DataFile,
    DataNotGiven,
    DataUnavailable,
    json_document,
    memo,
    sha256_of_files,
)

KINDS = ("relevant", "filler", "fewshot")
FOLDER = "mrcr_v2/mrcr_text_blocks"
REFERENCE = "google-deepmind/eval_hub's eval_hub/mrcr_v2/generate_mrcr_texts.py"
FILES = {
    kind: DataFile(
        f"mrcr2_{kind}",
        (rf"mrcr_v2/mrcr_text_blocks/mrcr_{kind}_texts\.json",),
        (),
        optional="the mrcr2 cases skip" if kind != "fewshot" else "--mrcr2-fewshot static runs",
    )
    for kind in KINDS
}
DATA_FILES = tuple(FILES.values())

Nested = Mapping[str, Mapping[str, Mapping[str, Mapping[str, object]]]]


class Entry(NamedTuple):
    """One writing: its request's key (format, topic, style), its seed key and its text."""

    fmt: str
    topic: str
    style: str
    seed: str
    text: str


@dataclass(frozen=True, eq=False)  # one per files read (memo): compared as the same object
class Corpus:
    """The writings in their files' order; ``fewshot`` nested as written (None: not read)."""

    relevant: tuple[Entry, ...]
    filler: tuple[Entry, ...]
    fewshot: Nested | None
    paths: tuple[str, ...]
    sha256: str


def sample_dir() -> str:
    """The shipped stand-in set's ``--data-dir``."""
    return str(resources.files(__package__) / "sample")


def fix(root: Path) -> str:
    return (
        f"write the three files with {REFERENCE} (or pass --data-dir {sample_dir()}, ctxgate's "
        f"small stand-in set) and put them in {root / FOLDER}/"
    )


def _path(data_dir: str | None, kind: str) -> Path | None:
    found = FILES[kind].find(Path(data_dir)) if data_dir else ()
    return found[0] if found else None


def not_given(data_dir: str | None, kind: str) -> DataNotGiven:
    root = Path(data_dir or ".")
    return DataNotGiven(
        f"mrcr2 reads {FILES[kind].where} under {root}, and it is not there: {fix(root)}"
    )


@memo(4)
def load_corpus(data_dir: str | None, fewshot: bool) -> Corpus:
    """The relevant and filler writings (and the few-shot ones where ``fewshot``), checked."""
    kinds = KINDS if fewshot else KINDS[:2]
    paths = [_path(data_dir, kind) for kind in kinds]
    missing = next((k for k, p in zip(kinds, paths) if p is None), None)
    if missing:
        raise not_given(data_dir, missing)
    given = [p for p in paths if p is not None]
    nested = [read_nested(p, fix(Path(data_dir or "."))) for p in given]
    relevant, filler = (flatten(n) for n in nested[:2])
    for kind, entries, path in zip(kinds, (relevant, filler), given):
        if not entries:
            raise DataUnavailable(f"{path} holds no {kind} text; {fix(Path(data_dir or '.'))}")
    if fewshot:
        check_fewshot(nested[2], given[2])
    return Corpus(
        relevant,
        filler,
        nested[2] if fewshot else None,
        tuple(map(str, given)),
        sha256_of_files(*given),
    )


def read_nested(path: Path, fixed: str) -> Nested:
    """A texts file: objects four levels deep (format, topic, style, seed), refused otherwise."""
    doc = json_document(path, fixed)
    _check_level(doc, path, (), fixed)
    return doc  # type: ignore[return-value]


LEVELS = ("format", "topic", "style", "seed")


def _check_level(value: object, path: Path, keys: tuple[str, ...], fixed: str) -> None:
    if len(keys) == len(LEVELS):
        return
    if not isinstance(value, dict):
        at = " -> ".join(keys) or "the file"
        raise DataUnavailable(
            f"{path}: {at} is not an object of {LEVELS[len(keys)]}s (eval_hub's nesting: format "
            f"-> topic -> style -> seed -> text); {fixed}"
        )
    for key, inner in value.items():
        _check_level(inner, path, (*keys, key), fixed)


def flatten(nested: Nested) -> tuple[Entry, ...]:
    """The texts in file order, as the reference's ``flatten_data_with_tokens`` lists them: an
    empty text, or one that is not text, is left out."""
    return tuple(
        Entry(fmt, topic, style, seed, text)
        for fmt, topics in nested.items()
        for topic, styles in topics.items()
        for style, seeds in styles.items()
        for seed, text in seeds.items()
        if text and isinstance(text, str)
    )


def check_fewshot(nested: Nested, path: Path) -> None:
    """Every few-shot style has two texts at least: the reference draws two distinct seeds of one
    style until they differ, forever where it has one."""
    for fmt, topics in nested.items():
        for topic, styles in topics.items():
            for style, seeds in styles.items():
                bad = [s for s, t in seeds.items() if not isinstance(t, str)]
                if len(seeds) < 2 or bad:
                    why = f"seed {bad[0]} is not text" if bad else "has fewer than two seeds"
                    raise DataUnavailable(
                        f"{path}: {fmt} -> {topic} -> {style} {why}; every few-shot style needs "
                        f"two texts or more; {fix(path.parent.parent.parent)}"
                    )
