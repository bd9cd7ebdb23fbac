"""MRCR: the grade, the chat template's turns, the generated conversations and OpenAI MRCR's parquet
files (written here in the official schema with ``datasets``)."""

from __future__ import annotations

import json
import random
import re
from difflib import SequenceMatcher
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxgate.backends.servers import BARE_CHAT_TEMPLATE
from ctxgate.data.haystacks import HaystackError
from ctxgate.ext.families import conversations as conv
from ctxgate.ext.families.metrics import mrcr_grade as grade
from ctxgate.ext.families.mrcr_official import TemplateRefused, rows_for
from ctxgate.metrics.registry import score_prediction
from ctxgate.refusal import Refusal
from ctxgate.sources.errors import DataNotGiven, DataUnavailable
from ctxgate.tasks import BuildContext, TaskTooShort, get_task
from ctxgate.tasks.build import build_sample
from ctxgate.tokens.chat import ChatTemplateError, ChatTurns
from ctxgate.tokens.codec import PieceEncoder
from ctxgate.tokens.tokenizers import HFTokenizer
from fixtures.make_family_fixtures import official_row, write_mrcr
from tests.scripted import ByteTokenizer

GENERATED = ["ctx_mrcr_2", "ctx_mrcr_4", "ctx_mrcr_8"]
# the largest turn (request, answer and the template between) in tiny tokens: 143 in 20,000 draws
UNIT = 150
FEW = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
# Mistral/Llama-2-like: trims contents, refuses two user messages in a row
ALTERNATING = (
    "{% for m in messages %}{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') "
    "}}{% endif %}"
    "{% if m['role'] == 'user' %}[INST] {{ m['content'] | trim }} [/INST]{% else %} {{ "
    "m['content'] | trim }}</s>"
    "{% endif %}{% endfor %}"
)


# Llama-2-like with BOS spelled in the template's text, and two user messages in a row rendered
SPELLS_BOS = (
    "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}[INST] {{ m['content'] }} "
    "[/INST]"
    "{% else %} {{ m['content'] }}</s>{% endif %}{% endfor %}"
)


def with_template(hf_tokenizer, template: str, **special: str) -> PieceEncoder:
    from transformers import PreTrainedTokenizerFast

    special = special or {"eos_token": "<|endoftext|>"}
    tok = PreTrainedTokenizerFast(tokenizer_object=hf_tokenizer.backend_tokenizer, **special)
    tok.chat_template = template
    return PieceEncoder(HFTokenizer(tok))


# ---------------------------------------------------------------- the grade


def test_grade_is_the_cards_prefix_gate_then_the_ratio_of_the_rest():
    answer = "aYooSG8CQgIn the quiet gleam of morning light,\nLies a dance of steel."
    assert grade(answer, answer, "aYooSG8CQg") == 1.0
    assert (
        grade("In the quiet gleam of morning light,\nLies a dance of steel.", answer, "aYooSG8CQg")
        == 0.0
    )
    assert grade(" aYooSG8CQg" + answer[10:], answer, "aYooSG8CQg") == 0.0  # nothing is stripped
    partial = "aYooSG8CQgIn the quiet gleam of evening light."
    want = SequenceMatcher(None, partial[10:], answer[10:]).ratio()
    assert grade(partial, answer, "aYooSG8CQg") == pytest.approx(want) and 0 < want < 1
    assert (
        grade("aYooSG8CQgabc", "abc", "aYooSG8CQg") == 1.0
    )  # an answer without the prefix is compared whole


def test_the_ratio_takes_the_output_first_as_the_card_does():
    """difflib's junk heuristic looks at the second sequence only: the order changes the score."""
    rng = random.Random(3)
    for _ in range(200):
        answer = "".join(rng.choice("ab ") for _ in range(rng.randint(200, 400)))
        output = "".join(rng.choice("abc ") for _ in range(rng.randint(5, 300)))
        card = SequenceMatcher(None, output, answer).ratio()
        if card != SequenceMatcher(None, answer, output).ratio():
            assert grade("P" + output, "P" + answer, "P") == card
            return
    pytest.fail("no pair where the order matters")


