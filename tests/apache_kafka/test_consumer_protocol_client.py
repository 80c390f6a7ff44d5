"""kgroup.client with ``group_protocol="consumer"`` (KIP-848) against real Apache Kafka 4.4.0.

The broker here is this module's own: Kafka's default consumer-group heartbeat interval is 5 s (and
its minimum too), so every hand-over would take one to two of them; the module's broker answers with
500 ms (``group.consumer.heartbeat.interval.ms``), everything else is Kafka's default. A group of
kgroup members joins, splits the partitions, hands them over with revocation first, commits and
fetches offsets, restarts a static member, follows a regex to a topic created later, and shares a
group with Kafka's Java consumer and with librdkafka (confluent-kafka), both on the consumer protocol.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field

import pytest

from kgroup.client import GroupConsumer
from kgroup.member import (
    ConsumerMemberState,
    LeftGroup,
    MemberConfig,
    MemberEvent,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from kgroup.model import TopicPartition
from kgroup.testing.apache_kafka import ApacheKafka, require_apache_kafka

TIMEOUT_S = 60.0
HEARTBEAT_MS = 500
_counter = itertools.count()


@pytest.fixture(scope="module")
def kafka() -> Iterator[ApacheKafka]:
    require_apache_kafka()
    broker = ApacheKafka(
        configs={
            "group.consumer.heartbeat.interval.ms": HEARTBEAT_MS,
            "group.consumer.min.heartbeat.interval.ms": HEARTBEAT_MS,
        }
    )
    broker.start()
    try:
        yield broker
        broker.check_alive()
    finally:
        broker.stop()


@pytest.fixture
def names(request: pytest.FixtureRequest) -> str:
    return f"cp{os.getpid()}-{next(_counter)}-{request.node.originalname[5:35]}".replace("_", "-")


@dataclass
class Log:
    """Every member's events in the one order they happened (one event loop)."""

    entries: list[tuple[float, str, MemberEvent]] = field(default_factory=list)

    def recorder(self, name: str) -> Callable[[MemberEvent], None]:
        return lambda event: self.entries.append((time.monotonic(), name, event))

    def owners_never_overlap(self) -> None:
        """A partition is taken only after its previous owner revoked (or lost) it."""
        owner: dict[TopicPartition, str] = {}
        for _, name, event in self.entries:
            if isinstance(event, PartitionsAssigned):
                for tp in event.partitions:
                    assert tp not in owner, f"{tp} assigned to {name} while {owner.get(tp)} owns it"
                    owner[tp] = name
            elif isinstance(event, PartitionsRevoked | PartitionsLost):
                for tp in event.partitions:
                    assert owner.pop(tp) == name

    def of(self, name: str) -> list[MemberEvent]:
        return [event for _, who, event in self.entries if who == name]


def _consumer(
    kafka: ApacheKafka, group: str, log: Log, name: str, *, topics: list[str] | None = None, **kwargs: object
) -> GroupConsumer:
    config = MemberConfig(group_id=group, client_id=name, enable_auto_commit=False, **kwargs)  # type: ignore[arg-type]
    return GroupConsumer(
        kafka.bootstrap_servers,
        config,
        topics=topics or [],
        group_protocol="consumer",
        on_event=log.recorder(name),
    )


async def _until(
    what: str, check: Callable[[], bool], consumers: list[GroupConsumer], timeout_s: float = TIMEOUT_S
) -> float:
    """Poll every consumer until ``check`` holds; the seconds it took (AssertionError naming ``what``)."""
    start = time.monotonic()
    for _ in range(int(timeout_s / 0.05)):
        for consumer in consumers:
            await consumer.poll()
        if check():
            return time.monotonic() - start
        await asyncio.sleep(0.05)
    states = {c.config.client_id: (c.state, sorted(c.assignment)) for c in consumers}
    raise AssertionError(f"{what}: not within {timeout_s:.0f} s; members: {states}")


def _settled(consumers: list[GroupConsumer], partitions: set[TopicPartition]) -> Callable[[], bool]:
    """Every member stable with nothing left to reconcile, owning a disjoint cover of ``partitions``
    balanced within one (what the uniform assignor promises)."""

    def check() -> bool:
        if not all(c.settled for c in consumers):
            return False
        owned = [c.assignment for c in consumers]
        sizes = [len(o) for o in owned]
        return (
            set().union(*owned) == partitions
            and sum(sizes) == len(partitions)
            and max(sizes) - min(sizes) <= 1
        )

    return check


def _run(coroutine: Awaitable[None]) -> None:
    asyncio.run(asyncio.wait_for(coroutine, TIMEOUT_S * 4))  # type: ignore[arg-type]


def _partitions(topic: str, count: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in range(count)}


# --- a kgroup-only group -----------------------------------------------------------------------------


def test_cp_members_split_the_partitions_and_hand_over_revoking_first(kafka: ApacheKafka, names: str) -> None:
    topic, group = f"{names}-t", f"{names}-g"
    kafka.create_topic(topic, 6)
    all_six = _partitions(topic, 6)
    log = Log()
    timings: dict[str, float] = {}

    async def scenario() -> None:
        a = _consumer(kafka, group, log, "a", topics=[topic])
        b = _consumer(kafka, group, log, "b", topics=[topic])
        c = _consumer(kafka, group, log, "c", topics=[topic])
        await a.start()
        timings["one joins"] = await _until("a alone owns all six", _settled([a], all_six), [a])
        assert a.generation >= 1 and a.consumer_member.state is ConsumerMemberState.STABLE
        await b.start()
        await c.start()
        timings["three share"] = await _until(
            "three members share six", _settled([a, b, c], all_six), [a, b, c]
        )
        assert sorted(len(x.assignment) for x in (a, b, c)) == [2, 2, 2]  # the uniform assignor
        assert len({a.member_id, b.member_id, c.member_id}) == 3 and all(
            len(x.member_id) == 22 for x in (a, b, c)
        )
        c_had = c.assignment
        await c.close()
        assert isinstance(log.of("c")[-1], LeftGroup)
        timings["two take over"] = await _until(
            "two members take c's partitions", _settled([a, b], all_six), [a, b]
        )
        assert c_had <= a.assignment | b.assignment
        await a.close()
        await b.close()

    _run(scenario())
    log.owners_never_overlap()
    # a gave partitions to b and c: each revocation came before the new owner's assignment
    assert any(isinstance(e, PartitionsRevoked) for e in log.of("a"))
    print(f"\nconsumer protocol on Apache Kafka: {', '.join(f'{k} {v:.2f} s' for k, v in timings.items())}")
