"""Start-up: a one-case run of the suite against a minimal script that loads the same checkpoint
with transformers and generates once.

python bench/startup.py [--rounds 5] [--model fixtures/tiny-llama-niah]

Each round runs, in rotating order, ``python -c "import torch, transformers"``; the minimal script
(the baseline the ratio is taken against): the same plus loading MODEL's tokenizer and weights with
transformers' Auto classes and generating once, a prompt of 256 tokens and up to 128 new ones, as
niah_single_1 at 256 asks; and ``pytest --model MODEL --lengths 256 --samples 1 -k niah_single_1``
with a fresh cache folder (so the case is generated, not read back). The
suite's time is taken when its first case's report is made (a probe plugin writes the clock), from
just before the process was started. One warm-up of each first: a user's second run finds Python's
bytecode written, so ``PYTHONDONTWRITEBYTECODE`` is dropped from every command's environment. Prints
each round and the ratios of medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import time, os
_done = []
def pytest_runtest_logreport(report):
    if report.when == "call" and not _done:
        _done.append(1)
        with open(os.environ["STARTUP_PROBE_OUT"], "w") as f:
            f.write(repr(time.time()))
"""


IMPORTS = "import torch, transformers"
LOAD = (
    IMPORTS + "; import sys; tok = transformers.AutoTokenizer.from_pretrained(sys.argv[1]); "
    "m = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1]); "
    "ids = tok('the grass is green. ' * 60, return_tensors='pt').input_ids[:, :256]; "
    "m.generate(ids, max_new_tokens=128, do_sample=False)"
)


def run_python(env: dict[str, str], code: str, *args: str) -> float:
    t0 = time.time()
    subprocess.run([sys.executable, "-c", code, *args], env=env, check=True, cwd=ROOT)
    return time.time() - t0


def run_suite(env: dict[str, str], model: str, probe_dir: Path) -> tuple[float, float]:
    out = probe_dir / "first_case.txt"
    out.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as cache:
        argv = [
            sys.executable,
            "-m",
            "pytest",
            "--model",
            model,
            "--lengths",
            "256",
            "--samples",
            "1",
        ]
        argv += ["-k", "niah_single_1", "-q", "-p", "startup_probe", "--cache-dir", cache]
        env = {
            **env,
            "PYTHONPATH": f"{probe_dir}{os.pathsep}{env.get('PYTHONPATH', '')}",
            "STARTUP_PROBE_OUT": str(out),
        }
        t0 = time.time()
        done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
        total = time.time() - t0
    if not out.exists():
        raise SystemExit(
            f"the suite finished no case (exit {done.returncode}):\n{done.stdout[-2000:]}"
        )
    return float(out.read_text()) - t0, total


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--model", default="fixtures/tiny-llama-niah")
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as probe:
        probe_dir = Path(probe)
        (probe_dir / "startup_probe.py").write_text(PROBE)
        # warm-up: bytecode written, files in the page cache
        (
            run_python(env, IMPORTS),
            run_python(env, LOAD, args.model),
            run_suite(env, args.model, probe_dir),
        )
        imports: list[float] = []
        loads: list[float] = []
        first: list[tuple[float, float]] = []
        for i in range(args.rounds):
            steps = [
                lambda: imports.append(run_python(env, IMPORTS)),
                lambda: loads.append(run_python(env, LOAD, args.model)),
                lambda: first.append(run_suite(env, args.model, probe_dir)),
            ]
            for step in steps[i % 3 :] + steps[: i % 3]:  # rotate which goes first
                step()
            print(
                f"round {i + 1}: import torch, transformers {imports[-1]:.2f} s; load and "
                f"generate {loads[-1]:.2f} s; suite's first case {first[-1][0]:.2f} s (process "
                f"{first[-1][1]:.2f} s)",
                flush=True,
            )
    a, b = statistics.median(imports), statistics.median(loads)
    c, w = statistics.median(f for f, _ in first), statistics.median(w for _, w in first)
    print(
        f"median: import torch, transformers {a:.2f} s; the load-and-generate script {b:.2f} s; "
        f"the suite's first case finished at {c:.2f} s, its whole process {w:.2f} s"
    )
    print(
        f"start-up: a one-case run {w / b:.2f}x the load-and-generate script (its first case "
        f"{c / b:.2f}x)"
    )


if __name__ == "__main__":
    main()
