"""What vLLM's prefix cache saves on the RULER grid, as the suite runs it: the same cases through
``--backend vllm``, each run on a server of its own and with no generation cache, with the prefix
cache off (``--vllm-arg=--no-enable-prefix-caching``), on with each case's samples sent as they are
built (``--no-shared-first``), and on as the suite runs by default (those it sends together each
after the one it shares the longest prefix with). Prints each run's prompt tokens computed
(prefilled less what the server's usage says its cache served), their ratios, the ratios of the
cases' wall time (first case's start to last case's end), and how many outputs are the same as
with the cache off.

    python bench/prefix.py [--model fixtures/tiny-llama-niah] [--lengths 1k,2k,4k] [--samples 10]
                           [--tasks niah_single_1,vt] [--vllm-python .venv-vllm/bin/python]
                           [--vllm-arg ARG ...]

(``--tasks``: default RULER's 13.) ``--vllm-arg`` gives the servers more arguments:
``--vllm-arg=--num-gpu-blocks-override=24 --vllm-arg=--max-model-len=2560`` leaves a CPU server's
prefix cache room for about one 2K prompt, as a GPU's holds a few 128K ones. ``--smoke`` runs one
task at one length, four samples, the cache off and on as by default (the tests run it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import arguments  # noqa: E402
from ctxgate.backends.vllm_server import NO_PREFIX_CACHE  # noqa: E402

ROOT = arguments.ROOT
OFF = f"--vllm-arg={NO_PREFIX_CACHE}"
AS_BUILT = "--no-shared-first"


def parser() -> arguments.Parser:
    ap = arguments.Parser(
        __file__, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model", type=arguments.checkpoint, default="fixtures/tiny-llama-niah")
    ap.add_argument("--tasks", type=arguments.tasks_or_all, default="")
    ap.add_argument("--lengths", type=arguments.lengths, default="1k,2k,4k")
    ap.add_argument("--samples", type=arguments.whole(1, example=10), default=10)
    ap.add_argument("--vllm-python", type=arguments.python_file, default=None)
    ap.add_argument("--vllm-arg", action="append", default=[], help="one more server argument")
    ap.add_argument("--smoke", action="store_true", help="niah_single_1 at 2K, 4 samples")
    return ap


@dataclass(frozen=True)
class Arm:
    prompt: int  # tokens prefilled
    cached: int  # of those, served by the prefix cache as the server reported them
    reported: int  # generations whose usage said how many were cached
    generations: int
    seconds: float
    outputs: dict[tuple[str, int, int], str]

    @property
    def computed(self) -> int:
        return self.prompt - self.cached


def suite_run(args: argparse.Namespace, name: str, flags: Sequence[str], scratch: Path) -> Arm:
    """One run of the suite on the selected cases, on its own server, with ``flags``."""
    report, span = scratch / f"{name}.json", scratch / f"{name}.span.json"
    selection = ["-k", " or ".join(args.tasks)] if args.tasks else ["-m", "ruler"]
    python = args.vllm_python
    data = ROOT / "fixtures" / "data"
    command = [
        sys.executable, "-m", "pytest", str(ROOT / "tests_longctx" / "test_suites.py"),
        *selection, f"--model={args.model}", "--backend", "vllm",
        *(["--vllm-python", python] if python else []), *flags,
        *(f"--vllm-arg={a}" for a in args.vllm_arg),
        "--lengths", ",".join(map(str, args.lengths)), "--samples", str(args.samples),
        "--squad", str(data / "squad_v2_validation_tiny.jsonl"),
        "--hotpotqa", str(data / "hotpotqa_distractor_validation_tiny.jsonl"),
        "--no-cache", "--report", str(report), "-p", "bench.suite_span",
        "-p", "no:cacheprovider", "-q",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CTXGATE_SPAN_FILE": str(span)}
    done = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True)
    if not report.exists() or not span.exists():
        raise SystemExit(
            f"prefix.py: the suite did not run ({done.returncode}):\n"
            f"{done.stdout[-3000:]}{done.stderr[-2000:]}"
        )
    cost = json.loads(report.read_text("utf-8"))["cost"]["total"]
    rows = report.with_suffix(".predictions.jsonl").read_text("utf-8").splitlines()
    outputs = {}
    for row in map(json.loads, rows):
        outputs[(row["task"], row["length"], row["index"])] = row["prediction"]
    seconds = json.loads(span.read_text("utf-8"))["seconds"]
    return Arm(
        cost["prompt_tokens"],
        cost["cached_prompt_tokens"],
        cost["cache_reported"],
        cost["generations"],
        seconds,
        outputs,
    )


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    args.model = str(Path(args.model).resolve())  # each run starts in a folder of its own
    if args.smoke:
        args.tasks, args.lengths, args.samples = ("niah_single_1",), (2048,), 4
    with tempfile.TemporaryDirectory() as folder:
        off = suite_run(args, "off", [OFF], Path(folder))
        built = None if args.smoke else suite_run(args, "as-built", [AS_BUILT], Path(folder))
        on = suite_run(args, "on", [], Path(folder))
    print(f"prefix cache off: {off.computed:,} prompt tokens computed of {off.prompt:,}, "
          f"{off.seconds:.1f} s")  # fmt: skip
    for name, arm in (("on, samples as built", built), ("on, by shared prefix", on)):
        if arm is not None:
            same = sum(arm.outputs.get(k) == v for k, v in off.outputs.items())
            print(
                f"{name}: {arm.computed:,} computed ({arm.cached:,} from the cache, reported for "
                f"{arm.reported} of {arm.generations} generations), {arm.seconds:.1f} s; outputs "
                f"as with the cache off in {same} of {len(off.outputs)} samples"
            )
    print(
        f"computed prompt tokens on/off {on.computed / max(off.computed, 1):.2f}x; wall time "
        f"on/off {on.seconds / max(off.seconds, 1e-9):.2f}x",
        flush=True,
    )
    if built is not None:
        print(
            f"by shared prefix / as built: computed {on.computed / max(built.computed, 1):.2f}x, "
            f"wall time {on.seconds / max(built.seconds, 1e-9):.2f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()
