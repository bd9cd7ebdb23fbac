"""JSON Schema (draft 2020-12) of the report written by ``--report``. Bump SCHEMA_VERSION on breaking changes."""

from __future__ import annotations

from typing import Any, TypedDict

SCHEMA_VERSION = 1  # of the report file; readers refuse another (records.io.read_report)

# Why a selected case has no score: the report's words for it. Which of them fail the gates is gate.verdicts' rule.
BY_DESIGN = ("too_short",)  # the task cannot be built at this length
NOT_GIVEN = ("data_not_given", "judge_not_given")  # an optional input the run was not given
# the checkpoint or an input prevents the case (data_short: the input ran out before the prompt reached the length)
BROKEN = ("window", "data_unreadable", "data_short", "judge_failed")
RUN_FAILURES = ("error", "crash", "not_run")  # the case errored, its worker died, the session never reached it


class CaseRecord(TypedDict, total=False):
    """One case as it travels from the runner (plugins/cases.py) through the gates (gate/) to the report (report/)
    and back from a report file (``ctxgate judge``, ``diff``, ``--baseline``). The first block is always there;
    the rest once the case ran. ``_CASE`` below is the same record as JSON Schema."""

    task: str
    suite: str
    category: str
    length: int
    metric: str
    verdict: str  # pass | fail | skip | error
    message: str
    score: float | None  # percent
    n: int
    floor: float
    ci: list[float] | tuple[float, float] | None
    samples_from_cache: int
    error_kind: str  # why it has no score (RUN_FAILURES, NOT_GIVEN, BROKEN)
    skip_kind: str  # why it was skipped (BY_DESIGN, NOT_GIVEN)
    seconds: float
    build_seconds: float
    input_tokens_mean: float
    input_tokens_max: int
    fill_min: float
    output_tokens: int
    data_sha256: str
    parts: dict[str, float]
    judge: dict[str, Any] | None
    throughput: dict[str, float] | None
    chat_template: bool | None
    sample_cap: dict[str, int] | None
    sequential: dict[str, Any] | None
    built_from: str | None
    baseline: dict[str, Any]  # --baseline: the paired comparison
    run_meta: dict[str, Any]  # on the worker only: the run's record, carried to the controller once
    run_error: str