@FEW
@given(output=st.text(max_size=300), answer=st.text(max_size=300), prefix=st.text(max_size=12))
def test_grade_is_a_share_and_gated_by_the_prefix(output, answer, prefix):
    value = grade(output, answer, prefix)
    assert 0.0 <= value <= 1.0
    if not output.startswith(prefix):
        assert value == 0.0
    assert grade(prefix + answer, prefix + answer, prefix) == 1.0


def test_the_registry_scores_with_references_answer_and_prefix():
    for chat in (False, True):
        value, looked_at = score_prediction(
            "mrcr_ratio", "XYZhello", ("XYZhello", "XYZ"), None, chat
        )
        assert value == 1.0 and looked_at == "XYZhello"
    assert score_prediction("mrcr_ratio", "hello", ("XYZhello", "XYZ"))[0] == 0.0
    with pytest.raises(ValueError, match="the answer and the random string it begins with"):
        score_prediction("mrcr_ratio", "hello", ("XYZhello",))


# ---------------------------------------------------------------- the chat template's turns


def test_chatml_turns(hf_encoder):
    turns = hf_encoder.chat_turns()
    assert (
        turns.start == "<|im_start|>user\n" and turns.end == "<|im_end|>\n<|im_start|>assistant\n"
    )
    assert turns.user_assistant == turns.assistant_user.replace("user", "assistant") == turns.end
    assert turns.user_user == "<|im_end|>\n<|im_start|>user\n" and not turns.trims


def conversations_strategy() -> st.SearchStrategy[list[tuple[str, str]]]:
    content = st.text(max_size=40)
    return st.tuples(
        st.booleans(), st.integers(0, 5), st.lists(content, min_size=14, max_size=14)
    ).map(
        lambda t: [
            (role, text)
            for role, text in zip(
                (["user"] if t[0] else []) + ["user", "assistant"] * t[1] + ["user"],
                t[2],
                strict=False,
            )
        ]
    )


@FEW
@given(messages=conversations_strategy())
def test_turns_joined_are_the_templates_own_rendering(hf_tokenizer, hf_encoder, messages):
    want = hf_tokenizer.apply_chat_template(
        [{"role": r, "content": c} for r, c in messages], add_generation_prompt=True, tokenize=False
    )
    assert hf_encoder.chat_turns().render(messages) == want


def test_a_trimming_template_that_refuses_two_user_messages(hf_tokenizer):
    enc = with_template(hf_tokenizer, ALTERNATING)
    turns = enc.chat_turns()
    assert turns.trims and turns.user_user is None
    messages = [("user", " a \n"), ("assistant", "\nb "), ("user", "c")]
    want = enc.raw.tok.apply_chat_template(
        [{"role": r, "content": c} for r, c in messages], add_generation_prompt=True, tokenize=False
    )
    assert turns.render(messages) == want == "[INST] a [/INST] b</s>[INST] c [/INST]"


@pytest.mark.parametrize(
    ("template", "why"),
    [
        (
            "{% for m in messages %}Turn {{ loop.index }}: {{ m['content'] }}\n{% endfor %}",
            "the same text between",
        ),
        (
            "{% if messages|length > 1 %}{{ raise_exception('one message only') }}{% endif %}"
            "{{ messages[0]['content'] }}",
            "fails on a five-message conversation",
        ),
        (
            "{% for m in messages %}{% if loop.index0 >= 5 %}>{% endif %}{{ m['content'] }}|{% "
            "endfor %}",
            "otherwise than its turns joined",
        ),
        (  # the error of the seven-message rendering is named, not swallowed
            "{% if messages|length > 5 %}{{ raise_exception('at most five messages') }}{% endif %}"
            "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}|{% endfor %}",
            r"renders five messages but fails on seven \(TemplateError: at most five messages\)",
        ),
        # a template bug on two user messages in a row is not taken for the template's refusal of
        # them
        (
            "{% for m in messages %}{% if not loop.first and loop.previtem['role'] == m['role'] %}"
            "{{ m.nothing.here }}{% endif %}{{ m['role'] }}: {{ m['content'] }}|{% endfor %}",
            r"fails on two user messages in a row \(UndefinedError: .*\) other than by refusing "
            r"them",
        ),
    ],
)
def test_a_template_that_cannot_be_split_into_turns_names_the_fix(hf_tokenizer, template, why):
    enc = with_template(hf_tokenizer, template)
    with pytest.raises(ChatTemplateError, match=f"{why}.*--chat-template off"):
        enc.chat_turns()
    with pytest.raises(
        TemplateRefused, match="^ctx_mrcr_2: the chat template .*--chat-template off"
    ) as refused:
        build_sample(get_task("ctx_mrcr_2"), BuildContext(enc, chat=True), 4096, 0, 42)
    assert (
        "\n" not in str(refused.value) and refused.value.cause == "data_unreadable"
    )  # an error, not data missing


