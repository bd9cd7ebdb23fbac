"""Writes ctxgate/ext/published/published.toml, the papers' published scores, from the papers' text
(RULER: Table 3 and the appendix tables 12-16; HELMET: the numbers printed in Figure 6's cells and
Table 5). The lines it reads are kept in fixtures/papers, written from the whole papers by
--excerpt.

    python scripts/published_scores.py [--papers fixtures/papers] [--check]
    python scripts/published_scores.py --papers ../shared/papers --excerpt

The model ids are the papers' own (RULER Table 4, HELMET Table 15); where HELMET names a model only
by its short row label, the id is the model's released instruct checkpoint. --check compares instead
of writing (exit 1 when the file differs). The suite reads only the TOML file; this script is how it
was made.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "ctxgate" / "ext" / "published" / "published.toml"
EXCERPTS = (
    ROOT / "fixtures" / "papers"
)  # the papers' tables this script reads (--excerpt writes them)
RULER_LENGTHS = ("4K", "8K", "16K", "32K", "64K", "128K")
HELMET_LENGTHS = ("8K", "16K", "32K", "64K", "128K")

# RULER Table 4: row label -> Hugging Face id or API name
RULER_IDS = {
    "Gemini-1.5-Pro": "gemini-1.5-pro",
    "Gemini-1.5": "gemini-1.5-pro",
    "GPT-4": "gpt-4-1106-preview",
    "Llama3.1 (70B)": "meta-llama/Meta-Llama-3.1-70B-Instruct",
    "Llama3.1 (8B)": "meta-llama/Meta-Llama-3.1-8B-Instruct",
    "Qwen2 (72B)": "Qwen/Qwen2-72B-Instruct",
    "Command-R-plus (104B)": "CohereForAI/c4ai-command-r-plus",
    "GLM4 (9B)": "THUDM/glm-4-9b-chat-1m",
    "GradientAI/Llama3 (70B)": "gradientai/Llama-3-70B-Instruct-Gradient-1048k",
    "Mixtral-8x22B (39B/141B)": "mistralai/Mixtral-8x22B-Instruct-v0.1",
    "Yi (34B)": "01-ai/Yi-34B-200K",
    "Phi3-medium (14B)": "microsoft/Phi-3-medium-128k-instruct",
    "Mistral-v0.2 (7B)": "mistralai/Mistral-7B-Instruct-v0.2",
    "LWM (7B)": "LargeWorldModel/LWM-Text-Chat-1M",
    "DBRX (36B/132B)": "databricks/dbrx-instruct",
    "Together (7B)": "togethercomputer/Llama-2-7B-32K-Instruct",
    "LongChat (7B)": "lmsys/longchat-7b-v1.5-32k",
    "LongAlpaca (13B)": "Yukang/LongAlpaca-13B",
    "Mixtral-base (8x7B)": "mistralai/Mixtral-8x7B-v0.1",
    "Mistral-base (7B)": "alpindale/Mistral-7B-v0.2-hf",
    "Jamba-base (52B)": "ai21labs/Jamba-v0.1",
    "LWM-base (7B)": "LargeWorldModel/LWM-Text-1M",
    "LongLoRA-base (7B)": "Yukang/Llama-2-7b-longlora-100k-ft",
    "Yarn-base (7B)": "NousResearch/Yarn-Llama-2-7b-128k",
    "Together-base (7B)": "togethercomputer/Llama-2-7B-32K",
}
RULER_BASE = {k for k in RULER_IDS if "-base" in k}
# RULER Table 6 gives Yi its plain template ("Yi/Base: {task_template} {task_answer_prefix}"): no
# chat format, though Table 4 lists it as aligned
RULER_PLAIN = RULER_BASE | {"Yi (34B)"}
# HELMET Figure 6 (all instruction-tuned): row label -> id (Table 15's names; the org where Table 15
# has none)
HELMET_IDS = {
    "GPT-4": "gpt-4-0125-preview",
    "GPT-4o-05": "gpt-4o-2024-05-13",
    "GPT-4o-08": "gpt-4o-2024-08-06",
    "GPT-4o-mini": "gpt-4o-mini-2024-07-18",
    "Claude-3.5-Sonnet": "claude-3-5-sonnet-20240620",
    "Gemini-1.5-Flash": "gemini-1.5-flash-001",
    "Gemini-1.5-Pro": "gemini-1.5-pro-001",
    "Llama-3.1-8B": "meta-llama/Llama-3.1-8B-Instruct",
    "Llama-3.1-70B": "meta-llama/Llama-3.1-70B-Instruct",
    "Llama-3.3-70B": "meta-llama/Llama-3.3-70B-Instruct",
    "Mistral-Nemo": "mistralai/Mistral-Nemo-Instruct-2407",
    "MegaBeam-Mistral": "aws-prototyping/MegaBeam-Mistral-7B-512k",
    "Ministral-8B": "mistralai/Ministral-8B-Instruct-2410",
    "Phi-3-mini-128k": "microsoft/Phi-3-mini-128k-instruct",
    "Phi-3-small-128k": "microsoft/Phi-3-small-128k-instruct",
    "Phi-3-med-128k": "microsoft/Phi-3-medium-128k-instruct",
    "Phi-3.5-mini": "microsoft/Phi-3.5-mini-instruct",
    "Qwen2.5-72B": "Qwen/Qwen2.5-72B-Instruct",
    "Qwen2.5-7B-1M": "Qwen/Qwen2.5-7B-Instruct-1M",
    "Qwen2.5-14B-1M": "Qwen/Qwen2.5-14B-Instruct-1M",
    "Jamba-1.5-Mini": "ai21labs/AI21-Jamba-1.5-Mini",
    "ProLong": "princeton-nlp/Llama-3-8B-ProLong-512k-Instruct",
}
# the same model under RULER's and HELMET's names: one id, so --reference finds both papers' rows
SAME = {
    "meta-llama/Meta-Llama-3.1-8B-Instruct": "meta-llama/Llama-3.1-8B-Instruct",
    "meta-llama/Meta-Llama-3.1-70B-Instruct": "meta-llama/Llama-3.1-70B-Instruct",
}

NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)")
LENGTH = re.compile(r"^(<|>)?\d+[KM]$|^-$")


def cells(line: str) -> list[str]:
    """A table row's cells, markup gone (<u>..</u>, rank subscripts, $..._{(..)}$)."""
    line = re.sub(r"<sub>.*?</sub>|<sub>[^\t]*|\$|_\{[^}]*\}\$?|<\/?u>|<\/?b>", "", line)
    return [c.strip() for c in line.rstrip("\n").split("\t")]


