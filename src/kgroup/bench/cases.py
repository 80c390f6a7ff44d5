"""The assignor benchmark cases: Kafka's own large sticky-assignor tests, rebuilt as kgroup requests.

The six cases mirror ``AbstractStickyAssignorTest``'s ``testLarge*`` and ``...NotTimeout`` tests (see
``docs/performance.md``). Everything here is deterministic: a case, an assignor and a phase always give
the same request. Building a request happens *outside* the timed region of a benchmark.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from kgroup.assignors.api import AssignmentRequest
from kgroup.model import Assignment, KgroupError, Member, TopicMetadata, TopicPartition

__all__ = [
    "ASSIGNORS",
    "CASES",
    "CaseShape",
    "Phase",
    "SubscriptionKind",
    "broker_rack",
    "build_request",
    "build_topics",
    "case_by_name",
    "consumer_names",
    "initial_members",
    "partition_racks",
    "phases_for",
    "reassign_members",
    "topic_names",
]

#: the assignors the benchmark table covers, in table order
ASSIGNORS: tuple[str, ...] = ("range", "roundrobin", "sticky", "cooperative-sticky")

#: Kafka's test brokers: 9 brokers, broker ``b`` on rack ``RACKS[b % 3]``, replication factor 3
RACKS = "abc"
BROKERS = 9
REPLICATION_FACTOR = 3
#: the generation consumers report in the ``reassign`` phase (Kafka's tests use ``generationId = 1``)
REASSIGN_GENERATION = 1


class Phase(enum.Enum):
    INITIAL = "initial"
    REASSIGN = "reassign"


class SubscriptionKind(enum.Enum):
    """How the consumers of a case subscribe."""

    #: every consumer subscribes to every topic
    UNIFORM = "uniform"
    #: every consumer every topic, except the last consumer: the first topic only
    NONEQUAL = "nonequal"
    #: consumer ``i`` with ``i % 4 == 0``: the first half of the topics; the others: the second half
    HALVES = "halves"


@dataclass(frozen=True, slots=True)
class CaseShape:
    """One benchmark case: its size, how consumers subscribe, whether consumers have racks."""

    name: str
    mirrors: str
    topics: int
    partitions: int
    consumers: int
    subscription: SubscriptionKind
    consumer_racks: bool

    @property
    def total_partitions(self) -> int:
        return self.topics * self.partitions

    def scaled(self, scale: float) -> CaseShape:
        """The same case with topic, partition and consumer counts multiplied by ``scale`` (for tests).

        Counts never drop below 2 topics, 1 partition and 5 consumers, so every subscription pattern
        still has members on both sides.
        """
        if not 0 < scale <= 1:
            raise KgroupError(f"scale: {scale} is out of range; give a number in (0, 1]")
        if scale == 1:
            return self
        return replace(
            self,
            topics=max(2, round(self.topics * scale)),
            partitions=max(1, round(self.partitions * scale)),
            consumers=max(5, round(self.consumers * scale)),
        )


_UNIFORM_TEST = "testLargeAssignmentAndGroupWithUniformSubscription"
_NONEQUAL_TEST = "testLargeAssignmentAndGroupWithNonEqualSubscription"
_NOTIMEOUT_TEST = "testAssignmentAndGroupWithNonEqualSubscriptionNotTimeout"

CASES: dict[str, CaseShape] = {
    c.name: c
    for c in (
        CaseShape("uniform", _UNIFORM_TEST, 500, 2000, 2000, SubscriptionKind.UNIFORM, False),
        CaseShape("uniform-rack", _UNIFORM_TEST, 50, 2000, 2000, SubscriptionKind.UNIFORM, True),
        CaseShape("nonequal", _NONEQUAL_TEST, 500, 2000, 2000, SubscriptionKind.NONEQUAL, False),
        CaseShape("nonequal-rack", _NONEQUAL_TEST, 50, 2000, 2000, SubscriptionKind.NONEQUAL, True),
        CaseShape("notimeout", _NOTIMEOUT_TEST, 100, 200, 500, SubscriptionKind.HALVES, False),
        CaseShape("notimeout-rack", _NOTIMEOUT_TEST, 50, 200, 500, SubscriptionKind.HALVES, True),
    )
}


def case_by_name(name: str) -> CaseShape:
    try:
        return CASES[name]
    except KeyError:
        raise KgroupError(f"case: unknown case {name!r}; use one of: {', '.join(CASES)}") from None


def phases_for(assignor: str) -> tuple[Phase, ...]:
    """Range and RoundRobin ignore owned partitions, so only the sticky assignors have a ``reassign`` row."""
    if assignor in ("sticky", "cooperative-sticky"):
        return (Phase.INITIAL, Phase.REASSIGN)
    return (Phase.INITIAL,)


def _padded(prefix: str, count: int) -> list[str]:
    # Kafka's getCanonicalName: the index zero-padded to the number of digits of the *count*
    digits = len(str(count))
    return [f"{prefix}{i:0{digits}d}" for i in range(count)]


def topic_names(count: int) -> list[str]:
    """``t000 .. t499`` for 500 topics (padded to the digits of the count, as Kafka's test names them)."""
    return _padded("t", count)


def consumer_names(count: int) -> list[str]:
    """``c0000 .. c1999`` for 2000 consumers."""
    return _padded("c", count)


def broker_rack(broker: int) -> str:
    return RACKS[broker % len(RACKS)]


def partition_racks(topic_index: int, partition: int) -> frozenset[str]:
    """Racks of the replicas of partition ``partition`` of the ``topic_index``-th topic.

    Replica ``j`` is on broker ``(partition + j + topic_index) % 9``. Three consecutive brokers are on
    three different racks, so every partition has replicas on all racks; the function still computes
    it rather than assuming it.
    """
    return frozenset(
        broker_rack((partition + j + topic_index) % BROKERS) for j in range(REPLICATION_FACTOR)
    )


def build_topics(shape: CaseShape) -> dict[str, TopicMetadata]:
    """Topic metadata of a case. Partition rack sets are interned: equal sets share one object,
    so a million partitions cost a million tuple slots, not a million frozensets."""
    interned: dict[frozenset[str], frozenset[str]] = {}
    topics: dict[str, TopicMetadata] = {}
    for k, name in enumerate(topic_names(shape.topics)):
        racks = tuple(
            interned.setdefault(r, r)
            for r in (partition_racks(k, p) for p in range(shape.partitions))
        )
        topics[name] = TopicMetadata(name, shape.partitions, racks)
    return topics


def _subscriptions(shape: CaseShape) -> list[tuple[str, ...]]:
    all_topics = tuple(topic_names(shape.topics))
    n = shape.consumers
    if shape.subscription is SubscriptionKind.UNIFORM:
        return [all_topics] * n
    if shape.subscription is SubscriptionKind.NONEQUAL:
        return [all_topics] * (n - 1) + [all_topics[:1]]
    half = len(all_topics) // 2
    first, second = all_topics[:half], all_topics[half:]
    return [first if i % 4 == 0 else second for i in range(n)]


def _consumer_rack(shape: CaseShape, index: int) -> str | None:
    return RACKS[index % len(RACKS)] if shape.consumer_racks else None


def initial_members(shape: CaseShape) -> list[Member]:
    """The ``initial`` phase: every consumer new — nothing owned, no generation."""
    return [
        Member(member_id=name, topics=topics, rack_id=_consumer_rack(shape, i))
        for i, (name, topics) in enumerate(
            zip(consumer_names(shape.consumers), _subscriptions(shape), strict=True)
        )
    ]


UserDataEncoder = Callable[[Sequence[TopicPartition], int], bytes]


def _sticky_user_data_encoder() -> UserDataEncoder:
    try:
        from kgroup.assignors.sticky.userdata import (  # type: ignore[import-not-found,unused-ignore]
            encode_sticky_user_data,
        )
    except ImportError as exc:
        raise KgroupError(
            "assignor: the sticky reference (kgroup.assignors.sticky.userdata) is not available; "
            "benchmark another assignor or install a complete kgroup"
        ) from exc
    encoder: UserDataEncoder = encode_sticky_user_data
    return encoder


def reassign_members(
    shape: CaseShape, assignor: str, initial: Mapping[str, Sequence[TopicPartition]]
) -> list[Member]:
    """The ``reassign`` phase: consumers 1..N-1 report their ``initial`` partitions as owned with
    generation 1; consumer 0 rejoins as it first joined (nothing owned).

    The eager ``sticky`` assignor reads owned partitions and generation from its user data only, and
    Kafka's test builds those subscriptions without a rack; ``cooperative-sticky`` reads the
    subscription's owned partitions and generation and keeps the consumer's rack.
    """
    first = initial_members(shape)
    encode = _sticky_user_data_encoder() if assignor == "sticky" else None
    members = [first[0]]
    for member in first[1:]:
        owned = tuple(initial.get(member.member_id, ()))
        if encode is not None:
            members.append(
                replace(
                    member,
                    owned=owned,
                    generation=REASSIGN_GENERATION,
                    rack_id=None,
                    user_data=encode(owned, REASSIGN_GENERATION),
                )
            )
        else:
            members.append(replace(member, owned=owned, generation=REASSIGN_GENERATION))
    return members


def build_request(
    shape: CaseShape,
    assignor: str,
    phase: Phase,
    *,
    topics: Mapping[str, TopicMetadata] | None = None,
    initial: Assignment | None = None,
) -> AssignmentRequest:
    """The request of one benchmark cell.

    As in Kafka's tests, brokers have racks in every case and ``preferRackAwareLogic`` is set in every
    case; it only takes effect in the ``-rack`` cases, where consumers have racks too. The
    ``reassign`` phase needs the ``initial`` result of the same assignor (``initial``); without it,
    it is computed here with the registered assignor.
    """
    if phase is Phase.REASSIGN and phase not in phases_for(assignor):
        raise KgroupError(
            f"phase: {assignor!r} has no 'reassign' phase (it ignores owned partitions); use --phase initial"
        )
    metadata = dict(topics) if topics is not None else build_topics(shape)
    first = AssignmentRequest(initial_members(shape), metadata, prefer_rack_aware_logic=True)
    if phase is Phase.INITIAL:
        return first
    if initial is None:
        from kgroup.assignors.registry import create_assignor

        initial = create_assignor(assignor).assign(first)
    members = reassign_members(shape, assignor, initial)
    return AssignmentRequest(members, metadata, prefer_rack_aware_logic=True)
