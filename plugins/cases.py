"""Task x length cases: parametrization, running a case, and its floor gate. Every case gets its
record before its fixtures run, so a case that errors before it starts still reaches the report."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, NoReturn

import pytest

from ctxgate.backends.base import BackendDown, Window, window_of
from ctxgate.backends.endpoint_probe import EndpointError
from ctxgate.backends.hf import BackendError
from ctxgate.gate.baseline import Baseline, BaselineError, comparison
from ctxgate.gate.plan import Plan, case_stop, task_for
from ctxgate.gate.thresholds import Thresholds
from ctxgate.gate.verdicts import (
    NOT_GIVEN,
    fault_message,
    floor_failure,
    gated_reason,
    judge_failure,
    passed,
    unscored_verdict,
)
from ctxgate.hooks import hook, manager, one_answer
from ctxgate.judge.client import JudgeError
from ctxgate.records.case import CaseRecord, SampleOutcome
from ctxgate.records.cost import Cost
from ctxgate.records.schema import RunError, to_json
from ctxgate.refusal import Refusal
from ctxgate.run.ahead import AheadOfItems
from ctxgate.run.case import (
    Ahead,
    CaseResult,
    Drawing,
    EarlyStop,
    Runner,
    Session,
    case_result,
    drive,
    open_case,
)
from ctxgate.run.compose import LoadedModel
from ctxgate.run.progress import Progress, case_label, case_of
from ctxgate.run.samples import samples_to_run
from ctxgate.tasks.base import MaterialExhausted, TaskSpec
from ctxgate.tasks.build import LengthRuleBroken, fits_at_all
from ctxgate.tasks.chance import chance_at
from ctxgate.tasks.registry import get_task

from .model import RUN_ID_KEY
from .options import PLAN_KEY


@dataclass
class CaseState:
    """What a case's item learns as it runs, carried to the controller on its test report: its
    record, its samples (for the predictions file), and the run's own record and error."""

    record: CaseRecord
    samples: tuple[SampleOutcome, ...] = ()
    run_meta: dict[str, Any] | None = None
    run_error: RunError | None = None

    def to_wire(self) -> dict[str, Any]:
        """Plain JSON values: what execnet carries from an xdist worker."""
        wire = {**vars(self), "record": to_json(self.record), "samples": to_json(self.samples)}
        return {**wire, "run_error": to_json(self.run_error)}


CASE_STATE_KEY = pytest.StashKey[CaseState]()
case_key = case_of  # a case's (task, length) by its pytest id