def test_the_bare_template_of_a_chat_api_is_refused_not_flattened(hf_tokenizer, mrcr_dir):
    """--endpoint-api chat sets a template that writes the contents alone: the conversation would
    reach the model as one run of text ("...a lover of horsesPrepend ..."), so both families refuse
    it, naming the fixes."""
    enc = with_template(hf_tokenizer, BARE_CHAT_TEMPLATE)
    fixes = (
        "writes nothing between a user and an assistant message"
        ".*--endpoint-api completions.*--chat-template off"
    )
    with pytest.raises(ChatTemplateError, match=fixes):
        enc.chat_turns()
    folder, _ = mrcr_dir
    for task in ("ctx_mrcr_2", "mrcr_2needle"):
        with pytest.raises(TemplateRefused, match=f"^{task}: .*{fixes}") as refused:
            build_sample(get_task(task), ctx(enc, True, str(folder)), 8192, 0, 42)
        assert "\n" not in str(refused.value)
    assert build_sample(
        get_task("ctx_mrcr_2"), ctx(enc, False), 8192, 0, 42
    ).input_ids  # the plain transcript


def test_a_template_that_spells_bos_gets_no_second_one(sp_tokenizer, mrcr_dir):
    specials = {"bos_token": "<s>", "eos_token": "</s>"}
    spelled = with_template(sp_tokenizer, SPELLS_BOS, **specials)
    unspelled = with_template(sp_tokenizer, SPELLS_BOS.removeprefix("{{ bos_token }}"), **specials)
    bos = sp_tokenizer.bos_token_id
    assert spelled.prefix == (bos,) and spelled.chat_turns().start == "<s>[INST] "
    folder, _ = mrcr_dir
    official = get_task("mrcr_2needle")
    (length,) = [
        n
        for n in (1 << k for k in range(12, 18))
        if _rows_or_none(folder, spelled, n, 2048, chat=True)
    ][:1]
    for enc in (spelled, unspelled):
        for spec, at in ((get_task("ctx_mrcr_2"), 4096), (official, length)):
            s = build_sample(spec, ctx(enc, True, str(folder)), at, 0, 42)
            assert s.input_ids[0] == bos and s.input_ids.count(bos) == 1, (
                spec.name
            )  # one BOS, the first id
            # the rendering as the template writes it, tokenized whole: "[INST]" opens the text
            # unless BOS does
            assert s.text.removeprefix("<s>" if enc is spelled else "").startswith(
                "[INST] " + conv.PREAMBLE_HEAD
            )
            assert s.input_ids == enc.whole(s.text)


def test_byte_and_missing_templates(hf_tokenizer):
    byte = PieceEncoder(ByteTokenizer())
    head, tail = byte.chat_parts()
    turns = byte.chat_turns()
    assert (turns.start, turns.end) == (head, tail)
    bare = with_template(hf_tokenizer, "")
    with pytest.raises(ValueError, match="--chat-template off"):
        bare.chat_turns()
    with pytest.raises(
        TemplateRefused,
        match="^ctx_mrcr_4: the tokenizer has no chat template.*--chat-template off",
    ):
        build_sample(get_task("ctx_mrcr_4"), ctx(bare, True), 4096, 0, 42)


