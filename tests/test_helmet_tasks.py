"""HELMET application tasks on the shipped fixture data: where the gold sits, what truncation keeps,
the demos."""

from __future__ import annotations

import pytest

from ctxgate.run.samples import build_samples
from ctxgate.sources.icl import load_icl
from ctxgate.sources.kilt import load_msmarco, load_rag
from ctxgate.tasks import BuildContext, get_task, icl, longqa, rag, rerank
from ctxgate.tasks.build import build_sample
from tests.conftest import HELMET_DATA

RAG = ["kilt_nq", "kilt_triviaqa", "kilt_popqa"]
ICL = ["icl_trec_coarse", "icl_trec_fine", "icl_banking77", "icl_clinic150", "icl_nlu"]


@pytest.fixture(scope="module")
def ctx(hf_encoder) -> BuildContext:
    return BuildContext(encoder=hf_encoder, chat=False, data_dir=str(HELMET_DATA))


@pytest.fixture
def long_ctx(hf_encoder, helmet_data_long) -> BuildContext:
    """The fixtures with long documents: InfiniteBench keeps books of at least 65536 tokens
    (HELMET's selection)."""
    return BuildContext(encoder=hf_encoder, chat=False, data_dir=str(helmet_data_long))


def text_of(ctx: BuildContext, sample) -> str:
    return ctx.encoder.decode(sample.input_ids)


@pytest.mark.parametrize("task", RAG)
@pytest.mark.parametrize("length", [1024, 2048])
def test_rag_gold_at_six_depths_of_the_same_question(ctx, task, length):
    samples = build_samples(get_task(task), ctx, length, 6, 42)
    pool = load_rag(task, str(HELMET_DATA))
    assert len({s.meta["question_id"] for s in samples}) == 1  # i // 6: one question, six depths
    for copy, s in enumerate(samples):
        k = s.meta["num_passages"]
        item = next(i for i in pool.items if i.key == s.meta["question_id"])
        prompt = text_of(ctx, s)
        shown = [b for b in prompt.split("\n\n") if b.startswith("Document (Title:")][-k:]
        gold = rag.passage_text(item.gold[0])
        assert (
            shown.index(gold) + 1
            == s.meta["gold_positions"][0]
            == round(rag.DEPTHS[copy] * (k - 1)) + 1
        )
        assert all(b == gold or b in {rag.passage_text(p) for p in item.distractors} for b in shown)
    assert [s.meta["gold_positions"][0] for s in samples][0] == 1  # depth 0 is the first passage
    assert (
        samples[-1].meta["gold_positions"][0] == samples[-1].meta["num_passages"]
    )  # depth 1 is the last


def test_hotpotqa_two_golds_in_three_permutations(ctx):
    samples = build_samples(get_task("kilt_hotpotqa"), ctx, 2048, 3, 42)
    orders = []
    for s in samples:
        prompt = text_of(ctx, s)
        item = next(
            i
            for i in load_rag("kilt_hotpotqa", str(HELMET_DATA)).items
            if i.key == s.meta["question_id"]
        )
        shown = [b for b in prompt.split("\n\n") if b.startswith("Document (Title:")][
            -s.meta["num_passages"] :
        ]
        assert sorted(shown.index(rag.passage_text(g)) + 1 for g in item.gold) == sorted(
            s.meta["gold_positions"]
        )
        orders.append(tuple(shown))
    assert len(set(orders)) == 3 and len({frozenset(o) for o in orders}) == 1


def test_popqa_keeps_only_long_tail_entities():
    pool = load_rag("kilt_popqa", str(HELMET_DATA))
    assert pool.items and all(
        not i.key.endswith(("_0", "_5")) for i in pool.items
    )  # every 5th is popular


@pytest.mark.parametrize("task", RAG + ["kilt_hotpotqa"])
def test_rag_truncation_keeps_instruction_demos_and_question(ctx, task):
    short, long = (build_samples(get_task(task), ctx, L, 1, 42)[0] for L in (1024, 2048))
    assert short.meta["num_passages"] < long.meta["num_passages"]
    for s in (short, long):
        prompt = text_of(ctx, s)
        question = next(
            i for i in load_rag(task, str(HELMET_DATA)).items if i.key == s.meta["question_id"]
        ).question
        assert prompt.lstrip("<s> ").startswith(rag.INSTRUCTION.strip()[:40])
        assert prompt.endswith(f"\n\nQuestion: {question}\nAnswer:")
        assert (
            prompt.count("\nAnswer: ") == 2 + 1
        )  # two whole demos with their answers (+ the format line)
    assert short.meta["demo_ids"] == long.meta["demo_ids"]


