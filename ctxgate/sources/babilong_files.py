"""BABILong's prompts and its released sets (Kuratov et al., 2024; github.com/booydar/babilong).

The prompt is BABILong's ``get_formatted_input`` with its ``DEFAULT_TEMPLATE`` and per-task
``DEFAULT_PROMPTS``, as its evaluation script uses them for instruction-tuned models. A released set
(one task at one length, named as BABILong names lengths: ``0k``, ``1k``, ... ``128k``, ``1M``) is
read from ``<data-dir>/babilong/`` as the hub repository ``RMT-team/babilong`` (or
``babilong-1k-samples``) lays it out, in any of its three forms (``set_files``); records hold
``input``, ``question`` and ``target`` and are read in file order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ctxgate.memo import is_dir, memo
from ctxgate.sources.errors import DataNotGiven, DataUnavailable
from ctxgate.sources.files import DataFile, load_rows, missing_fields, sha256_of_files

FOLDER = "babilong"
FIELDS = ("input", "question", "target")
SKIPS = "its cases skip; ctx_babi_* run"
DOWNLOAD = "huggingface-cli download RMT-team/babilong --repo-type dataset --local-dir {folder}"
# the JSON form, which ``ctxgate data verify`` can check record by record (not the parquet ones)
DATA_FILES = tuple(
    DataFile(f"babilong_{s}", f"{FOLDER}/data/{s}", r"\d+[kM]\.json", FIELDS, optional=SKIPS)
    for s in ("qa1", "qa2", "qa3", "qa4", "qa5")
)

TEMPLATE_HEAD = "{instruction}\n\n{examples}\n\n{post_prompt}\n\n<context>\n"
TEMPLATE_TAIL = "\n</context>\n\nQuestion: {question}"


@dataclass(frozen=True)
class Prompt:
    instruction: str
    examples: str
    post_prompt: str

    def head(self) -> str:
        """The template up to the context (stripped, as the reference strips the whole)."""
        return TEMPLATE_HEAD.format(**vars(self)).lstrip()


def tail(question: str) -> str:
    """The template after the context, stripped (the released questions end with a space)."""
    return TEMPLATE_TAIL.format(question=question).rstrip()


def format_input(prompt: Prompt, context: str, question: str) -> str:
    """BABILong's ``get_formatted_input``: the prompt as one text."""
    return prompt.head() + context.strip() + tail(question)


_QA23 = (
    "You need to answer the question based only on the information from the facts.\nIf a person "
    "got an item in the first location and travelled to the second location the item is also in "
    "the second location. If a person dropped an item in the first location and moved to the "
    "second location the item remains in the first location."
)
_QA23_LEAD = (
    "I give you context with the facts about locations and actions of different persons hidden in "
    "some random "
)
_ONLY_FACTS = "You need to answer the question based only on the information from the facts."

PROMPTS: dict[str, Prompt] = {
    "qa1": Prompt(
        "I will give you context with the facts about positions of different persons hidden in "
        f"some random text and a question. {_ONLY_FACTS} If a person was in different locations, "
        "use the latest location to answer the question.",
        "<example>\nCharlie went to the hallway. Judith come back to the kitchen. Charlie "
        "travelled to balcony. Where is Charlie?\nAnswer: The most recent location of Charlie is "
        "balcony.\n</example>\n\n<example>\nAlan moved to the garage. Charlie went to the beach. "
        "Alan went to the shop. Rouse travelled to balcony. Where is Alan?\nAnswer: The most "
        "recent location of Alan is shop.\n</example>",
        "Always return your answer in the following format: The most recent location of "
        "\u2019person\u2019 is \u2019location\u2019. Do not write anything else after that.",
    ),
    # the missing space after "question." is the reference's
    "qa2": Prompt(
        f"{_QA23_LEAD}text and a question.{_QA23}",
        "<example>\nCharlie went to the kitchen. Charlie got a bottle. Charlie moved to the "
        "balcony. Where is the bottle?\nAnswer: The bottle is in the balcony.\n</example>\n"
        "<example>\nAlan moved to the garage. Alan got a screw driver. Alan moved to the kitchen. "
        "Where is the screw driver?\nAnswer: The screw driver is in the kitchen.\n</example>",
        "Always return your answer in the following format: The \u2019item\u2019 is in "
        "\u2019location\u2019. Do not write anything else after that.",
    ),
    "qa3": Prompt(
        f"{_QA23_LEAD}text and a question. {_QA23}",
        "<example>\nJohn journeyed to the bedroom. Mary grabbed the apple. Mary went back to the "
        "bathroom. Daniel journeyed to the bedroom. Daniel moved to the garden. Mary travelled to "
        "the kitchen. Where was the apple before the kitchen?\nAnswer: Before the kitchen the "
        "apple was in the bathroom.\n</example>\n<example>\nJohn went back to the bedroom. John "
        "went back to the garden. John went back to the kitchen. Sandra took the football. Sandra "
        "travelled to the garden. Sandra journeyed to the bedroom. Where was the football before "
        "the bedroom?\nAnswer: Before the bedroom the football was in the garden.\n</example>",
        "Always return your answer in the following format: Before the $location_1$ the $item$ "
        "was in the $location_2$. Do not write anything else after that.",
    ),
    "qa4": Prompt(
        "I will give you context with the facts about different people, their location and "
        f"actions, hidden in some random text and a question. {_ONLY_FACTS}",
        "<example>\nThe hallway is south of the kitchen. The bedroom is north of the kitchen. "
        "What is the kitchen south of?\nAnswer: bedroom\n</example>\n<example>\nThe garden is "
        "west of the bedroom. The bedroom is west of the kitchen. What is west of the bedroom?\n"
        "Answer: garden\n</example>",
        "Your answer should contain only one word - location. Do not write anything else after "
        "that.",
    ),
    "qa5": Prompt(
        "I will give you context with the facts about locations and their relations hidden in "
        f"some random text and a question. {_ONLY_FACTS}",
        "<example>\nMary picked up the apple there. Mary gave the apple to Fred. Mary moved to "
        "the bedroom. Bill took the milk there. Who did Mary give the apple to?\nAnswer: Fred\n"
        "</example>\n<example>\nJeff took the football there. Jeff passed the football to Fred. "
        "Jeff got the milk there. Bill travelled to the bedroom. Who gave the football?\nAnswer: "
        "Jeff\n</example>\n<example>\nFred picked up the apple there. Fred handed the apple to "
        "Bill. Bill journeyed to the bedroom. Jeff went back to the garden. What did Fred give to "
        "Bill?\nAnswer: apple\n</example>",
        "Your answer should contain only one word. Do not write anything else after that. Do not "
        "explain your answer.",
    ),
}


