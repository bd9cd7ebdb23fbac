"""The one base of every error that says what is wrong and how to fix it; a case's designed refusal.

A ``CtxgateError``'s message names the bad value and ends with the fix, so the two boundaries only
print it: the command line (``cli.main``) as ``ctxgate VERB: message`` with exit status 2, and the
pytest plugins (each ``pytest_configure`` wrapped by ``plugins/options.py``'s
``refusals_are_usage_errors``) as pytest's one ``ERROR:`` line with exit status 4. Code that can do
better than stop (record a broken checkpoint in the report, skip a case) catches the subclass it
means where it is raised.

A case's designed refusal is a ``Refusal``: an outcome, not a crash. The case gets no score, and
``gate.verdicts.refusal_verdict`` (the one rule) turns its cause into a skip or an error. The causes
are the report's words for a case without a score (``records.schema``)."""

from __future__ import annotations

from typing import ClassVar


class CtxgateError(Exception):
    """Something the user can fix; ``str(error)`` says what and how."""

    @property
    def line(self) -> str:
        """The message as the one line a boundary prints."""
        return " ".join(str(self).split())


class Refusal(CtxgateError):
    """A case that cannot be built as asked. ``cause``: the report's word for why it has no
    score."""

    cause: ClassVar[str] = ""
