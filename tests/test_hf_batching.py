"""--backend hf with --batch-size and --device-map: prompts of one case generated together, left
padded, give the outputs they get one at a time; a batch that runs out of memory is halved, never
lost."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

import pytest

from ctxgate.backends.base import Generation, GenerationParams, Request, stream
from tests.conftest import TINY


class Batching:
    """A backend that batches: records each call's size, answers with the prompt's first id."""

    name = "fake"

    def __init__(self, limit: int) -> None:
        self.limit, self.calls = limit, []

    def batch_limit(self, prompt_tokens: int, max_new_tokens: int) -> int:
        return self.limit

    def generate(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        self.calls.append([r.index for r in requests])
        return [Generation(str(r.input_ids[0]), 1, "stop") for r in requests]


def test_a_stream_hands_the_backend_batches_in_order_pulling_no_further_ahead():
    pulled = []

    def requests() -> Iterator[Request]:
        for i in range(10):
            pulled.append(i)
            yield Request((100 + i,), index=i)

    backend = Batching(4)
    got = stream(backend, requests(), GenerationParams(8))
    first = next(got)
    assert first[0].index == 0 and first[1].text == "100"
    assert pulled == [
        0,
        1,
        2,
        3,
    ]  # one batch built, no more: a 128K prompt is not held before its turn
    rest = list(got)
    assert backend.calls == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [r.index for r, _ in [first, *rest]] == list(range(10))
    assert all(g.text == str(100 + r.index) for r, g in rest)


@pytest.fixture(scope="module")
def tiny_hf():
    from ctxgate.backends.formats import locate
    from ctxgate.backends.hf import HFBackend

    return HFBackend(locate(TINY))


@pytest.fixture(scope="module")
def prompts(tiny_hf) -> list[Request]:
    """Real prompts of one case: about one length, not equal, so the batch needs padding."""
    from ctxgate.run.samples import iter_samples
    from ctxgate.tasks.base import BuildContext
    from ctxgate.tasks.registry import get_task
    from ctxgate.tokens.codec import PieceEncoder

    ctx = BuildContext(encoder=PieceEncoder(tiny_hf.tokenizer), chat=False, seed=42)
    made = [
        Request(s.input_ids, "vt", 1024, s.index)
        for s in iter_samples(get_task("vt"), ctx, 1024, 6, 42)
    ]
    assert len({len(r.input_ids) for r in made}) > 1
    return made


def outputs(backend, requests, batch_size: int | None) -> list[Generation]:
    backend.batch_size = batch_size
    return [g for _, g in stream(backend, requests, GenerationParams(30))]


def test_left_padded_batches_give_the_one_at_a_time_outputs(tiny_hf, prompts):
    one = outputs(tiny_hf, prompts, 1)
    assert outputs(tiny_hf, prompts, 3) == one
    assert outputs(tiny_hf, prompts, 6) == one
    assert any(
        g.finish_reason == "stop" for g in one
    )  # a row that ends early is cut at its EOS, not padded


def test_auto_is_one_on_cpu(tiny_hf):
    tiny_hf.batch_size = None
    assert tiny_hf.batch_limit(1000, 50) == 1


def test_auto_on_a_gpu_counts_the_padding_mask_and_sends_long_prompts_alone(tiny_hf, monkeypatch):
    """A GPU's free memory, given: sdpa's padded rows pay a tokens x tokens mask, and past 32K
    tokens go alone (slower batched, bench/gpu.py); flash-attn's unpadded rows pay neither."""
    import torch

    free = 64 * 2**30
    monkeypatch.setattr(tiny_hf, "input_device", torch.device("cuda"))
    monkeypatch.setattr(tiny_hf, "_free_gpu_bytes", lambda: free)
    tiny_hf.batch_size = None
    try:
        per_token, mask = tiny_hf._per_token, 1 + tiny_hf._element_size
        tokens = 16384
        assert tiny_hf.batch_limit(tokens - 64, 64) == min(
            32, int(0.6 * free // (per_token * tokens + mask * tokens * tokens))
        )
        assert tiny_hf.batch_limit(32768 - 64, 64) > 1  # prompt and answer budget: 32K
        assert tiny_hf.batch_limit(32768 - 63, 64) == 1
        assert tiny_hf.batch_limit(65536 - 64, 64) == 1
        monkeypatch.setattr(tiny_hf, "attn", "flash_attention_2")
        assert tiny_hf.batch_limit(65536 - 64, 64) == min(
            32, int(0.6 * free // (per_token * 65536))
        )
    finally:
        tiny_hf.batch_size = 1


def test_a_batch_out_of_memory_is_halved_and_remembered(tiny_hf, prompts, monkeypatch):
    """CUDA OOM cannot happen on this CPU: the batch call raises the real exception type for more
    than 2 rows, as a GPU would at some size. Every prompt still gets its own output, and the size
    that failed is not tried again."""
    import torch

    expected = outputs(tiny_hf, prompts, 1)
    real = type(tiny_hf)._generate_batch
    sizes = []

    def small_gpu(self, requests, params):
        sizes.append(len(requests))
        if len(requests) > 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(self, requests, params)

    monkeypatch.setattr(type(tiny_hf), "_generate_batch", small_gpu)
    tiny_hf.token_cap = None
    assert outputs(tiny_hf, prompts, 6) == expected
    # the batch that failed is split, never tried again whole: every later call is at most half of
    # it
    assert sizes[0] == 6 and max(sizes[1:]) <= 3
    longest = max(len(r.input_ids) for r in prompts)
    assert (
        tiny_hf.batch_limit(longest, 30) == 1
    )  # the cap: half of the 6-row batch that failed, at most
    tiny_hf.token_cap = None


def test_the_suite_batched_on_a_device_map_scores_as_batch_one(real_suite, pytester):
    """The same cases, batch 1 against --batch-size 4 --device-map auto (accelerate's placement,
    here on the CPU): per-sample predictions identical, the report says how it ran."""
    select = ("-k", "niah_single_1 or vt", "--lengths", "1k", "--samples", "8", "--no-cache")
    real_suite(*select, "--batch-size", "1", "--report", "one.json").assert_outcomes(passed=2)
    result = real_suite(
        *select, "--batch-size", "4", "--device-map", "auto", "--report", "four.json", "-n", "2"
    )
    result.assert_outcomes(passed=2)

    def rows(name: str) -> list[tuple]:
        lines = (pytester.path / name).read_text().splitlines()
        return sorted(
            (r["task"], r["index"], r["prediction"], r["output_tokens"])
            for r in map(json.loads, lines)
        )

    assert rows("four.predictions.jsonl") == rows("one.predictions.jsonl")
    backend = json.loads((pytester.path / "four.json").read_text())["run"]["backend"]
    assert (
        backend["batch_size"] == 4
        and backend["device_map"] == "auto"
        and backend["devices"] == ["cpu"]
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--batch-size", "0"),
            "--batch-size '0' is neither auto nor a whole number above 0: e.g. --batch-size auto",
        ),
        (
            ("--batch-size", "4", "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1"),
            "with --backend openai use --concurrency N",
        ),
        (
            (
                "--gpus-per-replica",
                "2",
            ),
            "--gpus-per-replica 2 needs --device-map auto",
        ),
    ],
)
def test_batching_options_are_checked_at_start(pytester, args, message):
    result = pytester.runpytest("--model", str(TINY), *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])


def test_a_prompt_past_128k_is_generated_alone_whatever_the_batch_size(tiny_hf):
    tiny_hf.batch_size = 8
    try:
        assert tiny_hf.batch_limit(4096, 50) == 8
        assert (
            tiny_hf.batch_limit(1_048_576, 50) == 1
        )  # one 1M prompt's activations are a worker's share
    finally:
        tiny_hf.batch_size = 1


def test_the_batch_estimate_reads_a_config_by_attribute_whatever_its_field_names():
    """GPT-2 names its heads n_head and its layers n_layer (transformers maps the usual names onto
    them): the KV arithmetic reads the attributes, as it reads a Llama config's."""
    from transformers import GPT2Config, LlamaConfig

    from ctxgate.backends.hf import bytes_per_token

    gpt2 = GPT2Config(n_layer=3, n_head=4, n_embd=64)
    assert bytes_per_token(gpt2, 2) == (2 * 3 * 4 * 16 + 4 * 64 + 2 * 4 * 64) * 2
    llama = LlamaConfig(
        hidden_size=64, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=128,
    )  # fmt: skip
    assert bytes_per_token(llama, 2) == (2 * 3 * 2 * 16 + 4 * 64 + 2 * 128) * 2
