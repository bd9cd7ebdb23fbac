"""``ctxgate trend REPORTS...``: scores and effective length against training step (from the
checkpoint's name, else the order given), as CSV and a PNG."""

from __future__ import annotations

import argparse
import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxgate.api import CATEGORIES, FIELDS, CtxgateError, format_length, load_points


def write_png(rows: Sequence[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, (_, label) in zip(axes, CATEGORIES):
        mine = [r for r in rows if r["category"] == label]
        lengths = sorted({r["length"] for r in mine})
        for i, length in enumerate(lengths):  # distinct markers and dashes keep equal lines visible
            pts = [(r["step"], r["score"]) for r in mine if r["length"] == length]
            ax.plot(
                *zip(*pts),
                marker="osD^v<>"[i % 7],
                linestyle=["-", "--", ":", "-."][i % 4],
                markersize=7 - i % 3,
                label=format_length(length),
            )
        ax.set_title(label + (" (partial)" if any(r["partial"] for r in mine) else ""))
        ax.set(xlabel="training step", ylabel="score", ylim=(-2, 102))
        ax.grid(alpha=0.3)
        if lengths:
            ax.legend(title="length", fontsize=8)
    if eff := [(r["step"], r["score"]) for r in rows if r["category"] == "effective length"]:
        axes[2].plot(*zip(*eff), marker="o", color="black")
    axes[2].set(title="effective length (tokens)", xlabel="training step")
    axes[2].grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def trend(paths: Sequence[str | Path], out_dir: str | Path) -> tuple[Path, Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = load_points(paths)
    with (out / "trend.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    write_png(rows, out / "trend.png")
    return out / "trend.csv", out / "trend.png"


def add_parser(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser(
        "trend", help="score and effective length against training step (CSV and PNG)"
    )
    t.add_argument("reports", nargs="+", help="report JSON files, one per checkpoint")
    t.add_argument("--out", default="trend", help="folder for trend.csv and trend.png")
    t.set_defaults(fn=main)


def main(args: argparse.Namespace) -> int:
    try:
        csv_path, png_path = trend(args.reports, args.out)
    except OSError as exc:
        raise CtxgateError(
            f"cannot write {args.out} ({exc.strerror or exc}): pass a writable --out folder"
        ) from None
    print(f"wrote {csv_path} and {png_path}")
    return 0
