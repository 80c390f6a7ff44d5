"""Random clusters for Kafka 4.4.0's replica placement (``StripedReplicaPlacer``), and kgroup's answer.

A case is what a KRaft controller's placer sees over a run of topic creations: the brokers in the order
they registered (id, rack, fenced), a ``java.util.Random`` seed, and topics placed one after the other
with that one generator. The draws aim at the placer's corners: ids past a ``HashMap``'s 16 buckets
(the controller lists brokers in ``HashMap<Integer>`` order), rack names whose Java hash codes collide
("Aa"/"BB") or whose Java order differs from Python's (UTF-16 surrogates), brokers without a rack beside
named racks, fenced brokers (all of them, all but one), replication factors of 0 and beyond the broker
count, and more partitions than unfenced brokers (the placer's shuffles).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from kgroup.javacompat import JavaRandom
from kgroup.partitioning import InvalidReplicationFactor, StripedReplicaPlacer, UsableBroker
from kgroup.partitioning.striped import controller_broker_order

#: rack names: plain, prefixes, "Aa"/"BB" share String.hashCode, "" is a rack too, and a character
#: above U+FFFF sorts below U+FFFD in Java (UTF-16 units) but above it in Python
RACK_NAMES = ("a", "b", "c", "rack-1", "rack-10", "rack-2", "Aa", "BB", "", "\ufffd", "\U0001f600", "Ä")


@dataclass(frozen=True, slots=True)
class PlacementCase:
    brokers: tuple[UsableBroker, ...]  # in registration order
    topics: tuple[tuple[int, int], ...]  # (partitions, replication factor), placed in turn
    seed: int

    def as_json(self) -> dict[str, object]:
        return {
            "seed": self.seed,
            "brokers": [{"id": b.id, "rack": b.rack, "fenced": b.fenced} for b in self.brokers],
            "topics": [{"partitions": p, "replicationFactor": rf} for p, rf in self.topics],
        }


def random_case(rng: random.Random) -> PlacementCase:
    n = rng.choice((1, 2, 3, 3, 4, 5, 6, 6, 7, 9, 12, 16, 24))
    id_space = rng.choice(("dense", "dense", "wide", "huge"))
    if id_space == "dense":
        ids = rng.sample(range(n + rng.randrange(3)), n)
    elif id_space == "wide":
        ids = rng.sample(range(300), n)
    else:
        ids = rng.sample(range(2**31 - 1 - 1000, 2**31 - 1), n // 2) + rng.sample(range(1 << 20), n - n // 2)
    rng.shuffle(ids)  # the registration order
    rack_mode = rng.choice(("none", "none", "one", "some", "some", "mixed"))
    names = list(rng.sample(RACK_NAMES, rng.randint(1, 5)))
    racks: list[str | None] = []
    for _ in ids:
        if rack_mode == "none":
            racks.append(None)
        elif rack_mode == "one":
            racks.append(names[0])
        elif rack_mode == "some":
            racks.append(rng.choice(names))
        else:
            racks.append(rng.choice([*names, None]))
    fence_mode = rng.choice(("none", "none", "none", "some", "some", "all-but-one", "all"))
    if fence_mode == "none":
        fenced = set()
    elif fence_mode == "some":
        fenced = set(rng.sample(ids, rng.randrange(n)))
    elif fence_mode == "all-but-one":
        fenced = set(ids[1:])
    else:
        fenced = set(ids)
    brokers = tuple(UsableBroker(i, rack, i in fenced) for i, rack in zip(ids, racks, strict=True))
    topics = []
    for _ in range(rng.randint(1, 4)):
        partitions = rng.choice((1, 2, 3, n, n + 1, 2 * n + 1, rng.randint(1, 60), rng.randint(1, 200)))
        if rng.random() < 0.08:
            rf = rng.choice((0, n + 1))  # Kafka refuses these (after its draws)
        else:
            rf = min(n, rng.choice((1, 1, 2, 2, 3, 3, n, rng.randint(1, n))))
        topics.append((max(1, partitions), rf))
    seed = rng.getrandbits(64) - 2**63  # a Java long
    return PlacementCase(brokers, tuple(topics), seed)


def kgroup_answer(case: PlacementCase) -> tuple[tuple[int, ...], tuple[list[list[int]] | str, ...]]:
    """The describer's broker order and each topic's placement (or Kafka's exception text), by kgroup."""
    usable = controller_broker_order(case.brokers)
    placer = StripedReplicaPlacer(JavaRandom(case.seed))
    answers: list[list[list[int]] | str] = []
    for partitions, rf in case.topics:
        try:
            answers.append(placer.place(usable, partitions, rf))
        except InvalidReplicationFactor as exc:
            answers.append(f"InvalidReplicationFactorException: {exc.message}")
    return tuple(b.id for b in usable), tuple(answers)


class _ScriptedRandom(JavaRandom):
    """A ``Random`` whose draws are given: ``script`` first, then 0; it records each bound asked."""

    def __init__(self, script: list[int]) -> None:
        super().__init__(0)
        self.script = script
        self.bounds: list[int] = []

    def next_int(self, bound: int | None = None) -> int:
        assert bound is not None, "the placer draws only nextInt(bound)"
        at = len(self.bounds)
        self.bounds.append(bound)
        return self.script[at] if at < len(self.script) else 0


def possible_placements(brokers: list[UsableBroker], partitions: int, rf: int) -> list[list[list[int]]]:
    """Every placement kgroup's placer gives for one topic over every value each of its draws can take:
    what a controller whose ``Random`` is unseeded (Kafka's) may answer. Draws are enumerated depth
    first, each from 0 to its bound (a few dozen placements for a small cluster)."""
    found: list[list[list[int]]] = []
    pending: list[list[int]] = [[]]
    while pending:
        script = pending.pop()
        random = _ScriptedRandom(script)
        placed = StripedReplicaPlacer(random).place(controller_broker_order(brokers), partitions, rf)
        if placed not in found:
            found.append(placed)
        if len(random.bounds) > len(script):  # the first draw the script left at 0: its other values
            pending.extend([*script, value] for value in range(1, random.bounds[len(script)]))
            if len(random.bounds) > len(script) + 1:  # and, with it at 0, the later draws' values
                pending.append([*script, 0])
        assert len(found) < 10_000, "too many draws to enumerate: use a smaller cluster"
    return found
