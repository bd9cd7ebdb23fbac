"""MRCR v2: the generator against eval_hub's own output (sha256 pinned by
``regenerate_goldens.py``), the scorer and its hash rule, the texts' reader, every length
building or refusing (the prompt alone filling it), a random guesser against the README's noise
rates, the generation budget's option, and one run of the suite on the tiny checkpoint."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxgate.api import (
    BuildContext,
    DataNotGiven,
    DataUnavailable,
    HFTokenizer,
    Job,
    PieceEncoder,
    TaskTooShort,
    get_task,
)
from ctxgate.ext.mrcr2.corpus import load_corpus, sample_dir
from ctxgate.ext.mrcr2.metric import RULE, mrcr2_score, rule_of
from ctxgate.ext.mrcr2.noise import noise_rate
from ctxgate.ext.mrcr2.settings import Mrcr2Settings
from ctxgate.ext.mrcr2.tasks import PUBLISHED_NOISE, generator_for, joined
from tests.ext.mrcr2.regenerate_goldens import CASES, FIELDS, TINY, digest

FEW = settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
GOLDEN = {
    (
        2,
        42,
        1500,
        3000,
        False,
        False,
    ): "db50c0412b31fe7b4008ccd59d997c1ce2369ec52f426a991735eacc1b32b5e6",
    (
        4,
        7,
        2048,
        4096,
        False,
        False,
    ): "6662e7f92baea31796539dcb62842cc92950577e8788d32f4968c5260c5cccf9",
    (
        8,
        42,
        4096,
        8192,
        False,
        False,
    ): "211727de869eabac6cd25464bfe93d7fe63678c4413637aeac976e2c56d05d0b",
    (
        4,
        42,
        3000,
        6000,
        False,
        True,
    ): "27f8a911f393b2f5fb117c526f692725161633c46d0325514cf65f83ceff6629",
    (
        2,
        42,
        65536,
        131072,
        False,
        False,
    ): "dfdc9b26c5070af8092fd498a889cb95880e173f94362a6b400b5cea43c0add3",
}


@pytest.fixture(scope="module")
def enc() -> PieceEncoder:
    from transformers import AutoTokenizer

    return PieceEncoder(HFTokenizer(AutoTokenizer.from_pretrained(str(TINY))))


def context(enc: PieceEncoder, data_dir: str | None = None, **asked: str) -> BuildContext:
    extras = {"mrcr2": Mrcr2Settings(**asked)}
    return BuildContext(enc, chat=False, data_dir=data_dir or sample_dir(), extras=extras)


def rows(enc: PieceEncoder, case: tuple[int, int, int, int, bool, bool]) -> list[dict[str, object]]:
    """Our bucket in the reference's row shape."""
    needles, seed, low, high, static, json_style = case
    corpus = load_corpus(sample_dir(), not static)
    gen = generator_for(enc, corpus, needles, static, json_style)
    bucket = gen.bucket(seed, low, high, 100)
    found = []
    for a in bucket.asked:
        _, text = joined(enc, gen, bucket.transcripts[a.transcript], (id(bucket), a.transcript))
        values = (
            text + a.query,
            a.token + corpus.relevant[a.answer].text,
            a.tokens,
            gen.counts.relevant_text[a.answer],
            a.query,
            needles,
            a.span,
            list(a.turns_at),
            list(a.spans),
        )
        found.append(dict(zip(FIELDS, values)))
    return found


@pytest.mark.parametrize("case", CASES, ids=str)
def test_buckets_are_the_reference_generators_output(enc, case):
    assert digest(rows(enc, case)) == GOLDEN[case]


