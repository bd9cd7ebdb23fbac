"""Data-generation time and memory per task, against a previous implementation measured in the same
run.

    python bench/datagen.py [--lengths 128k,1m] [--samples 100] [--suite ruler] [--workers 2]
                            [--baseline 48206e8] [--baseline-samples 10] [--tokenizer
                            fixtures/tiny-llama-niah] [--data-dir DIR]

``--workers`` processes build the tasks of a length, handed out one at a time, as ``-n 2`` workers
build cases: the suite's sample iterator, seed 42, the fixture QA files and ``--data-dir``'s files,
one tokenizer per worker and length (its one-off tokenization of haystacks and word lists is counted
in the first task that needs it), one sample in memory at a time. A line per task gives its build
seconds (imports and tokenizer loading left out), its worker's peak memory while it ran (sampled
every 20 ms: resident, and its own, less the resident pages of the files it maps, such as datasets'
memory-mapped copy of a data file and the libraries), and the hash of its samples (its first 16 hex
digits, to set beside another run's).
The length's wall time (worker start-up included) and the sum of the workers' peaks (an upper bound
on the memory the machine held) close each length.

The previous implementation (``--baseline``, a git ref of this repository; ``none`` skips it) is
checked out to a temporary folder and timed the same way, on ``--baseline-samples`` samples per task
(``--samples`` when 0), and the ratio is per sample. Where both built the same samples, their hashes
are compared: ``same`` means byte-identical prompts and answers; a task the baseline refused or left
short is named as such.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import arguments  # noqa: E402

# A worker: builds the tasks named on its stdin, one JSON line each, with its ctxgate from the
# root given. Like a suite worker it keeps one tokenizer for the length; its memory is sampled
# every 20 ms for each task's peak.
CHILD = r"""
import hashlib, json, sys, threading, time
from array import array
import psutil
root, tokenizer, length, n, squad, hotpot, data_dir = sys.argv[1:8]
sys.path.insert(0, root)
from transformers import AutoTokenizer
from ctxgate.run.samples import iter_samples, samples_to_run
from ctxgate.tasks import BuildContext, get_task
from ctxgate.tokens.codec import PieceEncoder
try:
    from ctxgate.tokens.tokenizers import HFTokenizer
except ImportError:  # a baseline from before the tokenizers had a module of their own
    from ctxgate.tokens.codec import HFTokenizer
enc = PieceEncoder(HFTokenizer(AutoTokenizer.from_pretrained(tokenizer)))
ctx = BuildContext(encoder=enc, chat=enc.has_chat_template, chat_by_task=enc.has_chat_template,
                   squad_source=squad, hotpotqa_source=hotpot,
                   **({"data_dir": data_dir} if data_dir else {}))  # a baseline may have none
length = int(length)
me, peak = psutil.Process(), [0, 0]
def note_memory():
    m = me.memory_info()  # shared: resident file pages (mapped files, libraries)
    peak[0], peak[1] = max(peak[0], m.rss), max(peak[1], m.rss - m.shared)
def watch():
    while True:
        note_memory()
        time.sleep(0.02)
threading.Thread(target=watch, daemon=True).start()
print("ready", flush=True)
for line in sys.stdin:
    task = line.strip()
    spec, out = get_task(task), {"task": task, "length": length}
    peak[0] = peak[1] = 0
    note_memory()
    t0 = time.perf_counter()
    try:
        count = samples_to_run(spec, ctx, length, int(n))
        h, built, fill = hashlib.sha256(), 0, 1.0
        for s in iter_samples(spec, ctx, length, count, 42):
            # the prompt's ids and what it is scored against: Sample.digest's fields, hashed five
            # times faster
            h.update(array("i", s.input_ids).tobytes())
            h.update(repr((s.task, s.length, s.index, s.answers, s.answer_prefix)).encode("utf-8"))
            built += 1
            fill = min(fill, (len(s.input_ids) + spec.tokens_to_generate) / length)
        out.update(n=built, sha256=h.hexdigest(), fill=round(fill, 4), short=fill < 0.98)
    except Exception as exc:
        out["refused"] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:110]}"
    out["seconds"] = round(time.perf_counter() - t0, 3)
    note_memory()
    out["peak_mb"], out["own_mb"] = round(peak[0] / 2**20, 1), round(peak[1] / 2**20, 1)
    out["module"] = sys.modules["ctxgate"].__file__
    print(json.dumps(out), flush=True)
