"""Build the default essay haystack, ``ctxgate/data/haystack_wikipedia.txt``: natural English prose that fills 128K
tokens of the largest common tokenizers without repeating a sentence.

Source: the Wikipedia excerpt that the ``gensim`` wheel on PyPI ships as test data
(``gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2``, 206 articles from
the start of an English Wikipedia dump). Wikipedia's text is licensed CC BY-SA 3.0 (and GFDL); the output keeps
the article titles for attribution in ``haystack_wikipedia.SOURCE.md``. The wikitext is reduced to plain prose here,
with this project's own cleaner: templates, tables, references, files, lists and headings are dropped, links keep
their shown text, sentences over 50 words are left out, and every sentence is kept once.

    python scripts/build_haystack.py [--wheel gensim-4.4.0-....whl] [--words 160000]

Without ``--wheel`` it runs ``pip download --no-deps gensim==4.4.0`` into a temporary folder.
"""

from __future__ import annotations

import argparse
import bz2
import hashlib
import html
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

MEMBER = "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
GENSIM = "gensim==4.4.0"
OUT = Path(__file__).resolve().parent.parent / "ctxgate" / "data"
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")  # the haystack loader's rule (ctxgate/data/haystacks.py)
MAX_SENTENCE_WORDS = 50  # a prompt is filled to a whole sentence: longer ones would leave a large gap unfilled


def _strip_nested(text: str, pattern: re.Pattern[str]) -> str:
    """Remove innermost matches until none is left (templates and tables nest)."""
    while True:
        new = pattern.sub("", text)
        if new == text:
            return new
        text = new


def clean(wikitext: str) -> list[str]:
    """Plain prose paragraphs of one article."""
    text = re.sub(r"<!--.*?-->", "", wikitext, flags=re.S)
    text = re.sub(r"<ref[^>/]*/>", "", text)
    text = re.sub(r"<ref[^>]*>.*?</ref>", "", text, flags=re.S)
    text = re.sub(r"<(gallery|math|code|pre|timeline|score|syntaxhighlight)[^>]*>.*?</\1>", "", text, flags=re.S)
    text = re.sub(r"<[^>]+>", "", text)
    text = _strip_nested(text, re.compile(r"\{\{[^{}]*\}\}"))
    text = _strip_nested(text, re.compile(r"\{\|[^{}]*?\|\}", re.S))
    text = _strip_nested(text, re.compile(r"\[\[(?:File|Image|Category|Media):[^\[\]]*\]\]", re.I))
    text = re.sub(r"\[\[(?:[^\[\]|]*\|)?([^\[\]|]*)\]\]", r"\1", text)
    text = re.sub(r"\[https?://[^\s\]]+ ([^\]]*)\]", r"\1", text)
    text = re.sub(r"\[https?://[^\]]*\]", "", text)
    text = text.replace("'''", "").replace("''", "")
    text = html.unescape(text)
    paragraphs = []
    for block in re.split(r"\n\s*\n", text):
        lines = [
            ln
            for ln in block.splitlines()
            if ln.strip() and not ln.lstrip().startswith(("*", "#", ":", ";", "|", "!", "=", "{"))
        ]
        para = re.sub(r"\s+", " ", " ".join(lines)).strip()
        para = re.sub(r"\s+([,.;:])", r"\1", re.sub(r"\(\s*[,;]?\s*\)", "", para))
        if len(para.split()) < 25 or re.search(r"[{}\[\]|<>=]|https?:", para) or not para.endswith((".", '"')):
            continue
        paragraphs.append(para)
    return paragraphs


def articles(dump: bytes) -> list[tuple[str, str]]:
    root = ET.fromstring(dump)
    ns = root.tag.split("}")[0] + "}" if root.tag.startswith("{") else ""
    out = []
    for page in root.iter(f"{ns}page"):
        title = page.findtext(f"{ns}title") or ""
        text = page.findtext(f"{ns}revision/{ns}text") or ""
        if page.findtext(f"{ns}ns") == "0" and not text.lower().startswith("#redirect"):
            out.append((title, text))
    return out


def build(wheel: Path, words: int) -> tuple[str, list[str], str]:
    with zipfile.ZipFile(wheel) as z:
        packed = z.read(MEMBER)
    seen: set[str] = set()
    kept_paragraphs: list[str] = []
    titles: list[str] = []
    count = 0
    for title, wikitext in articles(bz2.decompress(packed)):
        used = False
        for para in clean(wikitext):
            sentences = [s for s in SENTENCE_END.split(para) if s not in seen and len(s.split()) <= MAX_SENTENCE_WORDS]
            if len(sentences) < 2:
                continue
            seen.update(sentences)
            kept_paragraphs.append(" ".join(sentences))
            count += sum(len(s.split()) for s in sentences)
            used = True
        if used:
            titles.append(title)
        if count >= words:
            break
    return "\n\n".join(kept_paragraphs) + "\n", titles, hashlib.sha256(packed).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wheel", type=Path, default=None)
    ap.add_argument("--words", type=int, default=160_000)
    args = ap.parse_args()
    wheel = args.wheel
    if wheel is None:
        folder = Path(tempfile.mkdtemp())
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(folder), GENSIM], check=True
        )
        wheel = next(folder.glob("gensim-*.whl"))
    text, titles, source_sha = build(wheel, args.words)
    (OUT / "haystack_wikipedia.txt").write_text(text, encoding="utf-8")
    notice = [
        "# The default essay haystack: source and licence",
        "",
        "`haystack_wikipedia.txt` is plain prose taken from English Wikipedia articles, as shipped in the `gensim` "
        f"wheel on PyPI ({wheel.name}, member `{MEMBER}`, sha256 {source_sha}), reduced to prose by "
        "`scripts/build_haystack.py` (markup, lists, tables and references removed; each sentence kept once).",
        "",
        "Licence: Creative Commons Attribution-ShareAlike 3.0 Unported (https://creativecommons.org/licenses/by-sa/3.0/),"
        " as Wikipedia's text; the authors are the contributors to the articles below (their histories are on "
        "en.wikipedia.org). Changes: markup removed, text shortened. This file and the text are under the same "
        "licence; the rest of ctxgate is not.",
        "",
        f"Articles ({len(titles)}): " + "; ".join(titles),
        "",
        f"sha256 of haystack_wikipedia.txt: {hashlib.sha256(text.encode('utf-8')).hexdigest()}",
    ]
    (OUT / "haystack_wikipedia.SOURCE.md").write_text("\n".join(notice) + "\n", encoding="utf-8")
    print(f"wrote {OUT / 'haystack_wikipedia.txt'}: {len(text.split()):,} words from {len(titles)} articles")


if __name__ == "__main__":
    main()