def test_the_scorer_is_the_references_and_its_hash_rule_switches():
    target = "aB3dE6gH9jK1Roses are red.\nViolets are blue."
    assert mrcr2_score(target, target) == (1.0, "Roses are red.\nViolets are blue.")
    assert mrcr2_score("Roses are red.\nViolets are blue.", target)[0] == 0.0
    late = "Sure! aB3dE6gH9jK1Roses are red.\nViolets are blue."
    assert mrcr2_score(late, target)[0] == 1.0  # rfind: text before the string passes
    assert mrcr2_score(late, target, "first")[0] == 0.0
    twice = "aB3dE6gH9jK1 no. aB3dE6gH9jK1Roses are red.\nViolets are blue."
    assert mrcr2_score(twice, target, "first")[0] == 1.0  # the last copy is scored after
    assert mrcr2_score("", target) == (0.0, "") and mrcr2_score(target, "short") == (0.0, "")
    assert rule_of([target, RULE + "first"]) == "first" and rule_of([target]) == "anywhere"
    with pytest.raises(ValueError, match="no rule"):
        rule_of([target, RULE + "last"])


@given(st.text(max_size=80), st.text(max_size=80), st.sampled_from(["anywhere", "first"]))
@FEW
def test_every_output_scores_between_0_and_1(prediction, target, rule):
    score, _ = mrcr2_score(prediction, target, rule)
    assert 0.0 <= score <= 1.0
    if rule == "first":
        assert score <= mrcr2_score(prediction, target)[0]


@given(st.integers(1, 12_000), st.sampled_from([2, 4, 8]), st.integers(0, 3))
@FEW
def test_every_length_builds_within_the_rule_or_is_too_short(enc, length, needles, index):
    spec = get_task(f"mrcr2_{needles}needle")
    job = Job(spec.name, length, index, spec.held_in_length, random.Random(0))
    try:
        s = spec.build(context(enc), job)
    except TaskTooShort as exc:
        assert "choose a longer --lengths" in str(exc) and "\n" not in str(exc)
        return
    assert len(s.input_ids) <= length and spec.held_in_length == 0  # the budget: past L
    assert s.text.endswith(
        "in a " + s.meta["request"].split(" in ")[-1][:-7] + " style. Do not "
        "include any other text in your response.\n\nAssistant:"
    )
    assert s.answers[0].startswith(s.meta["random_string"]) and s.answers[1] == RULE + "anywhere"
    if length <= 8192:
        assert tuple(s.input_ids) == enc.whole(s.text)


def test_the_hash_rule_asked_reaches_the_references(enc):
    s = get_task("mrcr2_2needle").build(
        context(enc, hash_rule="first"), Job("mrcr2_2needle", 8192, 0, 0, random.Random(0))
    )
    assert s.answers[1] == RULE + "first"


def test_without_the_texts_the_case_is_not_given_naming_the_fix(enc, tmp_path):
    job = Job("mrcr2_4needle", 8192, 0, 0, random.Random(0))
    with pytest.raises(DataNotGiven, match="mrcr_v2/mrcr_text_blocks/mrcr_relevant_texts.json"):
        get_task("mrcr2_4needle").build(context(enc, str(tmp_path)), job)


