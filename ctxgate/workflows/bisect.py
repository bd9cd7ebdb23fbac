"""Find the first checkpoint where a capability broke, in about log2(N) evaluations. Checkpoints
are ordered by step; the good end is the reference, a probe is *bad* by the baseline gate's paired
rule, and the bad end is taken as given when named, else checked. Each checkpoint is evaluated
outside pytest, opened by the pytest plugin's own composition root (``ctxgate.run.compose``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ctxgate.backends.checkpoint import CheckpointError
from ctxgate.backends.formats import kind_of
from ctxgate.gate.baseline import regression_verdict
from ctxgate.gate.plan import Plan, check_overrides, make_plan
from ctxgate.records.io import atomic_write
from ctxgate.records.refusal import CtxgateError, Refusal
from ctxgate.run.case import CaseResult, run_case
from ctxgate.run.compose import ModelError, open_model
from ctxgate.run.loading import ModelSpec
from ctxgate.run.options import EVALUATION, SEQUENTIAL_OPTIONS, TOLERANCE
from ctxgate.stats.paired import PairedResult, compare
from ctxgate.stats.sequential import Questions, StopRule
from ctxgate.steps import training_step
from ctxgate.tasks import all_tasks, get_task

Case = tuple[str, int]
Results = Mapping[Case, CaseResult]
Tolerance = Callable[[str, int], float]  # a case's tolerance, in points
# (checkpoint, the reference's results or None for the reference itself, how many checkpoints are
# evaluated side by side with it) -> results per case
Evaluate = Callable[[Path, Results | None, int], Results]


class BisectError(CtxgateError, ValueError):
    """Unusable checkpoints or ends; the message says what to pass."""


def step_of(path: Path) -> int:
    step = training_step(path).value
    if step is None:
        raise BisectError(
            f"cannot order {path}: it has no trainer_state.json and its name no step number "
            "(expected e.g. checkpoint-1000)"
        )
    return step


def order_checkpoints(paths: Sequence[str | Path]) -> list[Path]:
    items = [Path(p) for p in paths]
    missing = [str(p) for p in items if not p.is_dir()]
    if missing:
        raise BisectError(
            f"{', '.join(missing[:3])} {'is' if len(missing) == 1 else 'are'} not a folder: give a "
            "folder of checkpoints (checkpoint-100/, checkpoint-200/, ...) or the checkpoint "
            "folders"
        )
    # a run folder: its checkpoints (a folder a training run keeps its config.json in too)
    if len(items) == 1:
        items = sorted(p for p in items[0].iterdir() if p.is_dir() and kind_of(p) is not None)
    if len(items) < 2:
        raise BisectError(
            "bisect needs at least two checkpoints (model folders, PEFT adapters, FSDP or "
            f"DeepSpeed checkpoints), found {len(items)} in {', '.join(map(str, paths))}"
        )
    steps = [step_of(p) for p in items]
    if len(set(steps)) != len(steps):
        raise BisectError(
            "two checkpoints share a step number: " + ", ".join(sorted(p.name for p in items))
        )
    return [p for _, p in sorted(zip(steps, items))]


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
    bad: bool
    comparisons: dict[Case, PairedResult] = field(default_factory=dict)
    unscored: tuple[Case, ...] = ()  # the reference scored them, this one could not
    from_cache: int = 0
    samples: int = 0


@dataclass
class BisectResult:
    first_bad: int
    checkpoints: list[Path]
    probes: list[Probe]  # one per checkpoint evaluated
    # evaluations one after another: with a fan-out, each round probes several checkpoints at once
    rounds: int = 0

    def render(self) -> str:
        lines = []
        for p in self.probes:
            said = [
                f"{t}@{L}: {r.current:.1f} (delta {r.delta:+.1f}, upper {r.high:+.1f})"
                for (t, L), r in sorted(p.comparisons.items())
            ]
            said += [f"{t}@{L}: no score (the reference has one)" for t, L in p.unscored]
            lines.append(
                f"  [{p.index}] {p.path.name}: {'BAD ' if p.bad else 'good'}  "
                f"{'; '.join(said) or 'reference'}  (cached {p.from_cache}/{p.samples})"
            )
        lines.append(
            f"first bad checkpoint: {self.checkpoints[self.first_bad]} (index {self.first_bad}, "
            f"{len(self.probes)} evaluations in {self.rounds} rounds)"
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
        result = compare([a for a, _ in scored], [b for _, b in scored], confidence)
        comparisons[key] = result
        bad = bad or regression_verdict(result, tolerance(*key), mine.sequential)
    return bad, comparisons


def _cached(results: Results) -> tuple[int, int]:
    return sum(r.samples_from_cache for r in results.values()), sum(r.n for r in results.values())


def probe_points(lo: int, hi: int, fan_out: int) -> list[int]:
    """Up to ``fan_out`` checkpoints strictly between ``lo`` and ``hi``, evenly spaced."""
    k = min(fan_out, hi - lo - 1)
    return [lo + (hi - lo) * j // (k + 1) for j in range(1, k + 1)]


def bisect(
    checkpoints: Sequence[Path],
    good: int,
    bad: int | None,
    evaluate: Evaluate,
    tolerance: Tolerance,
    confidence: float = 0.95,
    fan_out: int = 1,
) -> BisectResult:
    """Each round evaluates ``fan_out`` checkpoints side by side: log_(k+1) N rounds."""
    checkpoints = list(checkpoints)
    end = len(checkpoints) - 1 if bad is None else bad
    if not 0 <= good < end < len(checkpoints):
        raise BisectError(f"the good checkpoint ({good}) must come before the bad one ({end})")
    reference = evaluate(checkpoints[good], None, 1)
    if not reference:
        raise BisectError("the case selection matched no case: check -k and --lengths")
    probes = [Probe(good, checkpoints[good], False, {}, (), *_cached(reference))]
    rounds = 1

    def probe_round(indices: list[int]) -> dict[int, bool]:
        nonlocal rounds
        rounds += 1
        together = len(indices)
        with ThreadPoolExecutor(together, thread_name_prefix="ctxgate-probe") as pool:
            found = list(pool.map(lambda i: evaluate(checkpoints[i], reference, together), indices))
        verdicts = {}
        for i, results in zip(indices, found):
            verdict, comparisons = is_bad(reference, results, tolerance, confidence)
            unscored = tuple(k for k in reference if k not in results)
            probe = Probe(i, checkpoints[i], verdict, comparisons, unscored, *_cached(results))
            probes.append(probe)
            verdicts[i] = verdict
        return verdicts

    if bad is None and not probe_round([end])[end]:
        raise BisectError(
            f"the last checkpoint {checkpoints[end].name} is not worse than "
            f"{checkpoints[good].name} by the gate's rule: nothing to bisect (or pass --bad, "
            "--tolerance)"
        )
    return BisectResult(search(good, end, probe_round, fan_out), checkpoints, probes, rounds)


def search(
    lo: int, hi: int, probe_round: Callable[[list[int]], Mapping[int, bool]], fan_out: int = 1
) -> int:
    """The first bad index after a good ``lo``, before or at a bad ``hi``."""
    while hi - lo > 1:
        verdicts = probe_round(probe_points(lo, hi, fan_out))
        hi = min((i for i, bad in verdicts.items() if bad), default=hi)
        lo = max((i for i, bad in verdicts.items() if not bad and i < hi), default=lo)
    return hi


def select_cases(expression: str | None, lengths: Sequence[int]) -> list[Case]:
    """Cases whose id (``task-length``, as in pytest) matches a ``-k`` expression."""
    ids = [(t.name, L) for t in all_tasks() for L in lengths]
    if not expression:
        return ids
    from _pytest.mark.expression import Expression  # pytest's own -k grammar: both read it alike

    compiled = Expression.compile(expression)
    return [(t, L) for t, L in ids if compiled.evaluate(_matcher(f"{t}-{L}"))]


def _matcher(name: str) -> Callable[..., bool]:
    """pytest's -k matching: a word matches a case id that contains it, case-insensitively."""
    return lambda word, /, **_: word.lower() in name.lower()


