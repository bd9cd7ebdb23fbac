"""At the lengths HELMET ships files for, the suite's prompts are HELMET's, byte for byte after
decoding.

The expected prompts are written here from HELMET's rules (data.py at HEAD), not with the suite's
code: the question sample is ``random.seed(42); random.sample(sorted(keys), 100)`` over the file's
keys, in file order; the demos of a question come from ``datasets``' ``shuffle(seed=sha256(key) %
2**31)`` of the demo file with repeated keys dropped; the templates are HELMET's strings. Chat
prompts are the tokenizer's chat template over one user turn with the generation prompt and nothing
after it.
"""

from __future__ import annotations

import hashlib
import json
import math
import random

import datasets
import numpy as np
import pytest

from ctxgate.run.samples import build_samples
from ctxgate.tasks import BuildContext, get_task
from ctxgate.tasks.build import build_sample
from ctxgate.tokens.codec import PieceEncoder
from ctxgate.tokens.tokenizers import HFTokenizer
from tests.conftest import HELMET_DATA

L = 8192
RAG = {
    "kilt_nq": ("nq-dev-multikilt_1000_k50_dep6.jsonl", "nq-train-multikilt_1000_k3_dep6.jsonl"),
    "kilt_triviaqa": (
        "triviaqa-dev-multikilt_1000_k50_dep6.jsonl",
        "triviaqa-train-multikilt_1000_k3_dep6.jsonl",
    ),
    "kilt_hotpotqa": (
        "hotpotqa-dev-multikilt_1000_k50_dep3.jsonl",
        "hotpotqa-train-multikilt_1000_k3_dep3.jsonl",
    ),
    "kilt_popqa": (
        "popqa_test_1000_k50_dep6.jsonl",
        "popqa_test_1000_k3_dep6.jsonl",
    ),  # HELMET HEAD's config
}