NESTED = st.recursive(
    st.one_of(st.none(), st.integers(), st.text(max_size=20)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)


@given(NESTED)
@FEW
def test_the_reader_takes_four_levels_or_refuses_in_one_line(tmp_path_factory, doc):
    root = tmp_path_factory.mktemp("texts")
    folder = root / "mrcr_v2" / "mrcr_text_blocks"
    folder.mkdir(parents=True)
    for kind in ("relevant", "filler"):
        (folder / f"mrcr_{kind}_texts.json").write_text(json.dumps(doc))
    try:
        corpus = load_corpus(str(root), False)
    except DataUnavailable as exc:
        assert "\n" not in str(exc) and str(folder) in str(exc)
        return
    assert corpus.relevant and all(isinstance(e.text, str) and e.text for e in corpus.relevant)


def test_a_few_shot_style_of_one_text_is_refused(tmp_path):
    folder = tmp_path / "mrcr_v2" / "mrcr_text_blocks"
    folder.mkdir(parents=True)
    one = {"poem": {"dreams": {"formal": {"seed1": "A dream."}}}}
    for kind in ("relevant", "filler", "fewshot"):
        (folder / f"mrcr_{kind}_texts.json").write_text(json.dumps(one))
    with pytest.raises(DataUnavailable, match="fewer than two seeds"):
        load_corpus(str(tmp_path), True)


@pytest.mark.parametrize("needles", [2, 4, 8])
def test_a_random_guess_among_the_requests_writings_scores_the_readmes_noise_rate(enc, needles):
    """The README's noise model: a writing of the request asked about, drawn uniformly, with the
    string before it; its mean over a bucket's 100 samples is the README's rate per needle count
    (given as "around" a whole number) within 1.5 points, its standard error under 0.5."""
    corpus = load_corpus(sample_dir(), True)
    gen = generator_for(enc, corpus, needles, False, False)
    mean, error = noise_rate(gen, gen.bucket(42, 3000, 6000, 100).asked)
    assert abs(mean - PUBLISHED_NOISE[needles]) < 1.5 and error < 0.5, (mean, error)


def test_a_case_at_l_holds_the_references_bucket_for_its_prompt_alone(enc):
    """H is L less the chat template's ends and the closing question only: the generation budget
    comes past L, so 4K builds all three (it left 2K for the transcript when the budget was in)."""
    from ctxgate.ext.mrcr2.tasks import _bounds, case_bucket, question_room

    ctx = context(enc)
    for needles in (2, 4, 8):
        spec = get_task(f"mrcr2_{needles}needle")
        assert not spec.output_in_length and spec.past_length == spec.tokens_to_generate == 2048
        job = Job(spec.name, 4096, 0, spec.held_in_length, random.Random(0))
        gen, _, frame = case_bucket(needles, ctx, job)
        high = 4096 - len(frame.pre) - len(frame.post) - question_room(gen)
        assert _bounds(gen, frame, job) == (high // 2, high)
        assert len(spec.build(ctx, job).input_ids) <= 4096


def test_the_generation_budget_option_reaches_the_plan_and_the_three_tasks():
    from types import SimpleNamespace

    from ctxgate.api import OptionError
    from ctxgate.ext.mrcr2 import plugin, settings

    given = {"mrcr2_tokens_to_generate": "16", "mrcr2_hash": "first"}
    name, section = plugin.ctxgate_plan_section(given.get, None)  # type: ignore[arg-type]
    assert section == Mrcr2Settings(hash_rule="first", tokens_to_generate=16)
    plan = SimpleNamespace(extras={name: section})
    budgets = plugin.ctxgate_task_budgets(plan)  # type: ignore[arg-type]
    assert budgets == {f"mrcr2_{n}needle": 16 for n in (2, 4, 8)}
    assert Mrcr2Settings().tokens_to_generate == 2048
    assert "--mrcr2-tokens-to-generate" in plugin.ctxgate_slots()[0].baseline
    with pytest.raises(OptionError, match="--mrcr2-tokens-to-generate '0' is not a whole"):
        settings.TOKENS.read("0")


def test_the_suite_runs_the_three_tasks_into_the_mrcr2_summary(real_suite, pytester):
    """The tiny checkpoint at 4K, 16 tokens generated past it, on the stand-in texts."""
    args = ("-k", "mrcr2", "--lengths", "4k", "--samples", "1", "--data-dir", sample_dir())
    result = real_suite(*args, "--mrcr2-tokens-to-generate", "16", "--report", "out/r.json")
    assert result.ret in (0, 1), result.stdout.str()[-3000:]
    report = json.loads((pytester.path / "out" / "r.json").read_text())
    cases = {c["task"]: c for c in report["cases"] if c["suite"] == "mrcr2"}
    assert sorted(cases) == [f"mrcr2_{n}needle" for n in (2, 4, 8)]
    assert all(c["score"] is not None and c["length"] == 4096 for c in cases.values())
    assert sorted(report["by_length"]["4096"]["mrcr2"]["members"]) == sorted(cases)
    assert report["run"]["extras"]["mrcr2"]["tokens_to_generate"] == 16
    assert "MRCR v2" in (pytester.path / "out" / "r.md").read_text()
