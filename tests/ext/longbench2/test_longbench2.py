"""LongBench v2: parity with THUDM/LongBench's pred.py (goldens.json, made by make_goldens.py from
the reference run on the fixture's records), the data door, the builder at every length, the
metric and its splits, the chain of thought's two requests, and one run of the tiny model."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ctxgate.api import (
    BuildContext,
    DataNotGiven,
    DataUnavailable,
    Generation,
    GenerationParams,
    HFTokenizer,
    PieceEncoder,
    Request,
    TaskTooShort,
    get_task,
)
from ctxgate.ext.longbench2 import records as lb_records
from ctxgate.ext.longbench2.cot import CotReading, StepTwo, TwoSteps, joined, split
from ctxgate.ext.longbench2.prompts import (
    ZERO_SHOT,
    ZERO_SHOT_COT,
    ZERO_SHOT_COT_ANS,
    extract_answer,
    fill,
    middle,
)
from ctxgate.ext.longbench2.settings import FILL, NAME, Longbench2Settings
from ctxgate.ext.longbench2.tasks import LONGBENCH2_CHOICE, truncated
from ctxgate.tasks.build import build_sample  # the spine's one door: it checks the length rule
from fixtures.make_longbench2_fixture import records as fixture_records
from fixtures.make_longbench2_fixture import write

HERE = Path(__file__).parent
TINY = HERE.parents[2] / "fixtures" / "tiny-llama-niah"
GOLDEN = json.loads((HERE / "goldens.json").read_text("utf-8"))
COT = "The banner colors are listed.\nSo the answer follows from the list."  # make_goldens' COT
FEW = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def enc() -> PieceEncoder:
    from transformers import AutoTokenizer

    return PieceEncoder(HFTokenizer(AutoTokenizer.from_pretrained(str(TINY))))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lb2")
    write(root)
    return root


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_prompts_are_the_references_at_every_budget(enc: PieceEncoder) -> None:
    """pred.py's user messages (plain, chain of thought, answer step), cut or not, byte for byte."""
    parsed = {r.id: r for r in lb_records.parse(fixture_records(), "fixture")}
    for key, (plain, first, second) in GOLDEN["prompts"].items():
        rid, budget = key.rsplit("@", 1)
        record, keep = parsed[rid], int(budget)
        assert _sha(truncated(enc, fill(ZERO_SHOT, record), keep)) == plain, key
        assert _sha(truncated(enc, fill(ZERO_SHOT_COT, record), keep)) == first, key
        step = StepTwo(fill(ZERO_SHOT_COT_ANS, record), keep, "", "", enc)
        assert _sha(step.prompt(COT)) == second, key


def test_answer_extraction_is_the_references() -> None:
    for output, found in GOLDEN["extract"]:
        assert extract_answer(output) == found, output


