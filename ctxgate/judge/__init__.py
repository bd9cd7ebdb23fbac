"""Model-judged scoring: an OpenAI-compatible judge client with a persistent cache, HELMET's rubric
prompts, verdict parsing, entailment judges for citations, and the judged metrics themselves."""
