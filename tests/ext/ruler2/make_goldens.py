"""Regenerates ``goldens.json``: the reference's own RULERv2 builders and scorers, run on the
samples ctxgate ships, pinned as sha256 per sample and as scores per drawn output.

    .venv/bin/python -m pip install --target /tmp/refdeps inflect wonderwords tenacity editdistance
    .venv/bin/python tests/ext/ruler2/make_goldens.py /work/.mirror/NVIDIA-NeMo+Skills/repo \\
        --deps /tmp/refdeps

REF is a bare mirror of NVIDIA-NeMo/Skills (``--rev``, default ``chsieh/ruler2``, is read from it)
or a checkout of that branch. The reference's files are copied into a temporary folder, never into
this repository; small stand-ins replace only what they import and do not use here (``nltk``,
``math_verify``, ``nemo_skills.utils``), and ``datasets.load_dataset`` reads the shipped samples.
Each builder runs as ``prepare.py`` would call it (its own command line, captured), at seed 42
with ``fixtures/tiny-llama-niah``'s tokenizer and ``PYTHONHASHSEED=0``. HotpotQA's haystack is
``list(set(...))``, whose order follows the string hashes: the set order under that hash seed is
pinned too (``qa_order``), and the builders run a second time with the set replaced by first-seen
order (``qa_first_seen``), the order ctxgate reads."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "ctxgate" / "ext" / "ruler2" / "data"
MODEL = ROOT / "fixtures" / "tiny-llama-niah"
OUT = Path(__file__).with_name("goldens.json")
FILES = (
    "nemo_skills/dataset/ruler2/__init__.py",
    "nemo_skills/dataset/ruler2/prepare.py",
    "nemo_skills/dataset/ruler2/prepare_niah.py",
    "nemo_skills/dataset/ruler2/prepare_mmlu.py",
    "nemo_skills/dataset/ruler2/prepare_qa.py",
    "nemo_skills/dataset/ruler2/tokenizer.py",
    "nemo_skills/evaluation/evaluator/ruler.py",
    "nemo_skills/evaluation/evaluator/mcq.py",
    "nemo_skills/evaluation/math_grader.py",
)
# lengths per builder: the fewest MMLU/HotpotQA units must fit (the reference retries for ever)
LENGTHS = {"niah": (300, 1500, 6000), "mmlu": (3000, 6000), "qa": (1500, 4000)}
# samples per set: a NIAH set's samples come one after another (its first 10 are those of 100);
# MMLU draws min(test records, 100); HotpotQA reads the first n validation records
SAMPLES = {"niah": 10, "mmlu": 100, "qa": 20}
SET_ORDER = "haystack = list(set(haystack))"
NEVER = "the reference draws for ever"
STUBS = {
    "nemo_skills/__init__.py": "",
    "nemo_skills/dataset/__init__.py": "",
    "nemo_skills/evaluation/__init__.py": "",
    "nemo_skills/evaluation/evaluator/__init__.py": "",
    "nemo_skills/utils.py": """
import dataclasses
def get_logger_name(path): return "ref"
def nested_dataclass(*args, **kwargs): return lambda cls: dataclasses.dataclass(**kwargs)(cls)
def unroll_files(files): return list(files)
""",
    "nltk/__init__.py": "from . import data, tokenize\n",
    "nltk/data.py": "def find(name): return name\n",
    "nltk/tokenize.py": "def sent_tokenize(text): raise NotImplementedError('essay haystack')\n",
    "latex2sympy2_extended.py": "NormalizationConfig = normalize_latex = None\n",
    "math_verify.py": "LatexExtractionConfig = StringExtractionConfig = parse = verify = None\n",
    "datasets.py": """
import json, os
FILES = {"cais/mmlu": {"test": "mmlu_test_sample.jsonl",
                       "auxiliary_train": "mmlu_auxiliary_train_sample.jsonl"},
         "hotpotqa/hotpot_qa": {"train": "hotpotqa_validation_sample.jsonl",
                                "validation": "hotpotqa_validation_sample.jsonl"}}