@given(st.lists(st.integers(0, 50), max_size=40), st.integers(1, 60))
def test_middle_keeps_the_budget_as_pred_py(ids: list[int], budget: int) -> None:
    kept = middle(ids, budget)
    assert kept == (ids[: budget // 2] + ids[-budget // 2 :] if len(ids) > budget else ids)
    assert len(kept) == min(len(ids), budget)


@given(st.text(max_size=80), st.sampled_from("ABCD"))
def test_the_metric_scores_the_extracted_letter(output: str, gold: str) -> None:
    refs = (gold, "difficulty:hard", "length:short")
    score, said = LONGBENCH2_CHOICE.fn(output, refs, None)  # type: ignore[misc]
    assert said == (extract_answer(output.strip()) or "") and score == float(said == gold)
    parts = LONGBENCH2_CHOICE.parts(output, refs)  # type: ignore[misc]
    assert parts["hard"] == parts["short"] == 1.0 and parts["easy"] == parts["long"] == 0.0
    assert parts["hard_right"] == score and parts["easy_right"] == 0.0


def _mutated(draw: Any) -> tuple[object, bool]:
    rec: dict[str, object] = dict(fixture_records()[0])
    field = draw(st.sampled_from([*lb_records.FIELDS, None]))
    if field is None:
        return [rec], True
    value = draw(st.one_of(st.none(), st.integers(), st.just(""), st.just(" "), st.just("x")))
    rec[field] = value
    ok = value == "x" and field not in ("difficulty", "length", "answer")
    return draw(st.sampled_from([[rec], rec, [], [rec, 3]])), ok


@given(st.data())
def test_a_bad_record_is_refused_in_one_line(data: st.DataObject) -> None:
    doc, ok = _mutated(data.draw)
    if ok and isinstance(doc, list) and len(doc) == 1:
        assert lb_records.parse(doc, "f.json")[0].answer in "ABCD"
        return
    with pytest.raises(DataUnavailable) as refused:
        lb_records.parse(doc, "f.json")
    assert "\n" not in str(refused.value) and "restore the file" in str(refused.value)


def test_no_data_is_a_skip_naming_the_fix(tmp_path: Path) -> None:
    with pytest.raises(DataNotGiven, match="zai-org/LongBench-v2"):
        lb_records.load(str(tmp_path))
    with pytest.raises(DataNotGiven):
        lb_records.load(None)


def _ctx(enc: PieceEncoder, data_dir: Path, chosen: Longbench2Settings) -> BuildContext:
    return BuildContext(encoder=enc, chat=False, data_dir=str(data_dir), extras={NAME: chosen})


@FEW
@given(
    st.integers(1, 4096),
    st.integers(0, 30),
    st.booleans(),
    st.sampled_from(["reference", FILL]),
)
# the demo's: the cut's ids re-tokenized with the prompt's ends came to 2 tokens more
@example(512, 5, False, "reference")
def test_every_length_builds_within_the_rule_or_skips(
    enc: PieceEncoder, data_dir: Path, length: int, index: int, cot: bool, cut: str
) -> None:
    spec, chosen = get_task("longbench2"), Longbench2Settings(cot, cut)
    try:
        s = build_sample(spec, _ctx(enc, data_dir, chosen), length, index, 42)
    except TaskTooShort as exc:
        assert "choose a longer --lengths value" in str(exc)
        return
    gen = spec.tokens_to_generate + (896 if cot else 0)
    assert len(s.input_ids) + gen <= length and s.answers[0] in "ABCD"
    body = s.text  # no chat template: the prompt is the user message itself
    assert body.startswith("Please read the following text") == (s.meta["budget"] >= 2)
    if not s.meta["truncated"]:
        record = {r.id: r for r in lb_records.parse(fixture_records(), "f")}[s.meta["id"]]
        assert body == fill(ZERO_SHOT_COT if cot else ZERO_SHOT, record)


def test_the_reference_budget_is_pred_pys_max_len_at_128k(enc: PieceEncoder, data_dir: Path):
    spec = get_task("longbench2")
    ctx = _ctx(enc, data_dir, Longbench2Settings())
    assert build_sample(spec, ctx, 131072, 0, 42).meta["budget"] == 120000
    filled = _ctx(enc, data_dir, Longbench2Settings(truncation=FILL))
    assert build_sample(spec, filled, 2048, 0, 42).meta["budget"] == 2048 - 128
    assert build_sample(spec, ctx, 2048, 0, 42).meta["budget"] == 2048 * 120000 // 131072


class _Echo:
    """A backend that answers each prompt with a line naming its budget and size."""

    name, max_positions = "echo", None
    tokenizer: Any = None

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def generate(self, requests: list[Request], params: GenerationParams) -> list[Generation]:
        self.calls += [(len(r.input_ids), params.max_new_tokens) for r in requests]
        text = "  thinking  " if params.max_new_tokens > 128 else "The correct answer is (C)"
        return [Generation(text, 5, "stop") for _ in requests]

    def describe(self) -> dict[str, object]:
        return {}


def test_the_chain_of_thought_is_two_requests(enc: PieceEncoder, data_dir: Path) -> None:
    spec, chosen = get_task("longbench2"), Longbench2Settings(cot=True)
    s = build_sample(spec, _ctx(enc, data_dir, chosen), 4096, 1, 42)
    backend = _Echo()
    held = CotReading().hold(backend)  # type: ignore[arg-type]
    assert isinstance(held, TwoSteps)
    other = Request((1, 2, 3), "niah_single_1", 4096, 1)
    gens = held.generate(
        [Request(s.input_ids, "longbench2", 4096, 1), other], GenerationParams(128)
    )
    assert backend.calls[0] == (3, 128)  # another task's request as it came
    assert backend.calls[1] == (len(s.input_ids), 1024) and backend.calls[2][1] == 128
    answer, fields = CotReading().read(gens[0])
    assert answer == "The correct answer is (C)" and fields["thought"] == "thinking"
    assert gens[0].output_tokens == 10 and CotReading().read(gens[1]) == (gens[1].text, {})


@given(st.text(max_size=30), st.integers(0, 2000), st.text(max_size=30))
def test_the_thought_and_answer_come_apart(thought: str, tokens: int, answer: str) -> None:
    assert split(joined(thought, tokens, answer)) == (answer, thought, tokens)


def test_the_tiny_model_runs_longbench2_into_the_report(
    real_suite: Any, pytester: pytest.Pytester, data_dir: Path
) -> None:
    """One case at 1K on four of the fixture's questions: scored, its splits in the report."""
    args = ("-k", "longbench2", "--lengths", "1k", "--data-dir", str(data_dir))
    result = real_suite(*args, "--samples", "4", "--report", "out/r.json")
    assert result.ret in (0, 1), result.stdout.str()[-3000:]
    report = json.loads((pytester.path / "out" / "r.json").read_text())
    (case,) = [c for c in report["cases"] if c["task"] == "longbench2"]
    assert case["n"] == 4 and case["chance"] == 25.0
    assert case["parts"]["easy"] + case["parts"]["hard"] == 100.0
    assert "longbench2" in report["by_length"]["1024"]
    (section,) = [s for s in report["sections"] if s["extra"] == NAME]
    assert section["table"][0][1:] == ["Overall", "Easy", "Hard", "Short", "Medium", "Long"]
    assert NAME not in report["run"]["extras"]  # the defaults: recorded as a run without the extra