def value(cell: str) -> float | None:
    m = NUMBER.search(cell)
    return float(m.group(1)) if m else None


def ruler_table(text: str, caption: str, measure: str) -> list[dict]:
    """The rows of the RULER table whose caption starts with ``caption``: aligned models, then base
    ones."""
    lines = text.splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith(caption))
    start = max(i for i in range(end) if lines[i].startswith("Models\t"))
    rows = []
    for line in lines[start + 1 : end]:
        c = cells(line)
        if len(c) < 9 or c[0] not in RULER_IDS:
            continue
        claimed, effective = c[1], c[2]
        scores = [value(x) for x in c[3:9]]
        if None in scores or not LENGTH.match(effective):
            continue
        rows.append(
            {
                "label": c[0],
                "claimed": claimed,
                "effective": effective,
                "scores": scores,
                "measure": measure,
            }
        )
    return rows


def helmet_figure6(text: str) -> list[dict]:
    lines = text.splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith("Figure 6:"))
    start = next(i for i in range(end, -1, -1) if lines[i].strip().startswith("Recall\t"))
    rows: dict[str, dict[str, list[float]]] = {}
    groups: list[str] = []
    for line in lines[start:end]:
        c = cells(line)
        head = [x for x in c if x]
        if head and head[0] in ("Recall", "LongQA"):
            groups = head
            continue
        if not c[0] or c[0] not in HELMET_IDS:
            continue
        numbers = [value(x) for x in c[1:21]]
        if len(numbers) != 20 or None in numbers:
            raise SystemExit(f"Figure 6 row {c[0]!r}: expected 20 numbers")
        for k, group in enumerate(groups):
            five = numbers[5 * k : 5 * k + 5]
            rows.setdefault(c[0], {})[group] = five  # type: ignore[assignment]
    measures = {
        "Recall": "helmet_recall",
        "RAG": "helmet_rag",
        "Cite": "helmet_cite",
        "Re-rank": "helmet_rerank",
        "LongQA": "helmet_longqa",
        "Summ": "helmet_summ",
        "ICL": "helmet_icl",
        "Avg.": "helmet_overall",
    }
    out = []
    for label, by_group in rows.items():
        for group, scores in by_group.items():
            out.append({"label": label, "measure": measures[group], "scores": scores})
    return out


