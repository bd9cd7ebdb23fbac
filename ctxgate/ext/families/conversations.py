"""The offline writer of MRCR-style conversations: requests worded as in OpenAI MRCR's data, and
answers (a form's opening, 1-3 whole haystack sentences, its closing) from one generator, so needles
look like their distractors. An answer is ASCII and at most ``MAX_ANSWER_CHARS``: with its prefix
it fits ``MAX_ANSWER_CHARS + PREFIX_CHARS`` tokens of a tokenizer spelling ASCII a token a character
at most."""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, field
from functools import lru_cache

from ctxgate.api import ChatTurns, HaystackError, load_essay, nouns

MAX_ANSWER_CHARS = 240
PREFIX_CHARS = 10  # OpenAI MRCR's random_string_to_prepend: 10 letters and digits
UNIT_CHARS = (30, 100)  # the sentences answers are made of
MIN_UNITS = 32  # fewer sentences repeat too often to tell eight needle answers apart
PREFIX_ALPHABET = string.ascii_letters + string.digits

# Base models read a plain transcript. Each role's name stands on its own line, so the answer's
# first character (the prefix the grade looks for) is the model's first. Contents are trimmed:
# OpenAI MRCR's first message ends at a newline, which would leave two blank lines before "User:".
_USER, _ASSISTANT = "\n\nUser:\n", "\n\nAssistant:\n"
PLAIN = ChatTurns("User:\n", _ASSISTANT, _USER, _USER, _ASSISTANT, trims=True)

PREAMBLE_HEAD = (
    "Here are some examples of conversations succeeded by a follow-up question "
    "answered correctly:\n"
)
EXAMPLE_START = "======EXAMPLE======\n"
EXAMPLE_END = "======END EXAMPLE======\n"


@dataclass(frozen=True)
class Form:
    """A kind of writing; ``sep`` and ``tail`` start with whitespace, where tokenizers split."""

    name: str
    head: str
    sep: str
    tail: str = ""


# the openings and closings read with a plural topic ("Ode to the horses", "Subject: About horses")
FORMS = (
    Form("poem", "Ode to the {topic}", "\n"),
    Form("riddle", "A riddle about {topic}:", "\n", "\nWhat are we?"),
    Form("short essay", "On {topic}.", " "),
    Form("list", "Notes on {topic}:", "\n- "),
    Form("letter", "Dear friend,", "\n", "\nYours, a lover of {topic}"),
    Form("email", "Subject: About {topic}", "\n\n", "\n\nBest regards"),
    Form("blog post", "# All about {topic}", "\n\n"),
    Form("social media post", "Let's talk about {topic}!", " ", " #{topic}"),
    Form("story", "Once upon a time there were some {topic}.", " ", " The end."),
    Form("speech", "Friends, let me speak about {topic}.", " ", " Thank you."),
)


@dataclass(frozen=True)
class Request:
    form: Form
    topic: str

    @property
    def text(self) -> str:
        return f"write a {self.form.name} about {self.topic}"

    @property
    def kind(self) -> str:
        return f"{self.form.name} about {self.topic}"


@dataclass(frozen=True, eq=False)
class Sentences:
    """One haystack's answer sentences, compared by identity; ids cached under ``key``."""

    key: str
    texts: tuple[str, ...]


@dataclass(frozen=True)
class Answer:
    """An answer: its form's opening, the sentences ``units`` of ``body``, its closing."""

    request: Request
    units: tuple[int, ...]
    body: Sentences = field(compare=False, repr=False)

    @property
    def head(self) -> str:
        return self.request.form.head.format(topic=self.request.topic)

    @property
    def tail(self) -> str:
        return self.request.form.tail.format(topic=self.request.topic)

    @property
    def text(self) -> str:
        sep, body = self.request.form.sep, self.body.texts
        return self.head + "".join(sep + body[u] for u in self.units) + self.tail


# nouns whose plural the regular rule gets wrong, or which are plural already
_IRREGULAR = frozenset(
    "aircraft cattle child deer fish foot goose louse moose mouse people person police salmon "
    "series sheep species swine tooth trout".split()
)
_IRREGULAR_ENDINGS = ("s", "f", "fe", "o", "um", "man", "ex", "ix", "z", "logy", "ness", "ism")


