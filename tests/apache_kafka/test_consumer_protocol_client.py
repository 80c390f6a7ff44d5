"""kgroup.client with ``group_protocol="consumer"`` (KIP-848) against ``kgroup serve`` and real Apache
Kafka 4.4.0: every scenario runs on both (``[kgroup]`` / ``[apache]``).

The brokers here are this module's own: Kafka's default consumer-group heartbeat interval is 5 s (and
its minimum too), so every hand-over would take one to two of them; both brokers answer with 500 ms
(``group.consumer.heartbeat.interval.ms``; Apache Kafka's minimum lowered to allow it), everything
else is each broker's default. A group of kgroup members joins, splits the partitions, hands them over
with revocation first, commits and fetches offsets, restarts a static member, follows a regex to a
topic created later, and shares a group with Kafka's Java consumer and with librdkafka
(confluent-kafka), both on the consumer protocol.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import struct
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kgroup.client import ClientError, GroupConsumer
from kgroup.client.versions import CLIENT_RANGES
from kgroup.member import (
    ConsumerMemberState,
    LeftGroup,
    MemberConfig,
    MemberEvent,
    OffsetsFetched,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from kgroup.model import KgroupError, TopicPartition
from kgroup.testing import KafkaBroker
from kgroup.testing.apache_kafka import ApacheKafka, require_apache_kafka
from kgroup.testing.apache_kafka.java_client import JavaConsumer
from kgroup.wire.codec import build, decode_request_header, encode_response, response_class

TIMEOUT_S = 60.0
HEARTBEAT_MS = 500
_counter = itertools.count()


Broker = KafkaBroker | ApacheKafka


@pytest.fixture(scope="module", params=["kgroup", "apache"])
def kafka(request: pytest.FixtureRequest) -> Iterator[Broker]:
    """This module's broker, with the consumer-group heartbeat interval at 500 ms on both sides."""
    if request.param == "kgroup":
        with KafkaBroker(  # with Kafka's bound lowered as on Apache Kafka
            group_consumer_heartbeat_interval_ms=HEARTBEAT_MS,
            group_consumer_min_heartbeat_interval_ms=HEARTBEAT_MS,
        ) as ours:
            yield ours
        return
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
    kafka: Broker, group: str, log: Log, name: str, *, topics: list[str] | None = None, **kwargs: object
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


def _fetched(consumers: list[GroupConsumer]) -> Callable[[], bool]:
    """Every member knows the committed offset (or that there is none) of every partition it owns."""

    def check() -> bool:
        return all(set(c.consumer_member.positions()) == c.assignment for c in consumers)

    return check


def _run(coroutine: Awaitable[None]) -> None:
    asyncio.run(asyncio.wait_for(coroutine, TIMEOUT_S * 4))  # type: ignore[arg-type]


def _partitions(topic: str, count: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in range(count)}


# --- a kgroup-only group -----------------------------------------------------------------------------


def test_cp_members_split_the_partitions_and_hand_over_revoking_first(kafka: Broker, names: str) -> None:
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
    on = "kgroup serve" if isinstance(kafka, KafkaBroker) else "Apache Kafka"
    print(f"\nconsumer protocol on {on}: {', '.join(f'{k} {v:.2f} s' for k, v in timings.items())}")


def test_cp_offsets_committed_with_the_member_epoch_are_fetched_by_the_next_owner(
    kafka: Broker, names: str
) -> None:
    topic, group = f"{names}-t", f"{names}-g"
    kafka.create_topic(topic, 4)
    four = _partitions(topic, 4)
    log = Log()
    wanted = {tp: 10 + tp.partition for tp in four}

    async def scenario() -> None:
        async with _consumer(kafka, group, log, "a", topics=[topic]) as a:
            await _until("a owns all four", _settled([a], four), [a])
            await a.commit(wanted)  # OffsetCommit v9: generation id = the member epoch
            assert a.consumer_member.committed() == wanted
            epoch = a.generation
            assert epoch >= 1
        async with _consumer(kafka, group, log, "b", topics=[topic]) as b:
            await _until("b owns all four", _settled([b], four), [b])
            await _until(
                "b fetched the committed offsets", lambda: len(b.consumer_member.positions()) == 4, [b]
            )
            assert b.consumer_member.positions() == wanted  # OffsetFetch v9 with b's member id and epoch
            assert b.member_id != a.member_id

    _run(scenario())
    fetched = [e for e in log.of("b") if isinstance(e, OffsetsFetched)]
    assert {tp: offset for e in fetched for tp, offset in e.offsets} == wanted


