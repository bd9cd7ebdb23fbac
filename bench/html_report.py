"""The HTML report of a full run: size and time to open in headless Chromium.

python bench/html_report.py [--samples 100] [--lengths 4k,8k,16k,32k,64k,128k]

Builds the report of a 13 RULER task x 6 length x 100 sample run as the plugin would draw it: every
case's record and every sample's row with the excerpts the runner records (the text around each
needle and the prompt's end), taken from real samples the suite builds with the shipped tokenizer
(at 4K: an excerpt's size does not depend on the length), with made-up predictions and scores. Then
opens the page from disk in the system's Chromium (playwright) three times and prints its size, the
time to its load event, and the time to open the largest case's samples, with a page of the same
size but no script or data (the same bytes as one HTML comment) opened in the same rounds as the
baseline ratio.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import arguments  # noqa: E402
from ctxgate.lengths import format_length  # noqa: E402
from ctxgate.records.case import Prediction  # noqa: E402
from ctxgate.records.schema import Report, adapter_for  # noqa: E402


def real_rows(samples: int) -> dict[str, list[dict[str, Any]]]:
    """Per RULER task, ``samples`` rows with real excerpts (built at 4K with the shipped
    tokenizer)."""
    from transformers import AutoTokenizer

    from ctxgate.run.samples import excerpts, iter_samples, samples_to_run
    from ctxgate.tasks import BuildContext, all_tasks
    from ctxgate.tokens.codec import PieceEncoder
    from ctxgate.tokens.tokenizers import HFTokenizer

    enc = PieceEncoder(
        HFTokenizer(AutoTokenizer.from_pretrained(ROOT / "fixtures" / "tiny-llama-niah"))
    )
    data = ROOT / "fixtures" / "data"
    ctx = BuildContext(
        encoder=enc,
        chat=False,
        chat_by_task=False,
        squad_source=str(data / "squad_v2_validation_tiny.jsonl"),
        hotpotqa_source=str(data / "hotpotqa_distractor_validation_tiny.jsonl"),
    )
    out = {}
    for spec in all_tasks("ruler"):
        n = samples_to_run(spec, ctx, 4096, samples)
        rows = []
        for s in iter_samples(spec, ctx, 4096, n, 42):
            rows.append({"answers": list(s.answers), "excerpts": excerpts(s, enc.decode)})
        out[spec.name] = rows
    return out


def report_and_rows(samples: int, lengths: Sequence[int]) -> tuple[Report, list[Prediction]]:
    rng = random.Random(0)
    built = real_rows(samples)
    cases, rows = [], []
    for task, examples in built.items():
        for length in lengths:
            scores = []
            for i in range(samples):
                example = examples[i % len(examples)]
                score = float(rng.random() < 0.7)
                scores.append(score)
                answer = example["answers"][0] if example["answers"] else ""
                rows.append(
                    Prediction(
                        task=task,
                        length=length,
                        metric="string_match_all",
                        chat_template=False,
                        index=i,
                        score=score,
                        prediction=" " + (answer if score else str(rng.randrange(10**7))),
                        scored_text=answer,
                        answers=tuple(example["answers"]),
                        input_tokens=length - 50,
                        output_tokens=8,
                        finish_reason="stop",
                        sample_sha256=f"{rng.getrandbits(256):064x}",
                        excerpts=example["excerpts"],
                        seconds=round(rng.uniform(0.1, 30), 3),
                    )
                )
            mean = 100 * sum(scores) / len(scores)
            cases.append(
                {
                    "task": task,
                    "suite": "ruler",
                    "category": "niah",
                    "length": length,
                    "metric": "string_match_all",
                    "verdict": "pass" if mean >= 60 else "fail",
                    "message": "",
                    "score": mean,
                    "n": samples,
                    "floor": 60.0,
                    "ci": [mean - 9, mean + 9],
                    "seconds": 100.0,
                    "input_tokens_max": length - 40,
                    "fill_min": 0.99,
                }
            )
    run = {
        "model": "bench/checkpoint",
        "backend": None,
        "lengths": lengths,
        "seed": 42,
        "samples": samples,
    }
    report = {
        "ctxgate_version": "bench",
        "complete": True,
        "created": "2026-01-01T00:00:00+00:00",
        "run": {**run, "chat_template": "off"},
        "cases": cases,
        "by_length": {
            str(L): {
                "ruler": {"score": 70.0, "partial": False, "members": list(built), "missing": []}
            }
            for L in lengths
        },
        "effective_length": {"value": lengths[-1], "max_passing": lengths[-1], "threshold": 85.6},
        "overall": {},
        "gates": [{"name": "floors", "verdict": "pass", "message": "bench"}],
    }
    return adapter_for(Report).validate_python(report), rows


def parser() -> arguments.Parser:
    ap = arguments.Parser(
        __file__, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--samples", type=arguments.whole(1, example=100), default=100)
    ap.add_argument("--lengths", type=arguments.lengths, default="4k,8k,16k,32k,64k,128k")
    ap.add_argument("--rounds", type=arguments.whole(1, example=3), default=3)
    return ap


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    from playwright.sync_api import sync_playwright

    from ctxgate.ext.html.page import PageInput, render

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("no Chromium: bash scripts/browser.sh installs it")
    lengths = args.lengths
    t0 = time.perf_counter()
    report, rows = report_and_rows(args.samples, lengths)
    built = time.perf_counter() - t0
    t0 = time.perf_counter()
    page = render(PageInput(report, rows))
    drawn = time.perf_counter() - t0
    folder = Path(tempfile.mkdtemp(prefix="ctxgate-html-"))
    full = folder / "run.html"
    full.write_text(page, "utf-8")
    blank = folder / "blank.html"
    blank.write_text(
        "<!DOCTYPE html><title>blank</title><!--" + "x" * (len(page.encode()) - 60) + "-->", "utf-8"
    )
    largest = max(report.cases, key=lambda c: c.length)
    loads: dict[str, list[float]] = {"run": [], "blank": []}
    opens: list[float] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        for _ in range(args.rounds):
            for name, path in (("blank", blank), ("run", full)):
                tab = browser.new_page()
                tab.goto(path.as_uri(), wait_until="load")
                timing = tab.evaluate(
                    "() => performance.getEntriesByType('navigation')[0].loadEventEnd"
                )
                loads[name].append(float(timing) / 1000)
                if name == "run":
                    t0 = time.perf_counter()
                    tab.evaluate(
                        f"() => {{ location.hash = 'case/{largest.task}/{largest.length}'; }}"
                    )
                    tab.wait_for_selector("#drill:not([hidden]) table.samples")
                    opens.append(time.perf_counter() - t0)
                tab.close()
        browser.close()
    size = full.stat().st_size
    print(
        f"{len(report.cases)} cases ({len({c.task for c in report.cases})} tasks x "
        f"{', '.join(format_length(L) for L in lengths)}), {len(rows)} samples: built in "
        f"{built:.1f} s, drawn in "
        f"{drawn:.2f} s"
    )
    print(f"HTML: {size / 2**20:.2f} MB ({size:,} bytes)")
    run, base = statistics.median(loads["run"]), statistics.median(loads["blank"])
    print(
        f"load event: {run:.2f} s (median of {args.rounds}; a blank page of the same size: "
        f"{base:.2f} s, "
        f"ratio {run / base:.2f}x)"
    )
    case = f"{largest.task} at {format_length(largest.length)}"
    print(f"opening {case}'s samples: {statistics.median(opens):.2f} s")
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
