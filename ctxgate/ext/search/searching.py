"""The effective lengths by search: lengths shortest first, each summary stopped once decided.

An effective length is the longest length at which a summary passes with every shorter one, so the
first failing length decides it and the longer ones cannot change it; where thresholds.toml
requires one, reaching the requirement decides the gate. The search follows RULER's absolute
effective length and the relative one of every summary that can have a base (RULER's, HELMET's
categories and overall score, each family's), and skips a case once every summary it counts in is
decided. Within a length, RULER's average's own sequential test (``rounds``) may stop its cases once
it is certain which side of the bar their mean is on. What it cannot decide without running:
a case's floor and its baseline comparison (per case: the plugin runs such a case), and LongScore,
which gates nothing (docs/gates.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from ctxgate.api import (
    CaseRecord,
    EffectiveLength,
    GroupScore,
    Membership,
    Thresholds,
    format_length,
    membership,
    relative_lengths,
    summarize,
    summary_inputs,
)

from .records import LengthVerdict, SearchRecord


def summary_members(name: str, tasks: Membership) -> frozenset[str]:
    """The tasks a summary (a ``by_length`` key) averages, the published twins standing in."""
    if name == "ruler":
        found: set[str] = set(tasks.ruler)
    elif name == "helmet_overall":
        found = {t for members in tasks.helmet.values() for t in members}
    elif name.startswith("helmet_"):
        found = set(tasks.helmet.get(name.removeprefix("helmet_"), ()))
    else:
        found = set(tasks.families.get(name, ()))
    return frozenset(found | {s for s, t in tasks.stand_ins.items() if t in found})


def summary_names(tasks: Membership) -> list[str]:
    """Every summary with a relative effective length, as the report's ``by_length`` keys it."""
    helmet = [f"helmet_{c}" for c in tasks.helmet]
    return ["ruler", *helmet, *(["helmet_overall"] if helmet else []), *tasks.families]


ABSOLUTE = "ruler (absolute)"
Found = tuple[int, bool, str]  # a goal's value, whether it passes at the length, how it fails
ByLength = Mapping[str, Mapping[str, GroupScore]]


class Relative(Protocol):
    """What the search reads of a relative effective length (the spine's record)."""

    @property
    def value(self) -> int: ...
    @property
    def base(self) -> float: ...
    @property
    def share(self) -> float: ...
    @property
    def per_length(self) -> Mapping[int, bool]: ...
    @property
    def why(self) -> str | None: ...


