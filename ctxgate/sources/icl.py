"""The five many-shot ICL classification sets (HELMET's choice, after Bertsch et al.), in their hub layout.

Local copies live under ``<data-dir>/icl/<folder>/<split>.jsonl`` with the hub's column names; without them the hub
is tried. Labels are kept as the dataset's integer ids: tasks remap them to shuffled integers per sample anyway.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ctxgate.memo import memo
from ctxgate.sources.errors import DataUnavailable
from ctxgate.sources.files import (
    DataFile,
    hub_hint,
    missing_fields,
    read_local_or_hub,
    sha256_of_json,
)


@dataclass(frozen=True)
class ICLSource:
    folder: str
    hub_id: str
    config: str | None
    text_field: str
    label_field: str
    test_split: str  # "" : split the train set 90/10 as HELMET does for NLU
    num_labels: int


SOURCES = {
    "icl_trec_coarse": ICLSource("trec", "CogComp/trec", None, "text", "coarse_label", "test", 6),
    "icl_trec_fine": ICLSource("trec", "CogComp/trec", None, "text", "fine_label", "test", 50),
    "icl_banking77": ICLSource("banking77", "PolyAI/banking77", None, "text", "label", "test", 77),
    "icl_clinic150": ICLSource(
        "clinc150", "clinc/clinc_oos", "plus", "text", "intent", "validation", 151
    ),
    "icl_nlu": ICLSource(
        "nlu", "xingkunliuxtracta/nlu_evaluation_data", None, "text", "label", "", 68
    ),
}
DATA_FILES = tuple(
    DataFile(
        task,
        f"icl/{src.folder}",
        re.escape(f"{split}.jsonl"),
        (src.text_field, src.label_field),
        f"{src.hub_id} ({split})",
    )
    for task, src in SOURCES.items()
    for split in (("train", src.test_split) if src.test_split else ("train",))
)


@dataclass(frozen=True)
class ICLData:
    train: tuple[tuple[str, int], ...]
    test: tuple[tuple[str, int], ...]
    num_labels: int
    sha256: str


def _rows(task: str, src: ICLSource, data_dir: str | None, split: str) -> list[tuple[str, int]]:
    local = Path(data_dir or ".") / "icl" / src.folder / f"{split}.jsonl"
    hint = hub_hint(f"{src.hub_id}'s {split} split", f"{local} (hub column names)")
    out = []
    for r in read_local_or_hub(local, src.hub_id, src.config, split, hint):
        if missing_fields(r, (src.text_field, src.label_field)):
            raise DataUnavailable(
                f"{task}: {local} records need {src.text_field!r} and {src.label_field!r} "
                f"(have {', '.join(sorted(r))}); {hint}"
            )
        out.append((str(r[src.text_field]), int(r[src.label_field])))
    return out


@memo(8)
def load_icl(task: str, data_dir: str | None, seed: int) -> ICLData:
    src = SOURCES[task]
    if src.test_split:
        train, test = (
            _rows(task, src, data_dir, "train"),
            _rows(task, src, data_dir, src.test_split),
        )
    else:
        import datasets

        rows = _rows(task, src, data_dir, "train")
        split = datasets.Dataset.from_dict(
            {"text": [t for t, _ in rows], "label": [lab for _, lab in rows]}
        ).train_test_split(test_size=0.1, seed=seed)
        train, test = (
            list(zip(split[part]["text"], split[part]["label"])) for part in ("train", "test")
        )
    labels = {lab for _, lab in train}
    bad = sorted({lab for _, lab in train + test if not 0 <= lab < src.num_labels})
    if bad:
        raise DataUnavailable(
            f"{task}: labels {bad[:5]} fall outside 0..{src.num_labels - 1}; is {src.label_field!r} the right column?"
        )
    return ICLData(
        tuple(train), tuple(test), max(len(labels), max(labels) + 1), sha256_of_json([train, test])
    )
