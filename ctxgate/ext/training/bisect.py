"""Find the first checkpoint where a capability broke, in about log2(N) evaluations. Checkpoints
are ordered by step; the good end is the reference, a probe is *bad* by the baseline gate's paired
rule, and the bad end is taken as given when named, else checked. Each checkpoint is evaluated
outside pytest, opened by the pytest plugin's own composition root (``ctxgate.run.compose``). A
checkpoint that cannot be opened (its checks before loading, or its load, fail) has no verdict: it
is searched around, as ``git bisect skip`` does."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ctxgate.api import (
    EVALUATION,
    REASONING,
    Cost,
    ModelError,
    PairedResult,
    Plan,
    atomic_write,
    case_stop,
    cost_line,
    extra_groups,
    make_plan,
    paired_compare,
    placement,
    regression_verdict,
)
from ctxgate.ext.training.options import TOLERANCE
from ctxgate.ext.training.probe import (
    Case,
    Results,
    Tolerance,
    check_config_on,
    evaluate_checkpoint,
    select_cases,
)
from ctxgate.ext.training.run_folder import (
    SKIPPED,
    BisectError,
    left_out,
    order_checkpoints,
    step_of,
)

# (checkpoint, the reference's results or None for the reference itself, how many checkpoints are
# evaluated side by side with it) -> results per case; ModelError: it could not be opened
Evaluate = Callable[[Path, Results | None, int], Results]


def resolve_end(checkpoints: Sequence[Path], name: str) -> int:
    for i, p in enumerate(checkpoints):
        if name in (str(p), p.name) or (name.isdigit() and step_of(p) == int(name)):
            return i
    raise BisectError(
        f"{name!r} is none of the checkpoints: give a name such as {checkpoints[0].name} or a step"
    )


@dataclass
class Probe:
    index: int
    path: Path
    bad: bool | None  # None: it could not be opened (``skipped`` says why), so it has no verdict
    comparisons: dict[Case, PairedResult] = field(default_factory=dict)
    unscored: tuple[Case, ...] = ()  # the reference scored them, this one could not
    from_cache: int = 0
    samples: int = 0
    skipped: str | None = None
    cost: Cost = Cost()


@dataclass
class BisectResult:
    first_bad: int  # the first checkpoint evaluated bad; those just before it may be skipped ones
    checkpoints: list[Path]
    probes: list[Probe]  # one per checkpoint evaluated
    # evaluations one after another: with a fan-out, each round probes several checkpoints at once
    rounds: int = 0

    @property
    def candidates(self) -> list[Path]:
        """Where the first bad checkpoint is: ``first_bad`` alone, or with the checkpoints before
        it back to the last good one, when every one of them was skipped."""
        good = max(p.index for p in self.probes if p.bad is False and p.index < self.first_bad)
        return self.checkpoints[good + 1 : self.first_bad + 1]

    @property
    def cost(self) -> Cost:
        return sum((p.cost for p in self.probes), Cost())

    def render(self) -> str:
        lines = []
        for p in self.probes:
            if p.skipped is not None:
                lines.append(f"  [{p.index}] {p.path.name}: SKIP  cannot be opened: {p.skipped}")
                continue
            said = [
                f"{t}@{L}: {r.current:.1f} (delta {r.delta:+.1f}, upper {r.high:+.1f})"
                for (t, L), r in sorted(p.comparisons.items())
            ]
            said += [f"{t}@{L}: no score (the reference has one)" for t, L in p.unscored]
            lines.append(
                f"  [{p.index}] {p.path.name}: {'BAD ' if p.bad else 'good'}  "
                f"{'; '.join(said) or 'reference'}  (cached {p.from_cache}/{p.samples})"
            )
            lines.append(f"      {cost_line(p.cost, 'cost')}")
        lines.append(cost_line(self.cost, "Cost in all"))
        took = f"{len(self.probes)} evaluations in {self.rounds} rounds"
        *skipped, last = [c.name for c in self.candidates]
        if not skipped:
            lines.append(
                f"first bad checkpoint: {self.checkpoints[self.first_bad]} (index "
                f"{self.first_bad}, {took})"
            )
            return "\n".join(lines)
        lines.append(
            f"first bad checkpoint: one of {', '.join([*skipped, last])} (a range: "
            f"{', '.join(skipped)} could not be opened, and the first bad may be "
            f"{'it' if len(skipped) == 1 else 'any of them'}; restore "
            f"{'it' if len(skipped) == 1 else 'them'} from the run to narrow it; {took})"
        )
        return "\n".join(lines)


def is_bad(
    reference: Results, probe: Results, tolerance: Tolerance, confidence: float
) -> tuple[bool, dict[Case, PairedResult]]:
    comparisons, bad = {}, False
    for key, ref in reference.items():
        mine = probe.get(key)
        if mine is None:  # the reference scored it, this checkpoint could not run it: a regression
            bad = True
            continue
        ref_samples = {s.index: s for s in ref.samples}
        # a probe under --sequential draws the reference's first samples only, each the same prompt
        if ref.data_sha256 != mine.data_sha256 and any(
            s.index not in ref_samples or ref_samples[s.index].sample_sha256 != s.sample_sha256
            for s in mine.samples
        ):
            raise BisectError(
                f"{key[0]}@{key[1]}: the checkpoints built different samples; they must share a "
                "tokenizer and chat template to be bisected"
            )
        pairs = [(s.score, ref_samples[s.index].score) for s in mine.samples]
        scored = [(a, b) for a, b in pairs if a is not None and b is not None]
        result = paired_compare([a for a, _ in scored], [b for _, b in scored], confidence)
        comparisons[key] = result
        bad = bad or regression_verdict(result, tolerance(*key), mine.stop)
    return bad, comparisons


def _tally(results: Results) -> dict[str, Any]:
    """A probe's ``from_cache``, ``samples`` and ``cost``."""
    rs = results.values()
    cost = sum((r.cost or Cost() for r in rs), Cost())
    return {
        "from_cache": sum(r.samples_from_cache for r in rs),
        "samples": sum(r.n for r in rs),
        "cost": cost,
    }


