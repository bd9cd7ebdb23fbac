"""One error base: every exception class ctxgate defines is a refusal (``CtxgateError``) or is named
here with the reason it is not, and a refusal ends as one line and its exit status at each boundary
(``ctxgate``'s ``main``, and pytest's configure)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import ctxgate
from ctxgate import cli
from ctxgate.refusal import CtxgateError, Refusal

# what is raised and caught inside ctxgate, never shown to the user as it is
NOT_REFUSALS = {
    "ctxgate.ext.ruler2.counting.Unsplit": "control flow: a part that cannot be counted alone; "
    "its set is counted from whole texts",
    "ctxgate.ext.ruler2.counting.Miscounted": "control flow: a count from parts that differs "
    "from the whole text's; the tokenizer is counted whole from then on",
    "ctxgate.sources.door.Undecodable": "control flow: what is wrong inside a file; the door "
    "raises DataUnavailable naming the file and the fix",
    "ctxgate.backends.base.BackendDown": "control flow: the backend's server is gone; the case "
    "reports it and the "
    "session stops",
    "ctxgate.backends.base.Withdrawn": "control flow: a request taken back before it ran; stream "
    "passes over it",
    "ctxgate.retrying.Refused": "control flow: the server refused for good; the endpoint and "
    "judge name the fix",
    "ctxgate.retrying.Malformed": "control flow: a reply that cannot be used, retried once "
    "at once, then refused",
    "ctxgate.retrying.Exhausted": "control flow: retries ran out; the endpoint and judge name the "
    "fix",
    "ctxgate.judge.client.JudgeUnavailable": "control flow: one verdict failed; JudgeClient.ask "
    "records it",
    "ctxgate.judge.entail.EntailmentFailed": "control flow: one entailment verdict failed; the "
    "sample counts as failed",
    "ctxgate.judge.score._Failed": "control flow: one rubric's verdict failed; the sample counts "
    "as failed",
    "ctxgate.judge.verdict.Unparseable": "control flow: a reply without a verdict; the judge asks "
    "again",
    "ctxgate.workflows.rejudge.NothingToJudge": "control flow: every judged case is judged "
    "already, exit status 0",
    "ctxgate.tasks.build.LengthRuleBroken": "a bug: a builder made a prompt longer than its "
    "length allows",
    "ctxgate.sqlitefile.CacheWarning": "a warning: the run goes on without the store",
    "ctxgate.ext.mrcr2.generator.GeneratorFailed": "control flow: the reference's generator cannot "
    "fill a bucket; the builder refuses the length as too short, naming it",
    "ctxgate.ext.ruler2.fitting.TooShort": "control flow: the reference's fewest units do not fit; "
    "the builder refuses the length as too short, naming it",
}


def _modules() -> list[str]:
    from plugins import MODULES  # registers the folder as ctxgate_plugins when it is not installed

    found = [
        m.name
        for m in pkgutil.walk_packages(ctxgate.__path__, "ctxgate.")
        if m.name != "ctxgate.__main__"
    ]
    return found + ["ctxgate_plugins"] + [f"ctxgate_plugins.{name}" for name in MODULES]


def _exception_classes() -> dict[str, type[BaseException]]:
    found = {}
    for name in _modules():
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
            ):
                found[f"{name}.{attr}"] = value
    return found


def test_every_exception_class_is_a_refusal_or_named_with_its_reason():
    classes = _exception_classes()
    assert len(classes) > 30 and "ctxgate.run.flags.OptionError" in classes  # the walk found them
    loose = sorted(
        n for n, c in classes.items() if not issubclass(c, CtxgateError) and n not in NOT_REFUSALS
    )
    assert not loose, (
        "derive these from ctxgate.refusal.CtxgateError, or name them in NOT_REFUSALS:\n"
        + ("\n".join(loose))
    )
    named_but_refusals = sorted(
        n for n in NOT_REFUSALS if n not in classes or issubclass(classes[n], CtxgateError)
    )
    assert not named_but_refusals, (
        f"NOT_REFUSALS names what is gone or is a refusal: {named_but_refusals}"
    )


def test_a_case_refusal_is_a_refusal_with_a_cause_and_other_errors_have_none():
    from ctxgate.backends.hf import BackendError
    from ctxgate.sources import DataNotGiven

    assert issubclass(DataNotGiven, Refusal) and DataNotGiven.cause == "data_not_given"
    assert not issubclass(
        BackendError, Refusal
    )  # the plugin's `except Refusal` must not take it for a case's


def test_a_refusal_in_a_verb_is_one_line_with_exit_status_2(capsys, tmp_path):
    assert cli.main(["published", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ctxgate published: 'nope' is no model") and err.count("\n") == 1
    # a refusal that is a RuntimeError too is still a refusal, not a crash (3)
    assert cli.main(["watch", str(tmp_path / "nowhere"), "--once"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ctxgate watch: ") and "is not a folder" in err and err.count("\n") == 1
    (tmp_path / "empty.tar.gz").write_bytes(b"")
    assert (
        cli.main(
            ["data", "fetch", "--archive", str(tmp_path / "empty.tar.gz"), "--to", str(tmp_path)]
        )
        == 2
    )
    assert capsys.readouterr().err.startswith("ctxgate data fetch: ")


def test_main_prints_a_refusal_on_one_line_and_anything_else_as_a_crash(monkeypatch, capsys):
    from ctxgate.workflows import rescore

    def refuses(args: object) -> int:
        raise CtxgateError("--metric x\n  is bad:   pass --metric em")

    monkeypatch.setattr(rescore, "score", refuses)
    assert cli.main(["score", "--metric", "x", "--prediction", "p", "--answer", "a"]) == 2
    assert capsys.readouterr().err == "ctxgate score: --metric x is bad: pass --metric em\n"

    def crashes(args: object) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setattr(rescore, "score", crashes)
    assert cli.main(["score", "--metric", "x", "--prediction", "p", "--answer", "a"]) == 3
    assert "a bug (RuntimeError; set CTXGATE_DEBUG=1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ("--lengths", "8kb"),
            "ERROR: --lengths '8kb' is not a list of lengths*",
        ),  # the options plugin, through make_plan
        (
            ("--log-to", "nowhere"),
            "ERROR: --log-to 'nowhere': *is not a tracker*",
        ),  # the trackers plugin
    ],
)
def test_a_refusal_while_the_plugins_configure_is_one_usage_error_line(pytester, args, expected):
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([expected])
    out = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out, out[-3000:]


def test_every_plugins_configure_turns_a_refusal_into_one_usage_error():
    """pluggy wraps no historic hook, so each plugin's pytest_configure is wrapped itself: all of
    them are."""
    from ctxgate_plugins.options import refusals_are_usage_errors
    from plugins import MODULES

    wrapped = refusals_are_usage_errors(lambda config: None).__code__
    hooks = {
        name: getattr(importlib.import_module(f"ctxgate_plugins.{name}"), "pytest_configure", None)
        for name in MODULES
    }
    unwrapped = [
        name for name, hook in hooks.items() if hook is not None and hook.__code__ is not wrapped
    ]
    assert not unwrapped, f"wrap their pytest_configure in @refusals_are_usage_errors: {unwrapped}"

    @refusals_are_usage_errors
    def configure(config: pytest.Config) -> None:
        raise CtxgateError("--flag x\n is bad:  pass --flag y")

    with pytest.raises(pytest.UsageError) as refused:
        configure(None)  # type: ignore[arg-type]
    assert (
        refused.value.args == ("--flag x is bad: pass --flag y",)
        and refused.value.__suppress_context__
    )


def test_the_spine_names_no_other_packages_options_or_verbs():
    """Each extra declares its own options and verbs; the spine holds no list of them: the option
    table's module names none of the extras' flags."""
    from ctxgate.hooks import manager
    from ctxgate.run import options

    table = Path(options.__file__).read_text("utf-8")
    flags = [
        o.flag
        for impl in manager().hook.ctxgate_option_groups.get_hookimpls()
        for group in impl.function()
        for o in group.options
    ]
    assert flags and not [f for f in flags if f'"{f}' in table]


def test_an_absent_extras_verb_is_one_line_naming_the_extras_installed(no_extras, capsys):
    assert cli.main(["published"]) == 2
    assert capsys.readouterr().err.startswith(
        "ctxgate: 'published' is a verb of neither ctxgate nor an installed extra (extras "
        "installed: none; verbs: rescore, score, diff, tasks, data, schema, judge, init): install "
        "the package that provides it"
    )


@pytest.fixture
def no_extras(monkeypatch: pytest.MonkeyPatch) -> None:
    """The spine as a wheel without ctxgate/ext has it: no extra answers a hook."""
    import pluggy

    from ctxgate import hooks, hookspec

    bare = pluggy.PluginManager(hookspec.PROJECT)
    bare.add_hookspecs(hookspec)
    monkeypatch.setattr(hooks, "manager", lambda: bare)


@pytest.mark.parametrize("args", [("--ray", "local"), ("--budget-forcing",), ("--log-to", "wandb")])
def test_an_absent_extras_flag_is_pytests_own_refusal(no_extras, pytester, args):
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*unrecognized arguments: {args[0]}*"])


def test_bisect_refuses_an_absent_extras_flag_as_unrecognized(no_extras, capsys, tmp_path):
    from ctxgate import hooks
    from ctxgate.ext.training import plugin as training

    hooks.manager().register(training)  # bisect's own extra, installed without the others
    for flag in ("--sequential", "--log-to wandb"):
        with pytest.raises(SystemExit):
            cli.main(["bisect", str(tmp_path), *flag.split()])
        assert f"unrecognized arguments: {flag}" in capsys.readouterr().err