def _rows(name):
    with open(os.path.join(os.environ["RULER2_DATA"], name), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
def load_dataset(path, name=None, **kw):
    return {split: _rows(f) for split, f in FILES[path].items()}
""",
}


def extract(ref: Path, rev: str, into: Path) -> None:
    """The reference's files (from a checkout, else from the bare mirror at ``rev``), stand-ins."""
    for name in FILES:
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (ref / name).is_file():
            shutil.copy(ref / name, target)
        else:
            text = subprocess.run(
                ["git", f"--git-dir={ref}", "show", f"{rev}:{name}"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            target.write_text(text, encoding="utf-8")
    for name, text in STUBS.items():
        (into / name).parent.mkdir(parents=True, exist_ok=True)
        (into / name).write_text(text.lstrip(), encoding="utf-8")


def commands(tree: Path) -> dict[str, str]:
    """Each task's builder command line, as ``prepare.py``'s own functions give it."""
    found: dict[str, str] = {}
    code = (
        "import json, subprocess, sys\n"
        "from nemo_skills.dataset.ruler2 import prepare\n"
        "seen = {}\n"
        "subprocess.run = lambda cmd, **kw: seen.__setitem__('cmd', cmd)\n"
        "for name in [n[len('prepare_'):] for n in dir(prepare) if n.startswith('prepare_')\n"
        "             and n not in ('prepare_task_for_ns', 'prepare_dataset')]:\n"
        "    getattr(prepare, 'prepare_' + name)('OUT', 'hf', 'TOK', 'LEN', 'SIZE')\n"
        "    seen[name] = seen.pop('cmd')\n"
        "print(json.dumps(seen))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=tree
    )
    found.update(json.loads(out.stdout))
    return found


def kind_of(command: str) -> str:
    return command.split("ruler2.prepare_")[1].split()[0]


# each builder run in a fork of one process (transformers imported once); a run the reference
# never ends (its bare ``except`` draws again for ever) is stopped after HANG seconds
HANG = 240
DRIVER = f"""
import json, multiprocessing, runpy, shlex, sys
import transformers

def run(command):
    words = shlex.split(command)
    sys.argv = [words[2], *words[3:]]
    runpy.run_module(words[2], run_name="__main__", alter_sys=True)

fork = multiprocessing.get_context("fork")
for command, out in json.load(sys.stdin):
    child = fork.Process(target=run, args=(command,))
    child.start()
    child.join({HANG})
    if child.is_alive():
        child.kill()
        child.join()
    print(out, child.exitcode, flush=True)
"""


def digest(question: str, answers: Any) -> str:
    listed = [answers] if isinstance(answers, str) else list(answers)
    blob = json.dumps({"question": question, "expected_answer": listed}, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def build_all(
    tree: Path, env: dict[str, str], only: str = ""
) -> dict[str, dict[str, list[str] | str]]:
    """``{task: {length: [sha256 per sample] or NEVER}}``: every builder's run, each in a fork of
    one process (each module runs afresh, its arguments parsed and its globals seeded again)."""
    jobs: list[tuple[str, str, str]] = []
    sets: dict[str, dict[str, list[str] | str]] = {}
    with tempfile.TemporaryDirectory() as work:
        for task, command in sorted(commands(tree).items()):
            if not task.startswith(only):
                continue
            kind = kind_of(command)
            for length in LENGTHS[kind]:
                out = Path(work) / f"{task}-{length}"
                out.mkdir()
                line = command + " "
                args = {"TOK": str(MODEL), "LEN": str(length), "SIZE": str(SAMPLES[kind])}
                for key, value in {**args, "OUT": str(out)}.items():
                    line = line.replace(f" {key} ", f" {value} ")
                jobs.append((task, str(length), line.strip()))
        subprocess.run(
            [sys.executable, "-c", DRIVER], input=json.dumps([(j[2], j[0]) for j in jobs]),
            check=True, cwd=tree, env=env, text=True,
        )  # fmt: skip
        for task, at, _ in jobs:
            found = Path(work) / f"{task}-{at}" / "test.jsonl"
            if not found.is_file():  # the reference never ends: no sample fits
                sets.setdefault(task, {})[at] = NEVER
                continue
            sets.setdefault(task, {})[at] = [
                digest(r["question"], r["expected_answer"])
                for r in map(json.loads, found.read_text(encoding="utf-8").splitlines())
            ]
    return sets


def set_order(env: dict[str, str]) -> list[int]:
    """The reference's HotpotQA haystack order under ``env``'s hash seed, as positions in the
    first-seen order."""
    rows = [json.loads(r) for r in (DATA / "hotpotqa_validation_sample.jsonl").open()]
    texts = [
        f"{t}\n{''.join(s)}"
        for d in rows
        for t, s in zip(d["context"]["title"], d["context"]["sentences"], strict=True)
    ]
    code = "import json, sys; print(json.dumps(list(set(json.load(sys.stdin)))))"
    out = subprocess.run(
        [sys.executable, "-c", code], input=json.dumps(texts), env=env, check=True,
        capture_output=True, text=True,
    ).stdout  # fmt: skip
    first_seen = list(dict.fromkeys(texts))
    return [first_seen.index(t) for t in json.loads(out)]


def draw_outputs(rng: random.Random, refs: Sequence[str], n: int) -> list[str]:
    """Model outputs around the references: copies, parts, noise, thoughts, documents, boxes."""
    noise = "the a index Document answer yes no 12 Fencas of is".split()
    letter = lambda: rng.choice("ABCDE")  # noqa: E731
    pieces: list[Callable[[], str]] = [
        lambda: rng.choice(refs),
        lambda: " ".join(rng.choice(refs).split()[: rng.randint(0, 4)]),
        lambda: " ".join(rng.choices(noise, k=rng.randint(0, 6))),
        lambda: rng.choice(["</think>", "Answer:", "\n\n", "\n", "**Answer:** ", " "]),
        lambda: f"Document {rng.randint(1, 99)}:\n{rng.choice(refs)}\n\n",
        lambda: rng.choice(["\\boxed{", "}", "\\boxed{\\text{", letter()]),
        lambda: rng.choice(refs).upper(),
        lambda: rng.choice(
            ["\\boxed{%s}", "Answer: %s", "\\boxed{\\text{%s}}", "(%s) or %s"]
        ).replace("%s", letter()),
    ]
    return ["".join(rng.choice(pieces)() for _ in range(rng.randint(0, 7))) for _ in range(n)]


def scorer_cases() -> list[dict[str, Any]]:
    rng = random.Random(0)
    references = [
        ["1234567"], ["7654321", "1234567"], ["Fencas"], ["yes"], ["no"], ["ad hoc words"],
        ["Question 1234567: What is 2+2? A. 3 B. 4 C. 5 D. 6"], ["9876543210", "1111111111"],
    ]  # fmt: skip
    cases = []
    for match in ("all", "part", "2steps"):
        for refs in references:
            cases += [{"match": match, "generation": g, "expected_answer": refs}
                      for g in draw_outputs(rng, refs, 12)]  # fmt: skip
    for letter in "ABCD":
        cases += [{"match": "mcq", "generation": g, "expected_answer": letter}
                  for g in draw_outputs(rng, ["A", "B", "C", "D", letter], 40)]  # fmt: skip
    return cases


def score_all(tree: Path, env: dict[str, str], cases: list[dict[str, Any]]) -> list[float]:
    """The reference's ``eval_ruler2`` and ``eval_mcq`` on each case, through their files."""
    code = """
import json, sys, types
from nemo_skills.evaluation.evaluator.ruler import eval_ruler2
from nemo_skills.evaluation.evaluator.mcq import eval_mcq
cases = json.load(sys.stdin)
scores = []
for case in cases:
    with open("case.jsonl", "w") as f:
        f.write(json.dumps(case) + "\\n")
    if case["match"] == "mcq":
        eval_mcq(types.SimpleNamespace(input_files=["case.jsonl"]))
        scores.append(float(json.load(open("case.jsonl"))["symbolic_correct"]))
    else:
        config = {"match_type": case["match"]}
        eval_ruler2(types.SimpleNamespace(input_files=["case.jsonl"], eval_config=config))
        scores.append(json.load(open("case.jsonl"))["is_correct"])
print(json.dumps(scores))
"""
    with tempfile.TemporaryDirectory() as work:
        out = subprocess.run(
            [sys.executable, "-c", code], input=json.dumps(cases), env=env, cwd=work,
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
    return [float(s) for s in json.loads(out)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("ref", type=Path, help="NVIDIA-NeMo/Skills: bare mirror or checkout")
    parser.add_argument("--rev", default="chsieh/ruler2")
    parser.add_argument("--deps", default="", help="where inflect, wonderwords... are installed")
    parser.add_argument("--scorer-only", action="store_true", help="keep the sets, redo the scores")
    args = parser.parse_args(argv)
    if args.scorer_only:
        return rescore(args.ref, args.rev, args.deps)
    with tempfile.TemporaryDirectory() as work:
        tree, first_seen = Path(work) / "ref", Path(work) / "first_seen"
        extract(args.ref, args.rev, tree)
        shutil.copytree(tree, first_seen)
        qa = first_seen / "nemo_skills/dataset/ruler2/prepare_qa.py"
        source = qa.read_text(encoding="utf-8")
        assert SET_ORDER in source, "the reference's haystack line changed"
        qa.write_text(source.replace(SET_ORDER, "haystack = list(dict.fromkeys(haystack))"))
        env = {**os.environ, "PYTHONHASHSEED": "0", "RULER2_DATA": str(DATA)}
        paths = [str(tree), *([args.deps] if args.deps else [])]
        env["PYTHONPATH"] = os.pathsep.join(paths)
        sets = build_all(tree, env)
        env["PYTHONPATH"] = os.pathsep.join([str(first_seen), *paths[1:]])
        qa_first_seen = build_all(first_seen, env, only="qa")
        cases = scorer_cases()
        scores = score_all(tree, {**env, "PYTHONPATH": os.pathsep.join(paths)}, cases)
        golden = {
            "about": "tests/ext/ruler2/make_goldens.py's output; regenerate with it",
            "rev": args.rev,
            "sets": sets,
            "qa_order": set_order(env),
            "qa_first_seen": qa_first_seen,
            "scorer": [{**c, "score": s} for c, s in zip(cases, scores, strict=True)],
        }
    OUT.write_text(json.dumps(golden, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


def rescore(ref: Path, rev: str, deps: str) -> int:
    """The scorer's part of goldens.json again, its sets kept."""
    golden = json.loads(OUT.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as work:
        tree = Path(work) / "ref"
        extract(ref, rev, tree)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), *([deps] if deps else [])])}
        cases = scorer_cases()
        scores = score_all(tree, env, cases)
    golden["scorer"] = [{**c, "score": s} for c, s in zip(cases, scores, strict=True)]
    OUT.write_text(json.dumps(golden, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
