"""Start-up: a one-case run of the suite against a plain script doing the same work, and where the
suite's time goes.

    python bench/startup.py [--pairs 5] [--threads both|1|default] [--case fwe --length 1024]
    python bench/startup.py --quick      # one pair at one thread, one breakdown run (the test's)

The suite's side is the command a user runs, in a process of its own (its exit is part of what is
timed): ``pytest --model MODEL -k CASE --lengths L --samples 1 --report R`` with a fresh cache, so
the case is generated, not read back; ``-p no:hypothesispytest`` as on a user's machine (Hypothesis
is a dev dependency, and its plugin imports all of it at the summary). The script's side imports
torch and transformers, loads the same tokenizer and weights with the Auto classes, and generates
greedily from the same prompt ids, with the same budget and the checkpoint's own EOS, as a user
would. The ids are built here with the suite's own sample builder, and their digest is checked
against the one the suite's predictions file records; each pair's decoded token counts (and texts)
are checked equal, so both sides stop at the same step, and equal to the task's budget: neither side
meets end of sequence, so neither stops early on a token the other might not draw (the default case,
RULER's fwe at 1K, decodes its 50 tokens on the tiny checkpoint; its NIAH cases stop after 4).

Each pair runs the two back to back, in alternating order; the ratio is suite / script per pair,
and the median of the pairs is printed with the lowest and highest pair, at one thread
(``OMP_NUM_THREADS=1``) and at the default threads. Unless ``--quick``, one pair first at each
setting is a warm-up (Python's bytecode written, the files in the page cache), not counted.

The breakdown runs each side again (``--breakdown-runs``; of each side, the run with the median
total is printed) under ``python -X importtime``: the suite with a probe plugin of this script's
(``-p``, nothing of the product's) that notes the clock at pytest's hooks, the script at its own
steps; both in an exit handler registered first, so it runs last: what follows is the interpreter's
shutdown. Each phase is printed with the imports finished in it (``-X importtime``'s self times:
torch and transformers are imported by the suite's model fixture, and transformers loads much of
itself lazily, during the load and the generation), and the imports summed by package. "The case"
is the suite's build, generation and scoring, the script's generation. ``-X importtime`` slows the
imports a little: the breakdown's totals are a little over the pairs'.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import arguments  # noqa: E402

# The probe plugin and the script say where they are on stderr, between -X importtime's lines: each
# mark ends a phase (the imports printed before it are that phase's), the last one is in an exit
# handler registered first, so run last: what follows it is the interpreter's shutdown.
MARK = "startup-mark"
START, LOAD, CASE, EXIT = "python start", "imports and model load", "the case", "exit handlers"
SHUTDOWN = "interpreter shutdown"
PHASES = (
    START,
    "plugins, options, plan",
    "collection",
    LOAD,
    CASE,
    "teardown",
    "report files and summary",
    EXIT,
    SHUTDOWN,
)
MARKING = f"""
import atexit, sys, time
def _mark(name):
    print(f"{MARK} {{time.time()!r}} {{name}}", file=sys.__stderr__, flush=True)
_mark("{START}")
atexit.register(_mark, "{EXIT}")
"""
PROBE = f"""{MARKING}
import pytest
@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    _mark("{PHASES[1]}")
@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    _mark("{PHASES[2]}")
@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    _mark("{LOAD}")
@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item):
    _mark("{CASE}")
@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    _mark("{PHASES[5]}")
@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    _mark("{PHASES[6]}")
"""
SCRIPT = f"""{MARKING}
import json
import torch, transformers
tok = transformers.AutoTokenizer.from_pretrained(sys.argv[1])
model = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1])
_mark("{LOAD}")
with open(sys.argv[2]) as f:
    ids = torch.tensor([json.load(f)])
with torch.inference_mode():
    seq = model.generate(
        ids, attention_mask=torch.ones_like(ids), max_new_tokens=int(sys.argv[3]), do_sample=False
    )