def new_record(task: str, length: int, thresholds: Thresholds) -> CaseRecord:
    """A case's record before anything ran: verdict "error" until the case says otherwise."""
    t, floor = get_task(task), thresholds.floor_for(task, length)
    chance = chance_at(t, length).score
    return CaseRecord(
        t.name, t.suite, length, t.category, t.metric.name, chance=chance, floor=floor
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    key = case_key(item.nodeid)
    if key is not None and "ctxgate_case" in getattr(item, "fixturenames", ()):
        item.stash[CASE_STATE_KEY] = CaseState(
            new_record(*key, item.config.stash[PLAN_KEY].thresholds)
        )


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Each case's final record, to the extras that follow the run (``ctxgate_case_done``)."""
    state = item.stash.get(CASE_STATE_KEY, None)
    if state is not None:
        hook().ctxgate_case_done(record=state.record)


@dataclass
class Case:
    spec: TaskSpec
    length: int
    thresholds: Thresholds
    state: CaseState

    def assert_gate(self) -> None:
        """Fail on a failed judge, a regression against the baseline, or a score below the floor."""
        r = self.state.record
        for message in (judge_failure(r), fault_message(r)):
            if message:
                self._fail(f"{self.spec.name} at {self.length}: {message}")
        if r.baseline and r.baseline.regressed:
            self._fail(f"{self.spec.name} at {self.length} regressed: {r.baseline.message}")
        if message := floor_failure(r, self.thresholds):
            self._fail(message)
        self.state.record = replace(r, verdict="pass", message=passed(r))

    def _fail(self, message: str) -> NoReturn:
        self.state.record = replace(self.state.record, verdict="fail", message=message)
        pytest.fail(message, pytrace=False)


def _stop(plan: Plan, task: str, length: int, floor: float | None) -> EarlyStop | None:
    """How the case stops once its gate's questions are answered: is the true score above the
    floor? did it drop by more than the tolerance against the baseline? (an extra's answer)."""
    base = plan.baseline.cases.get((task, length)) if plan.baseline is not None else None
    tolerance = plan.thresholds.tolerance_for(task, length) / 100
    return case_stop(plan, floor / 100 if floor else None, base.scores if base else None, tolerance)


def _judge_later(report: str | None) -> str:
    """How to score a case that waits for its judge: the command, on this run's report."""
    command = (
        f"`ctxgate judge {shlex.quote(report or 'out/run.json')} --judge-model gpt-4o-2024-05-13` "
        "(HELMET's judge; the key from OPENAI_API_KEY)"
    )
    if report is None:
        return f"run with --report out/run.json to keep its outputs, then judge them with {command}"
    return (
        f"its outputs are in the report: score them later with {command}, or with --judge-base-url "
        "your own server"
    )


def no_score(state: CaseState, cause: str, message: str, baseline: Baseline | None) -> NoReturn:
    """End a case that produced no score, skipped or failed by ``unscored_verdict``."""
    record = state.record
    base = baseline.cases.get((record.task, record.length)) if baseline is not None else None
    verdict = unscored_verdict(cause, record.floor or 0.0, base is not None)
    if verdict == "error" and cause in NOT_GIVEN:
        message = f"{message}; {gated_reason(record.floor or 0.0, base is not None)}"
    fields: dict[str, Any] = {"verdict": verdict, "message": message}
    fields["error_kind" if verdict == "error" else "skip_kind"] = cause
    state.record = replace(record, **fields)
    if verdict == "skip":
        pytest.skip(message)
    pytest.fail(message, pytrace=False)


def _beyond_window(
    config: pytest.Config, model: LoadedModel, name: str, length: int
) -> Window | None:
    """The window a case of this length cannot run past (None: it runs). What a reading needs
    past the prompt (a thought's budget) comes on top of the length's prompt and answer, and so
    does the answer where the task's length is its prompt's alone."""
    window, limit = window_of(model.backend), model.backend.max_positions
    plan = config.stash[PLAN_KEY]
    force = plan.force_lengths
    needs = length + model.session.reading.positions + task_for(plan, name).past_length
    if window and limit is not None and needs > limit and not (force and window.forceable):
        return window
    return None


def _session(config: pytest.Config, model: LoadedModel) -> Session:
    """The model's session, with the run's confidence and who hears its cases' progress."""
    plan = config.stash[PLAN_KEY]
    progress = _progress if manager().hook.ctxgate_progress.get_hookimpls() else None
    confidence, run = plan.thresholds.confidence, config.stash[RUN_ID_KEY]
    return replace(model.session, confidence=confidence, progress=progress, run=run)


def _progress(progress: Progress) -> None:
    hook().ctxgate_progress(progress=progress)


def left_out(task: str, length: int) -> str | None:
    """Why an extra leaves the case out as the run goes (``hookspec.ctxgate_left_out``)."""
    return next(filter(None, hook().ctxgate_left_out(task=task, length=length)), None)


def _opener(config: pytest.Config, model: LoadedModel) -> Callable[[str, int], Drawing]:
    """Each case opened as its run starts it (``run.case.open_case``)."""
    plan, session = config.stash[PLAN_KEY], _session(config, model)

    def opened(name: str, length: int) -> Drawing:
        floor = plan.thresholds.floor_for(name, length)
        stop = _stop(plan, name, length, floor)
        return open_case(task_for(plan, name), session, length, plan.samples, stop)

    return opened


def _case_run(
    config: pytest.Config, model: LoadedModel, name: str, length: int
) -> Callable[[], CaseResult]:
    """The case's run, ready to start in its item's turn or ahead of it (``ctxgate_ahead``)."""

    def run() -> CaseResult:
        draw = _opener(config, model)(name, length)
        drive(draw)
        return case_result(draw)

    return run


def _drawn_elsewhere(
    config: pytest.Config, model: LoadedModel, keys: list[tuple[str, int]]
) -> Ahead | None:
    """An extra's way of drawing the cases ahead of their items (``ctxgate_cases_ahead``)."""
    runner = Runner(_opener(config, model), case_result)
    answers = hook().ctxgate_cases_ahead(plan=config.stash[PLAN_KEY], keys=keys, runner=runner)
    found: Ahead | None = one_answer("ctxgate_cases_ahead", answers)
    return found


@pytest.fixture(scope="session")
def ctxgate_ahead(
    request: pytest.FixtureRequest, ctxgate_model: LoadedModel
) -> Iterator[Ahead | None]:
    """For a backend that serves several cases at once (``cases_at_once``): the selected cases
    started ahead of their items, in the items' order, as many at once as the backend asks and its
    ``concurrency`` needs to stay full; None for the others. Stopped before the model is."""
    backend = ctxgate_model.backend
    wish = int(getattr(backend, "cases_at_once", 1))
    config = request.config
    cases = [
        case_key(i.nodeid)
        for i in request.session.items
        if "ctxgate_case" in getattr(i, "fixturenames", ())
    ]
    # an item waits for its own case only: starting them in another order would leave it waiting
    keys = list(
        dict.fromkeys(k for k in cases if k and not _beyond_window(config, ctxgate_model, *k))
    )
    if (elsewhere := _drawn_elsewhere(config, ctxgate_model, keys)) is not None:
        yield elsewhere
        return
    # an xdist worker does not know which items it will be sent, so it runs only its own, one at a
    # time; the workers on a server keep its batch full together (each with its share of it)
    if wish <= 1 or hasattr(config, "workerinput"):
        yield None
        return
    samples = config.stash[PLAN_KEY].samples or min(
        (get_task(t).default_samples for t, _ in keys), default=1
    )
    width = max(wish, -(-int(getattr(backend, "concurrency", 1)) // samples) + 1)
    ahead = AheadOfItems([(k, _case_run(config, ctxgate_model, *k)) for k in keys], width)
    yield ahead
    ahead.close()


@pytest.fixture
def ctxgate_case(
    request: pytest.FixtureRequest,
    ctxgate_model: LoadedModel,
    ctxgate_ahead: Ahead | None,
) -> Case:
    name, length = request.param
    config = request.config
    plan = config.stash[PLAN_KEY]
    thresholds, baseline = plan.thresholds, plan.baseline
    state = request.node.stash.setdefault(
        CASE_STATE_KEY, CaseState(new_record(name, length, thresholds))
    )
    state.run_meta = ctxgate_model.run_meta
    _runs_at_all(config, ctxgate_model, state, name, length)
    result = _result(config, ctxgate_model, ctxgate_ahead, state, (name, length))
    state.record = result.onto(state.record)
    state.samples = result.samples
    if result.judge and result.judge.status == "pending":
        waiting = f"{result.judge.reason}; {_judge_later(plan.report)}"
        no_score(state, "judge_not_given", f"{name} at {length}: {waiting}", baseline)
    if baseline is not None:
        try:
            compared = comparison(baseline, result, ctxgate_model.run_info, thresholds)
        except BaselineError as exc:
            raise pytest.fail.Exception(str(exc), pytrace=False) from None
        state.record = replace(state.record, baseline=compared)
    record = state.record
    # testcase properties only for xunit1: xunit2 (pytest's default) follows junit-10.xsd, which
    # has none (record_property warns so), and CI servers that check it refuse them
    if config.getini("junit_family") in ("xunit1", "legacy"):
        ci = f"{result.ci[0]}-{result.ci[1]}"
        pairs = [("score", record.score), ("floor", record.floor), ("n", record.n), ("ci", ci)]
        pairs.append(("chance", record.chance))  # a random answer's score at this length
        request.node.user_properties += pairs
    return Case(task_for(plan, name), length, thresholds, state)


def _runs_at_all(
    config: pytest.Config, model: LoadedModel, state: CaseState, name: str, length: int
) -> None:
    """End a case past the model's window, or one the search left out (saving its samples)."""
    plan = config.stash[PLAN_KEY]
    if window := _beyond_window(config, model, name, length):
        reading = model.session.reading
        what = f"{name} at {length}: the length{reading.beyond} exceeds {window.what}"
        fix = f"drop {length} from --lengths{reading.lower}, or {window.fix}"
        no_score(state, "window", f"{what}, so the case cannot run; {fix}", plan.baseline)
    spec = task_for(plan, name)
    # a case that cannot run at all says so; one an extra leaves out saves its samples
    if fits_at_all(spec, length) and (why := left_out(name, length)):
        n = samples_to_run(spec, model.context, length, plan.samples or spec.default_samples)
        saved = Cost(saved_generations=n, saved_prompt_tokens=n * length)
        state.record = replace(state.record, cost=saved)
        no_score(state, "search_stopped", why, plan.baseline)


def _result(
    config: pytest.Config,
    model: LoadedModel,
    ahead: Ahead | None,
    state: CaseState,
    key: tuple[str, int],
) -> CaseResult:
    """The case run (or taken from what ran ahead); a designed refusal or a failure ends it."""
    (name, length), baseline = key, config.stash[PLAN_KEY].baseline
    # raised outside the except blocks: no "during handling of..." chain
    failure: Exception | None = None
    cause = ""
    try:
        if ahead is not None and key in ahead:
            result: CaseResult = ahead.take(key)
        else:
            result = _case_run(config, model, name, length)()
    except Refusal as exc:  # a designed refusal: its cause decides the verdict (unscored_verdict)
        failure, cause = exc, exc.cause
        if isinstance(exc, MaterialExhausted):  # the fill it reached, unscored
            state.record = replace(state.record, fill_min=round(exc.fill, 4))
    except JudgeError as exc:
        failure, cause = exc, "judge_failed"
    except (BackendDown, EndpointError, BackendError, LengthRuleBroken) as exc:  # one line: the fix
        failure = exc
    finally:
        hook().ctxgate_progress(progress=Progress(case_label(name, length), 0, 0, 0, 0, 0.0, True))
    if cause:
        message = str(failure) if cause == "too_short" else f"{name} at {length}: {failure}"
        no_score(state, cause, message, baseline)
    if failure is not None:
        pytest.fail(f"{name} at {length}: {failure}", pytrace=False)
    return result
