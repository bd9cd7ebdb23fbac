"""Judged metrics with hand-computed values, verdict parsing, and the local NLI judge on a tiny real
model."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxgate.judge import verdict
from ctxgate.metrics import judged

DOCS = {
    0: ("Quillby", "Mara Quill built the first mill of Quillby."),
    1: ("Wenholt", "Wenholt stands on the river Wen."),
    2: ("Market", "The covered market sells apples."),
}


def entails(premise: str, hypothesis: str) -> bool:
    """A stand-in entailment table: which documents support which claim."""
    if "mill" in hypothesis:
        return "Mara Quill built" in premise
    if "Wen" in hypothesis:
        return "river Wen" in premise
    if "both" in hypothesis:  # needs documents 1 and 2 together
        return "river Wen" in premise and "market" in premise
    return False


def citation_scores(output, question, docs, n_docs, entail, qampari=False, helmet_compat=False):
    """As the judge reads an output: its claims split off, then their citations checked."""
    sents = judged.citation_sentences(output, question, qampari)
    return judged.citation_scores(sents, docs, n_docs, entail, helmet_compat)


def test_narrativeqa_is_fluency_times_correctness_over_three():
    scores = [
        judged.narrativeqa_score(1, 3),
        judged.narrativeqa_score(0, 3),
        judged.narrativeqa_score(1, 1),
    ]
    assert scores == [1.0, 0.0, pytest.approx(1 / 3)]
    assert 100 * sum(scores) / 3 == pytest.approx(
        44.444, abs=1e-3
    )  # the case score: x 100/3 of the mean product


def test_claim_f1_by_hand():
    s = judged.SummaryScore(
        fluency=1, recall_found=3, keypoints=4, precision_found=2, sentence_count=5
    )
    assert (s.recall, s.precision) == (0.75, 0.4)
    assert s.f1 == pytest.approx(2 * 0.75 * 0.4 / 1.15) == pytest.approx(0.521739, abs=1e-6)
    assert s.score == s.f1
    assert judged.SummaryScore(0, 3, 4, 2, 5).score == 0  # not fluent: zero whatever the F1
    assert judged.SummaryScore(1, 0, 4, 0, 5).f1 == 0 and judged.SummaryScore(1, 2, 0, 1, 0).f1 == 0


def test_citation_recall_and_precision_by_hand():
    out = (
        "Mara Quill built the first mill [1][3]. Quillby lies on the Wen [2].\n"
        "It has many bells. Ok."
    )
    s = citation_scores(out, "q", DOCS, 3, entails)
    # sentences: 3 kept ("Ok." has under 5 characters); recall: s1 (docs 1+3 entail) and s2 yes, s3
    # uncited no
    assert s.sentences == 3 and s.recall == pytest.approx(2 / 3)
    # precision over 3 citations: [1] alone entails (credited); [3] fails alone and [1] without it
    # still entails (not credited); [2] single and entailed (credited)
    assert s.citations == 3 and s.precision == pytest.approx(2 / 3)


def test_citation_rules_first_three_out_of_range_and_joint_need():
    assert citation_scores(
        "The mill was built [4].", "q", DOCS, 3, entails
    ) == judged.CitationScore(
        0.0, 0.0, 1, 0
    )  # out of range: no recall, and the citation is not counted
    s = citation_scores("Mara Quill built the mill [3][2][3][1].", "q", DOCS, 3, entails)
    assert (s.recall, s.citations) == (
        0.0,
        3,
    )  # only [3][2][3] are read: doc 1 is the fourth citation
    s = citation_scores("The towns share both [2][3].", "q", DOCS, 3, entails)
    assert (s.recall, s.precision) == (1.0, 1.0)  # each fails alone but is needed: both credited
    assert citation_scores("", "q", DOCS, 3, entails) == judged.CitationScore(0.0, 0.0, 0, 0)


def test_qampari_sentences_are_the_question_plus_each_item():
    question = "Which towns stand on the river Wen?"
    out = "Wenholt [2], Quillby [3], Dune."
    assert judged.citation_sentences(out, question, qampari=True) == [
        f"{question} Wenholt [2]",
        f"{question} Quillby [3]",
        f"{question} Dune",
    ]
    s = citation_scores(out, question, DOCS, 3, entails, qampari=True)
    # each claim mentions "Wen": [2] (Wenholt's document) supports its item, [3] (the market) does
    # not, Dune cites nothing: recall 1 of 3 sentences, precision 1 of 2 citations
    assert (s.recall, s.precision) == (pytest.approx(1 / 3), 0.5)


def test_alce_correctness_by_hand():
    assert (
        judged.asqa_str_em(
            "Mara Quill [1] built it in 1842 [2].", [["mara quill"], ["1843", "1844"]]
        )
        == 0.5
    )
    assert (
        judged.remove_citations("Paris is big [1][2]. Rome [3] is old.")
        == "Paris is big. Rome is old."
    )
    answers = [["Alby"], ["Corton", "Corton town"], ["Esk"]]
    assert judged.qampari_rec_top5("Alby [1], Corton town, Zed.", answers) == pytest.approx(2 / 3)
    many = [[f"T{i}"] for i in range(7)]
    assert (
        judged.qampari_rec_top5(", ".join(f"T{i}" for i in range(6)), many) == 1.0
    )  # min(5, 6) / min(5, 7)


def test_sentences_split_after_punctuation_not_after_abbreviations():
    text = "The U.S. District Court ruled [1]. Then Dr. Smith left [2][3]. It ended!"
    assert judged.split_sentences(text) == [
        "The U.S. District Court ruled [1].",
        "Then Dr. Smith left [2][3].",
        "It ended!",
    ]


@pytest.mark.parametrize(
    "reply, check, expected",
    [
        ('Reasoning...\n{"fluency": 1, "correctness": 3}', verdict.longqa, (1, 3)),
        ("Output: {'fluency': 0}", verdict.fluency, 0),
        ('{"recall": 9} then {"recall": 2}', verdict.recall(4), 2),
        ('```json\n{"precision": 3, "sentence_count": 4}\n```', verdict.precision, (3, 4)),
        ('{"key_points": ["A.", "B."]}', verdict.keypoints, ("A.", "B.")),
    ],
)
def test_verdicts_are_read_from_the_last_object(reply, check, expected):
    assert check(verdict.last_object(reply)) == expected


@pytest.mark.parametrize(
    "reply, check",
    [
        ('{"fluency": 2}', verdict.fluency),
        ('{"correctness": 3}', verdict.longqa),
        ('{"recall": 5}', verdict.recall(4)),
        ('{"precision": 5, "sentence_count": 4}', verdict.precision),
        ('{"fluency": true}', verdict.fluency),
        ("no object", verdict.fluency),
        ('{"key_points": []}', verdict.keypoints),
    ],
)
def test_out_of_range_or_missing_verdicts_are_unparseable(reply, check):
    with pytest.raises(verdict.Unparseable):
        check(verdict.last_object(reply))


@given(st.text(max_size=300))
def test_the_verdict_reader_never_crashes(text):
    try:
        verdict.fluency(verdict.last_object(text))
    except verdict.Unparseable:
        pass


@given(
    st.integers(0, 1),
    st.integers(0, 30),
    st.integers(0, 30),
    st.integers(0, 30),
    st.integers(0, 30),
)
def test_summary_scores_stay_in_range(fluency, found, points, supported, count):
    s = judged.SummaryScore(fluency, min(found, points), points, min(supported, count), count)
    assert (
        0 <= s.score <= 1
        and min(s.recall, s.precision) <= s.f1 <= max(s.recall, s.precision) + 1e-12
    )


def _tiny_nli(path, hf_tokenizer, bias, labels):
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(
        vocab_size=len(hf_tokenizer),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=3,
        id2label=dict(enumerate(labels)),
        label2id={n: i for i, n in enumerate(labels)},
        max_position_embeddings=512,
    )
    model = BertForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor(bias))
    model.save_pretrained(path)
    hf_tokenizer.save_pretrained(path)
    return str(path)


def test_local_nli_model_reads_its_entailment_label(tmp_path, hf_tokenizer):
    from ctxgate.judge.entail import HFEntailment

    labels = ["contradiction", "entailment", "neutral"]
    yes = HFEntailment(_tiny_nli(tmp_path / "yes", hf_tokenizer, [0.0, 5.0, 0.0], labels))
    no = HFEntailment(_tiny_nli(tmp_path / "no", hf_tokenizer, [5.0, 0.0, 0.0], labels))
    assert yes("Title: A\nMara built the mill.", "Mara built it.") is True
    assert no("Title: A\nMara built the mill.", "Mara built it.") is False
    s = citation_scores("Mara built the mill [1].", "q", DOCS, 3, yes)
    assert (s.recall, s.precision) == (1.0, 1.0)
    with pytest.raises(ValueError, match="do not name exactly one entailment"):
        HFEntailment(
            _tiny_nli(
                tmp_path / "bad", hf_tokenizer, [0.0, 0.0, 0.0], ["LABEL_0", "LABEL_1", "LABEL_2"]
            )
        )


def test_repeated_and_unshown_citations_and_zero_follow_the_reference():
    # [2][3][3]: the towns claim needs documents 2 and 3 together. [2] is needed (credited); each
    # [3] fails alone and the rest without that one occurrence still holds [2][3], which entails:
    # neither is credited. 1 of 3.
    s = citation_scores("The towns share both [2][3][3].", "q", DOCS, 3, entails)
    assert (s.recall, s.citations, s.precision) == (1.0, 3, pytest.approx(1 / 3))
    # a document the record has but the prompt did not show (the 40th of 50) is checked, as the
    # reference does
    record = {**DOCS, 39: ("Mill", "Mara Quill built the first mill of Quillby.")}
    assert (
        citation_scores("Mara Quill built the mill [40].", "q", record, 50, entails).recall == 1.0
    )
    # [0]: out of range; --helmet-compat reads it as the record's last document (Python's docs[-1])
    last = {**DOCS, 49: ("Mill", "Mara Quill built the first mill of Quillby.")}
    assert citation_scores("Mara Quill built the mill [0].", "q", last, 50, entails).recall == 0.0
    assert (
        citation_scores(
            "Mara Quill built the mill [0].", "q", last, 50, entails, helmet_compat=True
        ).recall
        == 1.0
    )


def test_stored_judge_input_keeps_cited_documents_of_the_whole_record():
    from ctxgate.judge.score import compact_input

    docs = [[f"T{i}", f"text {i}"] for i in range(50)]
    kept = compact_input(
        "alce_asqa", "Claim one here [2][45]. Claim two [0].", {"question": "q", "docs": docs}
    )
    assert sorted(kept["docs"]) == ["1", "44", "49"] and kept["n_docs"] == 50


def test_a_classifier_judge_refuses_input_longer_than_it_reads(tmp_path, hf_tokenizer):
    from ctxgate.judge.entail import EntailmentFailed, HFEntailment

    nli = HFEntailment(
        _tiny_nli(
            tmp_path / "nli",
            hf_tokenizer,
            [0.0, 5.0, 0.0],
            ["contradiction", "entailment", "neutral"],
        )
    )
    nli.max_length = 64
    with pytest.raises(
        EntailmentFailed, match="more than --nli-model .* reads \\(64\\); use a T5 TRUE model"
    ):
        nli("Title: A\n" + "Mara built the mill. " * 40, "Mara built it.")
