"""End to end on the shipped checkpoint: the real suite, a real transformers model, real
generations."""

from __future__ import annotations

import json


def test_retrieval_passes_short_and_fails_long_for_real(real_suite, pytester):
    # The shipped model gets 85% at 256 tokens and 0% at 2048 (40 samples; bench/tiny_accuracy.py,
    # README).
    (pytester.path / "thresholds.toml").write_text(
        '[[floor]]\ntask = "niah_single_1"\nfloor = 70\n'
    )
    result = real_suite(
        "-k", "niah_single_1", "--lengths", "256,2k", "--samples", "40", "--report", "r.json"
    )
    result.assert_outcomes(passed=1, failed=1)
    cases = {c["length"]: c for c in json.loads((pytester.path / "r.json").read_text())["cases"]}
    assert cases[256]["verdict"] == "pass" and cases[256]["score"] >= 70
    assert cases[2048]["verdict"] == "fail" and cases[2048]["score"] <= 10
    for case in cases.values():  # tokens through the real model per second of generation
        assert (
            case["throughput"]["prompt_tokens_per_s"]
            > case["throughput"]["generated_tokens_per_s"]
            > 0
        )
    result.stdout.fnmatch_lines(
        ["*niah_single_1 at 2048 (2K): score * < floor 70.0 (n=40, 95% CI*"]
    )


def test_chat_template_on_is_applied_and_recorded(real_suite, pytester, tiny_chat):
    result = real_suite(
        "-k",
        "niah_single_1",
        "--lengths",
        "1k",
        "--samples",
        "2",
        "--chat-template",
        "on",
        "--report",
        "r.json",
        model=tiny_chat,
    )
    result.assert_outcomes(passed=1)
    run = json.loads((pytester.path / "r.json").read_text())["run"]
    assert run["chat_template"] == "on" and len(run["chat_template_sha256"]) == 64


def test_the_task_policy_wraps_ruler_for_a_chat_model_and_not_for_a_base_model(
    real_suite, pytester, tiny_chat
):
    """RULER runs chat models with their template (config_models.sh), HELMET's JSON KV never; a base
    model (no template, the shipped checkpoint) runs everything plain. Each case records which."""
    select = ("-k", "niah_single_1 or json_kv", "--lengths", "1k", "--samples", "1")
    real_suite(*select, "--report", "chat.json", model=tiny_chat).assert_outcomes(passed=2)
    real_suite(*select, "--report", "base.json").assert_outcomes(passed=2)

    def wrapped(name: str) -> dict[str, bool]:
        return {
            c["task"]: c["chat_template"]
            for c in json.loads((pytester.path / name).read_text())["cases"]
        }

    assert wrapped("chat.json") == {"niah_single_1": True, "json_kv": False}
    assert wrapped("base.json") == {"niah_single_1": False, "json_kv": False}
