"""What a run spent: each case's engine work, its cached and saved generations, and the run's
sum with the device it was paid in."""

from __future__ import annotations

from dataclasses import dataclass, field, fields


@dataclass(frozen=True)
class Cost:
    """What the engine spent on a verdict in this run. Each case's fixed plan, its sample count (at
    a selected length), is ``generations`` + ``cached_generations`` + ``saved_generations``."""

    generations: int = 0
    """Samples the engine generated in this run."""
    prompt_tokens: int = 0
    """Tokens it prefilled for them, every request's prompt ids (budget forcing sends two)."""
    generated_tokens: int = 0
    """Tokens it generated for them: as a server's usage reported them where it did and they can
    be right (``reported_tokens``), else counted here from the ids or the text."""
    engine_seconds: float = 0.0
    """Seconds of generation (a case's time less building prompts and judging), summed over
    cases: cases a server or cluster runs at once each count their own."""
    cached_generations: int = 0
    """Samples the generation cache had: nothing prefilled or generated."""
    saved_generations: int = 0
    """Samples neither generated nor cached: ``--sequential`` stopped a case once certain, or
    ``--search-effective-length`` skipped its length."""
    saved_prompt_tokens: int = 0
    """Their prompt tokens, estimated: the case's ``prompt_tokens`` per generation (none: per
    sample as sent; a skipped case: its length)."""
    thinking_tokens: int = 0
    """Of ``generated_tokens``, a reasoning model's thought."""
    reported_tokens: int = 0
    """Of ``generated_tokens``, those a server's usage reported (checked against its text and the
    request's budget); the rest, and every prompt token, were counted here."""
    overruns: int = 0
    """Generations whose text ran past the request's budget (the server ignored ``max_tokens``):
    cut to the budget before scoring, and counted so."""
    cached_prompt_tokens: int = 0
    """Of ``prompt_tokens``, those the engine served from its prefix cache instead of computing
    them, as its usage reported them (``prompt_tokens_details.cached_tokens``)."""
    cache_reported: int = 0
    """Of ``generations``, those whose engine reported its cached prompt tokens (the HF engine:
    none, it computes every one); for the others the split is unknown."""

    def __add__(self, other: Cost) -> Cost:
        return Cost(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(Cost)))


@dataclass(frozen=True)
class RunCost:
    """The run's cost: its cases' summed, with the device it was paid in."""

    total: Cost
    """Over every case."""
    device: str | None = None
    """What generated: the GPU's name and count (``NVIDIA H100 80GB HBM3 x2``), ``cpu``, or the
    server's URL; null: nothing was generated."""
    gpu_seconds: float | None = None
    """``engine_seconds`` times the GPUs the model held; null: not on GPUs this process held."""
    by_length: dict[str, Cost] = field(default_factory=dict)
    """Per length (a key in plain digits)."""