"""


@dataclass(frozen=True)
class Checkout:
    """What a worker builds with: a checkout's ctxgate, the tokenizer and the ``--data-dir``."""

    root: Path
    tokenizer: str
    data_dir: str | None


def run_all(
    at: Checkout, tasks: list[str], length: int, n: int, workers: int
) -> tuple[dict, float]:
    """The tasks handed out one at a time to ``workers`` processes; their results and the wall
    time."""
    root = at.root
    waiting: queue.Queue[str] = queue.Queue()
    for task in tasks:
        waiting.put(task)
    results: dict[str, dict] = {}
    squad = str(ROOT / "fixtures/data/squad_v2_validation_tiny.jsonl")
    hotpot = str(ROOT / "fixtures/data/hotpotqa_distractor_validation_tiny.jsonl")
    args = [str(root), at.tokenizer, str(length), str(n), squad, hotpot, at.data_dir or ""]
    env = {**os.environ, "PYTHONPATH": str(root)}

    def worker() -> None:
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, *args],
            cwd=root,
            env=env,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdin is not None and proc.stdout is not None
        if proc.stdout.readline().strip() != "ready":
            raise SystemExit(f"a worker for {root} did not start")
        while True:
            try:
                task = waiting.get_nowait()
            except queue.Empty:
                break
            proc.stdin.write(task + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            if not line:
                results[task] = {
                    "task": task,
                    "length": length,
                    "refused": "the worker died",
                    "seconds": 0.0,
                }
                break
            result = json.loads(line)
            if not str(Path(result.pop("module")).resolve()).startswith(str(root.resolve())):
                raise SystemExit(
                    f"a worker imported ctxgate from outside {root}: run from a checkout"
                )
            results[task] = result
        proc.stdin.close()
        proc.wait()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, time.perf_counter() - t0


def build(at: Checkout, task: str, length: int, n: int) -> dict:
    return run_all(at, [task], length, n, 1)[0][task]


def checkout(ref: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="ctxgate-baseline-"))
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def suite_name(text: str) -> str:
    """``--suite``: a registered suite, ``families`` (the last three) or ``all``."""
    from ctxgate.tasks.registry import suites

    known = [*suites(), "families", "all"]
    return arguments.known_name(text, known, "a suite", f"choose from {', '.join(known)}")


def baseline_ref(text: str) -> str:
    return text if text == "none" else arguments.git_ref(text)