def test_turns_refuse_what_they_cannot_render_naming_the_fix():
    turns = conv.PLAIN
    with pytest.raises(
        ValueError, match="assistant message followed by a assistant.*: give a conversation whose"
    ):
        turns.between("assistant", "assistant")
    refusing = ChatTurns("[", "|", "|", None, "]")
    with pytest.raises(
        ValueError, match="user message followed by a user.*pass --chat-template off"
    ):
        refusing.render([("user", "a"), ("user", "b")])
    with pytest.raises(
        ValueError, match="starts and ends with a user message, not assistant ... user: give one"
    ):
        turns.pieces([("assistant", "a"), ("user", "b")])
    texts, contents = turns.pieces([("user", " a\n"), ("assistant", "b"), ("user", "c")])
    assert (texts, contents) == (
        ["User:\n", "\n\nAssistant:\n", "\n\nUser:\n", "\n\nAssistant:\n"],
        ["a", "b", "c"],
    )
    assert turns.render([("user", " a\n"), ("assistant", "b"), ("user", "c")]) == "".join(
        t + c for t, c in zip(texts, [*contents, ""])
    )


# ---------------------------------------------------------------- the writer


def test_requests_and_the_question_are_worded_as_openai_mrcrs_data():
    poem = next(f for f in conv.FORMS if f.name == "poem")
    email = next(f for f in conv.FORMS if f.name == "email")
    assert (
        conv.Request(email, "horses").text == "write a email about horses"
    )  # "a" before every form, as the data
    assert conv.question("aYooSG8CQg", 2, conv.Request(poem, "tapirs")) == (
        "Prepend aYooSG8CQg to the 2nd (1 indexed) poem about tapirs. Do not include any other "
        "text in your response."
    )
    assert [conv.ordinal(n) for n in (1, 2, 3, 4, 8, 11, 12, 13, 21, 22, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "8th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th"
    ]  # fmt: skip


def test_topics_are_plural_and_the_answers_read_with_them():
    """OpenAI MRCR's topics are mostly plural ("about horses", "records", "fields")."""
    topics = set(conv.topics())
    assert len(topics) > 5000 and all(
        t.endswith("s") and t.isascii() and t.isalpha() for t in topics
    )
    assert {"horses", "records", "fields", "canals", "berries", "boxes"} <= topics
    assert not {"childs", "leafs", "potatos", "mans", "sheeps", "analysises"} & topics
    words = ("canal", "berry", "day", "box", "church", "leaf", "class", "child")
    assert [conv.plural(w) for w in words] == [
        "canals", "berries", "days", "boxes", "churches", None, None, None
    ]  # fmt: skip
    rng = random.Random(5)
    heads = {f.name: conv.answer(rng, conv.Request(f, "horses"), conv.units()) for f in conv.FORMS}
    assert (
        heads["poem"].head == "Ode to the horses" and heads["email"].head == "Subject: About horses"
    )
    assert heads["story"].head == "Once upon a time there were some horses."
    assert heads["letter"].tail == "\nYours, a lover of horses"


def test_answers_come_from_the_haystack_the_run_is_given(hf_encoder, tmp_path):
    sentences = [
        f"The {w} keeper of station number {i} wrote careful notes every single evening."
        for i, w in enumerate(
            ("patient", "quiet", "tired", "cheerful", "careful", "elderly", "young", "busy") * 6
        )
    ]
    essay = tmp_path / "hay.txt"
    essay.write_text(" ".join(sentences))
    s = build_sample(
        get_task("ctx_mrcr_2"),
        BuildContext(hf_encoder, chat=False, essay_path=str(essay)),
        8192,
        0,
        1,
    )
    text = hf_encoder.decode(s.input_ids)
    assert "station number" in text and s.answers[0].count("station number") >= 1
    default = hf_encoder.decode(
        build_sample(get_task("ctx_mrcr_2"), ctx(hf_encoder, False), 8192, 0, 1).input_ids
    )
    assert "station number" not in default
    essay.write_text(
        " ".join(sentences[:20])
    )  # too few sentences to tell eight needle answers apart
    with pytest.raises(
        HaystackError, match=f"{essay} has 20 sentences .* needs 32: point --haystack at a longer"
    ):
        build_sample(
            get_task("ctx_mrcr_8"),
            BuildContext(hf_encoder, chat=False, essay_path=str(essay)),
            8192,
            0,
            1,
        )


@FEW
@given(seed=st.integers(0, 2**32))
def test_every_answer_fits_the_generation_budget(hf_encoder, seed):
    rng = random.Random(seed)
    pool = conv.topic_pool(rng)
    budget = get_task("ctx_mrcr_2").tokens_to_generate
    for _ in range(50):
        a = conv.answer(
            rng, conv.distractor_request(rng, conv.needle_request(rng, pool), pool), conv.units()
        )
        gold = conv.random_prefix(rng) + a.text
        assert gold.isascii() and len(a.text) <= conv.MAX_ANSWER_CHARS and len(gold) <= budget
        assert len(hf_encoder.encode_fresh([gold])[0]) <= budget
        assert re.fullmatch(r"[A-Za-z0-9]{10}", gold[:10])


# ---------------------------------------------------------------- the generated tasks


def ctx(encoder: PieceEncoder, chat: bool, data_dir: str | None = None) -> BuildContext:
    return BuildContext(encoder=encoder, chat=chat, data_dir=data_dir)


@FEW
@given(
    task=st.sampled_from(GENERATED),
    length=st.one_of(st.integers(1, 2000), st.integers(1, 16384)),
    index=st.integers(0, 10_000),
    seed=st.integers(0, 2**31),
    chat=st.booleans(),
)
def test_every_length_builds_within_one_turn_or_refuses(
    hf_encoder, task, length, index, seed, chat
):
    spec = get_task(task)
    try:
        s = build_sample(spec, ctx(hf_encoder, chat), length, index, seed)
    except TaskTooShort as exc:
        assert str(exc) and "\n" not in str(exc) and f"{length}" in str(exc)
        budget = f"its generation budget of {spec.tokens_to_generate} tokens fills it"
        assert budget in str(exc) or re.search(
            r"take [\d,]+ tokens, [\d,]+ more than the length; choose", str(exc)
        )
        return
    used = len(s.input_ids) + spec.tokens_to_generate
    assert length - UNIT < used <= length


def user_messages(text: str, chat: bool) -> list[tuple[str, str]]:
    """The conversation back from a ChatML or plain prompt: (user request, assistant answer) pairs,
    in order."""
    if chat:
        parts = re.findall(r"<\|im_start\|>(user|assistant)\n(.*?)<\|im_end\|>", text, flags=re.S)
    else:
        parts = re.findall(
            r"(User|Assistant):\n(.*?)(?=\n\n(?:User|Assistant):\n)", text, flags=re.S
        )
    return [(role.lower(), content) for role, content in parts]


@pytest.mark.parametrize("chat", [False, True])
@pytest.mark.parametrize("task", GENERATED)
def test_a_conversation_hides_n_identical_requests_and_asks_for_the_ith(
    hf_encoder, hf_tokenizer, task, chat
):
    n = int(task.rsplit("_", 1)[1])
    s = build_sample(get_task(task), ctx(hf_encoder, chat), 8192, 5, 42)
    text = hf_encoder.decode(s.input_ids)
    messages = user_messages(text, chat)
    assert messages[0][1].startswith(conv.PREAMBLE_HEAD + "\n" + conv.EXAMPLE_START)
    pairs = list(zip(messages[1::2], messages[2::2]))
    assert all(u[0] == "user" and a[0] == "assistant" for u, a in pairs)
    needles = [a[1] for u, a in pairs if u[1] == s.meta["request"]]
    assert len(needles) == n == len(set(needles)) and len(pairs) == s.meta["turns"]
    prefix = s.meta["random_string"]
    assert s.answers == (prefix + needles[s.meta["nth"] - 1], prefix)
    kind = s.meta["request"].removeprefix("write a ")
    question = (
        f"Prepend {prefix} to the {conv.ordinal(s.meta['nth'])} (1 indexed) {kind}. Do not include"
    )
    ending = "<|im_start|>assistant\n" if chat else "\n\nAssistant:\n"
    assert question in text and text.endswith(ending)
    # the examples end at a newline: the template keeps it, the plain transcript leaves one blank
    # line, not two
    between = "\n<|im_end|>\n<|im_start|>user\n" if chat else "\n\nUser:\n"
    assert f"======END EXAMPLE======{between}write a " in text and "\n\n\n" not in text
    assert score_prediction("mrcr_ratio", s.answers[0], s.answers, None, chat)[0] == 1.0
    for offset, needle in zip(
        s.meta["needle_offsets"], needles
    ):  # the answers sit where the meta says
        assert hf_encoder.decode(s.input_ids[offset:]).startswith(needle)
    bounds = [
        k * s.meta["turns"] // n for k in range(n + 1)
    ]  # the k-th needle in the k-th of n equal stretches
    assert all(bounds[k] <= t - 1 < bounds[k + 1] for k, t in enumerate(s.meta["needle_turns"]))
    again = hf_tokenizer(text, add_special_tokens=False)["input_ids"]
    assert abs(len(again) - len(s.input_ids)) <= 2
    if chat:  # the template renders the conversation to the same text
        rendered = hf_tokenizer.apply_chat_template(
            [{"role": r, "content": c} for r, c in messages],
            add_generation_prompt=True,
            tokenize=False,
        )
        assert rendered == text


def test_examples_open_the_first_request_where_two_user_messages_are_refused(hf_tokenizer):
    enc = with_template(hf_tokenizer, ALTERNATING)
    s = build_sample(get_task("ctx_mrcr_4"), ctx(enc, True), 4096, 0, 42)
    text = enc.decode(s.input_ids)
    assert s.meta["examples"] == "in the first request's message"
    assert (
        text.startswith("[INST] " + conv.PREAMBLE_HEAD)
        and "======END EXAMPLE======\nwrite a " in text
    )
    users = re.findall(r"\[INST\] (.*?) \[/INST\]", text, flags=re.S)
    answers = re.findall(r"\[/INST\] (.*?)</s>", text, flags=re.S)
    messages = [m for pair in zip(users, answers) for m in pair] + [users[-1]]
    rendered = enc.raw.tok.apply_chat_template(
        [{"role": ("user", "assistant")[i % 2], "content": c} for i, c in enumerate(messages)],
        add_generation_prompt=True,
        tokenize=False,
    )
    assert rendered == text


def test_same_inputs_same_prompt_another_seed_another(hf_encoder):
    spec = get_task("ctx_mrcr_8")
    a, b = (build_sample(spec, ctx(hf_encoder, True), 4096, 3, 42) for _ in range(2))
    assert a.digest() == b.digest()
    assert build_sample(spec, ctx(hf_encoder, True), 4096, 3, 7).digest() != a.digest()


def test_a_million_tokens_fill_to_within_one_turn(hf_encoder):
    s = build_sample(get_task("ctx_mrcr_8"), ctx(hf_encoder, True), 1 << 20, 0, 42)
    assert (
        (1 << 20) - UNIT < len(s.input_ids) + get_task("ctx_mrcr_8").tokens_to_generate <= 1 << 20
    )
    assert s.meta["turns"] > 5000


# ---------------------------------------------------------------- OpenAI MRCR's files


@pytest.fixture(scope="module")
def mrcr_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, object]]]:
    folder = tmp_path_factory.mktemp("mrcr_data")
    return folder, write_mrcr(folder)


