"""NoLiMa-style needles: the overlap filter, the needle-set reader, the metric and the three tasks'
prompts."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxgate.data.haystacks import essay_tokens, load_essay
from ctxgate.ext.families import nolima as nolima_task
from ctxgate.ext.families.lexical_overlap import (
    STOP_WORDS,
    LiteralOverlap,
    check_pair,
    content_words,
    overlap,
    related,
    stem,
)
from ctxgate.ext.families.metrics import nolima_contains as contains
from ctxgate.ext.families.metrics import nolima_references
from ctxgate.ext.families.nolima import (
    DEPTHS,
    PROJECT_PAIRS,
    SYSTEM_PROMPT,
    case_and_depth,
    project_set,
    system_chat_parts,
)
from ctxgate.ext.families.nolima_files import (
    TASK_TEMPLATE,
    NeedleSet,
    load_official,
    load_project,
    parse,
)
from ctxgate.ext.families.nolima_haystack import (
    FILLER_SPACING,
    FILLERS,
    MIN_FILLERS,
    keyword_pattern,
    usable_fillers,
)
from ctxgate.metrics.registry import get_metric, score_prediction
from ctxgate.refusal import Refusal
from ctxgate.sources.errors import DataNotGiven, DataUnavailable
from ctxgate.tasks import BuildContext, get_task
from ctxgate.tasks.build import build_sample
from ctxgate.tokens.codec import PieceEncoder
from ctxgate.tokens.tokenizers import HFTokenizer
from fixtures.make_family_fixtures import NOLIMA_NEEDLES
from tests.scripted import ByteTokenizer

TASKS = ("ctx_nolima", "ctx_nolima_direct")
SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def nolima_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("data")
    target = root / "nolima" / "needlesets" / "needle_set.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(NOLIMA_NEEDLES), encoding="utf-8")
    return root


def ctx_for(
    encoder: PieceEncoder, chat: bool = False, data_dir: Path | None = None, seed: int = 42
) -> BuildContext:
    return BuildContext(
        encoder=encoder, chat=chat, seed=seed, data_dir=str(data_dir) if data_dir else None
    )


# the overlap filter
# ------------------------------------------------------------------------------------------------
def test_every_shipped_one_hop_pair_shares_no_content_word_and_every_direct_one_shares_some():
    cases = project_set().cases
    latent = [c for c in cases if c.kind == "onehop"]
    direct = [c for c in cases if c.kind == "direct"]
    assert len(latent) >= 30 and len(direct) == len(latent)
    for case in latent:
        assert check_pair(case.question, case.needle, case.name).count == 0, case.name
    for case in direct:
        assert overlap(case.question, case.needle).count >= 1, case.name


@pytest.mark.parametrize(
    ("question", "needle", "shared"),
    [
        (
            "Which character has seen the Atomium?",
            "{CHAR} sketched the Atomium at dusk.",
            "atomium",
        ),
        ("Which character speaks Japanese?", "{CHAR} grew up in Japan.", "japanese~japan"),
        (
            "Which character sketched a bridge?",
            "{CHAR} spent hours sketching bridges.",
            "sketched~sketching, bridge~bridges",
        ),
        ("Which character loves cities?", "{CHAR} moved to the city.", "cities~city"),
        ("Which character visited Thailand?", "{CHAR} cooks pad thai.", "thailand~thai"),
        ("Which character has been to Reykjavik?", "{CHAR} was born in Reykjavík.", "reykjavik"),
    ],
)
def test_a_pair_with_literal_overlap_is_refused_naming_the_shared_words(question, needle, shared):
    with pytest.raises(
        LiteralOverlap, match=re.escape(f"({shared}; at most 0 allowed)")
    ) as refused:
        check_pair(question, needle, "pair 1")
    assert "\n" not in str(refused.value) and "reword the question" in str(refused.value)


def test_function_words_the_placeholder_and_one_letter_words_are_not_content_words():
    assert content_words("Which {CHAR} has been to the Atomium's café?") == ("atomium", "cafe")
    assert (
        overlap(
            "Which character has been there?", "Has {CHAR} been there? It was in the north."
        ).count
        == 0
    )
    assert (
        stem("cities") == "city"
        and stem("watches") == "watch"
        and stem("bus") == "bus"
        and stem("is") == "is"
    )


words = st.text(
    alphabet=st.characters(codec="utf-8", categories=("L", "Nd", "Zs", "P")), max_size=60
)


@SETTINGS
@given(question=words, needle=words)
def test_overlap_is_measured_on_content_words_only(question, needle):
    found = overlap(question, needle)
    assert all(q in content_words(question) and n in content_words(needle) for q, n in found.pairs)
    assert all(w not in STOP_WORDS and len(w) > 1 for w in content_words(question))
    assert overlap(question, question).count == len(set(content_words(question)))
    assert overlap(question, "").count == 0
    assert all(related(w, w) for w in content_words(question))


LATENT_WORDS = [
    (c, w) for c in load_project().of_kind(True) for w in dict.fromkeys(content_words(c.needle))
]


@SETTINGS
@given(pair=st.sampled_from(LATENT_WORDS))
def test_adding_a_needle_word_to_a_one_hop_question_breaks_the_cap(pair):
    case, word = pair
    with pytest.raises(LiteralOverlap, match=f"content word\\(s\\) with the needle .*\\b{word}\\b"):
        check_pair(f"{case.question} {word}", case.needle, case.name)


def test_the_shipped_set_is_nolima_shaped_and_its_size_is_the_default_sample_count():
    records = json.loads(
        (Path(nolima_task.__file__).parent / "nolima_needles.json").read_text("utf-8")
    )
    # NoLiMa's run_tests.py seeds each record's draws with int(id[:4]) and reads system_prompt and
    # input_args
    assert all(re.fullmatch(r"\d{4}", r["id"]) and r["system_prompt"] == "" for r in records)
    assert all(t["input_args"] for r in records for t in r["tests"].values())
    assert len(project_set().of_kind(True)) == PROJECT_PAIRS == len(records) * 6


def test_a_pair_over_the_cap_refuses_ctx_nolima_alone_and_never_the_registry(
    hf_encoder, monkeypatch
):
    record = {
        "id": "9999",
        "system_prompt": "",
        "needle": "{CHAR} sketched {1} at noon.",
        "questions": {
            "onehop": "Which character sketched {2}?",
            "direct": "Which character sketched {1}?",
        },
        "character_set": ["Priya", "Tomasz", "Ingrid"],
        "tests": {"T01": {"input_args": ["the Atomium", "Brussels"]}},
    }
    bad = NeedleSet(parse([record], "bad.json"), "bad.json", "0")
    monkeypatch.setattr(nolima_task, "load_project", lambda: bad)
    project_set.cache_clear()
    try:
        direct = nolima_task.ctx_nolima_direct()  # registering reads no needle set
        with pytest.raises(
            DataUnavailable, match=r"^bad\.json 9999_T01_onehop: .*\(sketched; at most 0"
        ):
            build_sample(nolima_task.ctx_nolima(), ctx_for(hf_encoder), 2048, 0, 42)
        assert (
            build_sample(direct, ctx_for(hf_encoder), 2048, 0, 42).meta["case"] == "9999_T01_direct"
        )
    finally:
        project_set.cache_clear()


# the needle-set reader
# ---------------------------------------------------------------------------------------------
def test_the_official_set_is_read_in_nolimas_order_with_arguments_filled(nolima_dir):
    cases = load_official(str(nolima_dir)).cases
    assert [c.name for c in cases] == [
        "0901_T01_onehop", "0901_T02_onehop", "0901_T01_twohop", "0901_T02_twohop",
        "0901_T01_direct", "0901_T02_direct", "0902_T01_onehop",
    ]  # fmt: skip
    first = cases[0]
    assert (
        first.needle
        == "One cold morning, {CHAR} photographed the Chain Bridge from the river bank."
    )
    assert first.question == "Which character has been in Budapest?" and cases[2].question.endswith(
        "Central Europe?"
    )
    assert (
        first.template == TASK_TEMPLATE and cases[-1].gold == ("Bern",) and not cases[-1].characters
    )
    assert [c.name for c in load_official(str(nolima_dir)).of_kind(False)] == [
        "0901_T01_direct",
        "0901_T02_direct",
    ]


def test_a_gold_answer_given_as_one_string_is_one_answer():
    record = {
        **NOLIMA_NEEDLES[1],
        "tests": {"T01": {"input_args": ["the Zytglogge"], "gold_answers": "Bern"}},
    }
    (case,) = parse([record], "set.json")
    assert case.gold == (
        "Bern",
    )  # NoLiMa's contains would iterate over "B", "e", "r", "n" (docs/decisions.md)


def test_no_data_dir_or_no_file_is_data_not_given_naming_the_path_and_that_nothing_is_fetched(
    tmp_path,
):
    for data_dir in (None, str(tmp_path)):
        with pytest.raises(
            DataNotGiven, match=r"nolima/needlesets/needle_set\.json.*never downloaded"
        ):
            load_official(data_dir)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda r: r.pop("needle"),
            r"record 1 \('0901'\): field 'needle' must be a non-empty string",
        ),
        (lambda r: r.update(character_set=[]), "field 'character_set' must be a non-empty list"),
        (
            lambda r: r.update(tests={"T01": {"input_args": ["x"]}}),
            r"keeps \{2\}: input_args has too few values",
        ),
        (
            lambda r: r.update(task_template="{haystack}"),
            "field 'task_template' must be a string with",
        ),
        (
            lambda r: r.update(distractors={"onehop": "x"}),
            "field 'distractors' is NoLiMa's distractor variant",
        ),
        (lambda r: r["questions"].update(onehop="{1} and {2}?"), "the question names 2 arguments"),
    ],
)
def test_a_malformed_record_is_refused_naming_the_field(tmp_path, edit, message):
    record = json.loads(json.dumps(NOLIMA_NEEDLES[0]))
    edit(record)
    path = tmp_path / "nolima" / "needlesets" / "needle_set.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps([record]))
    with pytest.raises(DataUnavailable, match=message) as refused:
        load_official(str(tmp_path))
    assert str(path) in str(refused.value) and "\n" not in str(refused.value)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=12)
    | st.sampled_from(["{CHAR} saw {1}.", "{1}"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
records = st.fixed_dictionaries(
    {},
    optional={
        k: json_values
        for k in (
            "id",
            "needle",
            "questions",
            "tests",
            "character_set",
            "task_template",
            "distractors",
        )
    },
)


@SETTINGS
@given(doc=st.one_of(json_values, st.lists(records, max_size=3)))
def test_any_json_document_is_read_or_refused_in_one_line(doc):
    try:
        cases = parse(doc, "set.json")
    except DataUnavailable as exc:
        assert str(exc).startswith("set.json") and "\n" not in str(exc)
        return
    assert cases and all(c.needle and c.question and "{1}" not in c.needle for c in cases)


# the metric
# --------------------------------------------------------------------------------------------------
def test_contains_is_nolimas_case_sensitive_substring_rule():
    assert contains("The answer is Priya.", ["Priya"]) == 1.0
    assert contains("the answer is priya", ["Priya"]) == 0.0
    assert contains("Priyanka", ["Priya"]) == 1.0  # a substring counts, as in the reference
    assert score_prediction("nolima_contains", " Oskar", ["Oskar"], "", chat=False) == (
        1.0,
        " Oskar",
    )


def test_an_answer_naming_another_of_the_records_characters_scores_0_official_rule_kept(hf_encoder):
    metric = get_metric("nolima_one_name")
    assert get_task("ctx_nolima").metric is metric and get_task("nolima").metric is metric
    refs = nolima_references(["Stuart"], ["Yuki", "Stu", "Stuart", "Mandy"])
    assert refs[-1] == "candidates: Yuki | Stu | Stuart | Mandy"

    def both(answer: str) -> tuple[float, float]:
        return tuple(  # type: ignore[return-value]
            score_prediction(m, answer, refs, "", chat=False)[0]
            for m in ("nolima_one_name", "nolima_contains")
        )

    assert both("It was Stuart.") == (1.0, 1.0)  # "Stu" inside "Stuart" names no one else
    assert both("Yuki, Stu, Stuart or Mandy") == (0.0, 1.0)  # every candidate: 0, officially 1
    assert both("Stuart, or maybe Mandy") == (0.0, 1.0)
    assert both("Mandy") == (0.0, 0.0)
    assert both("Stuart and Stuart again") == (1.0, 1.0)
    # a record without a character set: the official rule alone
    assert nolima_references(["Oskar"], []) == ("Oskar",)
    assert score_prediction("nolima_one_name", "Oskar, Yuki", ["Oskar"], "", chat=False)[0] == 1.0
    # every built sample carries its record's characters
    sample = build_sample(get_task("ctx_nolima"), ctx_for(hf_encoder), 2048, 0, 42)
    gold, listed = sample.answers[0], sample.answers[-1].removeprefix("candidates: ").split(" | ")
    assert len(sample.answers) == 2 and gold in listed and len(listed) == 10


@SETTINGS
@given(
    before=st.text(max_size=30),
    after=st.text(max_size=30),
    name=st.sampled_from(["Aiko", "Farid", "Nadia"]),
)
def test_contains_scores_one_exactly_when_the_name_is_in_the_output(before, after, name):
    assert contains(before + name + after, [name]) == 1.0
    assert contains(before + after, [name]) == float(name in before + after)


# the tasks
# --------------------------------------------------------------------------------------------------
def test_specs():
    for name in (*TASKS, "nolima"):
        spec = get_task(name)
        assert (spec.suite, spec.category, spec.tokens_to_generate, spec.chat_template) == (
            "nolima",
            "latent",
            192,
            True,
        )
    assert (
        get_task("ctx_nolima").default_samples
        == 36 * 26
        == get_task("ctx_nolima_direct").default_samples
    )
    assert get_task("nolima").replaces == "ctx_nolima" and get_task("ctx_nolima").replaces is None


def test_index_to_case_and_depth_covers_every_pair_at_every_depth_once():
    assert DEPTHS == tuple(
        round(d) for d in [i * 100 / 25 for i in range(26)]
    )  # np.linspace(0, 100, 26)
    count = 36
    seen = [case_and_depth(count, i, "ctx_nolima", 42) for i in range(count * 26)]
    assert len(set(seen)) == count * 26
    assert {c for c, _ in seen[:count]} == set(range(count))  # the first round asks every pair once
    assert case_and_depth(count, 5, "ctx_nolima", 7) != case_and_depth(count, 5, "ctx_nolima", 42)


@pytest.fixture(scope="module")
def official_ctx(hf_encoder, nolima_dir):
    return ctx_for(hf_encoder, data_dir=nolima_dir)


@SETTINGS
@given(
    task=st.sampled_from((*TASKS, "nolima")),
    length=st.one_of(st.integers(1, 700), st.integers(1, 8192), st.sampled_from([32768, 131072])),
    index=st.integers(0, 5000),
    seed=st.integers(0, 2**31),
    chat=st.booleans(),
)
def test_every_length_builds_within_the_rule_filled_to_a_sentence_or_refuses(
    hf_encoder, nolima_dir, task, length, index, seed, chat
):
    spec = get_task(task)
    try:
        s = build_sample(spec, ctx_for(hf_encoder, chat, nolima_dir, seed), length, index, seed)
    except Refusal as exc:
        # the needle sets are there and the essay outlasts 128K: only a short length is refused, for
        # its reason
        assert exc.cause == "too_short" and length < 800, str(exc)
        if length <= spec.tokens_to_generate:
            assert f"its generation budget of {spec.tokens_to_generate} tokens fills it" in str(exc)
        else:
            assert re.search(
                r"leave \d+ tokens for the haystack|room for \d+ haystack sentences", str(exc)
            ), str(exc)
        assert str(exc).endswith("choose a longer --lengths value") and "\n" not in str(exc)
        return
    used = len(s.input_ids) + spec.tokens_to_generate
    # filled to within one sentence: the longest the haystack has held so far (196 tiny tokens by
    # 8K)
    assert used <= length and length - used <= essay_tokens(hf_encoder, load_essay()).longest
    assert s.answers and all(s.answers)
    text = hf_encoder.decode(s.input_ids)
    character = s.meta["character"]
    if character is not None:  # the fillers name the record's other characters, never the needle's
        assert len(re.findall(rf"\b{character}\b", text)) == 1
        assert all(f in text and not re.search(rf"\b{character}\b", f) for f in s.meta["fillers"])
    else:
        assert s.meta["fillers"] == []


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("chat", [False, True])
def test_the_needle_sits_at_its_depth_and_only_it_names_the_character(hf_encoder, task, chat):
    spec = get_task(task)
    for index in (0, 1, 36 * 12 + 7, 36 * 25):  # depths 0, 4, and further on
        s = build_sample(spec, ctx_for(hf_encoder, chat), 8192, index, 42)
        (needle,), (offset,), (depth,) = (
            s.meta["needles"],
            s.meta["needle_offsets"],
            s.meta["depths"],
        )
        name = s.answers[0]
        assert needle.startswith(name) or f" {name} " in needle
        assert hf_encoder.decode(s.input_ids[offset : offset + 60]).lstrip().startswith(needle)
        text = hf_encoder.decode(s.input_ids)
        assert len(re.findall(rf"\b{name}\b", text)) == 1
        start = len(
            hf_encoder.decode(s.input_ids[:offset])
        )  # the needle's place in the haystack, in characters
        haystack = text.split("book snippet:\n\n", 1)[1].rsplit("\n\nUse the information", 1)[0]
        share = (start - text.index(haystack)) / (len(haystack) - len(needle) - 1)
        assert abs(share - depth / 100) < 0.03, (index, depth, share)
        assert f"Question: {s.meta['question']}\n\n Return only the final answer" in text


@pytest.mark.parametrize("task", TASKS)
def test_no_essay_sentence_names_the_cases_keywords_or_characters(hf_encoder, task):
    cases = {c.name: c for c in load_project().cases}
    for index in range(0, 36 * 26, 97):
        s = build_sample(get_task(task), ctx_for(hf_encoder), 16384, index, 42)
        text = hf_encoder.decode(s.input_ids).replace(s.meta["needles"][0], "")
        for filler in s.meta["fillers"]:
            text = text.replace(filler, "")
        haystack = text.split("book snippet:\n\n", 1)[1].rsplit("\n\nUse the information", 1)[0]
        assert not keyword_pattern(cases[s.meta["case"]]).search(haystack)


# the fillers: other characters in the haystack
# ----------------------------------------------------------------------
def test_every_filler_is_distractor_free_for_every_shipped_case():
    assert len(set(FILLERS)) == len(FILLERS)
    assert all(f.startswith("{CHAR} ") and f.count("{CHAR}") == 1 for f in FILLERS)
    for case in (
        load_project().cases
    ):  # no shared content word with its question or needle, no keyword named
        assert usable_fillers(case) == FILLERS, case.name


def test_a_filler_that_would_give_the_question_a_literal_hook_is_not_used(nolima_dir):
    case = load_official(str(nolima_dir)).cases[0]
    assert usable_fillers(case) == FILLERS
    hooked = dataclasses.replace(case, question="Which character rode a bicycle to Budapest?")
    assert usable_fillers(hooked) == tuple(f for f in FILLERS if "bicycle" not in f)
    keyword = dataclasses.replace(case, keywords=(*case.keywords, "the Piano"))
    assert usable_fillers(keyword) == tuple(f for f in FILLERS if "piano" not in f)


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("length", [1024, 8192, 65536])
def test_the_needle_is_not_the_only_sentence_about_a_character(hf_encoder, task, length):
    cases = {c.name: c for c in load_project().cases}
    for index in (0, 5, 36 * 7 + 3):
        s = build_sample(get_task(task), ctx_for(hf_encoder, chat=True), length, index, 42)
        case, character = cases[s.meta["case"]], s.meta["character"]
        others = [n for n in case.characters if n != character]
        named = [f for f in s.meta["fillers"] if any(re.match(rf"{n}\b", f) for n in others)]
        assert named == s.meta["fillers"]
        # one per FILLER_SPACING tokens of the haystack (the length less the budget, frame and
        # needle: < 400)
        expected = min(len(FILLERS), max(MIN_FILLERS, (length - 400) // FILLER_SPACING))
        assert len(named) >= expected, (index, len(named))
        text = hf_encoder.decode(s.input_ids)
        assert (
            all(text.count(f) == 1 for f in named)
            and len(re.findall(rf"\b{character}\b", text)) == 1
        )


def test_a_haystack_keyword_matches_word_starts_in_any_case_and_accent_and_names_whole():
    case = next(c for c in load_project().cases if "the Belém Tower" in c.keywords)
    pattern = keyword_pattern(case)
    for text in (
        "the belem tower at noon",
        "BELÉM TOWER",
        "in Portuguese",
        "Priya said",
        "lisboners",
    ):
        assert pattern.search(text), text
    for text in ("Priyanka said", "a tower of Belgrade", "priya said"):
        assert not pattern.search(text), text


def test_the_system_prompt_goes_in_the_templates_system_turn(hf_encoder, hf_tokenizer):
    s = build_sample(get_task("ctx_nolima"), ctx_for(hf_encoder, chat=True), 2048, 0, 42)
    text = hf_encoder.decode(s.input_ids)
    assert text.startswith(
        f"<|im_start|>system\n{SYSTEM_PROMPT}<|im_end|>\n<|im_start|>user\nYou will answer"
    )
    assert text.endswith("reasoning.<|im_end|>\n<|im_start|>assistant\n")
    plain = hf_encoder.decode(
        build_sample(get_task("ctx_nolima"), ctx_for(hf_encoder), 2048, 0, 42).input_ids
    )
    assert plain.startswith("You will answer") and SYSTEM_PROMPT not in plain


@pytest.mark.parametrize(
    "template",
    [
        "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('no system "
        "role') }}{% endif %}"
        "<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor "
        "%}<|im_start|>assistant\n",
        # a chat API's bare template
        "{% for message in messages %}{{ message['content'] }}{% endfor %}",
    ],
)
def test_a_template_without_a_system_turn_gets_the_user_message_alone(hf_tokenizer, template):
    import copy

    tok = copy.deepcopy(hf_tokenizer)
    tok.chat_template = template
    enc = PieceEncoder(HFTokenizer(tok))
    assert system_chat_parts(enc) == enc.chat_parts()


def test_a_template_that_breaks_on_the_system_message_refuses_the_case_naming_the_fix(hf_tokenizer):
    import copy

    tok = copy.deepcopy(hf_tokenizer)
    # a bug that shows only with a system message: never hidden as "no system turn"
    tok.chat_template = (
        "{% for m in messages %}{% if m['role'] == 'system' %}{{ m['content'] + 1 }}{% endif %}"
        "<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor "
        "%}<|im_start|>assistant\n"
    )
    ctx = ctx_for(PieceEncoder(HFTokenizer(tok)), chat=True)
    with pytest.raises(
        DataUnavailable,
        match=r"fails on NoLiMa's system message \(TypeError: .*--chat-template off$",
    ):
        build_sample(get_task("ctx_nolima"), ctx, 2048, 0, 42)


def test_a_tokenizer_without_a_system_turn_gets_the_user_message_alone():
    enc = PieceEncoder(
        ByteTokenizer()
    )  # its chat form is a user turn only: NoLiMa's system text has no place
    assert system_chat_parts(enc) == enc.chat_parts() == ("<user>\n", "\n</user>\n<assistant>\n")
    spec = get_task("ctx_nolima")
    chat = enc.decode(build_sample(spec, ctx_for(enc, chat=True), 4096, 0, 42).input_ids)
    assert chat.startswith(
        "<user>\nYou will answer a question based on the following book snippet:\n\n"
    )
    assert chat.endswith("reasoning.\n</user>\n<assistant>\n") and SYSTEM_PROMPT not in chat
    plain = enc.decode(build_sample(spec, ctx_for(enc), 4096, 0, 42).input_ids)
    assert plain == chat.removeprefix("<user>\n").removesuffix("\n</user>\n<assistant>\n")


def test_the_official_task_reads_the_file_and_asks_every_latent_question(official_ctx):
    spec = get_task("nolima")
    assert spec.pool_size is not None and spec.pool_size(official_ctx, 4096) == 5 * 26
    built = [build_sample(spec, official_ctx, 2048, i, 42) for i in range(5)]
    assert sorted(s.meta["case"] for s in built) == [
        "0901_T01_onehop", "0901_T01_twohop", "0901_T02_onehop", "0901_T02_twohop",
        "0902_T01_onehop",
    ]  # fmt: skip
    gold = next(s for s in built if s.meta["case"] == "0902_T01_onehop")
    assert gold.answers == ("Bern",) and gold.meta["character"] is None
    assert official_ctx.encoder.decode(gold.input_ids).startswith("Snippet:\n")


def test_the_official_task_without_its_file_skips_naming_the_length(hf_encoder, tmp_path):
    with pytest.raises(DataNotGiven, match=r"^nolima at length 4096: .*needle_set\.json"):
        build_sample(get_task("nolima"), ctx_for(hf_encoder, data_dir=tmp_path), 4096, 0, 42)


def test_a_set_of_direct_questions_only_is_refused_for_the_official_task(hf_encoder, tmp_path):
    record = {**NOLIMA_NEEDLES[0], "questions": {"direct": "Which character photographed {1}?"}}
    path = tmp_path / "nolima" / "needlesets" / "needle_set.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps([record]))
    with pytest.raises(DataUnavailable, match="every question is a direct one"):
        build_sample(get_task("nolima"), ctx_for(hf_encoder, data_dir=tmp_path), 4096, 0, 42)


def test_same_inputs_same_bytes_and_other_seeds_other_samples(hf_encoder):
    spec = get_task("ctx_nolima")
    a, b = (build_sample(spec, ctx_for(hf_encoder), 4096, 3, 42) for _ in range(2))
    assert a.digest() == b.digest()
    others = {
        build_sample(spec, ctx_for(hf_encoder, seed=s), 4096, 3, s).digest() for s in range(5)
    }
    assert len(others) == 5


def test_128k_builds_within_one_sentence(hf_encoder):
    spec = get_task("ctx_nolima")
    s = build_sample(spec, ctx_for(hf_encoder, chat=True), 131072, 77, 42)
    longest = essay_tokens(hf_encoder, load_essay()).longest
    assert 131072 - longest <= len(s.input_ids) + spec.tokens_to_generate <= 131072
