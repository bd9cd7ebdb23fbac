"""The offline writer of MRCR-style conversations: user requests for a piece of writing (a form about a topic) and
the assistant's answers, all drawn from one generator, so the repeated request (the needles) looks like the
distractors around it.

A request is worded as in OpenAI MRCR's data (``write a {form} about {topic}``, "a" before every form), and so is the
final question (``Prepend {prefix} to the {ordinal} (1 indexed) {form} about {topic}. Do not include any other text
in your response.``). Topics are the shipped word list's nouns in their plural, as OpenAI MRCR's mostly are ("about
horses"); an answer is its form's opening line, one to three whole sentences of the haystack (``units``: the
shipped Wikipedia text, or ``--haystack``) behind the form's separator, and its form's closing.
Every answer is ASCII and at most ``MAX_ANSWER_CHARS`` characters, so with its 10-character prefix it fits
``MAX_ANSWER_CHARS + PREFIX_CHARS`` tokens of any tokenizer that spells an ASCII character in at most one token. An
answer is held as the indexes of its sentences: a prompt's ids are assembled from pieces each tokenized once per
tokenizer (the form's lines, separator + sentence), never from text tokenized whole.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, field
from functools import lru_cache

from ctxgate.data import words
from ctxgate.data.haystacks import HaystackError, load_essay
from ctxgate.tokens.chat import ChatTurns

MAX_ANSWER_CHARS = 240
PREFIX_CHARS = 10  # OpenAI MRCR's random_string_to_prepend: 10 letters and digits
UNIT_CHARS = (30, 100)  # the sentences answers are made of
MIN_UNITS = 32  # a haystack with fewer such sentences repeats them too often to tell eight needle answers apart
PREFIX_ALPHABET = string.ascii_letters + string.digits

# Base models read a plain transcript. Each role's name stands on its own line, so the prompt ends at a newline and
# the answer's first character (the prefix the grade looks for) is the model's first, with no space before it. The
# contents are trimmed: OpenAI MRCR's first message ends at a newline ("======END EXAMPLE======\n"), which would
# otherwise leave two blank lines before the next "User:".
PLAIN = ChatTurns("User:\n", "\n\nAssistant:\n", "\n\nUser:\n", "\n\nUser:\n", "\n\nAssistant:\n", trims=True)

PREAMBLE_HEAD = "Here are some examples of conversations succeeded by a follow-up question answered correctly:\n"
EXAMPLE_START = "======EXAMPLE======\n"
EXAMPLE_END = "======END EXAMPLE======\n"


@dataclass(frozen=True)
class Form:
    """A kind of writing: its name in requests, its opening (no leading whitespace), the separator before each
    sentence and its closing (both start with whitespace, so pieces meet where tokenizers split)."""

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
    """The sentences answers are made of, from one haystack (``units``); one object per haystack, compared by
    identity, so an answer that holds it hashes cheaply. ``key`` names the haystack (its source and hash): ids made
    of these sentences are cached under it."""

    key: str
    texts: tuple[str, ...]


@dataclass(frozen=True)
class Answer:
    """An answer to ``request``: its form's opening, the sentences ``units`` (indexes into ``body``), its
    closing."""

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
    "aircraft cattle child deer fish foot goose louse moose mouse people person police salmon series sheep species "
    "swine tooth trout".split()
)


def plural(noun: str) -> str | None:
    """The noun's regular English plural, or None where English may form it otherwise (endings in s: plural
    already, or -us/-is; f/fe: leaves; o: potatoes; um: data; man: men; ex/ix: indices; z: quizzes) or rarely
    uses one (the mass nouns of -logy, -ness and -ism)."""
    if noun in _IRREGULAR or noun.endswith(("s", "f", "fe", "o", "um", "man", "ex", "ix", "z", "logy", "ness", "ism")):
        return None
    if noun.endswith(("x", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


@lru_cache(maxsize=1)
def topics() -> tuple[str, ...]:
    """What a request is about: the plural of each noun of 3-12 ASCII letters (every answer stays ASCII, and its
    closing short) whose plural is regular. OpenAI MRCR's topics are mostly plural ("horses", "records", "fields");
    the word list does not mark mass nouns, so a few read oddly in the plural."""
    found = (plural(w) for w in words.nouns() if 3 <= len(w) <= 12 and w.isascii())
    return tuple(dict.fromkeys(p for p in found if p))


_SENTENCES: dict[tuple[str, str], Sentences] = {}


def units(essay_path: str | None = None) -> Sentences:
    """The haystack's (``--haystack``, else the shipped text's first volume) whole sentences (a capital first, a
    full stop after a word of three letters or more: no abbreviation cut) of six words or more and 30-100 ASCII
    characters, without the characters a transcript or the examples' markers use, or brackets and quotes that may
    be unbalanced, in order, each once. Found once per haystack."""
    essay = load_essay(essay_path)
    key = (essay.source, essay.sha256)
    found = _SENTENCES.get(key)
    if found is None:
        texts = tuple(dict.fromkeys(s for s in essay.volumes[0].sentences() if _whole(s)))
        if len(texts) < MIN_UNITS:
            low, high = UNIT_CHARS
            raise HaystackError(
                f"the haystack {essay.source} has {len(texts)} sentences an MRCR answer can use (whole ASCII "
                f"sentences of {low}-{high} characters and six words or more, no brackets, quotes, colons or =) "
                f"where it needs {MIN_UNITS}: point --haystack at a longer English text, or leave it out for the "
                "shipped one"
            )
        if len(_SENTENCES) >= 4:
            _SENTENCES.clear()
        found = _SENTENCES[key] = Sentences(f"{essay.source}:{essay.sha256}", texts)
    return found


def _whole(s: str) -> bool:
    low, high = UNIT_CHARS
    words_ = s.split()
    return (
        low <= len(s) <= high
        and s.isascii()
        and s[0].isupper()
        and s.endswith(".")
        and len(words_) >= 6
        and len(words_[-1]) >= 4
        and not any(c in s for c in ':=()[]"')
    )


def topic_pool(rng: random.Random, size: int = 32) -> tuple[str, ...]:
    """The topics of one conversation: its requests return to them, as OpenAI MRCR's do."""
    return tuple(rng.sample(topics(), size))


