"""bAbI-style stories (Weston et al., 2015) for BABILong's qa1-qa5, generated here: bAbI's people,
rooms, objects and sentence forms, so answers range over BABILong's labels (its metric only credits
those) and stories read like BABILong's prompt examples. ``make_story`` is a pure function
of the random stream; a qa5 question fits exactly one handover in its story."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

LOCATIONS = ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office")
PEOPLE = ("Mary", "John", "Daniel", "Sandra")  # bAbI's qa1-qa3 people
TRADERS = ("Bill", "Fred", "Jeff", "Mary")  # bAbI's qa5 people, whom BABILong's labels name
OBJECTS = ("apple", "football", "milk")
MOVES = ("went to", "moved to", "travelled to", "journeyed to", "went back to")
TAKES = ("got", "grabbed", "picked up", "took")
DROPS = ("dropped", "discarded", "put down", "left")
GIVES = ("gave", "handed", "passed")
OPPOSITE = {"north": "south", "south": "north", "east": "west", "west": "east"}
TASKS = ("qa1", "qa2", "qa3", "qa4", "qa5")


_Place = tuple[str, tuple[int, ...]]  # a room, and the facts that put an object there


@dataclass(frozen=True)
class Story:
    task: str
    facts: tuple[str, ...]
    question: str
    answer: str
    supporting: tuple[int, ...]  # indices into facts, ascending


class _World:
    """People, rooms and objects as the facts so far leave them, and the facts behind each."""

    def __init__(self, rng: random.Random, people: tuple[str, ...]) -> None:
        self.rng, self.people = rng, people
        self.facts: list[str] = []
        self.where: dict[str, str] = {}  # person -> room
        self.moved_at: dict[str, int] = {}  # person -> the fact that put them in their room
        self.holder: dict[str, str] = {}  # object -> the person carrying it
        self.taken_at: dict[str, int] = {}  # object -> the fact that gave it to its holder
        self.lying: dict[str, _Place] = {}  # object -> where it was dropped
        self.trail: dict[str, list[_Place]] = {}  # object -> the rooms it was in
        self.gives: list[tuple[int, str, str, str]] = []  # (fact, giver, object, receiver)

    def _say(self, fact: str) -> int:
        self.facts.append(fact)
        return len(self.facts) - 1

    def _arrive(self, obj: str, room: str, why: tuple[int, ...]) -> None:
        trail = self.trail.setdefault(obj, [])
        if not trail or trail[-1][0] != room:
            trail.append((room, why))

    def move(self, person: str, room: str | None = None) -> None:
        room = room or self.rng.choice([r for r in LOCATIONS if r != self.where.get(person)])
        at = self._say(f"{person} {self.rng.choice(MOVES)} the {room}.")
        self.where[person], self.moved_at[person] = room, at
        for obj, holder in self.holder.items():
            if holder == person:
                self._arrive(obj, room, (self.taken_at[obj], at))

    def take(self, person: str, obj: str) -> None:
        at = self._say(f"{person} {self.rng.choice(TAKES)} the {obj} there.")
        self.holder[obj], self.taken_at[obj] = person, at
        self.lying.pop(obj, None)
        self._arrive(obj, self.where[person], (self.moved_at[person], at))

    def drop(self, person: str, obj: str) -> None:
        at = self._say(f"{person} {self.rng.choice(DROPS)} the {obj}.")
        del self.holder[obj]
        self.lying[obj] = (self.where[person], (self.moved_at[person], at))

    def give(self, giver: str, obj: str, receiver: str) -> None:
        if self.where.get(receiver) != self.where[giver]:
            self.move(receiver, self.where[giver])
        at = self._say(f"{giver} {self.rng.choice(GIVES)} the {obj} to {receiver}.")
        self.holder[obj], self.taken_at[obj] = receiver, at
        self.gives.append((at, giver, obj, receiver))

    def step(self, weights: dict[str, int]) -> None:
        """One random event among those the world allows, drawn by ``weights``."""
        held = self.holder.items()
        options: dict[str, list[Callable[[], None]]] = {
            "move": [partial(self.move, p) for p in self.people],
            "take": [
                partial(self.take, p, o)
                for p in self.where
                for o in OBJECTS
                if o not in self.holder and self.lying.get(o, (self.where[p],))[0] == self.where[p]
            ],
            "drop": [partial(self.drop, p, o) for o, p in held],
            "give": [partial(self.give, g, o, r) for o, g in held for r in self.people if r != g],
        }
        kinds = [k for k in weights if options.get(k)]
        kind = self.rng.choices(kinds, [weights[k] for k in kinds])[0]
        self.rng.choice(options[kind])()

    def story(self, task: str, question: str, answer: str, supporting: tuple[int, ...]) -> Story:
        return Story(task, tuple(self.facts), question, answer, tuple(sorted(set(supporting))))


CARRYING = {"move": 3, "take": 2, "drop": 1}


def _qa1(rng: random.Random) -> Story | None:
    world = _World(rng, PEOPLE)
    # bAbI's qa1 stories, cut at each of their questions
    for _ in range(rng.choice((2, 4, 6, 8, 10))):
        world.move(rng.choice(PEOPLE))
    person = rng.choice(list(world.where))
    return world.story("qa1", f"Where is {person}?", world.where[person], (world.moved_at[person],))


def _qa2(rng: random.Random) -> Story | None:
    world = _World(rng, PEOPLE)
    for _ in range(rng.randint(2, 30)):
        world.step(CARRYING)
    placed = [o for o in OBJECTS if o in world.holder or o in world.lying]
    if not placed:
        return None
    obj = rng.choice(placed)
    why: tuple[int, ...]
    if obj in world.holder:
        person = world.holder[obj]
        room, why = world.where[person], (world.taken_at[obj], world.moved_at[person])
    else:
        room, why = world.lying[obj]
    return world.story("qa2", f"Where is the {obj}?", room, why)


def _qa3(rng: random.Random) -> Story | None:
    world = _World(rng, PEOPLE)
    for _ in range(rng.randint(4, 32)):
        world.step(CARRYING)
    # the room it is in now must be one it was in only once, so that "before" names one room
    travelled = [
        o for o, t in world.trail.items() if len(t) >= 2 and [r for r, _ in t].count(t[-1][0]) == 1
    ]
    if not travelled:
        return None
    obj = rng.choice(travelled)
    (before, why_before), (now, why_now) = world.trail[obj][-2:]
    question = f"Where was the {obj} before the {now}?"
    return world.story("qa3", question, before, why_before + why_now)


def _qa4(rng: random.Random) -> Story | None:
    middle, first, second = rng.sample(LOCATIONS, 3)
    one, other = rng.sample(sorted(OPPOSITE), 2)
    relations = [(first, one, middle), (second, other, middle)]  # (a, d, b): a lies d of b
    rng.shuffle(relations)
    # each relation is said either way round: "a is d of b" or "b is opposite(d) of a"
    said = [(a, d, b) if rng.random() < 0.5 else (b, OPPOSITE[d], a) for a, d, b in relations]
    facts = [f"The {a} is {d} of the {b}." for a, d, b in said]
    asked = rng.randrange(2)
    a, d, b = said[asked]
    if rng.random() < 0.5:
        a, d, b = b, OPPOSITE[d], a
    if rng.random() < 0.5:
        question, answer = f"What is {d} of the {b}?", a
    else:
        question, answer = f"What is the {a} {d} of?", b
    return Story("qa4", tuple(facts), question, answer, (asked,))


def _qa5(rng: random.Random) -> Story | None:
    world = _World(rng, TRADERS)
    for _ in range(rng.randint(2, 30)):
        world.step({"move": 3, "take": 2, "give": 3, "drop": 1})
    if not world.gives:
        return None
    _, giver, obj, receiver = last = world.gives[-1]
    forms = [
        (f"Who gave the {obj} to {receiver}?", giver, lambda g: g[2:] == last[2:]),
        (f"Who received the {obj}?", receiver, lambda g: g[2] == obj),
        (f"Who did {giver} give the {obj} to?", receiver, lambda g: g[1:3] == last[1:3]),
        (f"What did {giver} give to {receiver}?", obj, lambda g: (g[1], g[3]) == (giver, receiver)),
        (f"Who gave the {obj}?", giver, lambda g: g[2] == obj),
    ]
    unique = [(q, a) for q, a, fits in forms if sum(map(fits, world.gives)) == 1]
    if not unique:
        return None
    question, answer = rng.choice(unique)
    return world.story("qa5", question, answer, (last[0],))


_MAKERS = {"qa1": _qa1, "qa2": _qa2, "qa3": _qa3, "qa4": _qa4, "qa5": _qa5}


def make_story(task: str, rng: random.Random) -> Story:
    """A story for ``task`` drawn from ``rng``; a draw that leaves no question is drawn again."""
    if task not in _MAKERS:
        raise ValueError(f"no bAbI story generator for {task!r}: choose one of {', '.join(TASKS)}")
    while True:
        story = _MAKERS[task](rng)
        if story is not None:
            return story
