"""Writes ctxgate's stand-in MRCR v2 texts (``ctxgate/ext/mrcr2/sample/``): the reference's three
files' shape (format -> topic -> style -> seed -> text), its own format, topic and style names,
each text a run of consecutive sentences of ctxgate's Wikipedia haystack (CC BY-SA 4.0), never
one sentence twice. Run from the repository root: ``python tests/ext/mrcr2/make_sample.py``."""

from __future__ import annotations

import json
import random
from pathlib import Path

from ctxgate.api import load_essay

ROOT = Path(__file__).resolve().parents[3]
OUT = ROOT / "ctxgate" / "ext" / "mrcr2" / "sample" / "mrcr_v2" / "mrcr_text_blocks"
# eval_hub's generate_mrcr_texts.py names, a few of each (its sets are frozensets: no order)
FORMATS = ("poem", "email", "riddle")
RELEVANT_TOPICS = ("penguins", "ancient myths", "space exploration")
FILLER_TOPICS = ("black holes", "dreams", "sign language")
FEWSHOT_TOPICS = ("game theory", "fractals")
STYLES = ("formal", "humorous")
FEWSHOT_STYLES = ("pirate", "gothic")
SEEDS = 8
# characters a text takes: over 200, so SequenceMatcher's autojunk applies as to the real texts
SIZES = {"relevant": (260, 480), "filler": (260, 480), "fewshot": (90, 240)}


def texts(sentences: list[str], rng: random.Random, low: int, high: int) -> str:
    """Consecutive sentences from the front of ``sentences`` (taken out), ``low``-``high`` long."""
    want, text = rng.randint(low, high), ""
    while sentences and len(text) < want:
        nxt = sentences.pop(0)
        if text and len(text) + 1 + len(nxt) > high:
            break
        text = f"{text} {nxt}" if text else nxt
    return text


def nested(
    kind: str,
    formats: tuple[str, ...],
    topics: tuple[str, ...],
    styles: tuple[str, ...],
    sentences: list[str],
    rng: random.Random,
) -> dict[str, object]:
    low, high = SIZES[kind]
    return {
        f: {
            t: {
                s: {f"seed{k + 1}": texts(sentences, rng, low, high) for k in range(SEEDS)}
                for s in styles
            }
            for t in topics
        }
        for f in formats
    }


def main() -> None:
    rng = random.Random(2026)
    sentences = [s for s in load_essay().sentences if 40 <= len(s) <= 240]
    plan = {
        "relevant": (FORMATS, RELEVANT_TOPICS, STYLES),
        "filler": (FORMATS, FILLER_TOPICS, STYLES),
        "fewshot": (FORMATS[:2], FEWSHOT_TOPICS, FEWSHOT_STYLES),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    for kind, (formats, topics, styles) in plan.items():
        doc = nested(kind, formats, topics, styles, sentences, rng)
        path = OUT / f"mrcr_{kind}_texts.json"
        path.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