@dataclass(frozen=True)
class Record:
    input: str
    question: str
    target: str


@dataclass(frozen=True)
class BabilongSet:
    config: str  # BABILong's name of the set's length: 0k, 1k, ... 1M
    records: tuple[Record, ...]
    paths: tuple[str, ...]
    sha256: str


def input_tokens(config: str) -> int:
    """The GPT-2 tokens BABILong sized a set's inputs to (``data/create_tasks.py``): its decimal
    length less the 300 it leaves for the prompt (3,700 for ``4k``)."""
    scale = 1_000_000 if config.endswith("M") else 1000
    return max(int(config[:-1]) * scale - 300, 0)


def config_name(length: int) -> str | None:
    """BABILong's name of a length (0 -> ``0k``, 4096 -> ``4k``, 1048576 -> ``1M``), or None."""
    if length == 0:
        return "0k"
    if length > 0 and length % (1 << 20) == 0:
        return f"{length >> 20}M"
    if length > 0 and length % 1024 == 0:
        return f"{length >> 10}k"
    return None


def set_files(root: Path, split: str, config: str) -> list[Path]:
    """The files of one set under ``root``, in the first of the hub's three forms that has it."""
    for folder, pattern in (
        (config, f"{split}-*.parquet"),
        (f"data/{split}", f"{config}.json"),
        (split, f"{config}-*.parquet"),
    ):
        if is_dir(root / folder):
            found = sorted((root / folder).glob(pattern))
            if found:
                return found
    return []


@memo(16)
def load_set(task: str, split: str, data_dir: str | None, length: int) -> BabilongSet:
    """The released records of ``split`` (qa1-qa5) at ``length``; ``task`` is named in messages."""
    config = config_name(length)
    root = Path(data_dir or ".") / FOLDER
    fix = (
        f"`{DOWNLOAD.format(folder=root)}` (the suite never downloads) and pass --data-dir "
        f"{data_dir or 'DIR'}"
    )
    if config is None:
        raise DataNotGiven(
            f"{task} reads BABILong's released sets, which exist for lengths named 0k, 1k, 2k, 4k, "
            f"... 128k, 1M; length {length} has none: choose such a --lengths value"
        )
    files = set_files(root, split, config) if data_dir else []
    if not files:
        raise DataNotGiven(
            f"{task} reads BABILong's {config} set of {split} ({root}/{config}/{split}-*.parquet "
            f"or {root}/data/{split}/{config}.json), for length {length}, and none is there; get "
            f"it with {fix}"
        )
    records: list[Record] = []
    for path in files:
        rows = load_rows(str(path), "train", None, f"restore the file with {fix}")
        for n, row in enumerate(rows, start=1):
            bad = missing_fields(row, FIELDS) or [f for f in FIELDS if not isinstance(row[f], str)]
            if bad:
                raise DataUnavailable(
                    f"{path}: record {n} has no text in {', '.join(bad)} (BABILong's records hold "
                    f"input, question and target as text); restore the file with {fix}"
                )
            records.append(Record(row["input"], row["question"], row["target"]))
    if not records:
        raise DataUnavailable(
            f"{', '.join(map(str, files))}: no records (BABILong's sets hold 100); restore it with "
            f"{fix}"
        )
    return BabilongSet(config, tuple(records), tuple(map(str, files)), sha256_of_files(*files))
