"""The extras' data in the records: the run's record, each case's record and the report hold it
in their ``extras``, by the name of a slot an extra registers (``hookspec.ctxgate_slots``) with the
frozen dataclass its data is read back into. The spine's schema names no extra's record; a slot no
installed extra registers is kept as the JSON it was, and said to be an absent extra's."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ctxgate.hooks import flat, hook
from ctxgate.refusal import CtxgateError

Level = Literal["run", "case", "report"]


@dataclass(frozen=True)
class Slot:
    """``name`` in the ``extras`` of the records at ``level``, read back into ``model`` (a frozen
    dataclass). A run slot with ``baseline`` (the options it records, as a refusal names them) must
    hold the same value in a ``--baseline`` run; ``as_now`` reads an older report's value in this
    version's terms before they are compared."""

    name: str
    level: Level
    model: type
    baseline: str | None = None
    as_now: Callable[[Any], Any] | None = None


class SlotError(CtxgateError, ValueError):
    """An extra's slot cannot be read: the message names the record, the slot and the fix."""


def slots(level: Level) -> dict[str, Slot]:
    """The installed extras' slots at ``level``, by name; two of one name are refused."""
    found: dict[str, Slot] = {}
    for slot in flat(hook().ctxgate_slots()):
        if slot.level != level:
            continue
        if slot.name in found:
            raise CtxgateError(
                f"two ctxgate plugins register the {level} slot {slot.name!r}: rename one"
            )
        found[slot.name] = slot
    return found


def typed(extras: Mapping[str, object], level: Level, where: str) -> dict[str, object]:
    """``extras`` with each installed extra's slot read into its model (JSON as the file had it
    in, a record out); an absent extra's slot stays JSON. ``where``: the record, for a refusal."""
    from pydantic import ValidationError

    from ctxgate.records.schema import adapter_for

    known, out = slots(level), dict(extras)
    for name, value in extras.items():
        slot = known.get(name)
        if slot is None or value is None or isinstance(value, slot.model):
            continue
        try:
            out[name] = adapter_for(slot.model).validate_json(json.dumps(value), strict=True)
        except ValidationError as exc:
            first = exc.errors()[0]
            at = ".".join(str(p) for p in first["loc"])
            raise SlotError(
                f"{where}.extras.{name}{'.' + at if at else ''}: {first['msg']}: the slot was "
                "written by another version of the extra that registers it; install that version, "
                "or re-run with --report"
            ) from None
    return out


def absent(extras: Mapping[str, object], level: Level) -> list[str]:
    """The slots in ``extras`` no installed extra registers: kept as written, shown as such."""
    known = slots(level)
    return [name for name in extras if name not in known]
