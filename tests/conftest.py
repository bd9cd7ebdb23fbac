"""Shared fixtures for the project's own tests."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _pytest.pytester import SysModulesSnapshot
from hypothesis import settings

# No test may reach the hub: a task whose data is not local skips at once instead of waiting on
# timeouts.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
# a scripted "kill" ends an xdist worker of a run, never the process running these tests
os.environ["CTXGATE_TESTS_PID"] = str(os.getpid())
# Imported here, before any in-process run: each library's log handler keeps the sys.stderr of its
# first import, which inside a run is that run's capture, closed when the run ends.
import datasets  # noqa: E402,F401
import huggingface_hub  # noqa: E402,F401
import matplotlib  # noqa: E402
import transformers  # noqa: E402,F401

matplotlib.use("Agg")  # as ctxgate trend sets it, before pyplot
import matplotlib.pyplot  # noqa: E402,F401
import torch  # noqa: E402,F401

from ctxgate.tokens.codec import PieceEncoder
from ctxgate.tokens.tokenizers import HFTokenizer
from tests.scripted import ByteTokenizer

# The libraries live as long as the test process: no garbage collection need walk their objects
# (a full one took a quarter of a second with them in memory, and the hundreds of in-process runs
# trigger many; the model plugin leaves a process that froze its objects as it is)
gc.collect()
gc.freeze()


def _keep_libraries(self: pytest.Pytester) -> SysModulesSnapshot:
    return _libraries_kept()


def _libraries_kept() -> SysModulesSnapshot:
    """pytester's in-process runs drop every module first imported during the run. torch, numpy and
    pyarrow cannot be imported twice in one process (their ops and types register once), and
    matplotlib imported twice checks its classes against the stale copies: only the runs' own
    test modules and conftests are dropped, so a run may load a model in-process."""
    return SysModulesSnapshot(preserve=lambda name: not _run_module(name))


def _run_module(name: str) -> bool:
    top = name.split(".")[0]
    return top == "conftest" or top.startswith("test_")


# a pytest that renames it must fail here, not drop torch between runs again
assert hasattr(pytest.Pytester, "_Pytester__take_sys_modules_snapshot")
pytest.Pytester._Pytester__take_sys_modules_snapshot = _keep_libraries  # type: ignore[attr-defined]


@contextlib.contextmanager
def process_state() -> Iterator[None]:
    """The environment, the folder and torch's thread count as they were, after a run in this
    process sets what a process of its own would keep to itself (a worker's threads, its GPUs)."""

    saved, cwd, threads = dict(os.environ), Path.cwd(), torch.get_num_threads()
    try:
        yield
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(saved)
        torch.set_num_threads(threads)


@contextlib.contextmanager
def engine_in_its_server() -> Iterator[None]:
    """A vLLM server started within runs its model worker in its engine core's process, not one of
    its own (one Python start fewer: 24 s to start on a CPU, not 34), for servers the tests only
    ask. A test of the server's own processes starts it as a run does."""
    with pytest.MonkeyPatch.context() as patched:
        patched.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        yield


def in_process(
    pytester: pytest.Pytester, *argv: str, env: dict[str, str] | None = None
) -> pytest.RunResult:
    """``pytester.runpytest`` within ``process_state``, ``env`` added to the environment while it
    runs."""
    with process_state():
        os.environ.update(env or {})
        return pytester.runpytest(*argv)


if TYPE_CHECKING:
    from ctxgate.records.case import Prediction
    from ctxgate.records.schema import Report

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "fixtures" / "tiny-llama-niah"
SQUAD = ROOT / "fixtures" / "data" / "squad_v2_validation_tiny.jsonl"
HOTPOT = ROOT / "fixtures" / "data" / "hotpotqa_distractor_validation_tiny.jsonl"
HELMET_DATA = ROOT / "fixtures" / "helmet_data"

pytest_plugins = ["pytester"]
# Under -n, each file goes to one worker (--dist loadfile: a module's server or cluster starts
# once), in the order collected, not xdist's by test count: the files that take longest go first, so
# no worker is left running one of them alone at the end. By --durations on the CI machine; the
# order changes no result, only when a file starts.
LONGEST_FIRST = (
    "test_ray.py",
    "test_engines.py",
    "test_bench_prefix.py",
    "test_install.py",
    "test_adapters.py",
    "test_demo.py",
    "test_endpoint_faults.py",
    "test_docs_commands.py",
    "test_e2e_failures.py",
    "test_fail_closed.py",
    "test_checkpoint_kinds.py",
    "test_progress.py",
    "test_sharded.py",
    "test_thinking_e2e.py",
    "test_e2e_tiny.py",
    "test_long_lengths.py",
    "test_overrides.py",
)


def pytest_configure(config: pytest.Config) -> None:
    given = [*config.invocation_params.args, *os.environ.get("PYTEST_ADDOPTS", "").split()]
    if config.getoption("numprocesses", None) and not any(a.startswith("--dist") for a in given):
        config.option.dist = "loadfile"
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(
        key=lambda item: rank.get(item.path.name, len(rank))
    )  # stable: a file's own order is kept


@pytest.fixture(scope="session")
def hf_tokenizer():
    """The shipped tokenizer with a ChatML template: the checkpoint is a base model without one, and
    the prompt tests build both forms."""
    from transformers import AutoTokenizer

    from fixtures.build_tiny import CHATML

    tok = AutoTokenizer.from_pretrained(str(TINY))
    tok.chat_template = CHATML
    return tok


@pytest.fixture
def ckpt(tmp_path: Path) -> Path:
    """A private copy of the shipped checkpoint, to break."""
    target = tmp_path / "ckpt"
    shutil.copytree(TINY, target, ignore=shutil.ignore_patterns("training_log.json"))
    return target


@pytest.fixture(scope="session")
def helmet_data_long(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture data with half of NarrativeQA's and Multi-LexSum's documents long enough for
    HELMET's length selection (written at test time: ~7 MB)."""
    from fixtures.helmet_released import long_documents

    target = tmp_path_factory.mktemp("helmet") / "helmet_data"
    long_documents(target)
    return target


@pytest.fixture(scope="session")
def tiny_chat(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped checkpoint with a ChatML template: what a chat model looks like to the suite."""
    from fixtures.build_tiny import CHATML

    folder = tmp_path_factory.mktemp("chat") / "tiny-chat"
    shutil.copytree(TINY, folder)
    (folder / "chat_template.jinja").write_text(CHATML)
    return folder


@pytest.fixture(scope="session")
def hf_encoder(hf_tokenizer) -> PieceEncoder:
    return PieceEncoder(HFTokenizer(hf_tokenizer))


@pytest.fixture(scope="session")
def large_vocab_tokenizer():
    """Mistral's Tekken tokenizer (131K vocabulary, a real large-vocabulary BPE), built from the
    vocabulary file the mistral-common package ships, with a ChatML template: no hub is reached."""
    from importlib import resources

    from transformers.integrations.mistral.tokenizer import convert_tekken_tokenizer

    from fixtures.build_tiny import CHATML

    vocab = resources.files("mistral_common").joinpath("data", "tekken_240911.json")
    return convert_tekken_tokenizer(str(vocab), chat_template=CHATML)


@pytest.fixture(scope="session")
def large_vocab_encoder(large_vocab_tokenizer) -> PieceEncoder:
    return PieceEncoder(HFTokenizer(large_vocab_tokenizer))


@pytest.fixture(scope="session")
def sp_tokenizer():
    """A SentencePiece-shaped tokenizer with a BOS (fixtures/sp_tokenizer.py): Llama-2's stand-in
    for HELMET's length rules."""
    from fixtures.sp_tokenizer import build_sp_tokenizer

    return build_sp_tokenizer()


@pytest.fixture(scope="session")
def byte_encoder() -> PieceEncoder:
    return PieceEncoder(ByteTokenizer())


def suite_command(
    *args: str, model: Path | str | None = TINY, python: Path | str = sys.executable
) -> list[str]:
    """``python -m pytest --model=MODEL ARGS`` as a user starts the suite (no pytest cache); run it
    with ``suite_env()``, so this checkout's plugins are on the path. ``model=None`` leaves
    ``--model`` to ``args``, for a test of the option's own forms; ``python``: another
    environment's interpreter (an installed wheel's)."""
    given = [] if model is None else [f"--model={model}"]
    return [str(python), "-m", "pytest", *given, "-p", "no:cacheprovider", *args]


def suite_env() -> dict[str, str]:
    """The environment a launched suite gets: this process's as it is now (a test's monkeypatched
    variables included), with this checkout on the path."""
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def launch_suite(
    *args: str,
    model: Path | str | None = TINY,
    cwd: Path = ROOT,
    env: dict[str, str] | None = None,
    timeout: float = 900,
    text: bool = True,
    preexec_fn: Callable[[], None] | None = None,
    checkout_on_path: bool = True,
) -> subprocess.CompletedProcess[Any]:
    """``suite_command`` run to the end in ``cwd``: its exit status and output. ``preexec_fn`` runs
    in the child before the suite starts (a resource limit, a signal's disposition).
    ``checkout_on_path=False``: the plugins only as installed (their entry point), as a user's
    project outside the checkout finds them."""
    return subprocess.run(
        suite_command(*args, model=model),
        cwd=cwd,
        capture_output=True,
        text=text,
        timeout=timeout,
        env={**(suite_env() if checkout_on_path else os.environ), **(env or {})},
        preexec_fn=preexec_fn,
    )


def suite_here(
    cwd: Path, *args: str, model: Path | str = TINY, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """What ``launch_suite`` returns, the run made in this process from ``cwd``: for a fixture of
    wider scope than pytester's (a module's reports that several tests read) whose run's process is
    not what they are about; no Python start, no torch import. As pytester's in-process runs do,
    the run has a basetemp of its own, and the modules it imported first are dropped after it."""
    from _pytest.pytester import SysPathsSnapshot

    modules, paths = _libraries_kept(), SysPathsSnapshot()
    out, err = io.StringIO(), io.StringIO()
    argv = [*suite_command(*args, model=model)[3:], f"--basetemp={cwd / '.basetemp'}"]
    try:
        with process_state():
            os.environ.update({"PYTEST_ADDOPTS": AS_USERS_RUN, **(env or {})})
            os.chdir(cwd)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                status = int(pytest.main(argv))
    finally:
        modules.restore()
        paths.restore()
    return subprocess.CompletedProcess(argv, status, out.getvalue(), err.getvalue())


def _ctrl_c_as_a_terminal_sends_it() -> None:
    # a runner that started these tests in the background passes SIGINT down ignored, and Python
    # then keeps ignoring it: its default action is restored first, as a terminal's Ctrl-C finds it
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_suite(
    *args: str,
    model: Path | str | None = TINY,
    cwd: Path = ROOT,
    env: dict[str, str] | None = None,
    stdout: int | None = subprocess.PIPE,
    stderr: int | None = subprocess.STDOUT,
    new_session: bool = False,
    ctrl_c: bool = False,
) -> subprocess.Popen[str]:
    """``suite_command`` started in ``cwd`` and left running, for a test that signals it or watches
    it as it goes: its output is one text pipe (stdout and stderr together) unless
    ``stdout``/``stderr`` say otherwise (``None``: this process's). ``new_session``: in its own
    process group, for a signal to the whole group; ``ctrl_c``: SIGINT ends it as it does from a
    terminal."""
    return subprocess.Popen(
        suite_command(*args, model=model),
        cwd=cwd,
        env={**suite_env(), **(env or {})},
        stdout=stdout,
        stderr=stderr,
        text=True,
        start_new_session=new_session,
        preexec_fn=_ctrl_c_as_a_terminal_sends_it if ctrl_c else None,
    )


def interrupt(pytester: pytest.Pytester, *args: str) -> tuple[int, str]:
    """Start the suite in its own process group, wait until it is mid-run, press Ctrl-C (SIGINT to
    the group)."""
    log = pytester.path / "calls.txt"
    # 0.2 s a generation: once 10 are logged, the other 44 need seconds more, time for the interrupt
    # to land even on a loaded machine
    (pytester.path / "script.json").write_text(
        json.dumps({**ALL_RIGHT, "sleep": 0.2, "calls_log": str(log)})
    )
    proc = start_suite(
        "--backend", SCRIPTED, "--lengths", "4k", "--samples", "6", "-m", "ruler",
        "-k", "niah or vt", "--report", "out/r.json",
        *args,
        model="script.json", cwd=pytester.path, new_session=True, ctrl_c=True,
    )  # fmt: skip
    deadline = time.time() + 120
    while (not log.exists() or len(log.read_text().splitlines()) < 10) and time.time() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    return proc.returncode, out


def run_ctxgate(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """``python -m ctxgate ARGS``, a verb as a user runs it, in its own process: for a verb whose
    process is the behaviour (watch's subprocesses, a Ray driver). ``cwd`` defaults to this
    process's folder (pytester's, in a test that uses pytester); ``env`` is added to
    ``suite_env()``."""
    return subprocess.run(
        [sys.executable, "-m", "ctxgate", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**suite_env(), **(env or {})},
    )


def call_ctxgate(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``ctxgate ARGS`` in this process: the CLI's ``main()`` as the console script calls it, in
    ``cwd`` with ``env`` added to the environment (both restored after), its stdout and stderr
    captured. What ``run_ctxgate`` returns, without a Python start and its imports, for a verb that
    starts no process of its own (not watch)."""
    from ctxgate.cli import main

    out, err = io.StringIO(), io.StringIO()
    with process_state():
        os.environ.update(env or {})
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(list(args))
            except (
                SystemExit
            ) as exit_:  # argparse's refusal of an option, as the console script ends on it
                status = exit_.code if isinstance(exit_.code, int) else 1
    return subprocess.CompletedProcess(["ctxgate", *args], status, out.getvalue(), err.getvalue())


# The test command's profile (scripts/test.sh passes --hypothesis-profile=fixed): every machine
# draws the same examples, and none is replayed from a local database. pytest run without it draws
# anew each time (or from --hypothesis-seed=N), to explore.
settings.register_profile("fixed", derandomize=True, deadline=None, print_blob=True)

# Hypothesis is a dev dependency, absent where users run the suite, and its pytest plugin imports
# all of it (about a second of CPU a process): a pytest the tests launch runs without it, as theirs.
# And without pytest's cache: a run given --model in this checkout takes the checkout for its
# rootdir (pytest-dev/pytest#8846), demo.sh runs in it, and the docs' scratch folders link its
# .pytest_cache, so the cases the tests fail on purpose would be what a user's --lf reruns there
AS_USERS_RUN = "-p no:hypothesispytest -p no:cacheprovider"


@pytest.fixture(scope="session", autouse=True)
def _launched_as_users_run() -> Iterator[None]:
    """Also with their bytecode written, as a user's Python writes it: the tests start some 300
    Pythons, which a machine that sets PYTHONDONTWRITEBYTECODE would have each compile the project's
    modules again (and a fresh venv installed with --no-compile, torch's)."""
    with pytest.MonkeyPatch.context() as patched:
        patched.setenv("PYTEST_ADDOPTS", AS_USERS_RUN)
        patched.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
        yield


@pytest.fixture(autouse=True)
def _checkout_on_the_path_of_pytesters_runs(request: pytest.FixtureRequest) -> None:
    """A pytester run in a process of its own imports this checkout's tests package (the scripted
    backend, SCRIPTED) as the suite's launchers do (suite_env()), and runs as users run it
    (pytester clears PYTEST_ADDOPTS)."""
    if "pytester" in request.fixturenames:
        request.getfixturevalue("pytester")
        paths = [str(ROOT), os.environ.get("PYTHONPATH", "")]
        monkeypatch = request.getfixturevalue("monkeypatch")
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, paths)))
        monkeypatch.setenv("PYTEST_ADDOPTS", AS_USERS_RUN)


@pytest.fixture
def real_suite(pytester: pytest.Pytester) -> Callable[..., pytest.RunResult]:
    """The user-facing suite copied into a pytester dir; ``run(*args, model=...)`` runs it in this
    process (pytester's ``runpytest``), ``own_process=True`` in a subprocess: for what the process
    boundary is (a signal, the environment a process starts with, its exit)."""
    shutil.copytree(ROOT / "tests_longctx", pytester.path / "tests_longctx")
    pytester.makeini("[pytest]\ntestpaths = tests_longctx\naddopts = -p no:cacheprovider\n")

    def run(*args: str, model: Path = TINY, own_process: bool = False) -> pytest.RunResult:
        argv = ("--model", str(model), "--squad", str(SQUAD), "--hotpotqa", str(HOTPOT), *args)
        if own_process:
            return pytester.runpytest_subprocess(*argv, timeout=900)
        return in_process(pytester, *argv)

    return run


@pytest.fixture
def scripted_suite(pytester: pytest.Pytester) -> Callable[..., pytest.RunResult]:
    """The user-facing suite in a pytester dir on the scripted plumbing backend: ``run(name, script,
    *args)`` writes ``script`` as NAME.script.json and runs the suite on it in this process, its
    report at NAME.json."""
    shutil.copytree(ROOT / "tests_longctx", pytester.path / "tests_longctx")
    pytester.makeini("[pytest]\ntestpaths = tests_longctx\naddopts = -p no:cacheprovider\n")

    def run(name: str, script: dict[str, Any], *args: str) -> pytest.RunResult:
        (pytester.path / f"{name}.script.json").write_text(json.dumps(script))
        model = (
            "--model",
            f"{name}.script.json",
            "--backend",
            SCRIPTED,
            "--report",
            f"{name}.json",
        )
        return in_process(pytester, *model, *args)

    return run


@pytest.fixture(scope="session")
def checkpoint_sequence(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight real tiny checkpoints, ``checkpoint-100`` .. ``-800``; retrieval breaks from index 5
    (``-600``)."""
    from fixtures.checkpoint_sequence import build_sequence

    root = tmp_path_factory.mktemp("run")
    build_sequence(root, count=8, break_at=5)
    return root


@pytest.fixture
def judge_server() -> Iterator[tuple[str, Callable[[], dict[str, Any]]]]:
    """fixtures/judge_server.py on 127.0.0.1 (a free port): its base URL and a function returning
    its stats. ``script(faults)`` on the returned URL's server queues scripted failures (see that
    module)."""
    from fixtures.judge_server import start

    url, server = start(0)
    root = url.rsplit("/v1", 1)[0]

    def stats() -> dict[str, Any]:
        with urllib.request.urlopen(root + "/_stats") as resp:
            return json.loads(resp.read())

    yield url, stats
    server.shutdown()
    server.server_close()


def script_faults(url: str, faults: list[dict[str, Any]]) -> None:
    req = urllib.request.Request(
        url.rsplit("/v1", 1)[0] + "/_script",
        data=json.dumps(faults).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    urllib.request.urlopen(req).read()


ALL_RIGHT = {
    "max_positions": 100000,
    "default": 1.0,
}  # a scripted model that answers everything right
SCRIPTED = "tests.scripted:ScriptedBackend"  # --backend of the plumbing tests: tests/scripted.py


@pytest.fixture
def suite(pytester: pytest.Pytester):
    """A copy of the user-facing suite, plus a helper that runs it against a script (the scripted
    backend: plumbing only, no model)."""
    shutil.copytree(ROOT / "tests_longctx", pytester.path / "tests_longctx")
    pytester.makeini("[pytest]\ntestpaths = tests_longctx\naddopts = -p no:cacheprovider\n")

    def run(
        script: dict,
        *args: str,
        thresholds: str | None = None,
        lengths: str = "4k,8k",
    ) -> pytest.RunResult:
        (pytester.path / "script.json").write_text(json.dumps(script))
        if thresholds is not None:
            (pytester.path / "thresholds.toml").write_text(thresholds)
        argv = [
            "--backend",
            SCRIPTED,
            "--model",
            "script.json",
            "--lengths",
            lengths,
            "--samples",
            "4",
            "--squad",
            str(SQUAD),
            "--hotpotqa",
            str(HOTPOT),
            "--data-dir",
            str(HELMET_DATA),
            *args,
        ]
        return in_process(pytester, *argv)

    return run


def stored_report(cases: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    """A report as ``--report`` stores it (valid against records.schema), around hand-written
    ``cases``: each case gets the fields the schema requires that it does not give, and ``fields``
    replace top-level ones (``run``: its fields)."""
    from ctxgate import __version__
    from ctxgate.records.schema import SCHEMA_VERSION

    run = {
        "model": "m",
        "backend": None,
        "seed": 42,
        "samples": None,
        "lengths": [],
        "chat_template": "task",
    }
    return {
        "schema_version": SCHEMA_VERSION,
        "ctxgate_version": __version__,
        "created": "2026-11-23T00:00:00+00:00",
        "complete": True,
        "run": {**run, "lengths": sorted({c["length"] for c in cases}), **fields.pop("run", {})},
        "cases": [
            {"suite": "ruler", "verdict": "pass", "score": None, "n": 0, "floor": 0.0, **c}
            for c in cases
        ],
        "by_length": {},
        "overall": {},
        "effective_length": None,
        "gates": [],
        **fields,
    }


def prediction(
    task: str, length: int, index: int, score: float | None, **fields: Any
) -> Prediction:
    """A line of a ``.predictions.jsonl`` as ``read_predictions`` returns it; ``fields`` replace the
    made-up ones."""
    from ctxgate.records.case import Prediction

    made_up: dict[str, Any] = {
        "metric": "ruler_string_match_all",
        "chat_template": False,
        "prediction": "p",
        "scored_text": "p",
        "answers": ("a",),
        "input_tokens": length,
        "output_tokens": 1,
        "finish_reason": "stop",
        "sample_sha256": "d",
    }
    return Prediction(task=task, length=length, index=index, score=score, **{**made_up, **fields})


def typed_report(cases: list[dict[str, Any]], **fields: Any) -> Report:
    """``stored_report`` as ``read_report`` returns it: the typed records."""
    from ctxgate.records.schema import Report, adapter_for

    return adapter_for(Report).validate_python(stored_report(cases, **fields))
