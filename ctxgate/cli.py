"""``ctxgate`` command line: rescore stored predictions, judge them, score one prediction, list tasks, print the schema.

None of these load the model under test (only `judge --nli-model` loads its NLI checkpoint).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ctxgate.judge.score import is_judged
from ctxgate.metrics import get_metric, metric_names, score_prediction
from ctxgate.metrics.registry import UnknownMetric
from ctxgate.tasks.registry import UnknownTask, all_tasks, get_task


def _rescore(args: argparse.Namespace) -> int:
    from ctxgate.report.io import ReportFileError, read_predictions

    path = Path(args.predictions)
    cases: dict[tuple[str, int], list[tuple[float, float]]] = {}
    try:
        for row in read_predictions(path, ("task", "length", "metric", "prediction", "answers", "score")):
            if is_judged(row["metric"]):
                continue  # a judge scores these: `ctxgate judge REPORT.json`
            try:
                spec = get_task(row["task"])
                new, _ = score_prediction(args.metric or row["metric"], row["prediction"], row["answers"],
                                          spec.scoring_prefix, bool(row.get("chat_template")))
            except (UnknownTask, UnknownMetric) as exc:
                raise ReportFileError(f"{path}: {exc}") from None
            cases.setdefault((row["task"], int(row["length"])), []).append((float(row["score"]), new))
    except ReportFileError as exc:
        print(f"ctxgate rescore: {exc}", file=sys.stderr)
        return 2
    out = []
    for (task, length), pairs in sorted(cases.items()):
        old = 100 * sum(p[0] for p in pairs) / len(pairs)
        new = 100 * sum(p[1] for p in pairs) / len(pairs)
        changed = sum(1 for a, b in pairs if a != b)
        out.append({"task": task, "length": length, "n": len(pairs), "stored": round(old, 2),
                    "rescored": round(new, 2), "delta": round(new - old, 2), "changed_samples": changed})
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"{'task':<18}{'length':>8}{'n':>6}{'stored':>9}{'rescored':>10}{'delta':>8}{'changed':>9}")
        for r in out:
            print(f"{r['task']:<18}{r['length']:>8}{r['n']:>6}{r['stored']:>9.2f}{r['rescored']:>10.2f}"
                  f"{r['delta']:>+8.2f}{r['changed_samples']:>9}")
    return 0


def _score(args: argparse.Namespace) -> int:
    try:
        get_metric(args.metric)
        value, looked_at = score_prediction(args.metric, args.prediction, args.answer, args.prefix)
    except (UnknownMetric, ValueError) as exc:
        print(f"ctxgate score: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"metric": args.metric, "score": value, "scored_text": looked_at, "answers": args.answer}))
    return 0


def _diff(args: argparse.Namespace) -> int:
    from ctxgate.baseline import BaselineError
    from ctxgate.diff import diff_reports, render
    from ctxgate.tasks.registry import task_names
    from ctxgate.thresholds import ThresholdsError, load_or_default

    try:
        thresholds = load_or_default(args.thresholds, task_names())
        diff = diff_reports(args.base, args.new, thresholds)
    except (BaselineError, ThresholdsError) as exc:
        print(f"ctxgate diff: {exc}", file=sys.stderr)
        return 2
    print(render(diff, args.markdown, thresholds.regression_confidence), end="")
    return 1 if diff.failed else 0


def _bisect(args: argparse.Namespace) -> int:
    from ctxgate.bisect import BisectError, bisect, order_checkpoints, resolve_end
    from ctxgate.evaluate import EvalSettings, evaluate_checkpoint, select_cases
    from ctxgate.lengths import LengthError, parse_lengths
    from ctxgate.tasks.registry import task_names
    from ctxgate.thresholds import ThresholdsError, load_or_default

    try:
        thresholds = load_or_default(args.thresholds, task_names())
        settings = EvalSettings(lengths=parse_lengths(args.lengths), samples=args.samples, seed=args.seed,
                                chat_template=args.chat_template, dtype=args.dtype,
                                cache_dir=None if args.no_cache else args.cache_dir, data_dir=args.data_dir,
                                helmet_compat=args.helmet_compat,
                                sequential_alpha=args.sequential_alpha if args.sequential else None)
        cases = select_cases(args.k, settings.lengths)
        if not cases:
            raise BisectError(f"-k {args.k!r} selects no case at lengths {args.lengths}")
        checkpoints = order_checkpoints(args.checkpoints)
        good = resolve_end(checkpoints, args.good, 0)
        bad = None if args.bad is None else resolve_end(checkpoints, args.bad, len(checkpoints) - 1)

        tolerance = args.tolerance
        tolerance_for = (lambda t, L: tolerance) if tolerance is not None else thresholds.tolerance_for

        def evaluate(path, reference):  # noqa: ANN001, ANN202
            print(f"evaluating {path.name} ...", flush=True)
            return evaluate_checkpoint(path, cases, settings, reference, tolerance_for)

        result = bisect(checkpoints, good, bad, evaluate, tolerance_for, thresholds.regression_confidence)
    except (BisectError, ThresholdsError, LengthError) as exc:
        print(f"ctxgate bisect: {exc}", file=sys.stderr)
        return 2
    print(result.render())
    if args.json:
        Path(args.json).write_text(json.dumps({
            "first_bad": str(result.checkpoints[result.first_bad]), "first_bad_index": result.first_bad,
            "evaluations": result.evaluations, "cases": [f"{t}-{L}" for t, L in cases],
            "sequential": args.sequential,
            "path": [{"index": p.index, "checkpoint": str(p.path), "bad": p.bad, "from_cache": p.from_cache,
                      "samples": p.samples,
                      "cases": {f"{t}-{L}": {"score": r.current, "delta": r.delta, "upper": r.high}
                                for (t, L), r in p.comparisons.items()}} for p in result.probes]}, indent=1))
    return 0


def _trend(args: argparse.Namespace) -> int:
    from ctxgate.trend import trend

    try:
        csv_path, png_path = trend(args.reports, args.out)
    except (OSError, KeyError, json.JSONDecodeError) as exc:
        print(f"ctxgate trend: cannot read the reports ({exc}); pass JSON files written by --report",
              file=sys.stderr)
        return 2
    print(f"wrote {csv_path} and {png_path}")
    return 0


def _metrics(args: argparse.Namespace) -> int:
    from ctxgate.metrics_export import openmetrics

    print(openmetrics(json.loads(Path(args.report).read_text("utf-8"))), end="")
    return 0


def _watch(args: argparse.Namespace) -> int:
    from ctxgate.watch import WatchError, watch

    try:
        watch(args.run_dir, args.reports, args.pytest_args, args.interval, args.settle, args.once, args.trend,
              args.attempts)
    except WatchError as exc:
        print(f"ctxgate watch: {exc}", file=sys.stderr)
        return 2
    return 0


def _tasks(args: argparse.Namespace) -> int:
    for t in all_tasks():
        print(f"{t.name:<18}{t.suite:<8}{t.category:<13}{t.metric:<19}gen={t.tokens_to_generate:<5}"
              f"n={t.default_samples:<5}{t.description}")
    return 0


def _data_fetch(args: argparse.Namespace) -> int:
    from ctxgate.sources import DataUnavailable
    from ctxgate.sources.fetch import download, extract, fetch_essays

    try:
        if args.ruler_essays:
            path, digest = fetch_essays(args.ruler_essays, Path(args.to), args.essays_sha256)
            print(f"wrote {path} (sha256 {digest}); run RULER on it with --haystack {path}")
            if not args.archive:
                return 0
        archive = Path(args.archive) if args.archive else download(args.revision)
        written = extract(archive, Path(args.to))
    except (DataUnavailable, OSError) as exc:
        print(f"ctxgate data fetch: {exc}", file=sys.stderr)
        return 2
    print(f"extracted {len(written)} files into {args.to}; next: ctxgate data verify {args.to} --write-lock")
    return 0


def _data_verify(args: argparse.Namespace) -> int:
    from ctxgate.sources.manifest import LOCK_NAME, verify, write_lock

    root = Path(args.folder)
    if not root.is_dir():
        print(f"ctxgate data verify: {args.folder!r} is not a folder; give HELMET's data folder "
              "(e.g. fixtures/helmet_data)", file=sys.stderr)
        return 2
    if args.write_lock:
        print(f"wrote {write_lock(root)}")
    findings = verify(root)
    for f in findings:
        print(f"{f.status:<9} {f.task:<16} {f.path}" + (f"  ({f.detail})" if f.detail else ""))
    failed = [f for f in findings if f.failed]
    unpinned = sum(f.status == "unpinned" for f in findings)
    print(f"{len(failed)} problem(s), {unpinned} unpinned file(s)"
          + (f"; pin them with `ctxgate data verify {args.folder} --write-lock`" if unpinned else "")
          + (f"; a changed file differs from {LOCK_NAME}: restore it, or re-pin deliberately" if any(
              f.status == "changed" for f in failed) else ""))
    return 1 if failed else 0


def _judge(args: argparse.Namespace) -> int:
    from ctxgate.judge.rejudge import main as judge_main

    return judge_main(args)


def _schema(args: argparse.Namespace) -> int:
    from ctxgate.report.schema import REPORT_SCHEMA

    print(json.dumps(REPORT_SCHEMA, indent=1))
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ctxgate", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("rescore", help="recompute scores from stored per-sample predictions")
    r.add_argument("predictions", help="the .predictions.jsonl file beside a report")
    r.add_argument("--metric", choices=metric_names(), help="score every sample with this metric instead")
    r.add_argument("--json", action="store_true", help="print JSON instead of a table")
    r.set_defaults(fn=_rescore)
    s = sub.add_parser("score", help="score one prediction (to debug a disagreement)")
    s.add_argument("--metric", required=True, help=f"one of {', '.join(metric_names())}")
    s.add_argument("--prediction", required=True)
    s.add_argument("--answer", action="append", required=True, help="a reference answer; repeat for several")
    s.add_argument("--prefix", default=None, help="answer prefix to parse after (HELMET metrics)")
    s.set_defaults(fn=_score)
    d = sub.add_parser("diff", help="compare two reports case by case, paired (exit 1 on a regression)")
    d.add_argument("base", help="the baseline report (with its .predictions.jsonl beside it)")
    d.add_argument("new", help="the report to compare")
    d.add_argument("--thresholds", default=None, help="tolerances from this thresholds file (default 2 points)")
    d.add_argument("--markdown", action="store_true", help="print a Markdown table")
    d.set_defaults(fn=_diff)
    b = sub.add_parser("bisect", help="find the first checkpoint where the selected cases regressed")
    b.add_argument("checkpoints", nargs="+", help="a folder of checkpoints, or the checkpoints in any order")
    b.add_argument("--good", default=None, help="known-good checkpoint (name or step; default: the first)")
    b.add_argument("--bad", default=None, help="known-bad checkpoint (default: the last, which is then checked)")
    b.add_argument("-k", default=None, help="case selection, pytest -k style over ids like niah_single_1-8192")
    b.add_argument("--lengths", default="8k")
    b.add_argument("--samples", type=int, default=None, help="default: each task's own count")
    b.add_argument("--seed", type=int, default=42)
    b.add_argument("--chat-template", default="task", choices=("task", "auto", "on", "off"))
    b.add_argument("--data-dir", default=None, help="HELMET's data folder, as for pytest")
    b.add_argument("--helmet-compat", action="store_true", help="score with the reference's own rules")
    b.add_argument("--dtype", default="auto")
    b.add_argument("--thresholds", default=None, help="tolerances and confidence from this thresholds file")
    b.add_argument("--tolerance", type=float, default=None, help="points a case may drop (overrides thresholds)")
    b.add_argument("--cache-dir", default=".ctxgate-cache")
    b.add_argument("--no-cache", action="store_true")
    b.add_argument("--json", default=None, help="also write the path taken as JSON here")
    b.add_argument("--sequential", action="store_true",
                   help="stop each probe's case once its regression verdict is certain (as pytest --sequential)")
    b.add_argument("--sequential-alpha", type=float, default=0.05, help="--sequential: error rate per verdict")
    b.set_defaults(fn=_bisect)
    t = sub.add_parser("trend", help="score and effective length against training step (CSV and PNG)")
    t.add_argument("reports", nargs="+", help="report JSON files, one per checkpoint")
    t.add_argument("--out", default="trend", help="folder for trend.csv and trend.png")
    t.set_defaults(fn=_trend)
    m = sub.add_parser("metrics", help="print a report as OpenMetrics text (GitLab metrics report)")
    m.add_argument("report")
    m.set_defaults(fn=_metrics)
    w = sub.add_parser("watch", help="evaluate each new checkpoint of a training run and update the trend")
    w.add_argument("run_dir", help="the training output folder that checkpoints appear in")
    w.add_argument("--reports", default="reports", help="folder for one report per checkpoint")
    w.add_argument("--trend", default=None, help="trend output folder (default REPORTS/trend)")
    w.add_argument("--interval", type=float, default=60.0, help="seconds between scans")
    w.add_argument("--settle", type=float, default=30.0, help="seconds a checkpoint must be unchanged")
    w.add_argument("--once", action="store_true", help="scan once and exit")
    w.add_argument("--attempts", type=int, default=3,
                   help="evaluations of one checkpoint that may fail before it waits for its files to change")
    w.set_defaults(fn=_watch, pytest_args=[])
    w.epilog = "pytest arguments go after --, e.g. ctxgate watch RUN_DIR --once -- --lengths 8k,32k -n auto"
    sub.add_parser("tasks", help="list the registered tasks").set_defaults(fn=_tasks)
    data = sub.add_parser("data", help="HELMET data folders").add_subparsers(dest="data_command", required=True)
    v = data.add_parser("verify", help="check a data folder: files present, records well-formed, checksums pinned")
    v.add_argument("folder", help="the data folder (HELMET's data/ layout)")
    v.add_argument("--write-lock", action="store_true", help="pin the files' checksums first (a copy you trust)")
    v.set_defaults(fn=_data_verify)
    f = data.add_parser("fetch", help="HELMET's released data (every folder its tasks read) into a data folder")
    f.add_argument("--to", required=True, help="the data folder to fill (then pass it as --data-dir)")
    f.add_argument("--archive", default=None, help="a data.tar.gz already downloaded (no hub access needed)")
    f.add_argument("--revision", default=None, help="hub revision of princeton-nlp/HELMET to download")
    f.add_argument("--ruler-essays", default=None, metavar="DATASET",
                   help="instead: RULER's Paul Graham essays from a dataset with a 'text' column (hub id or local "
                        "file), written to DIR/ruler/paul_graham_essays.txt for --haystack")
    f.add_argument("--essays-sha256", default=None, help="refuse essays whose text has another sha256")
    f.set_defaults(fn=_data_fetch)
    sub.add_parser("schema", help="print the report's JSON schema").set_defaults(fn=_schema)
    jd = sub.add_parser("judge", help="score a run's judged cases (Cite, NarrativeQA, Summ) from its stored outputs")
    from ctxgate.judge.rejudge import add_arguments

    add_arguments(jd)
    jd.set_defaults(fn=_judge)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Arguments after the first ``--`` are passed through (``ctxgate watch ... -- PYTEST ARGS``), so the verb's own
    options may come before them in any order."""
    argv = list(sys.argv[1:] if argv is None else argv)
    passthrough: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, passthrough = argv[:at], argv[at + 1:]
    p = parser()
    args, unknown = p.parse_known_args(argv)
    if unknown:
        hint = "; pytest arguments go after --: ctxgate watch RUN_DIR --once -- --lengths 8k" \
            if args.command == "watch" else ""
        p.error(f"unrecognized arguments: {' '.join(unknown)}{hint}")
    if passthrough and not hasattr(args, "pytest_args"):
        p.error(f"ctxgate {args.command} takes no arguments after --")
    if passthrough:
        args.pytest_args = passthrough
    return int(args.fn(args))


if __name__ == "__main__":
    sys.exit(main())