def test_cp_a_static_member_restarting_gets_its_partitions_back_without_moving_the_others(
    kafka: Broker, names: str
) -> None:
    topic, group = f"{names}-t", f"{names}-g"
    kafka.create_topic(topic, 4)
    four = _partitions(topic, 4)
    log = Log()

    async def scenario() -> None:
        s1 = _consumer(kafka, group, log, "s1", topics=[topic], group_instance_id="s1")
        s2 = _consumer(kafka, group, log, "s2", topics=[topic], group_instance_id="s2")
        await s1.start()
        await s2.start()
        await _until("two static members share four", _settled([s1, s2], four), [s1, s2])
        # each member fetches its partitions' committed offsets after it owns them: wait for that too, so
        # the events counted from here on are the restart's only
        await _until("both fetched their offsets", _fetched([s1, s2]), [s1, s2])
        kept, first_id = s1.assignment, s1.member_id
        s1_seen, s2_seen = len(log.of("s1")), len(log.of("s2"))
        await s1.close()  # a static member leaves with epoch -2: the coordinator keeps its place
        # (s1 may have revoked before, handing half to s2, when it owned all four for a moment first)
        [revoked] = [e for e in log.of("s1")[s1_seen:] if isinstance(e, PartitionsRevoked)]
        assert set(revoked.partitions) == kept  # close() revokes, then leaves
        back = _consumer(kafka, group, log, "s1-again", topics=[topic], group_instance_id="s1")
        await back.start()
        await _until("the restarted static member is back", _settled([back, s2], four), [back, s2])
        assert back.assignment == kept and back.member_id != first_id
        assert log.of("s2")[s2_seen:] == []  # s2 neither revoked nor gained anything
        await back.close()
        await s2.close()

    _run(scenario())
    log.owners_never_overlap()


def test_cp_a_regex_subscription_picks_up_a_topic_created_later(kafka: Broker, names: str) -> None:
    first, later, group = f"{names}-re-a", f"{names}-re-b", f"{names}-g"
    kafka.create_topic(first, 2)
    log = Log()
    took: dict[str, float] = {}

    async def scenario() -> None:
        config = MemberConfig(group_id=group, client_id="re", enable_auto_commit=False)
        pattern = f"{names}-re-.*"  # RE2J, resolved by the coordinator
        async with GroupConsumer(
            kafka.bootstrap_servers,
            config,
            pattern=pattern,
            group_protocol="consumer",
            on_event=log.recorder("re"),
        ) as member:
            await _until(
                "the regex's first topic is assigned", _settled([member], _partitions(first, 2)), [member]
            )
            await asyncio.to_thread(kafka.create_topic, later, 3)
            both = _partitions(first, 2) | _partitions(later, 3)
            took["new topic"] = await _until(
                "the topic created later is assigned", _settled([member], both), [member]
            )
            assert member.consumer_member.subscribed_pattern == pattern

    _run(scenario())
    on = "kgroup serve" if isinstance(kafka, KafkaBroker) else "Apache Kafka"
    print(f"\nregex on {on}: the topic created later was assigned after {took['new topic']:.2f} s")


def test_cp_an_unknown_setting_and_client_side_assignors_are_refused_in_one_line() -> None:
    config = MemberConfig(group_id="g")
    with pytest.raises(KgroupError, match=r"^group_protocol: 'kip848'; give 'classic' or 'consumer'$"):
        GroupConsumer("127.0.0.1:9", config, topics=["t"], group_protocol="kip848")
    with pytest.raises(
        KgroupError, match=r"^assignors: the consumer group protocol assigns on the coordinator"
    ):
        GroupConsumer("127.0.0.1:9", config, topics=["t"], group_protocol="consumer", assignors=[])
    with pytest.raises(KgroupError, match=r"^remote_assignor: only the consumer group protocol has one"):
        GroupConsumer("127.0.0.1:9", config, topics=["t"], remote_assignor="uniform")


async def _broker_without_consumer_group_heartbeat() -> asyncio.Server:
    """A broker from before KIP-848, as far as a client's start sees one: it answers ApiVersions (all
    that ``start()`` asks before it decides) with kgroup's client ranges minus ConsumerGroupHeartbeat
    and ConsumerGroupDescribe (68, 69). kgroup's broker, Apache Kafka 4.4.0 and librdkafka's mock
    cluster all advertise API 68, so none of them can play the old broker."""
    advertised = [
        {"api_key": key, "min_version": low, "max_version": high}
        for key, (low, high) in sorted(CLIENT_RANGES.items())
        if key not in (68, 69)
    ]

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            for _ in range(10):  # a client asks once per connection; bounded all the same
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                header = decode_request_header(await reader.readexactly(size))
                assert header.api_key == 18, f"only ApiVersions is expected, got API {header.api_key}"
                cls = response_class(18, header.api_version)
                assert cls is not None
                answer = build(cls, {"error_code": 0, "api_keys": advertised, "throttle_time": 0})
                frame = encode_response(header.correlation_id, answer)
                writer.write(struct.pack(">i", len(frame)) + frame)
                await writer.drain()
        except asyncio.IncompleteReadError:
            pass
        finally:
            writer.close()

    return await asyncio.start_server(serve, "127.0.0.1", 0)