new = seq[0, ids.shape[1]:].tolist()
_mark("{CASE}")
print(json.dumps({{"tokens": len(new), "text": tok.decode(new, skip_special_tokens=True)}}))
"""
IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+\d+ \|(\s*)(\S+)$")


@dataclass(frozen=True)
class Case:
    model: str
    task: str
    length: int


@dataclass(frozen=True)
class Prompt:
    ids_file: Path
    budget: int
    digest: str


@dataclass
class Run:
    seconds: float
    tokens: int
    text: str
    digest: str = ""  # the prompt's, as the suite's predictions file records it
    phases: dict[str, float] = field(default_factory=dict)
    phase_imports: dict[str, float] = field(default_factory=dict)  # -X importtime's, in each
    imports: dict[str, float] = field(default_factory=dict)  # by top-level package


def build_prompt(case: Case, work: Path) -> Prompt:
    """The case's first sample, built as the suite builds it (the run's defaults: seed, chat)."""
    sys.path.insert(0, str(ROOT))
    import transformers

    from ctxgate.run.facts import prompts
    from ctxgate.run.loading import ModelSpec
    from ctxgate.tasks import get_task
    from ctxgate.tasks.build import build_sample
    from ctxgate.tokens.tokenizers import HFTokenizer

    spec = ModelSpec(case.model)
    context, _ = prompts(spec, HFTokenizer(transformers.AutoTokenizer.from_pretrained(case.model)))
    task = get_task(case.task)
    sample = build_sample(task, context, case.length, 0, spec.seed)
    ids_file = work / "prompt_ids.json"
    ids_file.write_text(json.dumps(list(sample.input_ids)))
    return Prompt(ids_file, task.tokens_to_generate, sample.digest())


def child_env(threads: str) -> dict[str, str]:
    """As a user's shell starts it: bytecode written (a second run finds it), no outer pytest's
    worker settings (the suite shares the cores out by them), no dev-only plugin."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k != "PYTHONDONTWRITEBYTECODE"
        and not k.startswith(("PYTEST_XDIST", "PYTEST_CURRENT", "COV_CORE"))
    }
    if "no:hypothesispytest" not in env.get("PYTEST_ADDOPTS", ""):
        env["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')} -p no:hypothesispytest".strip()
    env.pop("OMP_NUM_THREADS", None)
    if threads != "default":
        env["OMP_NUM_THREADS"] = threads
    return env


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    t0 = time.time()
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True)
    return t0, done


def read_breakdown(run: Run, t0: float, stderr: str) -> None:
    """The phases between the marks (the last ends where the process did), the imports printed in
    each, and ``-X importtime``'s self seconds summed by top-level package."""
    last, pending = t0, 0.0
    for line in stderr.splitlines():
        if line.startswith(MARK):
            _, at, name = line.split(" ", 2)
            run.phases[name], run.phase_imports[name] = float(at) - last, pending
            last, pending = float(at), 0.0
        elif m := IMPORT_LINE.match(line):
            top = m[3].split(".")[0]
            run.imports[top] = run.imports.get(top, 0.0) + int(m[1]) / 1e6
            pending += int(m[1]) / 1e6
    run.phases[SHUTDOWN], run.phase_imports[SHUTDOWN] = t0 + run.seconds - last, pending


