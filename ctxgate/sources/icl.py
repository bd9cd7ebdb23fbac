"""The five many-shot ICL classification sets (HELMET's choice, after Bertsch et al.), in their hub
layout: ``<data-dir>/icl/<folder>/<split>.jsonl`` (hub column names), else the hub cache. Labels
stay the dataset's ids: tasks remap them per sample."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ctxgate.memo import memo
from ctxgate.sources.errors import DataUnavailable
from ctxgate.sources.files import (
    hub_hint,
    hub_splits,
    read_local_or_hub,
    sha256_of_json,
)


@dataclass(frozen=True)
class ICLSource:
    folder: str
    hub_id: str
    label_field: str
    test_split: str  # "" : split the train set 90/10 as HELMET does for NLU
    num_labels: int
    config: str | None = None
    text_field: str = "text"

    @property
    def fields(self) -> tuple[str, str]:
        return self.text_field, self.label_field

    @property
    def splits(self) -> tuple[str, ...]:
        return ("train", self.test_split) if self.test_split else ("train",)


SOURCES = {
    "icl_trec_coarse": ICLSource("trec", "CogComp/trec", "coarse_label", "test", 6),
    "icl_trec_fine": ICLSource("trec", "CogComp/trec", "fine_label", "test", 50),
    "icl_banking77": ICLSource("banking77", "PolyAI/banking77", "label", "test", 77),
    "icl_clinic150": ICLSource("clinc150", "clinc/clinc_oos", "intent", "validation", 151, "plus"),
    "icl_nlu": ICLSource("nlu", "xingkunliuxtracta/nlu_evaluation_data", "label", "", 68),
}
LOCAL = {
    task: hub_splits(
        task, f"icl/{s.folder}", s.hub_id, s.fields, s.splits, ((s.label_field, "number"),)
    )
    for task, s in SOURCES.items()
}
DATA_FILES = tuple(f for splits in LOCAL.values() for f in splits.values())


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
    for r in read_local_or_hub(LOCAL[task][split], data_dir, src.hub_id, src.config, split, hint):
        fault = LOCAL[task][split].fault(r)
        if fault:
            raise DataUnavailable(
                f"{task}: a record of {local} {fault} (records need {src.text_field!r} and "
                f"{src.label_field!r}; have {', '.join(sorted(r))}); {hint}"
            )
        out.append((str(r[src.text_field]), int(r[src.label_field])))
    return out


@memo(8)
def load_icl(task: str, data_dir: str | None, seed: int) -> ICLData:
    src = SOURCES[task]
    train = _rows(task, src, data_dir, "train")
    if src.test_split:
        test = _rows(task, src, data_dir, src.test_split)
    else:
        import datasets

        split = datasets.Dataset.from_dict(
            {"text": [t for t, _ in train], "label": [lab for _, lab in train]}
        ).train_test_split(test_size=0.1, seed=seed)
        train, test = (
            list(zip(split[part]["text"], split[part]["label"])) for part in ("train", "test")
        )
    labels = {lab for _, lab in train}
    bad = sorted({lab for _, lab in train + test if not 0 <= lab < src.num_labels})
    if bad:
        raise DataUnavailable(
            f"{task}: labels {bad[:5]} fall outside 0..{src.num_labels - 1}; is "
            f"{src.label_field!r} the right column?"
        )
    num_labels = max(len(labels), max(labels) + 1)
    return ICLData(tuple(train), tuple(test), num_labels, sha256_of_json([train, test]))