def plural(noun: str) -> str | None:
    """The regular plural, or None where English may form it otherwise or rarely uses one."""
    if noun in _IRREGULAR or noun.endswith(_IRREGULAR_ENDINGS):
        return None
    if noun.endswith(("x", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


@lru_cache(maxsize=1)
def topics() -> tuple[str, ...]:
    """Regular plurals of the 3-12-letter ASCII nouns, as OpenAI MRCR's topics mostly are."""
    found = (plural(w) for w in nouns() if 3 <= len(w) <= 12 and w.isascii())
    return tuple(dict.fromkeys(p for p in found if p))


_SENTENCES: dict[tuple[str, str], Sentences] = {}


def units(essay_path: str | None = None) -> Sentences:
    """The first haystack volume's ``_whole`` sentences, in order, each once; once per haystack."""
    essay = load_essay(essay_path)
    key = (essay.source, essay.sha256)
    found = _SENTENCES.get(key)
    if found is None:
        texts = tuple(dict.fromkeys(s for s in essay.volumes[0].sentences() if _whole(s)))
        if len(texts) < MIN_UNITS:
            low, high = UNIT_CHARS
            raise HaystackError(
                f"the haystack {essay.source} has {len(texts)} sentences an MRCR answer can use "
                f"(whole ASCII sentences of {low}-{high} characters and six words or more, no "
                f"brackets, quotes, colons or =) where it needs {MIN_UNITS}: point --haystack at a "
                "longer English text, or leave it out for the shipped one"
            )
        if len(_SENTENCES) >= 4:
            _SENTENCES.clear()
        found = _SENTENCES[key] = Sentences(f"{essay.source}:{essay.sha256}", texts)
    return found


def _whole(s: str) -> bool:
    """A whole sentence (its last word 3+ letters: no abbreviation cut) of six words or more, with
    nothing a transcript or the markers use and no brackets or quotes (they may be unbalanced)."""
    low, high = UNIT_CHARS
    words_ = s.split()
    if not (low <= len(s) <= high and s.isascii() and s[0].isupper() and s.endswith(".")):
        return False
    return len(words_) >= 6 and len(words_[-1]) >= 4 and not any(c in s for c in ':=()[]"')


def topic_pool(rng: random.Random, size: int = 32) -> tuple[str, ...]:
    """The topics of one conversation: its requests return to them, as OpenAI MRCR's do."""
    return tuple(rng.sample(topics(), size))


def needle_request(rng: random.Random, pool: tuple[str, ...]) -> Request:
    return Request(rng.choice(FORMS), rng.choice(pool))


def distractor_request(rng: random.Random, needle: Request, pool: tuple[str, ...]) -> Request:
    """A request other than the needle's: a quarter its form, a quarter its topic (near misses),
    the rest any form about any topic of the pool."""
    draw = rng.random
    while True:
        near = draw()
        form = needle.form if near < 0.25 else FORMS[int(draw() * len(FORMS))]
        topic = needle.topic if 0.25 <= near < 0.5 else pool[int(draw() * len(pool))]
        found = Request(form, topic)
        if found != needle:
            return found


def answer(rng: random.Random, request: Request, sentences: Sentences, most: int = 3) -> Answer:
    """One to ``most`` sentences, as many as keep the answer within ``MAX_ANSWER_CHARS``."""
    # random() scaled, not randrange: a 1M-token conversation draws 100,000
    body, draw = sentences.texts, rng.random
    drawn = [int(draw() * len(body)) for _ in range(1 + int(draw() * most))]
    form = request.form
    size = len(form.head) + len(form.tail) + 2 * len(request.topic)
    kept: list[int] = []
    for u in drawn:
        size += len(form.sep) + len(body[u])
        if kept and size > MAX_ANSWER_CHARS:
            break
        kept.append(u)
    return Answer(request, tuple(kept), sentences)


def random_prefix(rng: random.Random) -> str:
    return "".join(rng.choice(PREFIX_ALPHABET) for _ in range(PREFIX_CHARS))


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def question(prefix: str, nth: int, request: Request) -> str:
    return (
        f"Prepend {prefix} to the {ordinal(nth)} (1 indexed) {request.kind}. "
        "Do not include any other text in your response."
    )


def preamble(
    rng: random.Random, needle: Request, pool: tuple[str, ...], sentences: Sentences
) -> str:
    """Two worked examples: one request twice and a distractor once, then the question for one of
    the two and its correct answer; neither asks for the conversation's own needle."""
    parts = [PREAMBLE_HEAD]
    for _ in range(2):
        request = distractor_request(rng, needle, pool)
        other = distractor_request(rng, request, pool)
        while other == needle:
            other = distractor_request(rng, request, pool)
        turns = [request, request, other]
        rng.shuffle(turns)
        answers = [answer(rng, r, sentences, most=1) for r in turns]
        nth = rng.randint(1, 2)
        gold = [a for a in answers if a.request == request][nth - 1]
        prefix = random_prefix(rng)
        lines = [f"User: {a.request.text}\nAssistant: {a.text}\n" for a in answers]
        lines.append(f"User: {question(prefix, nth, request)}\nAssistant: {prefix}{gold.text}\n")
        parts.append("\n" + EXAMPLE_START + "".join(lines) + "\n" + EXAMPLE_END)
    return "".join(parts)
