"""One checkpoint evaluated outside pytest, as bisect probes it: the cases a ``-k`` expression
selects, run on the model the pytest plugin's own composition root (``ctxgate.run.compose``)
opens, each stopped early against the reference under --sequential."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from ctxgate.api import (
    CaseResult,
    CheckpointError,
    EarlyStop,
    ModelError,
    ModelSpec,
    Plan,
    Refusal,
    all_tasks,
    case_stop,
    config_changes,
    load_model,
    model_changes,
    run_case,
    task_for,
)

Case = tuple[str, int]
Results = Mapping[Case, CaseResult]
Tolerance = Callable[[str, int], float]  # a case's tolerance, in points


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


def _stop(plan: Plan, reference: CaseResult | None, tolerance: float) -> EarlyStop | None:
    """How a probe's case stops: certain it dropped, or did not, against the reference's."""
    if reference is None:
        return None
    base = {o.index: o.score for o in reference.samples if o.score is not None}
    return case_stop(plan, None, base, tolerance / 100)


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
    except CheckpointError as exc:  # a WrongFlag (a flag the run's folders need) is the caller's
        raise ModelError(f"opening {path}", exc) from None
    loaded = load_model(spec, replicas=replicas)
    backend = loaded.backend
    # a probe is judged by its scores alone: a judged task waits for ``ctxgate judge``
    session = replace(loaded.session, judges=None)
    results: dict[Case, CaseResult] = {}
    try:
        for t, L in cases:
            task = task_for(plan, t)
            if backend.max_positions is not None and L + task.past_length > backend.max_positions:
                continue  # beyond the window: no score (a regression where the reference had one)
            try:
                stop = _stop(plan, (reference or {}).get((t, L)), tolerance(t, L))
                results[(t, L)] = run_case(task, session, L, plan.samples, stop)
            except Refusal:  # no score, read by gate.verdicts.unscored_verdict's rule
                continue
        return results
    finally:
        loaded.close()


def check_config_on(path: Path, spec: ModelSpec) -> None:
    """The extras' changes to the model's config against ``path``'s config, before any model
    loads."""
    if not model_changes(spec):
        return
    try:
        checkpoint = spec.locate(path)
    except CheckpointError:
        return
    config_changes(spec, checkpoint.config_dir)
