"""Build every task at every length of a grid and count what came out: prompts, designed refusals,
errors.

    python bench/build_grid.py [--lengths 1-8192] [--samples 2] [--chat both] [--tasks
    niah_single_2,...]
                               [--data-dir out/helmet_data] [--baseline REF]

Each (task, length, sample) goes through the one build entry point
(``ctxgate.tasks.build.build_sample``) on the shipped tiny tokenizer and the fixture data. A prompt
is counted when it obeys the length rule (prompt + generation budget <= length); a refusal is one of
the designed ones (a ``Refusal``: too short, data short, data not given or unreadable);
everything else is an error, printed with its first traceback line. ``--baseline REF`` builds the
same grid with the code of a git ref of this repository (through its own sample iterator) in the
same run, so the before and after counts stand side by side, and says how many of the prompts both
built are byte-identical.

The default grid: every length from 1 to 64, then about 24 lengths per octave up to 8192, and the
powers of two.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import arguments  # noqa: E402

CHILD = r"""
import collections, json, sys, traceback
root, spec_json = sys.argv[1:3]
sys.path.insert(0, root)
job = json.loads(spec_json)
from transformers import AutoTokenizer
from ctxgate.tasks import BuildContext, all_tasks
from ctxgate.tokens.codec import PieceEncoder
try:
    from ctxgate.tokens.tokenizers import HFTokenizer
except ImportError:  # a baseline from before the tokenizers had a module of their own
    from ctxgate.tokens.codec import HFTokenizer
from fixtures.build_tiny import CHATML
tok = AutoTokenizer.from_pretrained(job["tokenizer"])
tok.chat_template = CHATML
enc = PieceEncoder(HFTokenizer(tok))
try:
    from ctxgate.refusal import Refusal
    from ctxgate.tasks.build import build_sample
    refused = (Refusal,)
    def one(spec, ctx, length, i):
        return build_sample(spec, ctx, length, i, 42)
except ImportError:  # code from before the entry point: its own iterator and its refusals
    from ctxgate.run.samples import iter_samples
    from ctxgate.tasks.base import MaterialExhausted, TaskTooShort
    from ctxgate.sources.errors import DataUnavailable
    refused = (TaskTooShort, MaterialExhausted, DataUnavailable)
    def one(spec, ctx, length, i):
        samples = iter_samples(spec, ctx, length, i + 1, 42)
        for _ in range(i):
            next(samples)
        return next(samples)
digests = {}
counts = collections.Counter()
errors = collections.Counter()
first = {}
wanted = set(job["tasks"] or [])
for chat in job["chat"]:
    ctx = BuildContext(encoder=enc, chat=chat, seed=42, squad_source=job["squad"],
                       hotpotqa_source=job["hotpot"], data_dir=job["data_dir"])
    for spec in all_tasks():
        if wanted and spec.name not in wanted:
            continue
        for length in job["lengths"]:
            for i in range(job["samples"]):
                try:
                    s = one(spec, ctx, length, i)
                except refused:
                    counts["refused"] += 1
                    continue
                except Exception as exc:
                    counts["error"] += 1
                    where = traceback.extract_tb(exc.__traceback__)[-1]
                    key = f"{spec.name}: {type(exc).__name__} ({where.name}, line {where.lineno})"
                    errors[key] += 1
                    first.setdefault(key, f"length {length}, sample {i}, chat {chat}: {exc}"[:200])
                    continue
                if len(s.input_ids) + spec.tokens_to_generate > length:
                    counts["over_length"] += 1
                    key = f"{spec.name}: prompt over the length"
                    errors[key] += 1
                    over = len(s.input_ids) + spec.tokens_to_generate - length
                    said = f"length {length}, sample {i}, chat {chat}: {over} tokens over"
                    first.setdefault(key, said)
                else:
                    counts["prompt"] += 1
                    digests[f"{spec.name}|{length}|{i}|{int(chat)}"] = s.digest()