@pytest.mark.parametrize("task", RAG + ["kilt_hotpotqa"])
def test_rag_demos_are_seeded_and_never_the_question(ctx, task):
    a = build_samples(get_task(task), ctx, 1024, 12, 42)
    b = build_samples(get_task(task), ctx, 1024, 12, 42)
    assert [s.meta["demo_ids"] for s in a] == [s.meta["demo_ids"] for s in b]
    for s in a:
        assert len(s.meta["demo_ids"]) == 2 and s.meta["question_id"] not in s.meta["demo_ids"]
    other = build_samples(get_task(task), ctx, 1024, 12, 7)
    assert [s.meta["demo_ids"] for s in other] != [s.meta["demo_ids"] for s in a]


def test_rerank_balanced_labels_three_orders_and_judgments(ctx):
    samples = build_samples(get_task("msmarco_rerank"), ctx, 2048, 3, 42)
    pool = load_msmarco(str(HELMET_DATA))
    assert len({s.meta["qid"] for s in samples}) == 1
    orders = [tuple(s.meta["shown_ids"]) for s in samples]
    assert len(set(orders)) == 3 and len({frozenset(o) for o in orders}) == 1
    for s in samples:
        counts = s.meta["labels"].values()
        assert max(counts) - min(counts) <= 1  # round-robin over labels
        labels = {
            p.pid: p.label
            for item in pool.items
            for p in item.distractors
            if item.key == s.meta["qid"]
        }
        assert sorted(s.answers) == sorted(f"{pid}:{labels[pid]}" for pid in s.meta["shown_ids"])
        prompt = text_of(ctx, s)
        shown = [
            b.split("]")[0].removeprefix("[ID: ")
            for b in prompt.split("\n\n")
            if b.startswith("[ID: ")
        ]
        assert shown[-len(s.meta["shown_ids"]) :] == s.meta["shown_ids"]
        assert "most relelvant" in prompt and prompt.endswith("\nRanking:")
        assert s.meta["qid"] not in s.meta["demo_ids"]


@pytest.mark.parametrize("task", ["msmarco_rerank", "infbench_qa", "infbench_mc"])
def test_same_seed_same_prompts_and_demos(ctx, long_ctx, task):
    ctx = long_ctx if task.startswith("infbench") else ctx
    a, b = (build_samples(get_task(task), ctx, 1024, 3, 42) for _ in range(2))
    assert [s.digest() for s in a] == [s.digest() for s in b]
    assert [s.meta["demo_ids"] for s in a] == [s.meta["demo_ids"] for s in b]


def test_rerank_shorter_length_drops_passages_not_demos(ctx):
    short, long = (
        build_samples(get_task("msmarco_rerank"), ctx, L, 1, 42)[0] for L in (1024, 2048)
    )
    assert short.meta["num_passages"] < long.meta["num_passages"]
    assert short.meta["demo_ids"] == long.meta["demo_ids"]
    assert text_of(ctx, short).count("\nRanking: ") == 2 + 1


