"""``ctxgate reproduce MODEL``: the commands that run a model of the papers' tables in the papers' own setting
(data, lengths, samples, chat policy, judge) on a GPU node, each with ``--reference MODEL`` so that the report
holds the comparison with the published numbers. The setting comes from the published sources
(``ctxgate/data/published.toml``), so the recipe and the comparison's "settings differ" rules agree."""

from __future__ import annotations

import argparse
import shlex
import sys

from ctxgate.data.published import Published, UnknownModel, resolve, rows_for
from ctxgate.lengths import format_length


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reproduce", help="print the commands that reproduce a model's published numbers")
    p.add_argument("model", help="an id (meta-llama/Llama-3.1-8B-Instruct) or a paper's row label")
    p.add_argument("--checkpoint", default=None, help="where the model is (default: the id, from the hub cache)")
    p.add_argument("--gpus", type=int, default=8, help="xdist workers, one per GPU (default 8)")
    p.set_defaults(fn=main)


def _lengths(rows: list[Published]) -> str:
    return ",".join(format_length(L).lower() for L in sorted({L for r in rows for L in r.scores}))


def recipe(model: str, checkpoint: str, gpus: int) -> list[str]:
    rows = rows_for(model)
    out = []
    ruler = [r for r in rows if r.source.key.startswith("ruler")]
    helmet = [r for r in rows if r.source.key.startswith("helmet")]
    ckpt, ref = shlex.quote(checkpoint), shlex.quote(model)
    if ruler:
        r = ruler[0]
        chat = "on" if r.chat_template == "on" else "off"
        out += [
            f"# {r.source.paper}, {', '.join(dict.fromkeys(x.source.table for x in ruler))}: the 13 tasks at "
            f"{_lengths(ruler)}, {r.source.samples} samples each, chat template {chat} (the paper's Table 6 "
            "templates; ctxgate applies the model's own)",
            "# RULER's haystack is Paul Graham's essays (ctxgate ships Wikipedia prose); fetch them once:",
            "ctxgate data fetch --to data/ --ruler-essays DATASET --essays-sha256 HEX",
            f"pytest --model {ckpt} -m ruler --lengths {_lengths(ruler)} --samples {r.source.samples} "
            f"--chat-template {chat} --haystack data/ruler/paul_graham_essays.txt --reference {ref} "
            f"--report out/ruler.json -n {gpus}",
        ]
    if helmet:
        h = helmet[0]
        out += [
            f"# {h.source.paper}, {h.source.table}: the seven categories at {_lengths(helmet)}, HELMET's "
            "per-dataset sample counts, each task's own chat policy, GPT-4o as the judge (OPENAI_API_KEY)",
            "ctxgate data fetch --to data/",
            f"pytest --model {ckpt} -m helmet --lengths {_lengths(helmet)} --chat-template task --data-dir data/ "
            f"--helmet-tokenizer LLAMA2_TOKENIZER_DIR --judge-model gpt-4o-2024-05-13 --reference {ref} "
            f"--report out/helmet.json -n {gpus}",
            "# HELMET counts its input lengths in Llama-2 tokens, ctxgate in the model's: the comparison names that "
            "setting as different rather than giving a verdict",
        ]
    return out


def main(args: argparse.Namespace) -> int:
    try:
        model = resolve(args.model)
    except UnknownModel as exc:
        print(f"ctxgate reproduce: {exc}", file=sys.stderr)
        return 2
    if args.gpus < 1:
        print(f"ctxgate reproduce: --gpus {args.gpus} must be 1 or more", file=sys.stderr)
        return 2
    print("\n".join(recipe(model, args.checkpoint or model, args.gpus)))
    return 0