def _stop(
    plan: Plan, reference: CaseResult | None, tolerance: float
) -> tuple[StopRule, Questions] | None:
    if plan.sequential is None or reference is None:
        return None
    base = {o.index: o.score for o in reference.samples if o.score is not None}
    rule = StopRule(plan.sequential.alpha, plan.sequential.min_samples, max_samples=None)
    return rule, Questions(baseline=base, tolerance=tolerance / 100)


def evaluate_checkpoint(
    path: Path,
    cases: Sequence[Case],
    plan: Plan,
    reference: Results | None,
    tolerance: Tolerance,
    replicas: int,
) -> dict[Case, CaseResult]:
    """Results per case; one without a score is left out (--sequential: each stops when certain)."""
    try:
        spec = plan.model.at(path)
    except CheckpointError as exc:  # a WrongFlag is the caller's usage error, not this checkpoint's
        raise ModelError(f"opening {path}", exc) from None
    loaded = open_model(spec, replicas=replicas)
    backend, ctx, cache = loaded.backend, loaded.context, loaded.cache
    results: dict[Case, CaseResult] = {}
    try:
        for t, L in cases:
            if backend.max_positions is not None and L > backend.max_positions:
                continue  # beyond the window: no score (a regression where the reference had one)
            try:
                stop = _stop(plan, (reference or {}).get((t, L)), tolerance(t, L))
                results[(t, L)] = run_case(
                    get_task(t),
                    ctx,
                    backend,
                    L,
                    plan.samples,
                    spec.seed,
                    cache=cache,
                    helmet_compat=spec.helmet_compat,
                    stop=stop,
                )
            except Refusal:  # no score, read by gate.verdicts.unscored_verdict's rule
                continue
        return results
    finally:
        loaded.close()


