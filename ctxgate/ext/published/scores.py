"""The papers' published scores (``published.toml``, by ``scripts/published_scores.py``): which
model scored what, per measure and length, and the setting behind each number."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from importlib.abc import Traversable
from types import MappingProxyType
from typing import Any

import tomllib

from ctxgate.api import CtxgateError, flat, hook, parse_length


@dataclass(frozen=True)
class Source:
    key: str
    paper: str
    table: str
    what: str
    samples: int  # per task; 0: the benchmark's own per-dataset counts (the suite's defaults)
    length_unit: str
    allowance: float  # points a reproduction may differ by beyond its own interval
    allowance_source: str
    # what ``ctxgate reproduce`` prints for a source this extra has no recipe of its own for, each
    # line formatted with ``{checkpoint}``, ``{lengths}``, ``{samples}``, ``{engine}`` (the engine's
    # flags) and ``{reference}`` (the --reference value)
    recipe: tuple[str, ...] = ()


@dataclass(frozen=True)
class Published:
    """One model's numbers for one measure (a key of the report's ``by_length``: ``ruler``...)."""

    source: Source
    model: str
    label: str  # the model's row label in the paper
    measure: str
    chat_template: str  # on | off | task (each its own, as HELMET does): the paper's policy
    scores: Mapping[int, float]  # length in tokens -> percent
    claimed: str | None = None
    effective: str | None = None
    paper_id: str | None = None  # the paper's id, where the file files the model under another's
    effective_bar: str | None = None  # what ``effective`` was measured against, per the table


class UnknownModel(CtxgateError, ValueError):
    """A --reference that names no model of the papers."""


class AmbiguousModel(UnknownModel):
    """A name that several models of the papers go by."""


class PublishedFileError(CtxgateError, ValueError):
    """A file of published numbers that cannot be read: the line names it and what is wrong."""


def _read(file: Traversable) -> list[Published]:
    try:
        return _rows(tomllib.loads(file.read_text("utf-8")))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        why = f"{type(exc).__name__}: {exc} (each [[score]] cites a [source.KEY] of its file)"
    raise PublishedFileError(
        f"{file}: published numbers that cannot be read ({why}): fix the file, or reinstall or "
        "uninstall the package that ships it"
    )


def _rows(data: dict[str, Any]) -> list[Published]:
    sources = {
        k: Source(key=k, **{**v, "recipe": tuple(v.get("recipe", ()))})
        for k, v in data.get("source", {}).items()
    }
    found = []
    for row in data.get("score", ()):  # its keys: the record's fields (optional ones may lack)
        scores = {parse_length(L.lower()): float(s) for L, s in row["scores"].items()}
        row = {**row, "source": sources[row["source"]], "scores": MappingProxyType(scores)}
        found.append(Published(**row))
    return found


@lru_cache(maxsize=1)
def all_published() -> tuple[Published, ...]:
    """The papers' numbers this extra ships, then those each installed package adds
    (``ctxgate_published_files``), a file's rows naming only its own sources."""
    files = [resources.files(__package__).joinpath("published.toml")]
    files += flat(hook().ctxgate_published_files())
    return tuple(p for file in files for p in _read(file))


def models() -> list[str]:
    return sorted({p.model for p in all_published()})


def _names(p: Published) -> set[str]:
    ids = [p.model] + ([p.paper_id] if p.paper_id else [])
    return {n.lower() for i in ids for n in (i, i.rsplit("/", 1)[-1])} | {p.label.lower()}


def lookup(name: str, given: str = "", fix: str = "") -> str | None:
    """The model id a name stands for (an id, its last part, or a paper's row label, any case), None
    when no paper has it; a name several models go by is refused, ``given`` first, ``fix`` last."""
    written = name.strip().rstrip("/")
    exact = {p.model for p in all_published() if written in (p.model, p.paper_id)}
    found = exact or {p.model for p in all_published() if written.lower() in _names(p)}
    if len(found) > 1:
        listed = "; ".join(f"{m} ({', '.join(_tables(m))})" for m in sorted(found))
        raise AmbiguousModel(
            f"{given}{name!r} names {len(found)} models of the papers: {listed}; give one of "
            f"these ids{fix}"
        )
    return next(iter(found), None)


def _tables(model: str) -> list[str]:
    """Where a model's numbers are printed: ``RULER Table 3``, ``HELMET Figure 6``."""
    tables = (
        f"{p.source.paper.split()[0]} {p.source.table.split(' (')[0]}" for p in rows_for(model)
    )
    return list(dict.fromkeys(tables))


def resolve(name: str, given: str = "", fix: str = "") -> str:
    found = lookup(name, given, fix)
    if found is not None:
        return found
    near = difflib.get_close_matches(name, models(), n=3, cutoff=0.5)
    hint = f" (nearest: {', '.join(near)})" if near else ""
    raise UnknownModel(
        f"{given}{name!r} is no model of the papers' tables{hint}: `ctxgate published` lists "
        f"them{fix}"
    )


def rows_for(model: str) -> list[Published]:
    return [p for p in all_published() if p.model == model]