def needle_request(rng: random.Random, pool: tuple[str, ...]) -> Request:
    return Request(rng.choice(FORMS), rng.choice(pool))


def distractor_request(rng: random.Random, needle: Request, pool: tuple[str, ...]) -> Request:
    """A request other than the needle's: one in four of its form about another topic, one in four about its topic
    in another form (the near misses), the rest any form about any topic of the pool."""
    draw = rng.random
    while True:
        near = draw()
        form = needle.form if near < 0.25 else FORMS[int(draw() * len(FORMS))]
        topic = needle.topic if 0.25 <= near < 0.5 else pool[int(draw() * len(pool))]
        found = Request(form, topic)
        if found != needle:
            return found


def answer(rng: random.Random, request: Request, sentences: Sentences, most: int = 3) -> Answer:
    """One to ``most`` of ``sentences``, as many of those drawn as keep the answer within ``MAX_ANSWER_CHARS``."""
    body, draw = sentences.texts, rng.random  # random() scaled, not randrange: a 1M-token conversation draws 100,000
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
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, ..., 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def question(prefix: str, nth: int, request: Request) -> str:
    return (
        f"Prepend {prefix} to the {ordinal(nth)} (1 indexed) {request.kind}. "
        "Do not include any other text in your response."
    )


def preamble(rng: random.Random, needle: Request, pool: tuple[str, ...], sentences: Sentences) -> str:
    """The first user message: two worked examples, each a short conversation in which one request comes twice
    and a distractor once (one-sentence answers), then the question for one of the two and its correct answer.
    Neither example asks for the conversation's own needle."""
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
