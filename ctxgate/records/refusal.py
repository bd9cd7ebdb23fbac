"""The designed refusals: the ways a case can be unbuildable as asked, each carrying its cause.

A refusal is an outcome, not a crash: the case gets no score, and ``gate.verdicts.refusal_verdict`` (the one rule)
turns its cause into a skip or an error. Its message names the bad value and ends with the fix. The causes are
the report's words for a case without a score (``records.schema``)."""

from __future__ import annotations

from typing import ClassVar


class Refusal(Exception):
    """A case that cannot be built as asked. ``cause``: the report's word for why it has no score."""

    cause: ClassVar[str] = ""
