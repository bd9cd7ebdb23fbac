"""``ctxgate data fetch`` and ``ctxgate data verify``: HELMET's released data into a folder, and a
check of a folder against its pinned checksums."""

from __future__ import annotations

import argparse
from pathlib import Path

from ctxgate.refusal import CtxgateError


def add_parser(sub: argparse._SubParsersAction) -> None:
    data = sub.add_parser("data", help="HELMET data folders").add_subparsers(
        dest="data_command", required=True
    )
    v = data.add_parser(
        "verify", help="check a data folder: files present, records well-formed, checksums pinned"
    )
    v.add_argument("folder", help="the data folder (HELMET's data/ layout)")
    v.add_argument(
        "--write-lock",
        action="store_true",
        help="pin the files' checksums first (a copy you trust)",
    )
    v.set_defaults(fn=verify)
    f = data.add_parser(
        "fetch", help="HELMET's released data (every folder its tasks read) into a data folder"
    )
    f.add_argument(
        "--to", required=True, help="the data folder to fill (then pass it as --data-dir)"
    )
    f.add_argument("--archive", help="a data.tar.gz already downloaded (no hub access needed)")
    f.add_argument("--revision", help="hub revision of princeton-nlp/HELMET to download")
    f.add_argument(
        "--ruler-essays",
        metavar="DATASET",
        help="instead: RULER's Paul Graham essays from a dataset with a 'text' column (hub id or "
        "local file), written to DIR/ruler/paul_graham_essays.txt for --haystack",
    )
    f.add_argument("--essays-sha256", help="refuse essays whose text has another sha256")
    f.set_defaults(fn=fetch)


def fetch(args: argparse.Namespace) -> int:
    from ctxgate.sources.manifest import download, extract, fetch_essays

    if args.ruler_essays:
        path, digest = fetch_essays(args.ruler_essays, Path(args.to), args.essays_sha256)
        print(f"wrote {path} (sha256 {digest}); run RULER on it with --haystack {path}")
        if not args.archive:
            return 0
    archive = Path(args.archive) if args.archive else download(args.revision)
    written = extract(archive, Path(args.to))
    print(
        f"extracted {len(written)} files into {args.to}; next: ctxgate data verify {args.to} "
        "--write-lock"
    )
    return 0


def verify(args: argparse.Namespace) -> int:
    from ctxgate.sources.manifest import LOCK_NAME, verify, write_lock

    root = Path(args.folder)
    if not root.is_dir():
        raise CtxgateError(
            f"{args.folder!r} is not a folder; give HELMET's data folder (e.g. "
            "fixtures/helmet_data)"
        )
    if args.write_lock:
        print(f"wrote {write_lock(root)}")
    findings = verify(root)
    for f in findings:
        print(f"{f.status:<9} {f.task:<16} {f.path}" + (f"  ({f.detail})" if f.detail else ""))
    failed = [f for f in findings if f.failed]
    unpinned = sum(f.status == "unpinned" for f in findings)
    said = f"{len(failed)} problem(s), {unpinned} unpinned file(s)"
    if unpinned:
        said += f"; pin them with `ctxgate data verify {args.folder} --write-lock`"
    if any(f.status == "changed" for f in failed):
        said += f"; a changed file differs from {LOCK_NAME}: restore it, or re-pin deliberately"
    print(said)
    return 1 if failed else 0