def spread(between: Sequence[int], fan_out: int) -> list[int]:
    """Up to ``fan_out`` of the indices ``between`` the ends, evenly spaced."""
    k = min(fan_out, len(between))
    return [between[(len(between) + 1) * j // (k + 1) - 1] for j in range(1, k + 1)]


@dataclass(frozen=True)
class Judging:
    """How a probe is judged against the good checkpoint: each case's ``tolerance``, the paired
    comparison's ``confidence``, and how many checkpoints one round probes side by side."""

    tolerance: Tolerance
    confidence: float = 0.95
    fan_out: int = 1


class _Prober:
    """The rounds of probes: each checkpoint evaluated against the good one's results."""

    def __init__(
        self, checkpoints: list[Path], reference: Results, evaluate: Evaluate, judging: Judging
    ) -> None:
        self.checkpoints, self.reference, self.evaluate = checkpoints, reference, evaluate
        self.judging, self.probes, self.rounds = judging, list[Probe](), 1

    def attempt(self, i: int, together: int) -> Results | ModelError:
        try:
            return self.evaluate(self.checkpoints[i], self.reference, together)
        except ModelError as exc:
            if exc.checkpoint:
                return exc
            raise  # a cluster or server that failed would skip every checkpoint after it

    def round(self, indices: list[int]) -> dict[int, bool | None]:
        self.rounds += 1
        together, rule = len(indices), self.judging
        with ThreadPoolExecutor(together, thread_name_prefix="ctxgate-probe") as pool:
            found = list(pool.map(lambda i: self.attempt(i, together), indices))
        verdicts: dict[int, bool | None] = {}
        for i, results in zip(indices, found):
            path = self.checkpoints[i]
            if isinstance(results, ModelError):  # no verdict: neither good nor bad
                self.probes.append(Probe(i, path, None, skipped=results.line))
                verdicts[i] = None
                continue
            verdict, compared = is_bad(self.reference, results, rule.tolerance, rule.confidence)
            unscored = tuple(k for k in self.reference if k not in results)
            self.probes.append(Probe(i, path, verdict, compared, unscored, **_tally(results)))
            verdicts[i] = verdict
        return verdicts


def bisect(
    checkpoints: Sequence[Path], good: int, bad: int | None, evaluate: Evaluate, judging: Judging
) -> BisectResult:
    """Each round evaluates ``judging.fan_out`` checkpoints side by side: log_(k+1) N rounds. One
    that ``evaluate`` cannot open (a ModelError of the checkpoint's own) is skipped; an unopenable
    last one gives way to the one before it as the bad end; any other ModelError ends the search."""
    checkpoints = list(checkpoints)
    end = len(checkpoints) - 1 if bad is None else bad
    if not 0 <= good < end < len(checkpoints):
        raise BisectError(f"the good checkpoint ({good}) must come before the bad one ({end})")
    try:
        reference = evaluate(checkpoints[good], None, 1)
    except ModelError as exc:
        if not exc.checkpoint:
            raise
        raise BisectError(
            f"the good checkpoint {checkpoints[good].name} cannot be evaluated ({exc.line}): "
            "pass --good with one that can"
        ) from None
    if not reference:
        raise BisectError("the case selection matched no case: check -k and --lengths")
    prober = _Prober(checkpoints, reference, evaluate, judging)
    prober.probes.append(Probe(good, checkpoints[good], False, {}, (), **_tally(reference)))
    if bad is None:
        end = _last_bad(prober, good, end)
    first = search(good, end, prober.round, judging.fan_out)
    return BisectResult(first, checkpoints, prober.probes, prober.rounds)


def _last_bad(prober: _Prober, good: int, end: int) -> int:
    """The last checkpoint that can be opened, which must be bad: the search's bad end."""
    checkpoints = prober.checkpoints
    while (verdict := prober.round([end])[end]) is None and end - 1 > good:
        end -= 1
    skipped = ", ".join(p.path.name for p in prober.probes if p.bad is None)
    if verdict is None:
        raise BisectError(
            f"no checkpoint after {checkpoints[good].name} can be opened ({skipped}): restore "
            "them from the run, or pass --bad"
        )
    if not verdict:
        after = f" ({skipped} after it cannot be opened)" if skipped else ""
        raise BisectError(
            f"the last checkpoint {checkpoints[end].name}{after} is not worse than "
            f"{checkpoints[good].name} by the gate's rule: nothing to bisect (or pass --bad, "
            "--tolerance)"
        )
    return end


def search(
    lo: int,
    hi: int,
    probe_round: Callable[[list[int]], Mapping[int, bool | None]],
    fan_out: int = 1,
) -> int:
    """The first bad index after a good ``lo``, before or at a bad ``hi``. A probe without a
    verdict (None) is searched around, as ``git bisect skip`` does: when only such probes are left
    between the last good and ``hi``, the first bad is one of them or ``hi``, which is returned."""
    skipped: set[int] = set()
    while between := [i for i in range(lo + 1, hi) if i not in skipped]:
        verdicts = probe_round(spread(between, fan_out))
        skipped.update(i for i, bad in verdicts.items() if bad is None)
        hi = min((i for i, bad in verdicts.items() if bad), default=hi)
        lo = max((i for i, bad in verdicts.items() if bad is False and i < hi), default=lo)
    return hi


def add_parser(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser(
        "bisect", help="find the first checkpoint where the selected cases regressed"
    )
    add = b.add_argument
    add("checkpoints", nargs="+", help="a folder of checkpoints, or the checkpoints in any order")
    add("--good", help="known-good checkpoint (name or step; default: the first)")
    add("--bad", help="known-bad checkpoint (default: the last, which is then checked)")
    add("-k", help="case selection, pytest -k style over ids like niah_single_1-8192")
    # as pytest takes them, the extras' that evaluate a checkpoint too
    evaluating = [o for group in extra_groups() if group.evaluates for o in group.options]
    for option in (*EVALUATION, *REASONING, *evaluating):
        option.add_to(b)
    TOLERANCE.add_to(b)
    add("--json", help="also write the path taken as JSON here")
    b.set_defaults(fn=main)
    b.epilog = (
        "A checkpoint that cannot be opened (a broken or truncated file, a failed load) is "
        "skipped and named, as git bisect skip does. Exit status: 0, the first bad checkpoint is "
        f"named; {SKIPPED}, skipped checkpoints sit right before the first bad one, so the answer "
        "is that range (restore them to narrow it); 2, a refusal."
    )


def main(args: argparse.Namespace) -> int:
    plan = make_plan(lambda dest: getattr(args, dest, None), Path.cwd(), gated=True)
    cases = select_cases(args.k, plan.lengths)
    if not cases:
        raise BisectError(
            f"-k {args.k!r} selects no case at lengths {','.join(map(str, plan.lengths))}"
        )
    outside = left_out(Path(args.checkpoints[0])) if len(args.checkpoints) == 1 else {}
    for folder, why in outside.items():
        print(f"ctxgate bisect: {folder} is not in the sequence: {why}", file=sys.stderr)
    checkpoints = order_checkpoints(args.checkpoints)
    good = 0 if args.good is None else resolve_end(checkpoints, args.good)
    bad = None if args.bad is None else resolve_end(checkpoints, args.bad)
    spec = plan.model
    check_config_on(checkpoints[good], spec)  # the reference's: every probe is compared with it
    # a probe per copy of the model the backend holds (a cluster's replicas), each round
    placed = placement(spec)
    fan_out = max(1, placed.slots()) if placed else 1
    tolerance = TOLERANCE.read(args.tolerance)
    tolerance_for = plan.thresholds.tolerance_for if tolerance is None else (lambda t, L: tolerance)

    def evaluate(path: Path, reference: Results | None, together: int) -> Results:
        print(f"evaluating {path.name} ...", flush=True)
        # on a cluster, the checkpoints probed side by side share its replicas
        return evaluate_checkpoint(
            path, cases, plan, reference, tolerance_for, max(1, fan_out // together)
        )

    judging = Judging(tolerance_for, plan.thresholds.regression_confidence, fan_out)
    result = bisect(checkpoints, good, bad, evaluate, judging)
    print(result.render())
    candidates = result.candidates
    if args.json:
        document = _document(result, cases, plan, outside)
        atomic_write(Path(args.json), json.dumps(document, indent=1))
    return 0 if len(candidates) == 1 else SKIPPED


def _document(
    result: BisectResult, cases: Sequence[Case], plan: Plan, outside: Mapping[Path, str]
) -> dict[str, Any]:
    """The path the search took, as ``--json`` writes it."""
    path = [
        {
            "index": p.index,
            "checkpoint": str(p.path),
            "bad": p.bad,
            "skipped": p.skipped,
            "from_cache": p.from_cache,
            "samples": p.samples,
            "cost": asdict(p.cost),
            "cases": {
                f"{t}-{L}": {"score": r.current, "delta": r.delta, "upper": r.high}
                for (t, L), r in p.comparisons.items()
            },
            "unscored": [f"{t}-{L}" for t, L in p.unscored],
        }
        for p in result.probes
    ]
    candidates = result.candidates
    exact = len(candidates) == 1
    return {
        "first_bad": str(result.checkpoints[result.first_bad]) if exact else None,
        "first_bad_index": result.first_bad if exact else None,
        "candidates": [str(c) for c in candidates],
        "evaluations": len(result.probes),
        "rounds": result.rounds,
        "cases": [f"{t}-{L}" for t, L in cases],
        # a probe's case may stop once certain against its reference (--sequential)
        "sequential": case_stop(plan, None, {}, 0.0) is not None,
        "left_out": {str(folder): why for folder, why in outside.items()},
        "path": path,
        "cost": asdict(result.cost),
    }
