"""The errors a task's data raises. Which one decides the gates (``gate.verdicts``): data not given
leaves an ungated case skipped, data given but unreadable always fails."""

from ctxgate.refusal import Refusal


class DataUnavailable(Refusal, RuntimeError):
    """Data given but unusable; the message names the file (and line) and ends with the fix."""

    cause = "data_unreadable"


class DataNotGiven(DataUnavailable):
    """Data not provided (a run never downloads); the message names the expected path and flag."""

    cause = "data_not_given"