@pytest.mark.parametrize("chat", [False, True])
def test_an_official_row_is_rendered_as_the_template_renders_it(
    hf_encoder, hf_tokenizer, mrcr_dir, chat
):
    folder, rows = mrcr_dir
    spec = get_task("mrcr_2needle")
    built = 0
    for length in (4096, 8192, 16384):
        chosen = _rows_or_none(folder, hf_encoder, length, spec.tokens_to_generate, chat=chat)
        for i in range(len(chosen)):
            s = build_sample(spec, ctx(hf_encoder, chat, str(folder)), length, i, 42)
            (row,) = [r for r in rows if r["answer"] == s.answers[0]]
            messages = json.loads(str(row["prompt"]))
            if chat:
                want = hf_tokenizer.apply_chat_template(
                    messages, add_generation_prompt=True, tokenize=False
                )
            else:
                want = conv.PLAIN.render([(m["role"], m["content"]) for m in messages])
            assert hf_encoder.decode(s.input_ids) == want == s.text
            assert s.answers == (row["answer"], row["random_string_to_prepend"])
            if not chat:  # the examples end at a newline: the plain transcript trims it
                assert (
                    want.count("======END EXAMPLE======\n\nUser:\nwrite a ") == 1
                    and "\n\n\n" not in want
                )
            assert (
                length // 2 < len(s.input_ids) + spec.tokens_to_generate <= length
            )  # the length's bin
            built += 1
    assert built == len(rows)