_NUM_OR_NULL = {"type": ["number", "null"]}
_GROUP = {
    "type": "object",
    "required": ["score", "partial", "members", "missing"],
    "properties": {
        "score": _NUM_OR_NULL,
        "partial": {"type": "boolean"},
        "members": {"type": "array", "items": {"type": "string"}},
        "missing": {"type": "array", "items": {"type": "string"}},
        "incomplete": {"type": "boolean"},
        "errored": {"type": "array", "items": {"type": "string"}},
        "early": {"type": "array", "items": {"type": "string"}},
    },
}
_CASE = {
    "type": "object",
    "required": ["task", "suite", "length", "verdict", "score", "n", "floor"],
    "properties": {
        "task": {"type": "string"},
        "suite": {"enum": ["ruler", "helmet"]},
        "category": {"type": "string"},
        "length": {"type": "integer", "minimum": 1},
        "metric": {"type": "string"},
        "verdict": {"enum": ["pass", "fail", "skip", "error"]},
        "message": {"type": "string"},
        "error_kind": {"enum": [*RUN_FAILURES, *NOT_GIVEN, *BROKEN]},
        "skip_kind": {"enum": [*BY_DESIGN, *NOT_GIVEN]},
        "score": _NUM_OR_NULL,
        "n": {"type": "integer", "minimum": 0},
        "floor": _NUM_OR_NULL,
        "ci": {"type": ["array", "null"], "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
        "seconds": _NUM_OR_NULL,
        "build_seconds": _NUM_OR_NULL,
        "input_tokens_mean": _NUM_OR_NULL,
        "input_tokens_max": {"type": ["integer", "null"]},
        "fill_min": _NUM_OR_NULL,
        "output_tokens": {"type": ["integer", "null"]},
        "data_sha256": {"type": ["string", "null"]},
        "samples_from_cache": {"type": "integer"},
        "chat_template": {"type": ["boolean", "null"]},
        "sequential": {"type": ["object", "null"]},
        "built_from": {"type": ["string", "null"]},
        "sample_cap": {
            "type": ["object", "null"],
            "properties": {"requested": {"type": "integer"}, "pool": {"type": "integer"}},
        },
        "throughput": {
            "type": ["object", "null"],
            "properties": {"prompt_tokens_per_s": {"type": "number"}, "generated_tokens_per_s": {"type": "number"}},
        },
        "parts": {"type": "object", "additionalProperties": {"type": "number"}},
        "judge": {
            "type": ["object", "null"],
            "properties": {
                "status": {"enum": ["pending", "judged", "failed"]},
                "failed": {"type": "integer", "minimum": 0},
                "failure_rate": {"type": "number"},
                "max_failure_rate": {"type": "number"},
                "failed_samples": {"type": "array"},
                "usage": {"type": ["object", "null"]},
            },
        },
    },
}
REPORT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "ctxgate run report",
    "type": "object",
    "required": [
        "schema_version",
        "ctxgate_version",
        "created",
        "complete",
        "run",
        "cases",
        "by_length",
        "overall",
        "effective_length",
        "gates",
    ],
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION},
        "ctxgate_version": {"type": "string"},
        "created": {"type": "string"},
        "complete": {"type": "boolean"},
        "session_complete": {"type": "boolean"},
        "baseline": {
            "type": "object",
            "required": ["path", "scored"],
            "properties": {
                "path": {"type": "string"},
                "scored": {"type": "array", "items": {"type": "string"}},
                "not_selected": {"type": "array", "items": {"type": "string"}},
            },
        },
        "error": {"type": ["object", "null"], "required": ["message"], "properties": {"message": {"type": "string"}}},
        "run": {
            "type": "object",
            "required": ["model", "backend", "seed", "samples", "lengths", "chat_template"],
            "properties": {
                "model": {"type": "string"},
                "model_fingerprint": {"type": ["object", "null"]},
                "backend": {"type": ["object", "null"]},
                "seed": {"type": "integer"},
                "samples": {"type": ["integer", "null"]},
                "lengths": {"type": "array", "items": {"type": "integer"}},
                "chat_template": {"enum": ["task", "on", "off"]},
                "chat_template_sha256": {"type": ["string", "null"]},
                "tokenizer_sha256": {"type": ["string", "null"]},
                "haystack_sha256": {"type": ["string", "null"]},
                "haystack": {"type": ["string", "null"]},
                "data_sha256": {"type": ["string", "null"]},
                "packages": {"type": "object"},
                "thresholds": {"type": ["string", "null"]},
            },
        },
        "cases": {"type": "array", "items": _CASE},
        "by_length": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "required": ["ruler", "helmet_recall"],
                "properties": {"ruler": _GROUP, "helmet_recall": _GROUP},
                "patternProperties": {"^helmet_[a-z]+$": _GROUP},
            },
        },
        "overall": {"type": "object"},
        "effective_length": {
            "type": ["object", "null"],
            "required": ["value", "max_passing", "threshold"],
            "properties": {
                "value": {"type": "integer"},
                "max_passing": {"type": "integer"},
                "threshold": {"type": "number"},
                "partial": {"type": "boolean"},
                "incomplete": {"type": "array", "items": {"type": "integer"}},
            },
        },
        "gates": {"type": "array", "items": {"type": "object", "required": ["name", "verdict", "message"]}},
        "reference": {  # --reference: the run against a paper's published numbers (information, never a gate)
            "type": "object",
            "required": ["model", "matched", "rows"],
            "properties": {
                "model": {"type": "string"},
                "matched": {"type": "string"},
                "rows": {
                    "type": "array",
                    "items": {"type": "object", "required": ["measure", "source", "table", "allowance", "lengths"]},
                },
            },
        },
    },
}