class Searching:
    """``--search-effective-length`` as a run goes: the cases' records arrive shortest length
    first; once every selected member of a followed summary has its record at a length, the
    summary is judged there as the session's verdict will judge it. The first length it fails at
    decides its effective length; where thresholds.toml requires one, the length at which it
    reaches that decides the gate; a relative one whose base is not above chance has none, which
    no longer length can give it. A case is skipped once every followed summary it counts in has
    been decided at a shorter length; a case in none always runs."""

    def __init__(self, thresholds: Thresholds, selected: Iterable[tuple[str, int]]) -> None:
        self.thresholds, tasks = thresholds, membership()
        self.waiting: dict[int, set[str]] = {}  # length -> selected tasks without a record yet
        for task, length in selected:
            self.waiting.setdefault(length, set()).add(task)
        self.lengths = tuple(sorted(self.waiting))
        self.followed = _followed(thresholds, tasks, self.waiting)
        self.gated = {ABSOLUTE, *(name for name, _ in thresholds.relative_min_length)}
        self.records: list[CaseRecord] = []
        self.ruler: dict[int, LengthVerdict] = {}  # RULER's average at each length judged
        self.decided_at: dict[str, tuple[int, str]] = {}  # goal -> the length that decided it, why
        self.ran: set[int] = set()  # lengths with a case that ran
        self.skipped: set[int] = set()  # lengths with a case the search left out
        self.ruler_skipped: set[int] = set()  # of those, lengths with a RULER case left out
        self.judged: dict[str, int] = {}  # goal -> the last length it was judged at

    def skip(self, task: str, length: int) -> str | None:
        """Why the case does not run (None: it runs)."""
        mine = [name for name, members in self.followed.items() if task in members]
        # a gate's goals govern its cases; a summary no gate asks for, only cases in no gated one
        mine = [n for n in mine if n in self.gated] or mine
        decided = [self.decided_at[n] for n in mine if n in self.decided_at]
        if not mine or len(decided) < len(mine) or not all(L < length for L, _ in decided):
            return None
        whys = "; ".join(why for _, why in decided)
        return f"{task} at {length}: not run, --search-effective-length decided it: {whys}"

    def record(self, case: CaseRecord, verdict: LengthVerdict | None = None) -> None:
        """A case's final record (``verdict``: RULER's average at its length, as the test of
        cases drawn together left it)."""
        if verdict is not None and verdict.certain:
            self.ruler[case.length] = verdict
        left_out = case.skip_kind == "search_stopped"
        (self.skipped if left_out else self.ran).add(case.length)
        if left_out and case.task in self.followed.get(ABSOLUTE, ()):
            self.ruler_skipped.add(case.length)
        self.records.append(case)
        self.waiting.get(case.length, set()).discard(case.task)
        self._judge(case.length)

    def _judge(self, length: int) -> None:
        """Each goal whose members up to ``length`` all have their records: decided when the
        length fails it, when its effective length reaches the length its gate requires (longer
        lengths can then change the value, not the gate), or when it can have none."""
        waiting = set().union(*(w for L, w in self.waiting.items() if L <= length))
        ready = [n for n in self.followed if n not in self.decided_at]
        # each goal once a length (summarizing is the costly part), as its last member there is in
        ready = [n for n in ready if self.judged.get(n, -1) < length]
        ready = [n for n in ready if not waiting & self.followed[n]]
        if not ready:
            return
        self.judged.update(dict.fromkeys(ready, length))
        t = self.thresholds
        # as the session will judge it: lengths where a RULER case was left out fail
        decided = {**dict.fromkeys(self.ruler_skipped, False)}
        decided |= {v.length: v.passed for v in self.ruler.values()}
        by_length, _, eff = summarize(self.records, t.effective_threshold, decided)
        found: dict[str, Found] = {}
        # RULER's average once its members here are in (the search records it at each length)
        if eff is not None and length in eff.per_length and not waiting & self.followed[ABSOLUTE]:
            found[ABSOLUTE] = self._absolute(length, by_length, eff)
        # the base, the mean up to base_up_to, is known only past it
        if length > t.relative_base_up_to:
            inputs = summary_inputs(self.records, by_length)
            for name, relative in relative_lengths(inputs, t).items():
                if name in ready:
                    found[name] = _relative(name, relative, length)
        needs: Mapping[str, int] = {ABSOLUTE: t.min_effective_length, **dict(t.relative_min_length)}
        for name in ready:
            if name in found:
                self._decide(name, found[name], needs.get(name, 0), length)

    def _absolute(self, length: int, by_length: ByLength, eff: EffectiveLength) -> Found:
        """RULER's average at ``length``, judged as the session judges it; a length its own test
        did not decide is kept as judged on the cases' own means, as the grid judges it."""
        t, passed = self.thresholds, eff.per_length[length]
        group = by_length[str(length)]["ruler"]
        if length not in self.ruler:
            here = [c.n for c in self.records if c.length == length and c.task in group.members]
            n = min(here, default=0)
            self.ruler[length] = LengthVerdict(length, passed, n, False, group.score or 0.0)
        said = f"RULER's average {group.score} is not above {t.effective_threshold:g}"
        if length in eff.incomplete:
            said = "a RULER task had no score (counted as failing)"
        elif length in eff.early:
            said = "a RULER task stopped early, an estimate (counted as failing)"
        return eff.value, passed, said

    def _decide(self, name: str, found: Found, need: int, length: int) -> None:
        value, passed, said = found
        if not passed:
            why = f"{said} at {length}: longer lengths cannot change its effective length"
            self.decided_at[name] = (length, why)
        elif need and value >= need:
            goal = "RULER's effective length" if name == ABSOLUTE else f"{name}'s"
            reached = f"{format_length(value)} >= {format_length(need)} required"
            why = f"{goal} reached {reached}: longer lengths cannot fail its gate"
            self.decided_at[name] = (length, why)

    def summary(self) -> SearchRecord:
        why = "; ".join(why for _, why in self.decided_at.values()) or None
        verdicts = tuple(self.ruler[L] for L in sorted(self.ruler))
        skipped, ruler = tuple(sorted(self.skipped)), tuple(sorted(self.ruler_skipped))
        return SearchRecord(tuple(sorted(self.ran)), skipped, why, verdicts, ruler)


def _relative(name: str, relative: Relative, length: int) -> Found:
    """A relative effective length at ``length``; one whose base is not above chance (value 0)
    fails there, since no longer length can give it a base."""
    if relative.why:
        return 0, False, f"{name} has no relative effective length ({relative.why})"
    said = f"{name} fell below {relative.share:.0%} of its base {relative.base:g}"
    return relative.value, relative.per_length.get(length, True), said


def _followed(
    thresholds: Thresholds, tasks: Membership, selected: Mapping[int, set[str]]
) -> dict[str, frozenset[str]]:
    """The goals and their members: RULER's absolute effective length, each relative one the file
    gates, and each other summary's that can have a base (a member selected at a length up to
    base_up_to); a summary with none has no effective length to find, so its cases run."""
    followed = {ABSOLUTE: summary_members("ruler", tasks)}
    gated = {name for name, _ in thresholds.relative_min_length}
    base = set().union(*(w for L, w in selected.items() if L <= thresholds.relative_base_up_to))
    for name in summary_names(tasks):
        members = summary_members(name, tasks)
        if name in gated or members & base:
            followed[name] = members
    return followed