print(json.dumps({"counts": counts, "errors": errors, "first": first, "digests": digests}))
"""


def grid(text: str) -> list[int]:
    """``--lengths``: ``LO-HI``, the default grid between them, or a list such as 256,1k."""
    if "-" not in text:
        return list(arguments.lengths(text))
    parts = text.split("-")
    try:
        lo, hi = (arguments.length(x) for x in parts) if len(parts) == 2 else (1, 0)
    except arguments.Refused:
        lo, hi = 1, 0
    if lo > hi:
        raise arguments.Refused(
            f"{arguments.shown(text)} is neither a range LO-HI of lengths (LO <= HI) nor a list "
            "of lengths: write e.g. 1-8192 or 256,1k"
        )
    points = set(range(lo, min(hi, 64) + 1))
    x = 64.0
    while x <= hi:
        points.add(int(x))
        x *= 2 ** (1 / 24)
    points.update(2**k for k in range(20) if lo <= 2**k <= hi)
    return sorted(p for p in points if lo <= p <= hi)


def run(root: Path, job: dict[str, object]) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), json.dumps(job)],
        cwd=root,
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
        },
    )
    if out.returncode != 0:
        sys.exit(f"the build grid at {root} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def report(label: str, result: dict[str, object]) -> None:
    counts = result["counts"]
    assert isinstance(counts, dict)
    print(
        f"{label}: {counts.get('prompt', 0)} prompts, {counts.get('refused', 0)} refusals, "
        f"{counts.get('error', 0)} errors, {counts.get('over_length', 0)} over the length"
    )
    errors, first = result["errors"], result["first"]
    assert isinstance(errors, dict) and isinstance(first, dict)
    for key, n in sorted(errors.items()):
        print(f"  {n:5d}  {key}; first: {first[key]}")


def parser() -> arguments.Parser:
    ap = arguments.Parser(__file__, description=__doc__.splitlines()[0])
    ap.add_argument(
        "--lengths",
        type=grid,
        default="1-8192",
        help="LO-HI for the default grid, or a list such as 256,1k",
    )
    ap.add_argument("--samples", type=arguments.whole(1, example=2), default=2)
    ap.add_argument("--chat", choices=("off", "on", "both"), default="both")
    ap.add_argument(
        "--tasks",
        type=arguments.tasks_or_all,
        default="",
        help="comma-separated task names (default: every task)",
    )
    ap.add_argument(
        "--data-dir",
        type=arguments.folder_in(ROOT),  # its builds run in the checkout
        default=None,
        help="HELMET's data folder (default: the fixtures plus long documents)",
    )
    ap.add_argument(
        "--baseline",
        type=arguments.git_ref,
        default=None,
        help="a git ref of this repository, built on the same grid",
    )
    return ap


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    data_dir = args.data_dir
    with tempfile.TemporaryDirectory() as tmp:
        if not data_dir:
            data_dir = str(Path(tmp) / "helmet_data")
            subprocess.run(
                [sys.executable, "fixtures/make_helmet_fixtures.py", "--long-documents", data_dir],
                cwd=ROOT,
                check=True,
                capture_output=True,
            )
        job = {
            "lengths": args.lengths,
            "samples": args.samples,
            "chat": {"off": [False], "on": [True], "both": [False, True]}[args.chat],
            "tasks": list(args.tasks),
            "tokenizer": str(ROOT / "fixtures" / "tiny-llama-niah"),
            "squad": str(ROOT / "fixtures" / "data" / "squad_v2_validation_tiny.jsonl"),
            "hotpot": str(ROOT / "fixtures" / "data" / "hotpotqa_distractor_validation_tiny.jsonl"),
            "data_dir": data_dir,
        }
        lengths = job["lengths"]
        assert isinstance(lengths, list)
        print(
            f"{len(lengths)} lengths from {lengths[0]} to {lengths[-1]}, {args.samples} samples, "
            f"chat {args.chat}"
        )
        if args.baseline:
            base = Path(tmp) / "baseline"
            subprocess.run(
                ["git", "worktree", "add", "--detach", str(base), args.baseline],
                cwd=ROOT,
                check=True,
                capture_output=True,
            )
            try:
                before = run(base, job)
                report(f"baseline {args.baseline}", before)
            finally:
                subprocess.run(
                    ["git", "worktree", "remove", "--force", str(base)],
                    cwd=ROOT,
                    capture_output=True,
                )
        after = run(ROOT, job)
        report("this tree", after)
        if args.baseline:
            old, new = before["digests"], after["digests"]
            assert isinstance(old, dict) and isinstance(new, dict)
            both = set(old) & set(new)
            changed = sorted(k for k in both if old[k] != new[k])
            print(
                f"prompts both built: {len(both)}, byte-identical: {len(both) - len(changed)}"
                + (f"; changed: {', '.join(changed[:10])}" if changed else "")
            )


if __name__ == "__main__":
    main()