def toml_row(
    source: str,
    model: str,
    label: str,
    measure: str,
    lengths: tuple[str, ...],
    scores: list[float],
    chat: str,
    extra: dict[str, str],
) -> str:
    pairs = ", ".join(f'"{L}" = {s}' for L, s in zip(lengths, scores))
    more = "".join(f'{k} = "{v}"\n' for k, v in extra.items())
    return (
        f'[[score]]\nsource = "{source}"\nmodel = "{model}"\nlabel = "{label}"\nmeasure = '
        f'"{measure}"\n'
        f'chat_template = "{chat}"\n{more}scores = {{ {pairs} }}\n\n'
    )


HEADER = """\
# The papers' published scores, per model, measure and length. Written by
# scripts/published_scores.py from the papers' text; read by ctxgate.ext.published (--reference).
# Scores in percent; lengths as the papers print them.
# A source states the setting behind its numbers: the paper, the table, what the number averages,
# the samples per task, the chat policy, the unit lengths are counted in, and the run-to-run
# allowance a reproduction is held to.

[source.ruler-table3]
paper = "RULER (Hsieh et al., COLM 2024)"
table = "Table 3"
what = "the mean of the 13 RULER tasks at each length (aligned models){bars[ruler-table3]}"
samples = 500
length_unit = "each model's own tokenizer"
allowance = 2.0
allowance_source = "{noise}; RULER states none"

[source.ruler-table12]
paper = "RULER (Hsieh et al., COLM 2024)"
table = "Table 12"
what = "the mean of the 13 RULER tasks at each length (base models){bars[ruler-table12]}"
samples = 500
length_unit = "each model's own tokenizer"
allowance = 2.0
allowance_source = "as ruler-table3"

[source.ruler-table13]
paper = "RULER (Hsieh et al., COLM 2024)"
table = "Table 13"
what = "the mean of the 8 NIAH tasks at each length{bars[ruler-table13]}"
samples = 500
length_unit = "each model's own tokenizer"
allowance = 2.0
allowance_source = "as ruler-table3"

[source.ruler-table14]
paper = "RULER (Hsieh et al., COLM 2024)"
table = "Table 14"
what = "variable tracking (vt) at each length{bars[ruler-table14]}"
samples = 500
length_unit = "each model's own tokenizer"
allowance = 2.0
allowance_source = "as ruler-table3"

[source.ruler-table15]
paper = "RULER (Hsieh et al., COLM 2024)"
table = "Table 15"
what = "the mean of cwe and fwe at each length{bars[ruler-table15]}"
samples = 500
length_unit = "each model's own tokenizer"
allowance = 2.0
allowance_source = "as ruler-table3"

[source.ruler-table16]
paper = "RULER (Hsieh et al., COLM 2024)"
table = "Table 16"
what = "the mean of qa_1 and qa_2 at each length{bars[ruler-table16]}"
samples = 500
length_unit = "each model's own tokenizer"
allowance = 2.0
allowance_source = "as ruler-table3"

[source.helmet-figure6]
paper = "HELMET (Yen et al., ICLR 2025)"
table = "Figure 6 (the numbers printed in its cells)"
what = "each category's mean over its datasets at each length, and Avg. over the seven categories"
samples = 0  # HELMET's per-dataset counts (100 to 600, App. D): the suite's defaults
length_unit = "Llama-2 tokens"
allowance = 2.0
allowance_source = "{noise}"

"""


# RULER's tables: caption, measure, source key
RULER_TABLES = (
    ("Table 3:", "ruler", "ruler-table3"),
    ("Table 12:", "ruler", "ruler-table12"),
    ("Table 13:", "ruler_niah", "ruler-table13"),
    ("Table 14:", "ruler_vt", "ruler-table14"),
    ("Table 15: Performance", "ruler_aggregation", "ruler-table15"),
    ("Table 16:", "ruler_qa", "ruler-table16"),
)
# the run-to-run noise a reproduction is allowed, and where it is stated
NOISE = (
    "princeton-nlp/HELMET issue 8, the authors' reply of 2024-10-22: numbers at 128K within 1-2 "
    "absolute points "
    "of each other from run to run, given the nondeterminism of flash attention and bf16"
)