def test_cp_a_broker_without_consumer_group_heartbeat_is_named_with_the_setting() -> None:
    """A broker without ConsumerGroupHeartbeat in its ApiVersions is refused at ``start()`` in one line
    naming ``group_protocol`` (Kafka's ``CONSUMER_PROTOCOL_NOT_SUPPORTED_MSG``)."""

    async def scenario() -> None:
        server = await _broker_without_consumer_group_heartbeat()
        try:
            port = server.sockets[0].getsockname()[1]
            consumer = GroupConsumer(
                f"127.0.0.1:{port}", MemberConfig(group_id="g"), topics=["t"], group_protocol="consumer"
            )
            with pytest.raises(
                ClientError,
                match=r"^group_protocol='consumer': 127\.0\.0\.1:\d+: .*set group_protocol='classic'",
            ):
                await consumer.start()
        finally:
            server.close()
            await server.wait_closed()

    _run(scenario())


# --- mixed with Kafka's own clients ------------------------------------------------------------------


def _balanced(owned: list[frozenset[TopicPartition]], partitions: set[TopicPartition]) -> bool:
    sizes = [len(o) for o in owned]
    return (
        set().union(*owned) == partitions and sum(sizes) == len(partitions) and max(sizes) - min(sizes) <= 1
    )


def test_cp_kgroup_members_and_kafkas_java_consumer_share_one_consumer_group(
    kafka: Broker, names: str, tmp_path: Path
) -> None:
    require_apache_kafka()  # Kafka's Java client, on either broker
    topic, group = f"{names}-t", f"{names}-g"
    kafka.create_topic(topic, 6)
    six = _partitions(topic, 6)
    log = Log()
    java = JavaConsumer(
        kafka.bootstrap_servers,
        group,
        [topic],
        config={"group.protocol": "consumer"},
        name="java",
        log_dir=tmp_path,
    )
    java.start()
    try:
        first = java.wait_assigned(where=lambda r: bool(r.assignment), timeout_s=TIMEOUT_S)
        assert first.assignment == six  # alone in the group

        async def scenario() -> None:
            a = _consumer(kafka, group, log, "a", topics=[topic])
            b = _consumer(kafka, group, log, "b", topics=[topic])
            await a.start()
            await b.start()

            def shared() -> bool:
                owned = [a.assignment, b.assignment, java.assignment]
                return all(c.settled for c in (a, b)) and _balanced(owned, six)

            await _until("java and two kgroup members share six", shared, [a, b])
            await asyncio.to_thread(java.close)  # Kafka's close(): revoke, then leave with epoch -1
            await _until("the kgroup members take java's partitions", _settled([a, b], six), [a, b])
            await a.close()
            await b.close()

        _run(scenario())
    finally:
        java.close()
    log.owners_never_overlap()
    assert [r.kind for r in java.rebalances()][-1] == "revoked"


class _Librdkafka:
    """A confluent-kafka (librdkafka) consumer on the consumer protocol, polled by its own thread."""

    def __init__(self, servers: str, group: str, topic: str) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer(
            {
                "bootstrap.servers": servers,
                "group.id": group,
                "group.protocol": "consumer",
                "client.id": "librdkafka",
                "enable.auto.commit": False,
                "log_level": 3,
            }
        )
        self.consumer.subscribe([topic])
        self.assignment: frozenset[TopicPartition] = frozenset()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="librdkafka-poll", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.consumer.poll(0.05)
            self.assignment = frozenset(
                TopicPartition(p.topic, p.partition) for p in self.consumer.assignment()
            )

    def close(self) -> None:
        if not self._stop.is_set():
            self._stop.set()
            self._thread.join(timeout=30)
            self.consumer.close()  # leaves the group (epoch -1)


def test_cp_kgroup_members_and_a_librdkafka_consumer_share_one_consumer_group(
    kafka: Broker, names: str
) -> None:
    topic, group = f"{names}-t", f"{names}-g"
    kafka.create_topic(topic, 6)
    six = _partitions(topic, 6)
    log = Log()

    async def scenario() -> None:
        rdkafka = _Librdkafka(kafka.bootstrap_servers, group, topic)
        try:
            a = _consumer(kafka, group, log, "a", topics=[topic])
            b = _consumer(kafka, group, log, "b", topics=[topic])
            await a.start()
            await b.start()

            def shared() -> bool:
                owned = [a.assignment, b.assignment, rdkafka.assignment]
                return all(c.settled for c in (a, b)) and _balanced(owned, six)

            await _until("librdkafka and two kgroup members share six", shared, [a, b])
            await asyncio.to_thread(rdkafka.close)
            await _until("the kgroup members take librdkafka's partitions", _settled([a, b], six), [a, b])
            await a.close()
            await b.close()
        finally:
            await asyncio.to_thread(rdkafka.close)

    _run(scenario())
    log.owners_never_overlap()
