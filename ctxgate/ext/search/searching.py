"""The effective length by search: lengths shortest first, stopped at the first that fails.

The effective length is the longest length at which the summary (RULER's average of its tasks)
passes with every shorter one, so the first failing length decides it and the longer ones cannot
change it. Within a length, RULER's average's own sequential test (``run.rounds``) may stop its
cases once it is certain which side of the bar their mean is on.
"""

from __future__ import annotations

from collections.abc import Iterable

from ctxgate.api import (
    CaseRecord,
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


ABSOLUTE = "ruler (absolute)"


class Searching:
    """``--search-effective-length`` as a run goes: the cases' records arrive shortest length
    first; once every selected member of a followed summary has its record at a length, the
    summary is judged there as the session's verdict will judge it. The first length it fails at
    decides its effective length; where thresholds.toml requires one, the length at which it
    reaches that decides the gate. A case is skipped once every followed summary it counts in has
    been decided at a shorter length; a case in none always runs."""

    def __init__(self, thresholds: Thresholds, selected: Iterable[tuple[str, int]]) -> None:
        self.thresholds, tasks = thresholds, membership()
        # the goals: RULER's (absolute) effective length, and each relative one the file gates
        self.followed = {ABSOLUTE: summary_members("ruler", tasks)}
        for name, _ in thresholds.relative_min_length:
            self.followed[name] = summary_members(name, tasks)
        self.waiting: dict[int, set[str]] = {}  # length -> selected tasks without a record yet
        for task, length in selected:
            self.waiting.setdefault(length, set()).add(task)
        self.lengths = tuple(sorted(self.waiting))
        self.records: list[CaseRecord] = []
        self.ruler: dict[int, LengthVerdict] = {}  # RULER's average at each length judged
        self.decided_at: dict[str, tuple[int, str]] = {}  # goal -> the length that decided it, why
        self.ran: set[int] = set()  # lengths with a case that ran
        self.skipped: set[int] = set()  # lengths with a case the search left out

    def skip(self, task: str, length: int) -> str | None:
        """Why the case does not run (None: it runs)."""
        mine = [name for name, members in self.followed.items() if task in members]
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
        self.records.append(case)
        self.waiting.get(case.length, set()).discard(case.task)
        self._judge(case.length)

    def _judge(self, length: int) -> None:
        """Each goal whose members up to ``length`` all have their records: decided when the
        length fails it, or when its effective length reaches the length its gate requires (longer
        lengths can then change the value, not the gate)."""
        waiting = set().union(*(w for L, w in self.waiting.items() if L <= length))
        ready = [n for n in self.followed if n not in self.decided_at]
        ready = [n for n in ready if not waiting & self.followed[n]]
        if not ready:
            return
        t = self.thresholds
        decided = {v.length: v.passed for v in self.ruler.values()}
        by_length, _, eff = summarize(self.records, t.effective_threshold, decided)
        found: dict[str, tuple[int, bool, str]] = {}  # goal -> value, passed here, how it failed
        if eff is not None and length in eff.per_length:
            group, passed = by_length[str(length)]["ruler"], eff.per_length[length]
            if length not in self.ruler:  # judged on the cases' own means, as the grid judges it
                here = [c.n for c in self.records if c.length == length and c.task in group.members]
                n = min(here, default=0)
                self.ruler[length] = LengthVerdict(length, passed, n, False, group.score or 0.0)
            said = f"RULER's average {group.score} is not above {t.effective_threshold:g}"
            if length in eff.incomplete:
                said = "a RULER task had no score (counted as failing)"
            elif length in eff.early:
                said = "a RULER task stopped early, an estimate (counted as failing)"
            found[ABSOLUTE] = (eff.value, passed, said)
        needs = {ABSOLUTE: t.min_effective_length, **dict(t.relative_min_length)}
        inputs = summary_inputs(self.records, by_length)
        for name, relative in relative_lengths(inputs, t).items():
            # the base, the mean up to base_up_to, is known only past it
            if name in self.followed and length > t.relative_base_up_to:
                said = f"{name} fell below {relative.share:.0%} of its base {relative.base:g}"
                found[name] = (relative.value, relative.per_length.get(length, True), said)
        for name in ready:
            if name not in found:
                continue
            value, passed, said = found[name]
            need = needs[name]
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
        return SearchRecord(tuple(sorted(self.ran)), tuple(sorted(self.skipped)), why, verdicts)
