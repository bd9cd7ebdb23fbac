"""Reports of an older schema, read in this one's terms: what version 1 kept in fields of its own
(``search``, ``reference``, the run's ``sequential``) version 2 keeps in the extras' slots
(``records/slots.py``), a case's ``sequential`` is its ``stop``, and the lengths a search decided
are its effective length's. Nothing else changed its shape, so the rest is read as it was."""

from __future__ import annotations

from typing import Any

# version 1's fields that are an extra's slot now: (where, field) -> the slot's name
_MOVED = {("report", "search"): "search", ("report", "reference"): "reference"}
_MOVED |= {("run", "sequential"): "sequential"}


def migrated(document: dict[str, Any]) -> dict[str, Any]:
    """A version-1 report's JSON as version 2 writes it (a null field is no slot)."""
    if document.get("schema_version") != 1:
        return document
    out = dict(document, schema_version=2)
    run = dict(out.get("run") or {})
    for (where, name), slot in _MOVED.items():
        holder = out if where == "report" else run
        value = holder.pop(name, None)
        if value is not None:
            holder["extras"] = {**holder.get("extras", {}), slot: value}
    out["run"] = run
    out["cases"] = [_case(c) for c in out.get("cases") or ()]
    search, effective = out.get("extras", {}).get("search"), out.get("effective_length")
    if search and effective is not None:  # what the search decided, as the verdict reads it
        skipped = {str(length): False for length in search.get("skipped") or ()}
        certain = {str(v["length"]): v["passed"] for v in search.get("ruler") or () if v["certain"]}
        out["effective_length"] = {**effective, "decided": skipped | certain}
    return out


def _case(case: Any) -> Any:
    """A version-1 case: its ``sequential`` is its ``stop``."""
    if not isinstance(case, dict) or "sequential" not in case:
        return case
    moved = {k: v for k, v in case.items() if k != "sequential"}
    return moved | {"stop": case["sequential"]}