def lines(path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def helmet_sample(rows: list[dict], key: str) -> list[dict]:
    random.seed(42)
    keys = random.sample(sorted({r[key] for r in rows}), min(100, len({r[key] for r in rows})))
    return [r for r in rows if r[key] in keys]


def helmet_demos(demo_rows: list[dict], key: str, value: str) -> list[dict]:
    h = int(hashlib.sha256(str(value).encode("utf-8")).hexdigest(), 16) % 2**31
    out, seen = [], set()
    for d in datasets.Dataset.from_list(demo_rows).shuffle(seed=h):
        if d[key] not in seen:
            seen.add(d[key])
            out.append(d)
    return out[:2]


def wrap(hf_tokenizer, user: str, completion: str, chat: bool) -> str:
    if not chat:
        return user + "\n" + completion
    return hf_tokenizer.apply_chat_template(
        [{"role": "user", "content": user}], tokenize=False, add_generation_prompt=True
    )


def suite_prompts(hf_encoder, task: str, chat: bool, n: int) -> list[str]:
    ctx = BuildContext(encoder=hf_encoder, chat=chat, data_dir=str(HELMET_DATA))
    return [hf_encoder.decode(s.input_ids) for s in build_samples(get_task(task), ctx, L, n, 42)]


@pytest.mark.parametrize("chat", [False, True], ids=["completion", "chat"])
@pytest.mark.parametrize("task", sorted(RAG))
def test_rag_prompts_are_helmets(hf_encoder, hf_tokenizer, task, chat):
    test_file, demo_file = RAG[task]
    rows, demo_rows = (
        lines(HELMET_DATA / "kilt" / test_file),
        lines(HELMET_DATA / "kilt" / demo_file),
    )
    if task == "kilt_popqa":
        rows = [r for r in rows if math.log10(r["s_pop"]) < 3]
        demo_rows = [r for r in demo_rows if math.log10(r["s_pop"]) < 3]
    chosen = helmet_sample(rows, "id")
    doc = "Document (Title: {title}): {text}"
    expected = []
    for r in chosen[:4]:
        pool = [d for d in demo_rows if d["id"] != r["id"]] if task == "kilt_popqa" else demo_rows
        demos = (
            "\n\n".join(
                "\n\n".join(doc.format(**c) for c in d["ctxs"]) + f"\n\nQuestion: {d['question']}\n"
                f"Answer: {d['answers'][0]}"
                for d in helmet_demos(pool, "id", r["id"])
            )
            + "\n\n"
        )
        user = (
            "Use the given documents to write a concise and short answer to the question. Write "
            "your answer in "
            f"the following format:\nAnswer: [answer]\n\n{demos}"
            + "\n\n".join(doc.format(**c) for c in r["ctxs"])
            + f"\n\nQuestion: {r['question']}"
        )
        expected.append(wrap(hf_tokenizer, user, "Answer:", chat))
    assert suite_prompts(hf_encoder, task, chat, 4) == expected
    assert len(chosen) == len(
        rows
    )  # the fixture has fewer than 100 questions: every line, in file order


@pytest.mark.parametrize("chat", [False, True], ids=["completion", "chat"])
def test_msmarco_prompts_are_helmets(hf_encoder, hf_tokenizer, chat):
    rows = lines(HELMET_DATA / "msmarco" / "test_reranking_data_k50_dep3.jsonl")
    demo_rows = lines(HELMET_DATA / "msmarco" / "test_reranking_data_k10_dep3.jsonl")
    chosen = helmet_sample(rows, "qid")
    doc = (
        "[ID: {id}] Document (Title: {title}): {text}"
        if "title" in rows[0]["ctxs"][0]
        else "[ID: {id}] Document: {text}"
    )
    expected = []
    for r in chosen[:4]:
        demos = ""
        for d in helmet_demos([d for d in demo_rows if d["qid"] != r["qid"]], "qid", r["qid"]):
            ranking = " > ".join(
                c["id"] for c in sorted(d["ctxs"], key=lambda c: c["label"], reverse=True)
            )
            demos += (
                "\n\n".join(doc.format(**c) for c in d["ctxs"])
                + f"\n\nQuery: {d['query']}\nRanking: {ranking}\n\n"
            )
        user = (
            "You are provided with a list of documents, each indicated by their ID. Rank each "
            "document based on "
            "their relevance to the question in descending order from most relelvant to least "
            "relevant texts. "
            "Include all documents in the rankings. Write your answer using the unique IDs, with "
            "the following "
            f"format:\nRanking: ID3 > ID1 > ID2\n\n{demos}"
            + "\n\n".join(doc.format(**c) for c in r["ctxs"])
            + f"\n\nQuery: {r['query']}"
        )
        expected.append(wrap(hf_tokenizer, user, "Ranking:", chat))
    assert suite_prompts(hf_encoder, "msmarco_rerank", chat, 4) == expected


@pytest.mark.parametrize("chat", [False, True], ids=["completion", "chat"])
def test_json_kv_prompts_are_helmets(hf_encoder, hf_tokenizer, chat):
    rows = lines(HELMET_DATA / "json_kv" / "test_k105_dep6.jsonl")
    order = datasets.Dataset.from_list(rows).shuffle(seed=42)
    expected = []
    for r in list(order)[:4]:
        demos = (
            "\n\n".join(
                "Key: {key}\nCorresponding value:{value}".format(key=k, value=" " + v)
                for k, v in r["demos"][:2]
            )
            + "\n\n"
        )
        user = (
            f"{r['context']}\n\nExtract the value corresponding to the specified key in the JSON "
            "object below."
            f"\n\n{demos}Key: {r['question']}"
        )
        expected.append(wrap(hf_tokenizer, user, "Corresponding value:", chat))
    assert suite_prompts(hf_encoder, "json_kv", chat, 4) == expected


ICL = {
    "icl_trec_coarse": ("trec", "coarse_label", 6, 400),
    "icl_trec_fine": ("trec", "fine_label", 50, 400),
    "icl_banking77": ("banking77", "label", 77, 360),
    "icl_clinic150": ("clinc150", "intent", 151, 440),
    "icl_nlu": ("nlu", "label", 68, 510),
}


def helmet_balance(data: list[dict], label_field: str, shots: int, seed: int) -> list[dict]:
    """data.py's balance_labels, transcribed."""
    rand = random.Random(seed)
    label_mapping = {x[label_field]: [] for x in data}
    for x in data:
        label_mapping[x[label_field]].append(x)
    num_rounds = math.ceil(shots / len(label_mapping))
    new_data = [[] for _ in range(num_rounds)]
    for _, samples in label_mapping.items():
        indices = rand.sample(range(len(samples)), num_rounds % len(samples))
        while len(indices) < num_rounds:
            indices += rand.sample(
                range(len(samples)), min(num_rounds - len(indices), len(samples))
            )
        for i, idx in enumerate(indices):
            new_data[i].append(samples[idx])
    for i in range(len(new_data)):
        rand.shuffle(new_data[i])
    return [item for sublist in new_data for item in sublist][:shots]


@pytest.mark.parametrize("chat", [False, True], ids=["completion", "chat"])
@pytest.mark.parametrize("task", sorted(ICL))
def test_icl_prompts_are_helmets(hf_encoder, hf_tokenizer, task, chat):
    folder, label_field, num_labels, shots = ICL[task]
    where = HELMET_DATA / "icl" / folder
    if task == "icl_nlu":
        split = datasets.Dataset.from_list(lines(where / "train.jsonl")).train_test_split(
            test_size=0.1, seed=42
        )
        train, test = list(split["train"]), list(split["test"])
    else:
        train = lines(where / "train.jsonl")
        test = lines(where / ("validation.jsonl" if task == "icl_clinic150" else "test.jsonl"))
    assert len(test) <= 500  # HELMET then evaluates the split as it is
    expected = []
    for item in test[:3]:
        local_seed = (
            int(hashlib.sha256(item["text"].encode("utf-8")).hexdigest(), 16) + 42
        ) % 2**31
        demos = helmet_balance(train, label_field, shots, local_seed)
        mapping = list(range(num_labels))
        random.seed(local_seed)
        random.shuffle(mapping)
        context = "\n\n".join(f"{d['text']}\nlabel: {mapping[int(d[label_field])]}" for d in demos)
        head = (
            "Use the provided mapping from the text to label to assign a label to the text. Only "
            "output "
            '"label: {label}" and nothing else. \n\n'
        )
        expected.append((head, context, f"\n\n{item['text']}"))
    ctx = BuildContext(encoder=hf_encoder, chat=chat, data_dir=str(HELMET_DATA))
    for sample, (head, context, tail) in zip(
        build_samples(get_task(task), ctx, L, 3, 42), expected
    ):
        # HELMET cuts the end of the demos to fit: the prompt is HELMET's with its context cut to a
        # prefix
        before, after = wrap(hf_tokenizer, head + "\x00" + tail, "label:", chat).split("\x00")
        mine = hf_encoder.decode(sample.input_ids)
        assert mine.startswith(before) and mine.endswith(after)
        kept = mine[len(before) : len(mine) - len(after)]
        assert context.startswith(kept) and len(kept) > len(context) / 4
        assert len(sample.input_ids) + 20 >= L - 8 and sample.meta["context_cut"]


ALCE = {"alce_asqa": ("asqa_eval_gtr_top2000.json", "asqa_revised.json")}
ALCE["alce_qampari"] = ("qampari_eval_gtr_top2000.json", "qampari_revised.json")


def alce_prompts(task: str) -> list[tuple[str, list[str]]]:
    """HELMET HEAD (eval.py, data.py load_alce): ``random.seed(42)``, then ``data.map`` draws
    ``random.sample(demos, 2)`` for every test item in file order; then
    ``data.shuffle(seed=42).select(...)``; the documents numbered from 1. Per sample: the user text
    before the documents, and the documents."""
    test_file, prompt_file = ALCE[task]
    items = json.loads((HELMET_DATA / "alce" / test_file).read_text("utf-8"))
    spec = json.loads((HELMET_DATA / "alce" / prompt_file).read_text("utf-8"))

    def docs(ds: list[dict]) -> list[str]:
        return [spec["doc_prompt"].format(**d, ID=i + 1) for i, d in enumerate(ds)]

    random.seed(42)
    draws = [random.sample(spec["demos"], 2) for _ in items]
    order = datasets.Dataset.from_list([{"at": i} for i in range(len(items))]).shuffle(seed=42)[
        "at"
    ]
    out = []
    for at in order:
        demo_text = (
            "\n\n\n".join(
                spec["demo_prompt"].format(
                    **d, instruction=spec["instruction"], context="\n\n".join(docs(d["docs"]))
                )
                for d in draws[at]
            )
            + "\n\n\n"
        )
        out.append(
            (
                f"{demo_text}{spec['instruction']}\n\nQuestion: {items[at]['question']}\n\n",
                docs(items[at]["docs"]),
            )
        )
    return out


@pytest.mark.parametrize("chat", [False, True], ids=["completion", "chat"])
@pytest.mark.parametrize("task", sorted(ALCE))
def test_alce_prompts_are_helmets(hf_encoder, hf_tokenizer, task, chat):
    """All the fixture's documents fit at 8K, so ctxgate shows them all, as HELMET's files would;
    ``Answer:`` after a blank line."""
    cases = alce_prompts(task)
    expected = [
        wrap(hf_tokenizer, head + "\n\n".join(docs), "", True)
        if chat
        else head + "\n\n".join(docs) + "\n\nAnswer:"
        for head, docs in cases
    ]
    ctx = BuildContext(encoder=hf_encoder, chat=chat, data_dir=str(HELMET_DATA))
    builder = get_task(
        task
    )  # the builder itself: the fixture's documents fill 4K, short of the fill rule at 8K
    samples = [build_sample(builder, ctx, L, i, 42, fill_rule=False) for i in range(len(cases))]
    assert [s.meta["num_docs"] for s in samples] == [len(docs) for _, docs in cases]
    assert [hf_encoder.decode(s.input_ids) for s in samples] == expected


# (tokenizer, id count, each token's end offset) by (id(tokenizer), text)
_ENCODED: dict[tuple[int, str], tuple[object, int, list[int]]] = {}


def _count_and_ends(tokenizer, text: str) -> tuple[int, list[int]]:
    """``tokenizer(text, return_offsets_mapping=True)``'s id count and each token's end offset: a
    long document is tokenized once for every check that reads it (HELMET's length selection, its
    truncation at each length, for both prompt forms), not once for each."""
    found = _ENCODED.get((id(tokenizer), text))
    if found is None or found[0] is not tokenizer:
        tokens = tokenizer(text, return_offsets_mapping=True, verbose=False)
        found = (tokenizer, len(tokens["input_ids"]), [end for _, end in tokens["offset_mapping"]])
        _ENCODED[id(tokenizer), text] = found
    return found[1], found[2]


def _long(tokenizer, text: str, more_than: int) -> bool:
    return _count_and_ends(tokenizer, text)[0] > more_than


def _rows(n: int) -> datasets.Dataset:
    return datasets.Dataset.from_list([{"at": i} for i in range(n)])


# (user text before the document, the document, user text after it) per sample, in HELMET's sample
# order
Parts = list[tuple[str, str, str]]


def narrativeqa_parts(folder, counting) -> Parts:
    """HELMET HEAD (data.py load_narrativeqa): the test split ``shuffle(seed=42)``, its documents
    over 131072 tokens kept in that order; ``data.map`` then takes two train questions from
    ``shuffle()`` without a seed for each kept question in order, numpy's global generator seeded
    with 42 when the model loaded (``transformers.set_seed``)."""
    test = lines(folder / "narrativeqa" / "test.jsonl")
    train = lines(folder / "narrativeqa" / "train.jsonl")
    np.random.seed(42)
    order = [
        i
        for i in _rows(len(test)).shuffle(seed=42)["at"]
        if _long(counting, test[i]["document"]["text"], 131072)
    ]
    out = []
    for at in order:
        demos = [train[j] for j in _rows(len(train)).shuffle().select(range(2))["at"]]
        head = (
            "You are given a story, which can be either a novel or a movie script, and a "
            "question. Answer the "
            "question as concisely as you can, using a single phrase if possible.\n\nFor "
            "example:\n\n"
            + "\n\n".join(
                f"Question: {d['question']['text']}\nAnswer: {d['answers'][0]['text']}"
                for d in demos
            )
            + "\n\nNow, use the following story to answer the question:\n\n"
        )
        out.append(
            (head, test[at]["document"]["text"], f"\n\nQuestion: {test[at]['question']['text']}")
        )
    return out


def multi_lexsum_parts(folder, counting) -> Parts:
    """HELMET HEAD (data.py load_multi_lexsum): the cases with a short summary; ``all_data.map``
    over train, then validation, draws two train summaries from an unseeded ``shuffle()`` for every
    case; the validation cases of at least 65536 tokens are the samples, in file order (no more than
    100 here)."""
    train = [
        r
        for r in lines(folder / "multi_lexsum" / "train.jsonl")
        if r.get("summary/short") is not None
    ]
    val = [
        r
        for r in lines(folder / "multi_lexsum" / "validation.jsonl")
        if r.get("summary/short") is not None
    ]
    np.random.seed(42)
    draws = [_rows(len(train)).shuffle().select(range(2))["at"] for _ in train + val]
    out = []
    for j, r in enumerate(val):
        context = "\n\n".join(r["sources"])
        if not _long(counting, context, 65535):
            continue
        summaries = "\n\n".join(
            f"Summary: {train[k]['summary/short']}" for k in draws[len(train) + j]
        )
        head = (
            "You are given the legal documents in a civil rights lawsuit, and you are tasked to "
            "summarize the case. "
            "Write a concise summary of one paragraph (200 to 250 words). The summary should "
            "contain a short "
            "description of the background, the parties involved, and the outcomes of the case.\n\n"
            f"Example summaries:\n\n{summaries}\n\nNow, write a summary of the following legal "
            "documents.\n"
            "Legal documents:\n"
        )
        out.append((head, context, "\n\nNow please summarize the case."))
    return out


INFBENCH = {
    "infbench_qa": (
        "longbook_qa_eng.jsonl",
        "You are given a story and a question. Answer the question as concisely as you can, using "
        "a single phrase "
        "if possible.\n\n",
    ),
    "infbench_mc": (
        "longbook_choice_eng.jsonl",
        "You are given a story and a question with multiple choices. Choose the best answer from "
        "the options "
        "provided. Only one of the following options is correct, output the answer using one "
        "single letter (A, B, "
        "C, or D). Don't say anything else.\n\n",
    ),
    "infbench_sum": (
        "longbook_sum_eng.jsonl",
        "You are given a book and you are tasked to summarize it. Write a summary of about 1000 "
        "to 1200 words. Only "
        "write about the plot and characters of the story. Do not discuss the themes or "
        "background of the book. Do "
        "not provide any analysis or commentary.\n\n",
    ),
}


def infbench_parts(task: str, folder, counting) -> Parts:
    """HELMET HEAD (data.py load_infbench): a book's demos are ``data.filter(id != its
    id).shuffle(seed=42)``'s first two, over every book; the books of at least 65536 tokens are kept
    (file order) and ``shuffle(seed=42)`` orders the samples; demos show ``[story text]`` for their
    book; MC's answer is the letter."""
    file, instruction = INFBENCH[task]
    rows = lines(folder / "infbench" / file)
    books = _rows(len(rows))

    def letter(r: dict) -> str:
        return "ABCD"[r["options"].index(r["answer"][0])]

    def options(r: dict) -> str:
        return "A. {}\nB. {}\nC. {}\nD. {}".format(*r["options"])

    def shot(r: dict) -> str:
        if task == "infbench_qa":
            return f"[story text]\nQuestion: {r['input']}\nAnswer: {r['answer'][0]}"
        if task == "infbench_mc":
            return (
                f"[story text]\nQuestion: {r['input']}\nOptions:\n{options(r)}\nAnswer: {letter(r)}"
            )
        return f"[story text]\nSummary: {r['answer'][0].strip()}"

    kept = [i for i, r in enumerate(rows) if _long(counting, r["context"], 65535)]
    out = []
    for at in books.select(kept).shuffle(seed=42)["at"]:
        demos = [
            rows[j]
            for j in books.filter(lambda x, at=at: x["at"] != at)
            .shuffle(seed=42)
            .select(range(2))["at"]
        ]
        head = (
            instruction
            + "For example:\n\n"
            + "\n\n".join(map(shot, demos))
            + "\n\nNow, read the following story:\n\n"
        )
        r = rows[at]
        tail = (
            "\n\nNow summarize the book."
            if task == "infbench_sum"
            else f"\n\nQuestion: {r['input']}"
        )
        if task == "infbench_mc":
            tail += f"\nOptions:\n{options(r)}"
        out.append((head, r["context"], tail))
    return out


def long_document_parts(task: str, folder, counting) -> Parts:
    if task == "narrativeqa":
        return narrativeqa_parts(folder, counting)
    if task == "multi_lexsum":
        return multi_lexsum_parts(folder, counting)
    return infbench_parts(task, folder, counting)


LONG_DOCUMENTS = ["infbench_mc", "infbench_qa", "infbench_sum", "multi_lexsum", "narrativeqa"]


@pytest.mark.parametrize("chat", [False, True], ids=["completion", "chat"])
@pytest.mark.parametrize("task", LONG_DOCUMENTS)
def test_long_document_samples_and_demos_are_helmets(
    hf_encoder, hf_tokenizer, helmet_data_long, task, chat
):
    """ctxgate's own fit keeps HELMET's samples, demos and text around the document (the document is
    cut where the model's tokenizer reaches L)."""
    parts = long_document_parts(task, helmet_data_long, hf_tokenizer)
    ctx = BuildContext(encoder=hf_encoder, chat=chat, data_dir=str(helmet_data_long))
    samples = build_samples(get_task(task), ctx, 4096, len(parts), 42)
    assert len(parts) >= 2 and len(samples) == len(
        parts
    )  # the fixtures' long documents (the others are dropped)
    for (head, context, tail), sample in zip(parts, samples):
        text = hf_encoder.decode(sample.input_ids)
        assert head in text and tail in text and context[:200] in text


# HELMET's configs: the pre-cut slack (L less the length in the dataset's name), the generation
# budget, and the text between the user turn and the answer prefix without a chat template
HELMET_CUTS = {
    "narrativeqa": (300, 100, "\n", "Answer:"),
    "infbench_qa": (210, 10, "\n\n", "Answer:"),
    "infbench_mc": (210, 10, "\n\n", "Answer:"),
    "infbench_sum": (1400, 1200, "\n\n", "Summary:"),
    "multi_lexsum": (700, 400, "\n\n", "Summary:"),
    "alce_asqa": (None, 300, "\n\n", "Answer:"),
    "alce_qampari": (None, 300, "\n\n", "Answer:"),
}
OMITTED = " ... [the rest of the text is omitted]"


def truncate_llama2(length_tokenizer, context: str, max_length: int) -> str:
    """data.py ``truncate_llama2``, as written (offsets counted with the BOS)."""
    separator_length = len(length_tokenizer(OMITTED)["input_ids"])
    count, ends = _count_and_ends(length_tokenizer, context)  # the tokenization with offsets
    if count > max_length:
        context = context[: ends[max_length - separator_length]] + OMITTED
    return context


def helmet_tokenize(
    tokenizer, head: str, context: str, tail: str, task: str, length: int, chat: bool
) -> list[int]:
    """model_utils.py ``tokenize`` for a fast tokenizer, as written (no system message: HELMET's
    default)."""
    _, gen, separator, prefix = HELMET_CUTS[task]

    def format_input(context: str) -> list[int]:
        if chat:
            prompt = tokenizer.apply_chat_template(
                [{"role": "user", "content": head + context + tail}],
                tokenize=False,
                add_generation_prompt=True,
            )
            return tokenizer([prompt], add_special_tokens=False)["input_ids"][0]
        return tokenizer([head + context + tail + separator + prefix])["input_ids"][0]

    ids = format_input(context)
    if len(ids) > length - gen:
        truncate_length = len(ids) - (length - gen)
        context_tokens = tokenizer([context], return_offsets_mapping=True)
        context = context[: context_tokens["offset_mapping"][0][-truncate_length][0]]
        ids = format_input(context)
    return ids


@pytest.fixture(scope="module", params=["sp-length", "sp-model"])
def tokenizers(request, hf_tokenizer, sp_tokenizer):
    """(the model's tokenizer, --helmet-tokenizer): a BOS-less BPE model counted in a Llama-2-shaped
    tokenizer, and the other way round."""
    from fixtures.build_tiny import CHATML

    sp_tokenizer.chat_template = CHATML
    return (
        (hf_tokenizer, sp_tokenizer)
        if request.param == "sp-length"
        else (sp_tokenizer, hf_tokenizer)
    )


@pytest.mark.parametrize("chat", [False, True], ids=["completion", "chat"])
@pytest.mark.parametrize("task", LONG_DOCUMENTS)
def test_helmet_compat_long_documents_are_helmets(tokenizers, helmet_data_long, task, chat):
    """``--helmet-compat --helmet-tokenizer``: the prompt's ids are HELMET's, its pre-cut in the
    length tokenizer and the cut of the context to L - gen in the model's included."""
    model_tok, length_tok = tokenizers
    encoder = PieceEncoder(HFTokenizer(model_tok))
    ctx = BuildContext(
        encoder=encoder,
        chat=chat,
        data_dir=str(helmet_data_long),
        helmet_encoder=PieceEncoder(HFTokenizer(length_tok)),
        helmet_tokenizer="sp",
        helmet_compat=True,
    )
    parts = long_document_parts(task, helmet_data_long, length_tok)
    slack = HELMET_CUTS[task][0]
    for length in (4096, 8192):
        samples = build_samples(get_task(task), ctx, length, len(parts), 42)
        assert len(parts) >= 2 and len(samples) == len(parts)
        for (head, context, tail), sample in zip(parts, samples):
            cut = truncate_llama2(length_tok, context, length - slack)
            assert list(sample.input_ids) == helmet_tokenize(
                model_tok, head, cut, tail, task, length, chat
            )
            assert sample.meta["truncated"]


@pytest.mark.parametrize("chat", [False, True], ids=["completion", "chat"])
@pytest.mark.parametrize("task", sorted(ALCE))
def test_helmet_compat_alce_is_helmets(tokenizers, task, chat):
    """``--helmet-compat``: ALCE shows HELMET's number of documents for the length (8 at 4K, 30 at
    8K), the context cut to L - gen in the model's tokenizer when over."""
    model_tok, _ = tokenizers
    encoder = PieceEncoder(HFTokenizer(model_tok))
    ctx = BuildContext(encoder=encoder, chat=chat, data_dir=str(HELMET_DATA), helmet_compat=True)
    cases = alce_prompts(task)
    for length, shown in ((4096, 8), (8192, 30)):
        samples = [
            build_sample(get_task(task), ctx, length, i, 42, fill_rule=False)
            for i in range(len(cases))
        ]
        for (head, docs), sample in zip(cases, samples):
            expected = helmet_tokenize(
                model_tok, head, "\n\n".join(docs[:shown]), "", task, length, chat
            )
            assert list(sample.input_ids) == expected


def test_helmet_compat_needs_a_hugging_face_tokenizer(hf_encoder, byte_encoder):
    from ctxgate.tasks.helmet_compat import check_tokenizers

    check_tokenizers(hf_encoder, hf_encoder)
    with pytest.raises(ValueError, match="drop --helmet-compat"):
        check_tokenizers(byte_encoder, None)
