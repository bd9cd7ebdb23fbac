"""Regenerates ``grader_goldens.json``: lm-evaluation-harness's GraphWalks grader
(``lm_eval/tasks/graphwalks/utils.py``, ``process_results``) run on drawn outputs. Usage:
``python tests/ext/graphwalks/make_goldens.py LM_EVAL_CHECKOUT`` (a checkout of
EleutherAI/lm-evaluation-harness; the goldens were made at its commit
4e7e0d47f33bc71070c1d38394bafbb52b117163)."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).parent
NAMES = ["cfcd208495", "c4ca4238a0", "c81e728d9d", "eccbc87e4b", "a87ff679a2", "e4da3b7fbb"]
LINES = ["Final Answer: [{}]", "Final Answer:[{}]", "Final Answer:   [{}]", "final answer: [{}]"]
AROUND = [
    "{}",
    "Let me think.\n{}",
    "{}\n",
    "{}\n\n",
    "{}\nDone.",
    "x {} y",
    "{}\nFinal Answer: none",
]


def draw_output(rng: random.Random) -> str:
    said = rng.sample(NAMES, rng.randint(0, 4))
    quote = rng.choice(["", "'", '"'])
    sep = rng.choice([", ", ",", " , ", ",,"])
    listed = sep.join(f"{quote}{n}{quote}" for n in said)
    return rng.choice(AROUND).format(rng.choice(LINES).format(listed))


def cases(count: int = 60, seed: int = 0) -> list[tuple[str, list[str]]]:
    rng = random.Random(seed)
    return [(draw_output(rng), rng.sample(NAMES, rng.randint(0, 3))) for _ in range(count)]


def main(argv: list[str]) -> int:
    utils = Path(argv[0]) / "lm_eval" / "tasks" / "graphwalks" / "utils.py"
    spec = importlib.util.spec_from_file_location("lm_eval_graphwalks", utils)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = []
    for output, gold in cases():
        got = module.process_results({"answer_nodes": gold}, [output])
        rows.append({"output": output, "gold": gold, **got})
    (HERE / "grader_goldens.json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