def test_every_row_falls_in_one_power_of_two_bin(hf_encoder, mrcr_dir):
    folder, rows = mrcr_dir
    gen = get_task("mrcr_2needle").tokens_to_generate
    binned = [
        i
        for length in (1 << k for k in range(10, 16))
        for i in _rows_or_none(folder, hf_encoder, length, gen)
    ]
    assert sorted(binned) == list(range(len(rows)))


def _rows_or_none(
    folder: Path, enc: PieceEncoder, length: int, gen: int, needles: int = 2, chat: bool = False
) -> tuple[int, ...]:
    try:
        return rows_for(str(folder), needles, enc, chat, length, gen)
    except TaskTooShort as exc:  # by design: the data covers other lengths
        assert (
            f"no row at length {length}" in str(exc)
            and "--lengths" in str(exc)
            and "\n" not in str(exc)
        )
        return ()


def test_a_length_without_rows_is_skipped_naming_the_lengths_that_have_them(hf_encoder, mrcr_dir):
    folder, _ = mrcr_dir
    gen = get_task("mrcr_2needle").tokens_to_generate
    have = [n for n in (1 << k for k in range(10, 17)) if _rows_or_none(folder, hf_encoder, n, gen)]
    with pytest.raises(
        TaskTooShort, match=r"no row at length 131072: .*can only be at --lengths ([\dk]+,)*[\dk]+$"
    ) as e:
        build_sample(get_task("mrcr_2needle"), ctx(hf_encoder, False, str(folder)), 131072, 0, 42)
    named = str(e.value).rsplit("--lengths ", 1)[1].split(",")
    assert e.value.cause == "too_short" and {f"{n // 1024}k" for n in have} <= set(named)