def ruler_bars(text: str, caption: str) -> dict[str, float]:
    """The effective-length bars of a RULER table, as it states them: Llama-2-7B's 4K score, the
    chat model's for aligned models and the base model's for base ones (rows of the table, or Table
    3's caption)."""
    lines = text.splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith(caption))
    start = max(i for i in range(end) if lines[i].startswith("Models\t"))
    found: dict[str, float] = {}
    for line in lines[start + 1 : end]:
        c = cells(line)
        if c and c[0].startswith("Llama2-7B") and (score := value(c[3])) is not None:
            found["base" if "base" in c[0] else "chat"] = score
    stated = re.search(r"Llama2-7B performance at 4K \(([\d.]+)%\)", lines[end])
    if stated:
        found.setdefault("chat", float(stated.group(1)))
    return found


def bar_text(bars: dict[str, float]) -> str:
    parts = [f"Llama-2-7B-chat's {bars['chat']} (aligned models)"] if "chat" in bars else []
    parts += [f"Llama-2-7B's {bars['base']} (base models)"] if "base" in bars else []
    whose = "their" if len(parts) > 1 else "its"
    return f"; effective: above {' or '.join(parts)}, {whose} 4K score in this table"


def excerpts(papers: Path) -> dict[str, str]:
    """The lines of each paper that ``build`` reads (each table from its header row to its caption,
    Figure 6 from its first group row to its caption), for fixtures/papers: the check then runs on
    any checkout."""
    ruler = (papers / "ruler-paper.md").read_text("utf-8").splitlines()
    helmet = (papers / "helmet-paper.md").read_text("utf-8").splitlines()
    parts = []
    for caption, _, _ in RULER_TABLES:
        end = next(i for i, line in enumerate(ruler) if line.startswith(caption))
        start = max(i for i in range(end) if ruler[i].startswith("Models\t"))
        parts.append("\n".join(ruler[start : end + 1]))
    end = next(i for i, line in enumerate(helmet) if line.startswith("Figure 6:"))
    start = next(i for i in range(end, -1, -1) if helmet[i].strip().startswith("Recall\t"))
    return {
        "ruler-paper.md": "\n\n".join(parts) + "\n",
        "helmet-paper.md": "\n".join(helmet[start : end + 1]) + "\n",
    }


def build(papers: Path) -> str:
    ruler = (papers / "ruler-paper.md").read_text("utf-8")
    helmet = (papers / "helmet-paper.md").read_text("utf-8")
    header = HEADER
    bars = {}
    for caption, _, source in RULER_TABLES:
        bars[source] = ruler_bars(ruler, caption)
        header = header.replace(f"{{bars[{source}]}}", bar_text(bars[source]))
    out = [header.replace("{noise}", NOISE)]
    for caption, measure, source in RULER_TABLES:
        for row in ruler_table(ruler, caption, measure):
            model = SAME.get(RULER_IDS[row["label"]], RULER_IDS[row["label"]])
            chat = "off" if row["label"] in RULER_PLAIN else "on"
            bar = bars[source]["base" if row["label"] in RULER_BASE else "chat"]
            kind = "Llama-2-7B" if row["label"] in RULER_BASE else "Llama-2-7B-chat"
            table = source.replace("ruler-table", "Table ")
            extra = {
                "claimed": row["claimed"],
                "effective": row["effective"],
                "effective_bar": f"{bar}, {kind}'s 4K score in {table}",
            }
            if model != RULER_IDS[row["label"]]:
                extra["paper_id"] = RULER_IDS[row["label"]]
            out.append(
                toml_row(
                    source, model, row["label"], measure, RULER_LENGTHS, row["scores"], chat, extra
                )
            )
    for row in helmet_figure6(helmet):
        out.append(
            toml_row(
                "helmet-figure6",
                HELMET_IDS[row["label"]],
                row["label"],
                row["measure"],
                HELMET_LENGTHS,
                row["scores"],
                "task",
                {},
            )
        )
    return "".join(out).rstrip("\n") + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--papers", type=Path, default=EXCERPTS)
    ap.add_argument("--check", action="store_true")
    ap.add_argument(
        "--excerpt",
        action="store_true",
        help=f"write the lines build reads from --papers to {EXCERPTS}",
    )
    args = ap.parse_args()
    if args.excerpt:
        for name, text in excerpts(args.papers).items():
            (EXCERPTS / name).write_text(text, "utf-8")
        print(f"wrote {EXCERPTS}")
        return 0
    text = build(args.papers)
    if args.check:
        same = TARGET.exists() and TARGET.read_text("utf-8") == text
        print(f"{TARGET}: {'up to date' if same else 'differs from the papers'}")
        return 0 if same else 1
    TARGET.write_text(text, "utf-8")
    print(f"wrote {TARGET} ({text.count('[[score]]')} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