def parser() -> arguments.Parser:
    ap = arguments.Parser(
        __file__, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--tokenizer",
        type=arguments.tokenizer_in(ROOT),  # the workers run in the checkout
        default=str(ROOT / "fixtures/tiny-llama-niah"),
    )
    ap.add_argument("--lengths", type=arguments.lengths, default="128k,1m")
    ap.add_argument("--samples", type=arguments.whole(1, example=100), default=100)
    ap.add_argument(
        "--suite",
        type=suite_name,
        default="ruler",
        help="ruler, helmet, mrcr, babilong, nolima, families (the last three) or all; a task "
        "that reads released "
        "data (HELMET's, the families' published sets) builds here only where it needs none",
    )
    ap.add_argument(
        "--tasks",
        type=arguments.tasks_or_all,
        default="",
        help="comma-separated task names (default: the suite's)",
    )
    ap.add_argument("--workers", type=arguments.whole(1, example=2), default=2)
    ap.add_argument(
        "--data-dir",
        type=arguments.folder_in(ROOT),
        default=None,
        help="the released data's folder, as the suite's --data-dir (default: what ships)",
    )
    ap.add_argument(
        "--baseline",
        type=baseline_ref,
        default="48206e8",
        help="git ref of the previous implementation, or none",
    )
    ap.add_argument("--baseline-samples", type=arguments.whole(0, example=10), default=10)
    return ap


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    from ctxgate.lengths import format_length
    from ctxgate.tasks import all_tasks

    suites = {"all": (None,), "families": ("mrcr", "babilong", "nolima")}.get(
        args.suite, (args.suite,)
    )
    tasks = list(args.tasks) or [s.name for suite in suites for s in all_tasks(suite)]
    # absolute: the baseline's workers run in another folder
    data = str(ROOT / args.data_dir) if args.data_dir else None
    ours = Checkout(ROOT, args.tokenizer, data)
    theirs = (
        Checkout(checkout(args.baseline), args.tokenizer, data) if args.baseline != "none" else None
    )
    print(
        f"tokenizer {args.tokenizer}; {args.samples} samples per task; {args.workers} processes "
        "at once",
        flush=True,
    )
    for length in args.lengths:
        label = format_length(length)
        now, wall = run_all(ours, tasks, length, args.samples, args.workers)
        base, base_wall = ({}, 0.0)
        base_n = args.baseline_samples or args.samples
        if theirs is not None:
            base, base_wall = run_all(theirs, tasks, length, base_n, args.workers)
        print(
            f"\n{label}: task               n  build s   per sample  peak MB   own MB  fill   "
            "samples sha256    "
            "| baseline per sample  ratio  samples",
            flush=True,
        )
        for task in tasks:
            r, b = now[task], base.get(task, {})
            if "refused" in r:
                print(f"{label}: {task:<16} refused: {r['refused']}")
                continue
            per = r["seconds"] / max(r["n"], 1)
            row = (
                f"{label}: {task:<16} {r['n']:>4} {r['seconds']:8.1f} {per:10.3f} s "
                f"{r['peak_mb']:8.0f} {r['own_mb']:8.0f} {r['fill']:.4f}"
                f"  {r['sha256'][:16]}"  # the samples' hash, to compare by eye with another run's
            )
            if theirs is None:
                print(row)
                continue
            if "refused" in b:
                print(f"{row}  | refused ({b['refused'][:70]})")
                continue
            bper = b["seconds"] / max(b["n"], 1)
            if b.get("short"):
                same = "baseline short"
            elif b["n"] == r["n"]:
                same = "same" if b["sha256"] == r["sha256"] else "DIFFERENT"
            else:  # the same first samples: rebuild ours at the baseline's count to compare
                first = build(ours, task, length, b["n"])
                same = f"first {b['n']} " + (
                    "same" if first.get("sha256") == b["sha256"] else "DIFFERENT"
                )
            print(f"{row}  | {bper:10.3f} s {bper / per:6.1f}x  {same}", flush=True)
        built = [r for r in now.values() if "refused" not in r]
        peaks = sorted((r["peak_mb"] for r in built), reverse=True)[: args.workers]
        own = max((r["own_mb"] for r in built), default=0)
        print(
            f"{label}: {len(built)} of {len(tasks)} tasks x {args.samples} samples built in "
            f"{wall:.1f} s wall "
            f"({args.workers} processes; {sum(r['seconds'] for r in built):.1f} s of building), "
            "peak "
            f"{max(peaks, default=0):.0f} MB per process ({own:.0f} MB its own, not file pages), "
            f"at most {sum(peaks):.0f} MB at once",
            flush=True,
        )
        if theirs is not None:
            bbuilt = [b for t, b in base.items() if "refused" not in b]
            print(
                f"{label}: baseline {args.baseline}: {len(bbuilt)} of {len(tasks)} tasks x "
                f"{base_n} samples in "
                f"{base_wall:.1f} s wall, {sum(b['seconds'] for b in bbuilt):.1f} s of building",
                flush=True,
            )


if __name__ == "__main__":
    main()