def test_samples_are_the_bins_rows_in_a_seeded_order(hf_encoder, mrcr_dir):
    folder, _ = mrcr_dir
    spec = get_task("mrcr_2needle")
    c = ctx(hf_encoder, True, str(folder))
    pool = spec.pool_size(c, 8192)
    assert pool == len(rows_for(str(folder), 2, hf_encoder, True, 8192, spec.tokens_to_generate))
    seen = {build_sample(spec, c, 8192, i, 42).meta["row"] for i in range(pool)}
    assert len(seen) == pool  # each row of the bin once
    orders = [
        [build_sample(spec, c, 8192, i, seed).meta["row"] for i in range(pool)]
        for seed in (42, 7, 42)
    ]
    assert orders[0] == orders[2] and sorted(orders[0]) == sorted(orders[1])


def test_the_first_releases_single_file_is_read_too(hf_encoder, tmp_path):
    (row,) = write_mrcr(tmp_path, needles=4, sizes=(8,), files=1)
    numbered = tmp_path / "mrcr" / "4needle" / "4needle_0.parquet"
    numbered.rename(tmp_path / "mrcr" / "4needle.parquet")
    (tmp_path / "mrcr" / "4needle").rmdir()
    spec, c = get_task("mrcr_4needle"), ctx(hf_encoder, False, str(tmp_path))
    (length,) = [
        n
        for n in (4096, 8192, 16384)
        if _rows_or_none(tmp_path, hf_encoder, n, spec.tokens_to_generate, 4)
    ]
    s = build_sample(spec, c, length, 0, 42)
    assert s.answers[0] == row["answer"] and s.meta["data_file"].endswith("mrcr/4needle.parquet")