def check_overrides_on(path: Path, spec: ModelSpec) -> None:
    """The config overrides against ``path``'s config, before any model loads."""
    if not spec.overrides:
        return
    try:
        checkpoint = spec.locate(path)
    except CheckpointError:
        return
    check_overrides(spec.overrides, checkpoint.config_dir)


def add_parser(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser(
        "bisect", help="find the first checkpoint where the selected cases regressed"
    )
    add = b.add_argument
    add("checkpoints", nargs="+", help="a folder of checkpoints, or the checkpoints in any order")
    add("--good", help="known-good checkpoint (name or step; default: the first)")
    add("--bad", help="known-bad checkpoint (default: the last, which is then checked)")
    add("-k", help="case selection, pytest -k style over ids like niah_single_1-8192")
    for option in EVALUATION:  # as pytest takes them
        option.add_to(b)
    TOLERANCE.add_to(b)
    add("--json", help="also write the path taken as JSON here")
    for option in SEQUENTIAL_OPTIONS:
        option.add_to(b)
    b.set_defaults(fn=main)


def main(args: argparse.Namespace) -> int:
    plan = make_plan(lambda dest: getattr(args, dest, None), Path.cwd(), gated=True)
    cases = select_cases(args.k, plan.lengths)
    if not cases:
        raise BisectError(
            f"-k {args.k!r} selects no case at lengths {','.join(map(str, plan.lengths))}"
        )
    checkpoints = order_checkpoints(args.checkpoints)
    good = 0 if args.good is None else resolve_end(checkpoints, args.good)
    bad = None if args.bad is None else resolve_end(checkpoints, args.bad)
    spec, fan_out = plan.model, 1
    check_overrides_on(checkpoints[good], spec)  # the reference's: every probe is compared with it
    if spec.ray is not None:  # a probe per replica the cluster holds, each round
        from ctxgate.run.cluster import slots

        fan_out = max(1, slots(spec.ray, spec.ray_resource))
    tolerance = TOLERANCE.read(args.tolerance)
    tolerance_for = plan.thresholds.tolerance_for if tolerance is None else (lambda t, L: tolerance)

    def evaluate(path: Path, reference: Results | None, together: int) -> Results:
        print(f"evaluating {path.name} ...", flush=True)
        # on a cluster, the checkpoints probed side by side share its replicas
        try:
            return evaluate_checkpoint(
                path, cases, plan, reference, tolerance_for, max(1, fan_out // together)
            )
        except ModelError as exc:
            if reference is None:
                raise BisectError(
                    f"the good checkpoint {path.name} cannot be evaluated: {exc}"
                ) from None
            # nothing the good checkpoint scored runs here: bad, by the rule for unscored cases
            said = f"  {path.name} cannot be evaluated ({exc}): it counts as bad"
            print(said, file=sys.stderr, flush=True)
            return {}

    confidence = plan.thresholds.regression_confidence
    result = bisect(checkpoints, good, bad, evaluate, tolerance_for, confidence, fan_out=fan_out)
    print(result.render())
    if args.json:
        path = [
            {
                "index": p.index,
                "checkpoint": str(p.path),
                "bad": p.bad,
                "from_cache": p.from_cache,
                "samples": p.samples,
                "cases": {
                    f"{t}-{L}": {"score": r.current, "delta": r.delta, "upper": r.high}
                    for (t, L), r in p.comparisons.items()
                },
                "unscored": [f"{t}-{L}" for t, L in p.unscored],
            }
            for p in result.probes
        ]
        document = {
            "first_bad": str(result.checkpoints[result.first_bad]),
            "first_bad_index": result.first_bad,
            "evaluations": len(result.probes),
            "rounds": result.rounds,
            "cases": [f"{t}-{L}" for t, L in cases],
            "sequential": plan.sequential is not None,
            "path": path,
        }
        atomic_write(Path(args.json), json.dumps(document, indent=1))
    return 0
