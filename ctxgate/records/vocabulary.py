"""The report's words: the names its records share for what a case is, how it ended and why it
has no score, read by every piece that writes, gates or renders a report."""

from __future__ import annotations

from typing import Final, Literal, get_args

# RULER's, HELMET's, or a family's an extra registers (docs/tasks.md): a registered suite's name,
# checked against the task registry when a run starts, never a closed list
Suite = str
Verdict = Literal["pass", "fail", "skip", "error"]
ThoughtEnd = Literal["model", "forced", "never"]  # how a reasoning model's thought ended
# Why a selected case has no score, in the report's words; which fail the gates is gate.verdicts'.
# the task cannot be built at this length; --search-effective-length decided before it
ByDesign = Literal["too_short", "search_stopped"]
NotGiven = Literal["data_not_given", "judge_not_given"]  # an optional input the run was not given
# the checkpoint or an input prevents the case (data_short: the input ran out before the length)
Broken = Literal["window", "data_unreadable", "data_short", "judge_failed"]
# the case errored, its worker died, the session never reached it
RunFailure = Literal["error", "crash", "not_run"]
BY_DESIGN: tuple[str, ...] = get_args(ByDesign)
NOT_GIVEN: tuple[str, ...] = get_args(NotGiven)
BROKEN: tuple[str, ...] = get_args(Broken)

Json = dict[str, object]  # a part whose shape belongs to another piece (a backend's description)
# pydantic's config for the schema's root records: a field's docstring is its description
DESCRIBED: Final = {"use_attribute_docstrings": True}
