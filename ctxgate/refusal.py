"""The one base of every error that says what is wrong and how to fix it; a case's designed refusal;
the refusal of a user's file that opens with a byte-order mark.

A ``CtxgateError``'s message names the bad value and ends with the fix, so the boundaries
(``cli.main``, the pytest plugins) only print it as one line. A ``Refusal`` is an outcome, not a
crash: the case gets no score, and ``gate.verdicts`` turns its cause into a skip or an error."""

from __future__ import annotations

import codecs
from typing import ClassVar


class CtxgateError(Exception):
    """Something the user can fix; ``str(error)`` says what and how."""

    # the command line's exit status for it: 2, a refusal; 4, a usage error (pytest's own)
    exit_status: ClassVar[int] = 2

    @property
    def line(self) -> str:
        return " ".join(str(self).split())


class Unreachable(CtxgateError, RuntimeError):
    """What the run needs besides the checkpoint (a Ray cluster, its resources) could not be had:
    not the checkpoint's fault, so watch tries it again and bisect stops, rather than skip it."""


class Refusal(CtxgateError):
    """A case that cannot be built as asked; ``cause``: the report's word for why."""

    cause: ClassVar[str] = ""


def byte_order_mark(start: str | bytes, where: str, kind: str, failing: str = "") -> str | None:
    """The refusal of a user's ``kind`` (TOML, JSON) file that opens with a UTF-8 byte-order mark
    (None: it does not), ``failing``: the reader's own fix. Refused, not read past: neither format
    allows the mark, so the file's other readers (tomllib, transformers, the next tool) refuse it
    too; named, as no editor shows it and the parser's error points at an empty-looking column."""
    if not (start[:1] == "\ufeff" if isinstance(start, str) else start[:3] == codecs.BOM_UTF8):
        return None
    fix = "save it as UTF-8 without the mark" + (f"; failing that: {failing}" if failing else "")
    return (
        f"{where}: starts with a UTF-8 byte-order mark (bytes EF BB BF; editors do not show it, "
        f"and {kind} readers refuse it). Fix: {fix}"
    )
