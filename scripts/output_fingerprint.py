"""What a run produced, without its timings: proof that a change which should not change results did
not.

python scripts/output_fingerprint.py out/demo.json [--write normalized.json]

Prints one line per case (task, length, verdict, score, n and ``data_sha256``, the hash of its
samples' token ids) and the sha256 of the whole report with every timing, throughput, path and clock
field removed, and of its predictions file (``*.predictions.jsonl``) likewise. Two runs of the same
code on the same inputs print the same lines; a layout change (issue 15) is checked by running it on
the demo report before and after.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from pathlib import Path
from typing import Any

# Fields that differ between two identical runs: clocks, speeds, machine facts and where files were
# written.
VOLATILE = re.compile(
    r"(seconds|_s$|^started|^finished|^created|time|throughput|per_s|^host|^pid|path|dir$|"
    r"^python$|^platform|^versions?$|^url|endpoints|judge_base_url|base_url|^cwd|^argv|usage|"
    r"^price|cost)",
    re.IGNORECASE,
)


def stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: stable(v) for k, v in sorted(value.items()) if not VOLATILE.search(k)}
    if isinstance(value, list):
        return [stable(v) for v in value]
    if isinstance(value, str) and re.fullmatch(
        r"/\S+", value
    ):  # an absolute path: where the checkout lies
        return Path(value).name
    if isinstance(value, str):  # a temporary folder named in a message
        return re.sub(r"/tmp/[^\s'\")]+", "<tmp>", value)
    return value


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("report", type=Path)
    ap.add_argument(
        "--write", type=Path, help="also write the normalized report here (to diff two of them)"
    )
    args = ap.parse_args()
    report = json.loads(args.report.read_text())
    for c in sorted(report["cases"], key=lambda c: (c["task"], c["length"])):
        print(
            f"{c['task']:<20} {c['length']:>6} {c['verdict']:<5} {c['score']!s:>6} n={c['n']:<3} "
            f"{c.get('data_sha256') or '-'}"
        )
    normalized = stable(report)
    predictions = args.report.with_suffix(".predictions.jsonl")
    rows = (
        [stable(json.loads(line)) for line in predictions.read_text().splitlines()]
        if predictions.exists()
        else []
    )
    print(
        f"cases: {len(report['cases'])}; report minus timings: {digest(normalized)}; "
        f"predictions ({len(rows)} rows): {digest(rows)}"
    )
    if args.write:
        args.write.write_text(json.dumps(normalized, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
