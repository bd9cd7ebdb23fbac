"""Start-up: time from launching the suite to its first case finished, against importing torch and transformers.

    python bench/startup.py [--rounds 5] [--model fixtures/tiny-llama-niah]

Each round runs, in alternating order, ``python -c "import torch, transformers"`` (the floor: any HF run pays it)
and ``pytest --model MODEL --lengths 256 --samples 1 -k niah_single_1`` with a fresh cache folder (so the case is
generated, not read back). The suite's time is taken when its first case's report is made (a probe plugin writes
the clock), from just before the process was started. One warm-up of each first: a user's second run finds Python's
bytecode written, so ``PYTHONDONTWRITEBYTECODE`` is dropped from both commands' environment. Prints each round and
the ratio of medians.
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


def run_imports(env: dict[str, str]) -> float:
    t0 = time.time()
    subprocess.run([sys.executable, "-c", "import torch, transformers"], env=env, check=True)
    return time.time() - t0


def run_suite(env: dict[str, str], model: str, probe_dir: Path) -> tuple[float, float]:
    out = probe_dir / "first_case.txt"
    out.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as cache:
        argv = [sys.executable, "-m", "pytest", "--model", model, "--lengths", "256", "--samples", "1"]
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
        raise SystemExit(f"the suite finished no case (exit {done.returncode}):\n{done.stdout[-2000:]}")
    return float(out.read_text()) - t0, total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--model", default="fixtures/tiny-llama-niah")
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as probe:
        probe_dir = Path(probe)
        (probe_dir / "startup_probe.py").write_text(PROBE)
        run_imports(env), run_suite(env, args.model, probe_dir)  # warm-up: bytecode written, files in the page cache
        imports, first, whole = [], [], []
        for i in range(args.rounds):
            pair = [
                lambda: imports.append(run_imports(env)),
                lambda: first.append(run_suite(env, args.model, probe_dir)),
            ]
            for step in pair if i % 2 == 0 else reversed(pair):  # alternate which goes first
                step()
            whole.append(first[-1][1])
            print(
                f"round {i + 1}: import torch, transformers {imports[-1]:.2f} s; "
                f"suite's first case {first[-1][0]:.2f} s "
                f"(process {first[-1][1]:.2f} s)",
                flush=True,
            )
    a, b = statistics.median(imports), statistics.median(f for f, _ in first)
    print(
        f"median: import torch, transformers {a:.2f} s; time to the first case finished {b:.2f} s "
        f"(whole process {statistics.median(whole):.2f} s); ratio {b / a:.2f}x"
    )


if __name__ == "__main__":
    main()