@pytest.mark.parametrize("task", ICL)
def test_icl_rounds_mapping_and_question_last(ctx, task):
    data = load_icl(task, str(HELMET_DATA), 42)
    s = build_samples(get_task(task), ctx, 2048, 1, 42)[0]
    prompt = text_of(ctx, s)
    body, question = prompt.rsplit("\n\n", 1)
    demos = body.split("\n\n")[1:]
    assert len(demos) == s.meta["shots"] <= s.meta["shots_target"]
    mapped = [d.rsplit("\nlabel: ", 1)[1] for d in demos]
    n = data.num_labels
    for r in range(len(mapped) // n):  # every full round shows each (remapped) label once
        assert sorted(mapped[r * n : (r + 1) * n], key=int) == [str(i) for i in range(n)]
    text, label = next((t, lab) for t, lab in data.test if question.startswith(t))
    assert question == f"{text}\nlabel:" and s.answers == (str(s.meta["mapped_label"]),)
    assert s.meta["label"] == label
    assert all(d.rsplit("\nlabel: ", 1)[0] != text for d in demos)  # the test item is never a demo
    assert prompt.lstrip("<s> ").startswith(
        "Use the provided mapping from the text to label to assign a label to "
        'the text. Only output "label: {label}" and nothing else. \n\n'
    )


@pytest.mark.parametrize("task", ICL)
def test_icl_demos_nest_across_lengths_and_follow_the_seed(ctx, task):
    short, long = (build_samples(get_task(task), ctx, L, 2, 42)[1] for L in (1024, 2048))
    assert text_of(ctx, long).startswith(
        text_of(ctx, short).rsplit("\n\n", 1)[0]
    )  # a prefix of the longer
    assert short.answers == long.answers
    other = build_samples(get_task(task), ctx, 1024, 2, 7)[1]
    assert text_of(ctx, other) != text_of(ctx, short)


def test_icl_test_items_are_label_balanced(ctx):
    data = load_icl("icl_trec_coarse", str(HELMET_DATA), 42)
    labels = [
        data.test[i][1] for i in icl.balanced_order("icl_trec_coarse", str(HELMET_DATA), 42)[:30]
    ]
    assert all(labels.count(lab) == 5 for lab in range(6))


def test_icl_shot_targets_follow_helmets_table():
    assert (
        icl.target_shots("icl_banking77", 8192) == 360
        and icl.target_shots("icl_nlu", 131072) == 8296
    )
    assert icl.target_shots("icl_trec_coarse", 2048) == 100  # proportional below 4K
    assert icl.target_shots("icl_trec_fine", 12288) == 600  # linear between 8K (400) and 16K (800)


@pytest.mark.parametrize("task", ["infbench_qa", "infbench_mc"])
def test_infbench_cuts_only_the_story(long_ctx, task):
    ctx = long_ctx
    for length in (512, 2048):
        s = build_samples(get_task(task), ctx, length, 1, 42)[0]
        prompt = text_of(ctx, s)
        assert s.meta["truncated"] and " ... [the rest of the text is omitted]" in prompt
        head = longqa.MC_INSTRUCTION if task == "infbench_mc" else longqa.QA_INSTRUCTION
        assert prompt.lstrip("<s> ").startswith(head + "For example:\n\n[story text]\nQuestion: ")
        assert "\n\nNow, read the following story:\n\nChapter One." in prompt
        assert prompt.endswith("\n\nAnswer:")
        assert len(s.input_ids) + get_task(task).tokens_to_generate == length
        assert s.meta["book_id"] not in s.meta["demo_ids"]


def test_infbench_mc_gold_letter_names_the_right_option(long_ctx):
    ctx = long_ctx
    for s in build_samples(get_task("infbench_mc"), ctx, 1024, 3, 42):
        letter, full = s.answers
        prompt = text_of(ctx, s)
        assert f"\n{full}\n" in prompt or prompt.endswith(f"\n{full}\n\nAnswer:")
        assert full.startswith(f"{letter}. ")


def test_missing_data_names_the_flag(hf_encoder):
    from ctxgate.sources import DataNotGiven

    bare = BuildContext(encoder=hf_encoder, chat=False)
    with pytest.raises(DataNotGiven, match="--data-dir"):
        build_samples(get_task("kilt_nq"), bare, 2048, 1, 42)
    with pytest.raises(
        DataNotGiven, match="icl/nlu/train.jsonl does not exist.*never downloads.*--data-dir"
    ):
        build_samples(get_task("icl_nlu"), bare, 2048, 1, 42)


def test_longqa_uses_the_chat_template_under_the_task_policy(hf_encoder):
    from ctxgate.tasks.build import task_context

    by_task = BuildContext(
        encoder=hf_encoder, chat=False, data_dir=str(HELMET_DATA), chat_by_task=True
    )
    assert task_context(get_task("infbench_qa"), by_task).chat is True
    assert task_context(get_task("kilt_nq"), by_task).chat is False
    assert rerank.ANSWER_PREFIX == "Ranking:"


def test_chat_prompts_end_where_each_paper_ends_them(hf_encoder, hf_tokenizer, helmet_data_long):
    """HELMET: the prompt ends at the generation prompt (add_generation_prompt=True, no assistant
    text); RULER: the answer prefix follows the generation prompt (its model templates end with
    `{answer_prefix}`)."""
    from ctxgate.tasks.build import task_context

    chat = BuildContext(
        encoder=hf_encoder, chat=False, data_dir=str(HELMET_DATA), chat_by_task=True
    )
    generation_prompt = hf_tokenizer.apply_chat_template(
        [{"role": "user", "content": "x"}], tokenize=False, add_generation_prompt=True
    ).split("x", 1)[1]
    for task in ("infbench_qa", "kilt_nq", "icl_trec_coarse", "json_kv"):
        on = BuildContext(encoder=hf_encoder, chat=True, data_dir=str(helmet_data_long))
        prompt = hf_encoder.decode(build_sample(get_task(task), on, 8192, 0, 42).input_ids)
        assert prompt.endswith(generation_prompt), (task, prompt[-80:])
    (niah,) = build_samples(get_task("niah_single_1"), chat, 2048, 1, 42)
    assert (
        task_context(get_task("niah_single_1"), chat).chat is True
    )  # RULER wraps every task for chat models
    prompt = hf_encoder.decode(niah.input_ids)
    assert prompt.endswith(generation_prompt + niah.answer_prefix.format())
    assert prompt.startswith("<|im_start|>user\n")
    off = BuildContext(encoder=hf_encoder, chat=False, data_dir=str(HELMET_DATA))
    assert hf_encoder.decode(
        build_samples(get_task("kilt_nq"), off, 8192, 1, 42)[0].input_ids
    ).endswith("\nAnswer:")


def test_helmet_recall_reads_helmets_own_ruler_files_in_helmets_order(ctx):
    """HELMET's load_ruler: its template, the answer prefix after `?\\n`, the context's end cut to
    fit, records in the order of datasets' shuffle(seed)."""
    import datasets

    from ctxgate.sources.helmet_files import load_ruler_file, order

    assert (
        list(order(6, 42))
        == datasets.Dataset.from_dict({"i": list(range(6))}).shuffle(seed=42)["i"]
    )
    records = load_ruler_file("helmet_multikey_2", str(HELMET_DATA), 1024).records
    for index in range(2):
        s = build_samples(get_task("helmet_multikey_2"), ctx, 1024, 2, 42)[index]
        record = records[order(6, 42)[index]]
        text = text_of(ctx, s)
        head = (
            "A special magic numbers is hidden within the following text. Make sure to memorize "
            "it. I will quiz "
            "you about the numbers afterwards.\n"
        )
        tail = (
            f"\nWhat is the special magic numbers for {record.query} mentioned in the provided "
            "text?\n"
            f"The special magic numbers for {record.query} mentioned in the provided text is"
        )
        assert text.startswith(head) and text.endswith(tail)
        assert record.context.startswith(text[len(head) : -len(tail)]) and s.meta["context_cut"]
        assert len(s.input_ids) + 50 <= 1024 and s.answers == record.answers
    mv = text_of(ctx, build_samples(get_task("helmet_multivalue"), ctx, 2048, 1, 42)[0])
    assert mv.startswith("Some special magic numbers are hidden") and mv.endswith(
        "mentioned in the provided text are"
    )


def test_recall_uses_helmets_files_when_they_ran_else_the_ruler_cases():
    from ctxgate.gate.summaries import helmet_recall

    ruler = {
        "json_kv": 50.0,
        "niah_multikey_2": 10.0,
        "niah_multikey_3": 20.0,
        "niah_multivalue": 30.0,
    }
    assert set(helmet_recall(ruler).members) == set(ruler)
    own = {**ruler, "helmet_multikey_2": 90.0, "helmet_multikey_3": 80.0, "helmet_multivalue": 70.0}
    recall = helmet_recall(own)
    assert set(recall.members) == {
        "json_kv",
        "helmet_multikey_2",
        "helmet_multikey_3",
        "helmet_multivalue",
    }
    assert recall.score == 72.5


def test_multi_lexsum_key_points_come_from_helmets_released_file():
    from ctxgate.sources.judged import load_multi_lexsum

    data = load_multi_lexsum(str(HELMET_DATA))
    assert all(d.keypoints and d.keypoints[0].startswith("Key point 1: ") for d in data.items)


def test_long_document_tasks_keep_helmets_long_documents_only(hf_encoder, helmet_data_long):
    """NarrativeQA keeps documents over 131072 tokens, Multi-LexSum cases of at least 65536
    (HELMET's selection): the shipped short documents are dropped, and every kept one is cut at
    every length."""
    from ctxgate.run.samples import samples_to_run
    from ctxgate.sources.errors import DataUnavailable
    from ctxgate.sources.judged import load_multi_lexsum, load_narrativeqa

    short = BuildContext(encoder=hf_encoder, chat=False, data_dir=str(HELMET_DATA))
    for task in ("narrativeqa", "multi_lexsum"):
        with pytest.raises(DataUnavailable, match="HELMET's selection.*--long-documents"):
            build_samples(get_task(task), short, 4096, 1, 42)
    long = BuildContext(encoder=hf_encoder, chat=False, data_dir=str(helmet_data_long))
    nqa_keys = {d.key for d in load_narrativeqa(str(helmet_data_long)).items[:3]}
    lex_keys = {d.key for d in load_multi_lexsum(str(helmet_data_long)).items[:3]}
    for task, keys in (("narrativeqa", nqa_keys), ("multi_lexsum", lex_keys)):
        assert samples_to_run(get_task(task), long, 2048, 100) == 3
        for length in (2048, 4096):
            samples = build_samples(get_task(task), long, length, 3, 42)
            assert {s.meta["item_id"] for s in samples} == keys and all(
                s.meta["truncated"] for s in samples
            )


def test_token_count_stops_as_soon_as_it_knows(hf_encoder):
    from ctxgate.tasks.selection import has_tokens

    text = "The village talked about Mara and Tobin for many weeks afterwards. " * 4000
    (ids,) = hf_encoder.encode_fresh([text])
    assert has_tokens(hf_encoder, text, len(ids)) and not has_tokens(hf_encoder, text, len(ids) + 1)
    assert not has_tokens(
        hf_encoder, "short", 6
    )  # fewer bytes than tokens asked: no tokenizing at all


def test_helmet_selection_counts_in_the_helmet_tokenizer_when_given(hf_encoder, tmp_path):
    """A 70 KB book is about 20K pieces of the shipped tokenizer (dropped: HELMET keeps at least
    65536) and 70K bytes (kept when the selection counts bytes): the tokenizer HELMET counts in
    decides, and the refusal names it."""
    import json
    import shutil

    from ctxgate.sources import DataNotGiven
    from ctxgate.tokens.codec import PieceEncoder
    from tests.scripted import ByteTokenizer

    shutil.copytree(HELMET_DATA / "infbench", tmp_path / "infbench")
    path = tmp_path / "infbench" / "longbook_qa_eng.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    rows[2]["context"] += " More." * 12_000
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    model = BuildContext(encoder=hf_encoder, chat=False, data_dir=str(tmp_path))
    with pytest.raises(
        DataNotGiven, match=r"at least 65536 tokens.*counted in the model's tokenizer"
    ):
        build_samples(get_task("infbench_qa"), model, 2048, 1, 42)
    helmet = BuildContext(
        encoder=hf_encoder,
        chat=False,
        data_dir=str(tmp_path),
        helmet_encoder=PieceEncoder(ByteTokenizer()),
        helmet_tokenizer="bytes",
    )
    (sample,) = build_samples(get_task("infbench_qa"), helmet, 2048, 1, 42)
    assert sample.meta["book_id"] == str(rows[2]["id"])


def test_a_helmet_tokenizer_that_is_no_tokenizer_is_refused_in_one_line(pytester):
    from tests.conftest import TINY

    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    result = pytester.runpytest("--model", str(TINY), "--helmet-tokenizer", str(pytester.path))
    assert result.ret == 4
    line = [x for x in result.stderr.lines if "--helmet-tokenizer" in x]
    assert len(line) == 1 and "no tokenizer_config.json" in line[0] and "Llama-2-7b-hf" in line[0]


@pytest.mark.parametrize(
    "task", ["infbench_qa", "infbench_mc", "infbench_sum", "narrativeqa", "multi_lexsum"]
)
def test_a_long_document_task_runs_each_kept_document_once(long_ctx, task):
    """Asked for more samples than HELMET's selection keeps, a case runs each kept document once
    (never a repeat)."""
    from ctxgate.run.samples import samples_to_run

    n = samples_to_run(get_task(task), long_ctx, 2048, 100)
    ids = [
        s.meta.get("book_id") or s.meta["item_id"]
        for s in build_samples(get_task(task), long_ctx, 2048, n, 42)
    ]
    assert 2 <= n < 6 and len(set(ids)) == n
