"""Model-judged scoring: the judge client and its cache, HELMET's rubrics, verdicts, entailment."""
