"""GraphWalks' own rows: at length L a task's rows are those whose prompt (in this tokenizer, in the
chat template where the run uses one, the run's BFS wording applied) plus the budget is over L/2
and at most L, as ctxgate bins every released set; sample i is the bin's i-th row in a seeded
order."""

from __future__ import annotations

from ctxgate.api import (
    BuildContext,
    DataNotGiven,
    Job,
    Sample,
    TaskTooShort,
    format_length,
    helmet_order,
    memo,
)

from .files import graphwalks_paths, load_graphwalks, not_given
from .grader import reference
from .prompt import reword
from .settings import SECTION

OFFICIAL_BUDGET = 1024  # answers of up to ~80 names of 10 hex digits with their commas
MARGIN = 1.5  # a row this factor off the bin by its characters is not tokenized
CHARS_PER_TOKEN = 2.0  # a first guess, measured on a row before binning


def prompt_ids(ctx: BuildContext, text: str) -> tuple[int, ...]:
    frame = ctx.frame(text, "", "")
    return (*frame.pre, *frame.post)


@memo(16)
def rows_for(ctx: BuildContext, kind: str, wording: str, length: int, gen: int) -> tuple[int, ...]:
    """The rows of the length's bin, in file order."""
    task = f"graphwalks_{kind}"
    if not graphwalks_paths(ctx.data_dir):
        raise not_given(ctx.data_dir, task, length)
    data = load_graphwalks(ctx.data_dir, task)
    indices = data.indices(kind)
    if not indices:
        raise DataNotGiven(f"{task}: the files {', '.join(data.paths)} have no {kind} row")
    first = data.row(indices[0]).prompt
    per_token = len(first) / max(1, len(ctx.encoder.whole(first))) or CHARS_PER_TOKEN
    low, chosen = length / 2, []
    for i in indices:
        if not low / MARGIN < data.n_chars[i] / per_token + gen <= length * MARGIN:
            continue
        need = len(prompt_ids(ctx, reword(data.row(i).prompt, wording))) + gen
        if low < need <= length:
            chosen.append(i)
    if not chosen:
        near = sorted({_power_of_two(data.n_chars[i] / per_token + gen) for i in indices})
        others = ",".join(format_length(n).lower() for n in near if n != length)
        raise TaskTooShort(
            f"{task} has no row at length {length}: none of the {len(indices)} {kind} rows of "
            f"{', '.join(data.paths)} has a prompt that, with the {gen}-token generation budget, "
            f"takes more than {length // 2} and at most {length} tokens of this tokenizer; by "
            f"their sizes its rows are near --lengths {others or 'none'}"
        )
    return tuple(chosen)


def _power_of_two(tokens: float) -> int:
    length = 1
    while length < tokens:
        length <<= 1
    return length


def pool_size(kind: str, ctx: BuildContext, length: int) -> int:
    return len(rows_for(ctx, kind, SECTION.of(ctx.extras).bfs_wording, length, OFFICIAL_BUDGET))


def build_official(kind: str, ctx: BuildContext, job: Job) -> Sample:
    wording = SECTION.of(ctx.extras).bfs_wording
    rows = rows_for(ctx, kind, wording, job.length, job.gen)
    data = load_graphwalks(ctx.data_dir, job.task)
    row = data.row(rows[helmet_order(len(rows), ctx.seed)[job.index % len(rows)]])
    frame = ctx.frame(reword(row.prompt, wording), "", "")
    return job.sample(
        frame.around((), ""),
        (reference(row.answer),),
        "",
        row=row.where,
        operation=kind,
        answer_nodes=len(row.answer),
        answer_fixed=row.fixed,
        bfs_wording=wording,
        data_file=", ".join(data.paths),
        data_sha256=data.sha256,
    )