def run_suite(case: Case, env: dict[str, str], work: Path, breakdown: bool = False) -> Run:
    report = work / "suite" / "run.json"
    argv = [sys.executable, *(["-X", "importtime"] if breakdown else []), "-m", "pytest"]
    argv += ["--model", case.model, "-k", case.task, "--lengths", str(case.length)]
    argv += ["--samples", "1", "--report", str(report), "-q"]
    if breakdown:  # the probe, writing to the process's own stderr (the case's is captured)
        argv += ["-p", "startup_probe", "--capture=sys"]
        env = {**env, "PYTHONPATH": str(work)}
    with tempfile.TemporaryDirectory(dir=work) as cache:
        t0, done = timed([*argv, "--cache-dir", cache], env)
        seconds = time.time() - t0
    if done.returncode != 0 or not (preds := report.with_suffix(".predictions.jsonl")).exists():
        raise SystemExit(
            f"the suite's case failed (exit {done.returncode}):\n{done.stdout[-3000:]}"
        )
    (row,) = [json.loads(line) for line in preds.read_text().splitlines()]
    run = Run(seconds, row["output_tokens"], row["prediction"], row["sample_sha256"])
    if breakdown:
        read_breakdown(run, t0, done.stderr)
    return run


def run_script(case: Case, env: dict[str, str], prompt: Prompt, breakdown: bool = False) -> Run:
    argv = [sys.executable, *(["-X", "importtime"] if breakdown else []), "-c", SCRIPT]
    t0, done = timed([*argv, case.model, str(prompt.ids_file), str(prompt.budget)], env)
    seconds = time.time() - t0
    if done.returncode != 0:
        raise SystemExit(f"the script failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout.splitlines()[-1])
    run = Run(seconds, out["tokens"], out["text"])
    if breakdown:
        read_breakdown(run, t0, done.stderr)
    return run


def same_work(suite: Run, script: Run, prompt: Prompt) -> None:
    """Both sides built the same prompt and decoded the same tokens, or the ratio means nothing."""
    if suite.digest != prompt.digest:
        raise SystemExit(
            f"the suite's prompt ({suite.digest}) is not the script's ({prompt.digest})"
        )
    if (suite.tokens, suite.text) != (script.tokens, script.text):
        raise SystemExit(
            f"unequal work: the suite decoded {suite.tokens} tokens ({suite.text!r}), the script "
            f"{script.tokens} ({script.text!r})"
        )
    if suite.tokens != prompt.budget:
        raise SystemExit(
            f"the case stopped at end of sequence after {suite.tokens} of its {prompt.budget} "
            "tokens, so the work depends on when a side meets it: pass a --case and --length "
            "that decode to the budget (--case fwe --length 1024 on fixtures/tiny-llama-niah)"
        )


def pair(case: Case, threads: str, prompt: Prompt, work: Path, suite_first: bool) -> list[Run]:
    env = child_env(threads)
    if suite_first:
        suite = run_suite(case, env, work)
        script = run_script(case, env, prompt)
    else:
        script = run_script(case, env, prompt)
        suite = run_suite(case, env, work)
    same_work(suite, script, prompt)
    return [suite, script]


def label(threads: str) -> str:
    return "default threads" if threads == "default" else f"{threads} thread(s)"


def measure_pairs(case: Case, args: argparse.Namespace, prompt: Prompt, work: Path) -> None:
    settings = ["1", "default"] if args.threads == "both" else [args.threads]
    if not args.quick:
        for threads in settings:  # warm-up: bytecode written, the files in the page cache
            pair(case, threads, prompt, work, True)
    pairs: dict[str, list[list[Run]]] = {t: [] for t in settings}
    for i in range(args.pairs):
        for threads in settings:
            suite, script = pair(case, threads, prompt, work, suite_first=i % 2 == 0)
            pairs[threads].append([suite, script])
            print(
                f"pair {i + 1} at {label(threads)}: suite {suite.seconds:.2f} s, script "
                f"{script.seconds:.2f} s, ratio {suite.seconds / script.seconds:.2f}x "
                f"({'suite' if i % 2 == 0 else 'script'} first; {suite.tokens} tokens decoded "
                "by each)",
                flush=True,
            )
    for threads, runs in pairs.items():
        ratios = sorted(s.seconds / b.seconds for s, b in runs)
        suite_s = statistics.median(s.seconds for s, _ in runs)
        script_s = statistics.median(b.seconds for _, b in runs)
        print(
            f"at {label(threads)}: a one-case run {statistics.median(ratios):.2f}x the same-work "
            f"script (median of {len(runs)} pairs, lowest {ratios[0]:.2f}x, highest "
            f"{ratios[-1]:.2f}x); the suite {suite_s:.2f} s, the script {script_s:.2f} s"
        )


def breakdown(case: Case, prompt: Prompt, work: Path, runs: int) -> None:
    env = child_env("default")
    (work / "startup_probe.py").write_text(PROBE)
    suites = sorted((run_suite(case, env, work, True) for _ in range(runs)), key=seconds)
    scripts = sorted((run_script(case, env, prompt, True) for _ in range(runs)), key=seconds)
    sides = suites[len(suites) // 2], scripts[len(scripts) // 2]
    print(
        f"where the time goes (seconds; of each side, the run with the median total of {runs} "
        "under -X importtime, at default threads; imports: -X importtime's self seconds in it):"
    )
    print(f"  {'phase':<30}{'suite':>8}{'imports':>9}{'script':>8}{'imports':>9}")
    for name in PHASES:
        cells = [
            f"{figure:.2f}" if (figure := figures.get(name)) is not None else "-"
            for side in sides
            for figures in (side.phases, side.phase_imports)
        ]
        print(f"  {name:<30}{cells[0]:>8}{cells[1]:>9}{cells[2]:>8}{cells[3]:>9}")
    total = [f"{x:.2f}" for side in sides for x in (side.seconds, sum(side.phase_imports.values()))]
    print(f"  {'total':<30}{total[0]:>8}{total[1]:>9}{total[2]:>8}{total[3]:>9}")
    for name, side in zip(("suite", "script"), sides):
        top = sorted(side.imports.items(), key=lambda kv: -kv[1])[:8]
        listed = ", ".join(f"{package} {s:.2f}" for package, s in top)
        print(f"imports by package, {name} (-X importtime self seconds): {listed}")


def seconds(run: Run) -> float:
    return run.seconds


def parser() -> arguments.Parser:
    ap = arguments.Parser(
        __file__, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--pairs", type=arguments.whole(1, example=5), default=5)
    ap.add_argument("--threads", choices=["both", "1", "default"], default="both")
    ap.add_argument("--breakdown-runs", type=arguments.whole(1, example=3), default=3)
    ap.add_argument("--model", type=arguments.checkpoint, default="fixtures/tiny-llama-niah")
    ap.add_argument("--case", type=arguments.task, default="fwe", help="a task, run at --length")
    ap.add_argument("--length", type=arguments.length, default=1024)
    ap.add_argument("--quick", action="store_true", help="one pair at one thread, no warm-up")
    return ap


def buildable(ap: arguments.Parser, case: Case, work: Path) -> Prompt:
    """The case's prompt, built first: a task that cannot be built at the length (too short, or
    its data not given) is refused as a bad argument is, before any run."""
    from ctxgate.refusal import Refusal

    try:
        return build_prompt(case, work)
    except Refusal as exc:
        why = str(exc).removeprefix(f"{case.task} cannot be built at length {case.length}: ")
        ap.error(
            f"--case {case.task} cannot be built at --length {case.length} ({why}): give "
            "another --case or a longer --length (--case fwe --length 1024 on the tiny model)"
        )


def main(argv: Sequence[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    if args.quick:
        args.pairs, args.threads, args.breakdown_runs = 1, "1", 1
    case = Case(args.model, args.case, args.length)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        prompt = buildable(ap, case, work)
        print(
            f"case: {case.task} at {case.length} on {case.model}, prompt {prompt.digest[:12]}, "
            f"budget {prompt.budget} tokens; {os.cpu_count()} CPU(s)",
            flush=True,
        )
        measure_pairs(case, args, prompt, work)
        breakdown(case, prompt, work, args.breakdown_runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
