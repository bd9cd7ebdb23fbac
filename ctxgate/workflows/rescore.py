"""``ctxgate rescore PREDICTIONS`` and ``ctxgate score``: the metrics again over stored outputs,
without the model (after a metric fix, or to see why one prediction scored as it did)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ctxgate.judge.score import is_judged
from ctxgate.metrics import get_metric, metric_names, score_prediction
from ctxgate.metrics.registry import MetricRefused, UnknownMetric
from ctxgate.records.io import read_predictions
from ctxgate.refusal import CtxgateError
from ctxgate.tasks.registry import UnknownTask, get_task

COLUMNS = ("task", "length", "n", "stored", "rescored", "delta", "changed_samples")


def add_parser(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("rescore", help="recompute scores from stored per-sample predictions")
    r.add_argument("predictions", help="the .predictions.jsonl file beside a report")
    r.add_argument(
        "--metric", choices=metric_names(), help="score every sample with this metric instead"
    )
    r.add_argument("--json", action="store_true", help="print JSON instead of a table")
    r.set_defaults(fn=rescore)
    s = sub.add_parser("score", help="score one prediction (to debug a disagreement)")
    s.add_argument("--metric", required=True, help=f"one of {', '.join(metric_names())}")
    s.add_argument("--prediction", required=True)
    s.add_argument(
        "--answer", action="append", required=True, help="a reference answer; repeat for several"
    )
    s.add_argument("--prefix", help="answer prefix to parse after (HELMET metrics)")
    s.set_defaults(fn=score)


def rescore(args: argparse.Namespace) -> int:
    path = Path(args.predictions)
    cases: dict[tuple[str, int], list[tuple[float, float]]] = {}
    try:
        for row in read_predictions(path):
            if is_judged(row.metric) or row.score is None:
                continue  # a judge scores these: `ctxgate judge REPORT.json`
            prefix, metric = get_task(row.task).scoring_prefix, args.metric or row.metric
            chat = bool(row.chat_template)
            try:
                new, _ = score_prediction(metric, row.prediction, row.answers, prefix, chat)
            except MetricRefused as exc:
                raise CtxgateError(
                    f"{path}: {row.task} at {row.length} (sample {row.index}): --metric "
                    f"{metric} cannot score its answers ({exc}): choose a metric of such answers, "
                    f"as its own {row.metric}, or leave --metric out"
                ) from None
            cases.setdefault((row.task, row.length), []).append((row.score, new))
    except (UnknownTask, UnknownMetric) as exc:  # a task or metric this version does not have
        raise CtxgateError(f"{path}: {exc}") from None
    if not cases:
        raise CtxgateError(
            f"{path} holds no sample a metric scored (no line, or only judged or unscored "
            "samples): pass the .predictions.jsonl of a run that scored samples; `ctxgate judge "
            "REPORT.json` scores judged ones"
        )
    out = []
    for (task, length), pairs in sorted(cases.items()):
        n, changed = len(pairs), sum(1 for a, b in pairs if a != b)
        old, new = 100 * sum(p[0] for p in pairs) / n, 100 * sum(p[1] for p in pairs) / n
        said = (task, length, n, round(old, 2), round(new, 2), round(new - old, 2), changed)
        out.append(dict(zip(COLUMNS, said)))
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(
        f"{'task':<18}{'length':>8}{'n':>6}{'stored':>9}{'rescored':>10}{'delta':>8}{'changed':>9}"
    )
    for r in out:
        print(
            f"{r['task']:<18}{r['length']:>8}{r['n']:>6}{r['stored']:>9.2f}"
            f"{r['rescored']:>10.2f}{r['delta']:>+8.2f}{r['changed_samples']:>9}"
        )
    return 0


def score(args: argparse.Namespace) -> int:
    get_metric(args.metric)
    try:
        value, looked_at = score_prediction(args.metric, args.prediction, args.answer, args.prefix)
    except MetricRefused as exc:  # the metric cannot score the answers given
        raise CtxgateError(f"{exc}: give such references, one --answer each, in order") from None
    said = {"metric": args.metric, "score": value, "scored_text": looked_at, "answers": args.answer}
    print(json.dumps(said))
    return 0
