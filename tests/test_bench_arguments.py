"""bench/'s scripts check their arguments (issue 77): a bad value of any option is refused at the
argument check, before any work, in one line on stderr, ``<script>.py: <the option and its value,
what is wrong>: <the fix>``, exit status 2, never a traceback; every default, and every valid line,
parses as before. Each script's ``main(argv)`` runs in-process (bench/arguments.py holds the parser
and the checks)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from types import ModuleType

import pytest

from bench import arguments
from tests.conftest import ROOT

SCRIPTS = (
    "build_graphwalks",
    "build_grid",
    "build_longbench2",
    "build_mrcr2",
    "chance",
    "datagen",
    "distributed",
    "engines",
    "floor_rules",
    "gpu",
    "html_report",
    "length_search",
    "long_prompts",
    "prefix",
    "ruler2_build",
    "ruler2_data",
    "sequential",
    "startup",
    "tiny_accuracy",
)
A_FILE = str(ROOT / "pyproject.toml")
TINY = "fixtures/tiny-llama-niah"

# (script, argv, the option the line names first, the bad value it names): refused by a type check
REFUSED = [
    ("prefix", ["--lengths", "0"], "--lengths", "0"),
    ("prefix", ["--tasks", "nosuchtask"], "--tasks", "nosuchtask"),
    ("build_mrcr2", ["--samples", "0"], "--samples", "0"),
    ("build_graphwalks", ["--lengths", "1k,huge"], "--lengths", "1k,huge"),
    ("build_longbench2", ["--length", "-5"], "--length", "-5"),
    ("startup", ["--pairs", "0"], "--pairs", "0"),
    ("startup", ["--case", "nosuchtask"], "--case", "nosuchtask"),
    ("startup", ["--model", "/nonexistent"], "--model", "/nonexistent"),
    ("startup", ["--length", "-5"], "--length", "-5"),
    ("startup", ["--breakdown-runs", "two"], "--breakdown-runs", "two"),
    ("startup", ["--model", "bench"], "--model", "bench"),  # a folder, but no config.json
    ("startup", ["--case", "niah_single"], "--case", "niah_single"),
    ("build_grid", ["--lengths", "64-8"], "--lengths", "64-8"),
    ("build_grid", ["--lengths", "1k,huge"], "--lengths", "1k,huge"),
    ("build_grid", ["--samples", "0"], "--samples", "0"),
    ("build_grid", ["--tasks", "vt,nosuchtask"], "--tasks", "nosuchtask"),
    ("build_grid", ["--data-dir", "/nonexistent"], "--data-dir", "/nonexistent"),
    ("build_grid", ["--baseline", "no-such-ref"], "--baseline", "no-such-ref"),
    ("chance", ["--length", "0"], "--length", "0"),
    ("chance", ["--samples", "many"], "--samples", "many"),
    ("chance", ["--draws", "-1"], "--draws", "-1"),
    ("datagen", ["--lengths", ""], "--lengths", "''"),
    ("datagen", ["--workers", "0"], "--workers", "0"),
    ("datagen", ["--suite", "rulr"], "--suite", "rulr"),
    ("datagen", ["--baseline", "no-such-ref"], "--baseline", "no-such-ref"),
    ("datagen", ["--baseline=--all"], "--baseline", "--all"),  # never read as git's option
    ("datagen", ["--tokenizer", "/nonexistent"], "--tokenizer", "/nonexistent"),
    ("datagen", ["--baseline-samples", "-1"], "--baseline-samples", "-1"),
    ("datagen", ["--data-dir", "/nonexistent"], "--data-dir", "/nonexistent"),
    ("ruler2_data", ["out", "--fraction", "2"], "--fraction", "2"),
    ("ruler2_data", [A_FILE], "folder", A_FILE),
    ("distributed", ["--tasks", "vt,nosuchtask"], "--tasks", "nosuchtask"),
    ("distributed", ["--lengths", "512,-1k"], "--lengths", "-1k"),
    ("distributed", ["--samples", "0"], "--samples", "0"),
    ("engines", ["--model", "/nonexistent"], "--model", "/nonexistent"),
    ("engines", ["--tasks", ","], "--tasks", ","),
    ("engines", ["--lengths", "1k,0"], "--lengths", "0"),
    ("engines", ["--rounds", "0"], "--rounds", "0"),
    ("engines", ["--batch-size", "1.5"], "--batch-size", "1.5"),
    ("engines", ["--vllm-python", "/nonexistent/python"], "--vllm-python", "/nonexistent/python"),
    ("engines", ["--suite-concurrency", "0"], "--suite-concurrency", "0"),
    ("floor_rules", ["--confidence", "1.5"], "--confidence", "1.5"),
    ("floor_rules", ["--confidence", "nan"], "--confidence", "nan"),
    ("gpu", ["--deadline", "0"], "--deadline", "0"),
    ("gpu", ["--out", A_FILE], "--out", A_FILE),
    ("gpu", ["--lengths", "64k,x"], "--lengths", "x"),
    ("gpu", ["--tasks", "niah_single_1,vtt"], "--tasks", "vtt"),
    ("gpu", ["--ruler", "0"], "--ruler", "0"),
    ("html_report", ["--samples", "0"], "--samples", "0"),
    ("html_report", ["--lengths", "4k,8q"], "--lengths", "8q"),
    ("html_report", ["--rounds", "-3"], "--rounds", "-3"),
    ("length_search", ["--runs", "0"], "--runs", "0"),
    ("length_search", ["--alpha", "0"], "--alpha", "0"),
    ("length_search", ["--min-samples", "501"], "--min-samples", "501"),
    ("length_search", ["--seed", "-1"], "--seed", "-1"),
    ("long_prompts", ["--lengths", "32k,0"], "--lengths", "0"),
    ("long_prompts", ["--backends", "hf,vlm"], "--backends", "vlm"),
    ("long_prompts", ["--task", "nosuchtask"], "--task", "nosuchtask"),
    ("long_prompts", ["--model", "/nonexistent"], "--model", "/nonexistent"),
    ("long_prompts", ["--request-timeout", "-1"], "--request-timeout", "-1"),
    ("long_prompts", ["--keep", A_FILE], "--keep", A_FILE),
    ("sequential", ["--cases", "0"], "--cases", "0"),
    ("sequential", ["--floor", "80"], "--floor", "80"),
    ("sequential", ["--alpha", "1"], "--alpha", "1"),
    ("sequential", ["--max-samples", "5"], "--max-samples", "5"),
    ("sequential", ["--seed", "x"], "--seed", "x"),
    ("sequential", ["--samples", "0"], "--samples", "0"),
    ("tiny_accuracy", ["/nonexistent"], "model", "/nonexistent"),
    ("tiny_accuracy", [TINY, "--lengths", "0"], "--lengths", "0"),
    ("tiny_accuracy", [TINY, "--samples", "0"], "--samples", "0"),
    ("tiny_accuracy", [TINY, "--task", "nosuchtask"], "--task", "nosuchtask"),
]
# refused right after the parse, where a value's validity depends on another's; the script's first
# step of real work, replaced so that a check that let the line through fails fast
AFTER_PARSE = [
    ("startup", ["--case", "fwe", "--length", "60"], "--case", "fwe", "measure_pairs"),
    ("chance", ["--tasks", "cwe,qa_1"], "--tasks", "qa_1", "run"),
    ("gpu", ["--shapes", "2B"], "--shapes", "2B", "_run"),
    ("gpu", ["--smoke", "--shapes", "1B"], "--shapes", "1B", "_run"),
    ("gpu", ["--backend", "vllm", "--ruler", "128k"], "--ruler", "128K", "_run"),
]


def script(name: str) -> ModuleType:
    return importlib.import_module(f"bench.{name}")


def ids(case: tuple) -> str:
    return f"{case[0]}:{' '.join(case[1]) or 'empty'}"


def one_line_refusal(capsys: pytest.CaptureFixture[str], name: str) -> str:
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err, err
    assert err.endswith("\n") and err.count("\n") == 1, err
    line = err.removesuffix("\n")
    assert line.startswith(f"{name}.py: "), line
    return line.removeprefix(f"{name}.py: ")


def assert_names(said: str, option: str, value: str) -> None:
    """``<option> <value> <what is wrong>: <the fix>``: the option first, then the value."""
    what, _, fix = said.partition(": ")
    assert said.startswith(f"{option} ") and value in what.removeprefix(option), said
    assert fix.strip(), said


@pytest.fixture(autouse=True)
def in_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scripts' relative defaults (fixtures/tiny-llama-niah) are the checkout's."""
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize("name, argv, option, value", REFUSED, ids=[ids(c) for c in REFUSED])
def test_a_bad_value_is_refused_in_one_line_before_any_work(
    name: str,
    argv: list[str],
    option: str,
    value: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parse = arguments.Parser.parse_args

    def accepted(self: arguments.Parser, *args, **kwargs) -> object:
        raise AssertionError(f"{self.prog} accepted {parse(self, *args, **kwargs)}")

    monkeypatch.setattr(arguments.Parser, "parse_args", accepted)
    with pytest.raises(SystemExit) as stopped:
        script(name).main(argv)
    assert stopped.value.code == 2
    assert_names(one_line_refusal(capsys, name), option, value)


@pytest.mark.parametrize(
    "name, argv, option, value, work", AFTER_PARSE, ids=[ids(c) for c in AFTER_PARSE]
)
def test_a_value_wrong_beside_another_is_refused_the_same_way(
    name: str,
    argv: list[str],
    option: str,
    value: str,
    work: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = script(name)

    def started(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"{name}.py started its work ({work}) on {argv}")

    monkeypatch.setattr(module, work, started)
    with pytest.raises(SystemExit) as stopped:
        module.main(argv)
    assert stopped.value.code == 2
    assert_names(one_line_refusal(capsys, name), option, value)


@pytest.mark.parametrize(
    "argv, line",
    [
        (["--pairs", "0"], "--pairs 0 is not a whole number of at least 1: give one such as 5"),
        (
            ["--case", "nosuchtask"],
            "--case nosuchtask is not a task: give one such as niah_single_1 (`ctxgate tasks` "
            "lists them)",
        ),
        (
            ["--model", "/nonexistent"],
            "--model /nonexistent does not exist: give a checkpoint folder (the one with "
            "config.json), such as fixtures/tiny-llama-niah",
        ),
        (
            ["--length", "-5"],
            "--length -5 is not a length of at least 1 token: write a token count such as 1024, "
            "or binary thousands such as 8k (=8192)",
        ),
    ],
)
def test_the_startup_lines_of_issue_77(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        script("startup").main(argv)
    assert stopped.value.code == 2
    assert capsys.readouterr() == ("", f"startup.py: {line}\n")


@pytest.mark.parametrize(
    "argv, said",
    [
        (["--pairs"], "--pairs is given no value: write one after it"),
        (["--bogus"], "unknown arguments --bogus: see --help"),
        (["--threads", "4"], "--threads '4' is not one of its choices: choose from "),
        (["--quick=yes"], "--quick takes no value, not 'yes': write it alone"),
        (["--case", "niah_single_l"], "--case niah_single_l is not a task: did you mean "),
    ],
)
def test_argparses_own_refusals_read_the_same(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        script("startup").main(argv)
    assert stopped.value.code == 2
    assert one_line_refusal(capsys, "startup").startswith(said)


def test_a_missing_positional_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        script("tiny_accuracy").main([])
    assert stopped.value.code == 2
    assert one_line_refusal(capsys, "tiny_accuracy") == "model not given: give it (see --help)"


DEFAULTS = {
    "build_graphwalks": {"tokenizer": TINY, "lengths": (131072,), "samples": 100, "seed": 42},
    "build_longbench2": {
        "tokenizer": TINY,
        "length": 131072,
        "samples": 100,
        "records": 100,
        "words": 250000,
        "seed": 42,
    },
    "build_mrcr2": {
        "tokenizer": TINY,
        "lengths": (131072,),
        "samples": 100,
        "seed": 42,
        "data_dir": None,
    },
    "prefix": {
        "model": TINY,
        "tasks": (),
        "lengths": (1024, 2048, 4096),
        "samples": 10,
        "vllm_python": None,
        "vllm_arg": [],
        "smoke": False,
    },
    "build_grid": {"samples": 2, "chat": "both", "tasks": (), "data_dir": None, "baseline": None},
    "chance": {"length": "8k", "samples": 100, "draws": 20, "tasks": (), "write": False},
    "datagen": {
        "tokenizer": str(ROOT / TINY),
        "lengths": (131072, 1048576),
        "samples": 100,
        "suite": "ruler",
        "tasks": (),
        "workers": 2,
        "baseline": "48206e8",
        "baseline_samples": 10,
        "data_dir": None,
    },
    "ruler2_build": {
        "tokenizer": TINY,
        "lengths": (131072,),
        "samples": 100,
        "seed": 42,
        "tasks": None,
        "data_dir": None,
        "smoke": False,
    },
    "ruler2_data": {"folder": Path("out"), "fraction": 1.0},
    "distributed": {
        "tasks": "niah_single_1,vt,cwe",
        "lengths": "512,1k",
        "samples": 10,
        "skip_measured": False,
    },
    "engines": {
        "model": TINY,
        "tasks": ("niah_single_1", "vt", "niah_multikey_2"),
        "lengths": (1024, 4096),
        "samples": 20,
        "rounds": 3,
        "batch_size": 8,
        "vllm_python": None,
        "suite": False,
        "suite_only": False,
        "suite_concurrency": None,
    },
    "floor_rules": {"confidence": 0.95},
    "gpu": {
        "smoke": False,
        "out": None,
        "deadline": 420.0,
        "shapes": None,
        "lengths": None,
        "tasks": ("niah_single_1", "vt"),
        "ruler": None,
        "backend": "hf",
    },
    "html_report": {
        "samples": 100,
        "lengths": (4096, 8192, 16384, 32768, 65536, 131072),
        "rounds": 3,
    },
    "length_search": {"runs": 200, "alpha": 0.05, "min_samples": 10, "seed": 0, "models": 60},
    "long_prompts": {
        "lengths": (32768, 262144),
        "backends": ("hf", "vllm"),
        "task": "niah_single_1",
        "model": TINY,
        "request_timeout": 3600.0,
        "keep": None,
    },
    "sequential": {
        "cases": 10_000,
        "floor": 0.8,
        "alpha": 0.05,
        "max_samples": 100,
        "seed": 1,
        "replay": False,
        "samples": 24,
    },
    "startup": {
        "pairs": 5,
        "threads": "both",
        "breakdown_runs": 3,
        "model": TINY,
        "case": "fwe",
        "length": 1024,
        "quick": False,
    },
    "tiny_accuracy": {
        "model": TINY,
        "lengths": (256, 512, 1024, 2048),
        "samples": 40,
        "task": "niah_single_1",
    },
}


@pytest.mark.parametrize("name", SCRIPTS)
def test_the_defaults_parse_as_before(name: str) -> None:
    required = {"tiny_accuracy": [TINY], "ruler2_data": ["out"]}.get(name, [])
    parsed = vars(script(name).parser().parse_args(required))
    if name == "build_grid":  # every length to 64, about 24 an octave to 8192, the powers of two
        grid = parsed.pop("lengths")
        assert grid[:64] == list(range(1, 65)) and grid[-1] == 8192 and len(grid) == 232
        assert {2**k for k in range(14)} <= set(grid)
    assert parsed == DEFAULTS[name]


@pytest.mark.parametrize(
    "name, argv, expected",
    [
        (
            "startup",
            ["--length", "1k", "--case", "niah_single_1", "--pairs", "2"],
            {"length": 1024},
        ),
        ("startup", ["--model", str(ROOT / TINY), "--quick"], {"model": str(ROOT / TINY)}),
        ("build_grid", ["--lengths", "256,1k", "--tasks", "vt,cwe"], {"lengths": [256, 1024]}),
        ("build_grid", ["--lengths", "1-4", "--data-dir", "fixtures"], {"lengths": [1, 2, 3, 4]}),
        ("chance", ["--tasks", "cwe,fwe", "--length", "16k"], {"tasks": ("cwe", "fwe")}),
        ("datagen", ["--baseline", "none", "--suite", "families"], {"baseline": "none"}),
        ("datagen", ["--baseline", "HEAD", "--baseline-samples", "0"], {"baseline_samples": 0}),
        ("distributed", ["--lengths", "1k,512"], {"lengths": "1k,512"}),
        ("gpu", ["--ruler", "128k", "--out", "out/gpu"], {"ruler": 131072, "out": Path("out/gpu")}),
        ("gpu", ["--smoke", "--shapes", "tiny", "--deadline", "inf"], {"shapes": "tiny"}),
        ("sequential", ["--floor", "1", "--seed", "-7", "--max-samples", "10"], {"seed": -7}),
        ("long_prompts", ["--backends", "vllm", "--keep", "out/long"], {"backends": ("vllm",)}),
    ],
)
def test_valid_lines_still_parse(name: str, argv: list[str], expected: dict[str, object]) -> None:
    parsed = vars(script(name).parser().parse_args(argv))
    assert {key: parsed[key] for key in expected} == expected


def test_a_folder_read_in_the_checkout_is_checked_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """long_prompts.py runs the suite, datagen.py and build_grid.py their workers, in the
    checkout: a relative --model, --tokenizer or --data-dir is the checkout's, wherever the script
    is started from."""
    monkeypatch.chdir(tmp_path)
    assert script("long_prompts").parser().parse_args([]).model == TINY
    assert script("datagen").parser().parse_args(["--tokenizer", TINY]).tokenizer == TINY
    built = script("build_grid").parser().parse_args(["--data-dir", "fixtures"])
    assert built.data_dir == "fixtures"


@pytest.mark.parametrize("name", SCRIPTS)
def test_help_still_prints(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        script(name).main(["--help"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: {name}.py ")


def test_the_checks_import_no_other_bench_module() -> None:
    """Every script imports bench/arguments.py; it imports none of them (no import circle)."""
    tree = ast.parse((ROOT / "bench" / "arguments.py").read_text("utf-8"))
    imported = [
        name
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for name in (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module or "", *(f"{node.module}.{a.name}" for a in node.names)]
        )
    ]
    assert not [n for n in imported if n == "bench" or n.startswith("bench.")], imported