def test_without_the_files_the_case_is_skipped_naming_the_length(hf_encoder, tmp_path):
    for data_dir in (None, str(tmp_path)):
        with pytest.raises(
            DataNotGiven, match=r"mrcr/8needle/\*\.parquet.*length 16384.*ctx_mrcr_8"
        ):
            build_sample(get_task("mrcr_8needle"), ctx(hf_encoder, True, data_dir), 16384, 0, 42)


def test_a_template_that_refuses_two_user_messages_cannot_render_official_rows(
    hf_tokenizer, mrcr_dir
):
    folder, _ = mrcr_dir
    enc = with_template(hf_tokenizer, ALTERNATING)
    with pytest.raises(TemplateRefused, match="two user messages in a row.*--chat-template off"):
        build_sample(get_task("mrcr_2needle"), ctx(enc, True, str(folder)), 8192, 0, 42)


def _write_rows(tmp_path: Path, rows: list[dict[str, object]]) -> str:
    import datasets

    target = tmp_path / "mrcr" / "2needle"
    target.mkdir(parents=True)
    datasets.Dataset.from_list(rows).to_parquet(str(target / "2needle_0.parquet"))
    return str(tmp_path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.pop("answer"), r"has no column answer .*2needle/ parquet files"),
        (
            lambda r: r.update(prompt="[{"),
            r"2needle_0\.parquet: row 1: field prompt is not valid JSON",
        ),
        (
            lambda r: r.update(prompt='[{"role": "model", "content": "x"}]'),
            r"row 1: field prompt, message 0, is not",
        ),
        (
            lambda r: r.update(prompt='[{"role": "assistant", "content": "x"}]'),
            r"does not start and end with a user",
        ),
        (lambda r: r.update(n_needles=4), r"row 1 has n_needles 4 in the 2needle files"),
        (
            lambda r: r.update(
                prompt=json.dumps(
                    [
                        {"role": "user", "content": "x"},
                        *[{"role": "assistant", "content": "y"}] * 2,
                        {"role": "user", "content": "z"},
                    ]
                )
            ),  # noqa: E501
            r"row 1: field prompt, messages 1 and 2, are two assistant messages in a row",
        ),
    ],
)
def test_malformed_files_name_the_file_row_field_and_fix(hf_encoder, tmp_path, change, message):
    row = official_row(random.Random(1), 2, 30)
    change(row)
    data_dir = _write_rows(tmp_path, [row])
    with pytest.raises(DataUnavailable, match=message) as refused:
        build_sample(get_task("mrcr_2needle"), ctx(hf_encoder, False, data_dir), 8192, 0, 42)
    assert "\n" not in str(refused.value) and "openai/mrcr" in str(refused.value)


@FEW
@given(
    length=st.one_of(st.integers(1, 3000), st.integers(1, 40_000)),
    index=st.integers(0, 100),
    chat=st.booleans(),
)
def test_official_rows_at_every_length_fit_or_refuse(hf_encoder, mrcr_dir, length, index, chat):
    folder, _ = mrcr_dir
    spec = get_task("mrcr_2needle")
    try:
        s = build_sample(spec, ctx(hf_encoder, chat, str(folder)), length, index, 42)
    except Refusal as exc:
        assert isinstance(exc, (TaskTooShort, DataNotGiven)) and str(exc) and "\n" not in str(exc)
        return
    assert length // 2 < len(s.input_ids) + spec.tokens_to_generate <= length
