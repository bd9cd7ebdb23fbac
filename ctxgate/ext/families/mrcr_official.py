"""OpenAI MRCR's own rows, and the conversation rendering both MRCR families share. At length L a
task's rows are those whose prompt (in this tokenizer) plus the budget is over L/2 and at most L,
as MRCR bins rows; sample i is the bin's i-th row in ``datasets``' ``shuffle(seed)`` order."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from ctxgate.api import (
    BuildContext,
    ChatTemplateError,
    ChatTurns,
    Job,
    PieceEncoder,
    Prompt,
    Refusal,
    Sample,
    TaskTooShort,
    format_length,
    helmet_order,
    memo,
)
from ctxgate.ext.families.conversations import PLAIN
from ctxgate.ext.families.mrcr_files import load_mrcr, mrcr_paths, not_given

# a row this factor off the bin by its characters is not tokenized (GPT-4o prose varies less)
MARGIN = 1.5
COUNTS_KEPT = 50_000  # contents whose token counts are remembered while rows are binned


class TemplateRefused(Refusal, ValueError):
    """The chat template cannot render the conversation turn by turn (an unusable input)."""

    cause = "data_unreadable"


def conversation_turns(enc: PieceEncoder, chat: bool, task: str) -> ChatTurns:
    if not chat:
        return PLAIN
    if not enc.has_chat_template:
        raise TemplateRefused(
            f"{task}: the tokenizer has no chat template to render the conversation with: "
            "pass --chat-template off for the plain transcript"
        )
    try:
        return enc.chat_turns()
    except ChatTemplateError as exc:
        raise TemplateRefused(f"{task}: {exc}") from None


def render_ids(
    enc: PieceEncoder, turns: ChatTurns, messages: Sequence[tuple[str, str]]
) -> list[int]:
    """The rendering's pieces' ids joined, each turn and content tokenized once."""
    texts, contents = turns.pieces(messages)
    distinct = list(dict.fromkeys(contents))
    found = dict(zip(distinct, enc.encode_fresh(distinct)))
    between = {text: enc.encode(text) for text in set(texts[1:])}  # a handful: the turns, the end
    ids = list(enc.whole(texts[0]))
    for text, content in zip(["", *texts[1:]], contents):
        ids.extend(between[text] if text else ())
        ids.extend(found[content])
    ids.extend(between[texts[-1]])
    return ids


def count_ids(
    enc: PieceEncoder, turns: ChatTurns, messages: Sequence[tuple[str, str]], counts: dict[str, int]
) -> int:
    """``len(render_ids(...))``, the contents' counts remembered in ``counts`` across rows."""
    texts, contents = turns.pieces(messages)
    new = [c for c in dict.fromkeys(contents) if c not in counts]
    if len(counts) + len(new) > COUNTS_KEPT:
        counts.clear()
    counts.update(zip(new, map(len, enc.encode_fresh(new))))
    between = {text: len(enc.encode(text)) for text in set(texts[1:])}
    fixed = len(enc.whole(texts[0])) + sum(between[t] for t in texts[1:])
    return fixed + sum(counts[c] for c in contents)


EDGE_PER_MESSAGE = 4  # tokens a row's joined ids may be off its whole text's, per message


def _turns(enc: PieceEncoder, chat: bool, needles: int) -> ChatTurns:
    task = f"mrcr_{needles}needle"
    turns = conversation_turns(enc, chat, task)
    if turns.user_user is None:
        raise TemplateRefused(
            f"{task}: the chat template refuses two user messages in a row, which every OpenAI "
            "MRCR prompt starts with (the worked examples, then the first request), so its "
            "prompts cannot be rendered as the template renders them: pass --chat-template off "
            "for the plain transcript"
        )
    return turns


def _lengths_of(sizes: Iterable[int], chars_per_token: float, gen: int) -> list[int]:
    """The power-of-two lengths rows of these sizes in characters may belong to."""
    found = set()
    for size in sizes:
        estimate = size / chars_per_token + gen
        length = 1 << max(0, math.ceil(math.log2(estimate / MARGIN)))
        while length / (2 * MARGIN) < estimate:
            found.add(length)
            length <<= 1
    return sorted(found)


@memo(32)
def rows_for(
    data_dir: str | None, needles: int, enc: PieceEncoder, chat: bool, length: int, gen: int
) -> tuple[int, ...]:
    """The rows of the length's bin, in file order."""
    if not data_dir or not mrcr_paths(data_dir, needles):
        raise not_given(data_dir, needles, length)
    data = load_mrcr(data_dir, needles)
    turns = _turns(enc, chat, needles)
    sample = [a for a in data.answers(16) if a]
    chars_per_token = sum(map(len, sample)) / max(1, sum(map(len, enc.encode_fresh(sample)))) or 1.0
    low, counts, chosen = length / 2, dict[str, int](), list[int]()
    for i, size in enumerate(data.n_chars):
        if not low / MARGIN < size / chars_per_token + gen <= length * MARGIN:
            continue
        messages = data.row(i).messages
        need = count_ids(enc, turns, messages, counts) + gen
        if min(abs(need - low), abs(need - length)) <= EDGE_PER_MESSAGE * len(messages):
            # near a bin's edge: as the prompt is sent
            need = len(enc.whole(turns.render(messages))) + gen
        if low < need <= length:
            chosen.append(i)
    if not chosen:
        # by design, as a length too short for a task's fixed parts: the data covers other lengths
        fits = _lengths_of(data.n_chars, chars_per_token, gen)
        others = ",".join(format_length(n).lower() for n in fits if n != length and n > gen)
        where = (
            f"by their sizes its rows can only be at --lengths {others}"
            if others
            else f"choose a --lengths value twice or half {length}"
        )
        raise TaskTooShort(
            f"mrcr_{needles}needle has no row at length {length}: none of the {len(data)} rows of "
            f"{', '.join(data.paths)} has a prompt that, with the {gen}-token generation budget, "
            f"takes more than {length // 2} and at most {length} tokens of this tokenizer (each "
            f"row belongs to one power-of-two length); {where}"
        )
    return tuple(chosen)


def pool_size(needles: int, gen: int, ctx: BuildContext, length: int) -> int:
    return len(rows_for(ctx.data_dir, needles, ctx.encoder, ctx.chat, length, gen))


def build_official(needles: int, ctx: BuildContext, job: Job) -> Sample:
    rows = rows_for(ctx.data_dir, needles, ctx.encoder, ctx.chat, job.length, job.gen)
    data = load_mrcr(ctx.data_dir, needles)
    row = data.row(rows[helmet_order(len(rows), ctx.seed)[job.index % len(rows)]])
    turns = _turns(ctx.encoder, ctx.chat, needles)
    return job.sample(
        Prompt(render_ids(ctx.encoder, turns, row.messages), turns.render(row.messages)),
        (row.answer, row.prefix),
        "",
        row=row.where,
        random_string=row.prefix,
        desired_msg_index=row.desired_msg_index,
        total_messages=row.total_messages,
        messages=len(row.messages),
        answer_tokens=len(ctx.encoder.encode_fresh([row.answer])[0]),
        data_file=", ".join(data.paths),
        data_sha256=data.sha256,
    )
