"""The differential suite, KIP-848 beyond one protocol: mixed groups (the online upgrade and downgrade
with real librdkafka and Java consumers), offset commits at old member epochs during a reassignment,
session expiry, and what admin tools show of these groups — on ``kgroup serve`` and Apache Kafka 4.4.0.

Both brokers are this module's own, with the same short consumer-group settings:
``group.consumer.heartbeat.interval.ms=500`` and ``group.consumer.session.timeout.ms=4000`` (Apache
Kafka's minimums lowered to allow them). Every assertion states Kafka's behaviour; the ``[apache]`` run
proves it is Kafka's.

Compared as observed: group type and state (AdminClient and ConsumerGroupDescribe), member count and
member types, which partitions each client owns (a disjoint full cover), group and member epochs where
the scenario fixes them, error codes and messages of raw requests, committed offsets read back, and
errors the clients report. Member ids are random on both brokers: compared by which client they name.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.apache_kafka.test_diff_consumer_protocol import _describe, _heartbeat
from tests.apache_kafka.wire import Raw, create_topic, find_coordinator

from apache_kafka.groups import all_partitions, wait_settled
from kgroup.model import TopicPartition
from kgroup.testing import KafkaBroker
from kgroup.testing.apache_kafka import ApacheKafka, require_apache_kafka
from kgroup.testing.apache_kafka.java_client import JavaConsumer

pytestmark = pytest.mark.slow

HEARTBEAT_MS = 500
SESSION_MS = 4000
TIMEOUT_S = 60.0

NONE = 0
UNKNOWN_MEMBER_ID = 25
GROUP_ID_NOT_FOUND = 69
STALE_MEMBER_EPOCH = 113
CLASSIC, CONSUMER = 0, 1  # ConsumerGroupDescribe's member types

Broker = KafkaBroker | ApacheKafka


@pytest.fixture(scope="module", params=["kgroup", "apache"])
def kafka(request: pytest.FixtureRequest) -> Iterator[Broker]:
    if request.param == "kgroup":
        with KafkaBroker(  # with Kafka's bounds lowered as on Apache Kafka
            group_consumer_heartbeat_interval_ms=HEARTBEAT_MS,
            group_consumer_min_heartbeat_interval_ms=HEARTBEAT_MS,
            group_consumer_session_timeout_ms=SESSION_MS,
            group_consumer_min_session_timeout_ms=SESSION_MS,
        ) as ours:
            yield ours
        return
    require_apache_kafka()
    broker = ApacheKafka(
        configs={
            "group.consumer.heartbeat.interval.ms": HEARTBEAT_MS,
            "group.consumer.min.heartbeat.interval.ms": HEARTBEAT_MS,
            "group.consumer.session.timeout.ms": SESSION_MS,
            "group.consumer.min.session.timeout.ms": SESSION_MS,
        }
    )
    broker.start()
    try:
        yield broker
        broker.check_alive()
    finally:
        broker.stop()


class Client:
    """A librdkafka consumer polling in its own thread, on ``protocol`` (``classic`` with ``strategy``,
    or ``consumer``): what it owns, every record it read, the errors it reported, and on request a
    synchronous commit of ``base + partition`` for what it owns."""

    def __init__(
        self, bootstrap: str, group: str, topic: str, name: str, protocol: str, strategy: str = ""
    ) -> None:
        self.name = name
        self.topic = topic
        self.errors: list[str] = []
        self.read: set[tuple[int, int]] = set()
        self.commit_error: str | None = None
        self._config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "client.id": name,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "log_level": 3,
            "error_cb": lambda err: self.errors.append(str(err)),
        }
        if protocol == "classic":
            self._config.update(
                {
                    "partition.assignment.strategy": strategy,
                    "session.timeout.ms": 6000,
                    "heartbeat.interval.ms": 500,
                }
            )
        self._lock = threading.Lock()
        self._assignment: frozenset[TopicPartition] = frozenset()
        self._commit: int | None = None
        self._committed = threading.Event()
        self._stop = threading.Event()
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"rdkafka-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from confluent_kafka import Consumer, KafkaException
        from confluent_kafka import TopicPartition as Tp

        try:
            consumer = Consumer(self._config)
            consumer.subscribe([self.topic])
            try:
                while not self._stop.is_set():
                    message = consumer.poll(0.05)
                    if message is not None:
                        if message.error() is None:
                            with self._lock:
                                self.read.add((message.partition(), message.offset()))
                        else:
                            self.errors.append(str(message.error()))
                    owned = frozenset(TopicPartition(tp.topic, tp.partition) for tp in consumer.assignment())
                    with self._lock:
                        self._assignment = owned
                        base, self._commit = self._commit, None
                    if base is not None:
                        try:
                            offsets = [Tp(self.topic, tp.partition, base + tp.partition) for tp in owned]
                            consumer.commit(offsets=offsets, asynchronous=False)
                            self.commit_error = None
                        except KafkaException as exc:
                            self.commit_error = str(exc.args[0].name())
                        self._committed.set()
            finally:
                consumer.close()
        except BaseException as exc:
            self._failure = exc
            self._committed.set()

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        with self._lock:
            if self._failure is not None:
                raise AssertionError(f"{self.name} failed: {self._failure}")
            return self._assignment

    def records(self) -> set[tuple[int, int]]:
        with self._lock:
            return set(self.read)

    def commit(self, base: int) -> str | None:
        """Commit ``base + partition`` for every partition it owns; the error's name, or None."""
        self._committed.clear()
        with self._lock:
            self._commit = base
        assert self._committed.wait(TIMEOUT_S), f"{self.name} did not commit"
        assert self._failure is None, f"{self.name} failed: {self._failure}"
        return self.commit_error

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)
        assert not self._thread.is_alive(), f"{self.name} did not close"
        if self._failure is not None:
            raise AssertionError(f"{self.name} failed: {self._failure}")


def _close(clients: Sequence[Client]) -> None:
    for client in clients:
        if not client._stop.is_set():
            client.close()


def _produce(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 3})
    for p in range(partitions):
        for i in range(per_partition):
            producer.produce(topic, value=f"{p}-{i}".encode(), partition=p)
    assert producer.flush(30) == 0


def _admin_view(bootstrap: str, group: str) -> dict[str, Any]:
    """The group as confluent-kafka's AdminClient shows it (describe_consumer_groups)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    described = admin.describe_consumer_groups([group], request_timeout=20)[group].result()
    return {
        "type": described.type.name,
        "state": described.state.name,
        "assignor": described.partition_assignor,
        "members": sorted(
            (m.client_id, sorted(f"{tp.topic}-{tp.partition}" for tp in m.assignment.topic_partitions))
            for m in described.members
        ),
    }


def _listed(bootstrap: str, group: str) -> tuple[str, str] | None:
    """(type, state) of ``group`` in AdminClient's list_consumer_groups, or None if not listed."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    listed = admin.list_consumer_groups(request_timeout=20).result()
    for g in listed.valid:
        if g.group_id == group:
            return (g.type.name, g.state.name)
    return None


def _committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """What AdminClient's list_consumer_group_offsets reads back, per partition."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka import TopicPartition as Tp
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    request = ConsumerGroupTopicPartitions(group, [Tp(topic, p) for p in range(partitions)])
    answer = admin.list_consumer_group_offsets([request], request_timeout=20)[group].result()
    return {tp.partition: tp.offset for tp in answer.topic_partitions}


def _member_types(bootstrap: str, group: str) -> dict[str, Any]:
    """ConsumerGroupDescribe v1: the group's state and epochs, and each member's (client id, type,
    epoch), sorted."""
    with Raw(find_coordinator(bootstrap, group)) as raw:
        (g,) = _describe(raw, group)
    assert g["error_code"] == NONE, g
    return {
        "state": g["group_state"],
        "epochs": (g["group_epoch"], g["assignment_epoch"]),
        "members": sorted((m["client_id"], m["member_type"], m["member_epoch"]) for m in g["members"]),
    }


def _sizes(clients: Sequence[Client], sizes: list[int]) -> bool:
    return sorted(len(c.assignment) for c in clients) == sizes


def _read_everything(clients: Sequence[Client], partitions: int, per_partition: int) -> None:
    """Until the clients together read every offset 0..per_partition-1 of every partition (bounded)."""
    wanted = {(p, o) for p in range(partitions) for o in range(per_partition)}
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        if wanted <= set().union(*(c.records() for c in clients)):
            return
        time.sleep(0.1)
    missing = wanted - set().union(*(c.records() for c in clients))
    raise AssertionError(f"not read within {TIMEOUT_S:.0f} s: {sorted(missing)[:20]}")


# --- mixed groups ---------------------------------------------------------------------------------


def _create_serving(kafka: Broker, topic: str, partitions: int) -> None:
    """Create ``topic`` and wait until every partition serves before anyone joins: Apache Kafka's
    coordinator can see a topic a moment after CreateTopics answers, and a join before that bumps
    the group epoch once more (seen once in CI)."""
    with Raw(kafka.bootstrap_servers) as raw:
        create_topic(raw, topic, partitions)


def test_mg_classic_group_upgraded_by_a_consumer_member_and_downgraded_when_it_leaves(
    kafka: Broker, names: str
) -> None:
    """librdkafka classic members with ``range``; a librdkafka consumer-protocol member joins and
    leaves. (With ``cooperative-sticky`` the upgrade is refused: the next test.)"""
    strategy = "range"
    group, topic = f"{names}-g", f"{names}-t"
    _create_serving(kafka, topic, 6)
    six = all_partitions({topic: 6})
    servers = kafka.bootstrap_servers
    _produce(servers, topic, 6, 5)
    c0 = Client(servers, group, topic, "c0", "classic", strategy)
    clients = [c0]
    try:
        wait_settled([c0], six, timeout_s=TIMEOUT_S)
        c1 = Client(servers, group, topic, "c1", "classic", strategy)
        clients.append(c1)
        wait_settled([c0, c1], six, also=lambda: _sizes([c0, c1], [3, 3]), settle_s=1.0, timeout_s=TIMEOUT_S)
        classic = _admin_view(servers, group)
        # the online upgrade: a consumer-protocol member joins the classic group
        k = Client(servers, group, topic, "k", "consumer")
        clients.append(k)
        start = time.monotonic()
        wait_settled(
            [c0, c1, k], six, also=lambda: _sizes([c0, c1, k], [2, 2, 2]), settle_s=1.0, timeout_s=TIMEOUT_S
        )
        upgraded_s = time.monotonic() - start
        upgraded = _admin_view(servers, group)
        upgraded_raw = _member_types(servers, group)
        _produce(servers, topic, 6, 5)  # every member keeps consuming: offsets 0..9 all read
        _read_everything([c0, c1, k], 6, 10)
        # the online downgrade: the last consumer-protocol member leaves
        k.close()
        start = time.monotonic()
        wait_settled([c0, c1], six, also=lambda: _sizes([c0, c1], [3, 3]), settle_s=1.0, timeout_s=TIMEOUT_S)
        downgraded_s = time.monotonic() - start
        downgraded = _admin_view(servers, group)
        _produce(servers, topic, 6, 5)
        _read_everything([c0, c1], 6, 15)
        commits = (c0.commit(100), c1.commit(100))
        committed = _committed(servers, group, topic, 6)
        errors = {c.name: c.errors for c in clients}
    finally:
        _close(clients)
    assert (classic["type"], classic["state"], classic["assignor"], len(classic["members"])) == (
        "CLASSIC",
        "STABLE",
        "range",
        2,
    )
    assert (upgraded["type"], upgraded["state"], upgraded["assignor"]) == ("CONSUMER", "STABLE", "uniform")
    assert [(name, len(parts)) for name, parts in upgraded["members"]] == [("c0", 2), ("c1", 2), ("k", 2)]
    (group_epoch, assignment_epoch) = upgraded_raw["epochs"]
    assert upgraded_raw["state"] == "Stable" and group_epoch == assignment_epoch
    assert upgraded_raw["members"] == [
        ("c0", CLASSIC, group_epoch),
        ("c1", CLASSIC, group_epoch),
        ("k", CONSUMER, group_epoch),
    ]
    assert (downgraded["type"], downgraded["state"], len(downgraded["members"])) == ("CLASSIC", "STABLE", 2)
    assert [(name, len(parts)) for name, parts in downgraded["members"]] == [("c0", 3), ("c1", 3)]
    assert commits == (None, None)
    assert committed == {p: 100 + p for p in range(6)}
    assert errors == {"c0": [], "c1": [], "k": []}
    print(
        f"\n{type(kafka).__name__} {strategy}: upgraded in {upgraded_s:.1f} s (epoch {group_epoch}), "
        f"downgraded in {downgraded_s:.1f} s"
    )


def test_mg_a_cooperative_sticky_librdkafka_group_is_not_upgraded(kafka: Broker, names: str) -> None:
    """librdkafka's cooperative-sticky leader puts user data in the assignments it sends (once there
    is more than one member), and Kafka refuses to convert a group whose assignments carry user data
    (``validateOnlineUpgrade``: a custom assignor): the consumer-protocol member gets GROUP_ID_NOT_FOUND,
    which librdkafka treats as fatal, and the classic group goes on as it was."""
    group, topic = f"{names}-g", f"{names}-t"
    _create_serving(kafka, topic, 6)
    six = all_partitions({topic: 6})
    servers = kafka.bootstrap_servers
    c0 = Client(servers, group, topic, "c0", "classic", "cooperative-sticky")
    clients = [c0]
    try:
        wait_settled([c0], six, timeout_s=TIMEOUT_S)
        c1 = Client(servers, group, topic, "c1", "classic", "cooperative-sticky")
        clients.append(c1)
        wait_settled([c0, c1], six, also=lambda: _sizes([c0, c1], [3, 3]), settle_s=1.0, timeout_s=TIMEOUT_S)
        owners = {c.name: c.assignment for c in (c0, c1)}
        with Raw(find_coordinator(servers, group)) as raw:
            refused = _heartbeat(
                raw, group_id=group, member_id=str(uuid.uuid4()), subscribed_topic_names=[topic]
            )
        k = Client(servers, group, topic, "k", "consumer")
        clients.append(k)
        for _ in range(int(TIMEOUT_S / 0.1)):
            if k.errors:
                break
            time.sleep(0.1)
        time.sleep(1.0)  # nothing moves meanwhile
        after = {c.name: c.assignment for c in (c0, c1)}
        view = _admin_view(servers, group)
        errors = {c.name: c.errors for c in clients}
    finally:
        _close(clients)
    assert (refused["error_code"], refused["error_message"]) == (
        GROUP_ID_NOT_FOUND,
        f"Cannot upgrade classic group {group} to consumer group because an unsupported custom assignor is "
        "in use. Please refer to the documentation or switch to a default assignor before re-attempting "
        "the upgrade.",
    )
    assert after == owners and k.assignment == frozenset()
    assert (view["type"], view["state"], view["assignor"], [n for n, _ in view["members"]]) == (
        "CLASSIC",
        "STABLE",
        "cooperative-sticky",
        ["c0", "c1"],
    )
    assert errors == {
        "c0": [],
        "c1": [],
        "k": [
            'KafkaError{code=_FATAL,val=-150,str="Fatal error: Broker: The group id does not exist: '
            'ConsumerGroupHeartbeat fatal error: Broker: The group id does not exist"}'
        ],
    }


def test_mg_a_classic_member_joins_a_consumer_group_gets_partitions_and_commits(
    kafka: Broker, names: str
) -> None:
    group, topic = f"{names}-g", f"{names}-t"
    _create_serving(kafka, topic, 6)
    six = all_partitions({topic: 6})
    servers = kafka.bootstrap_servers
    k0 = Client(servers, group, topic, "k0", "consumer")
    k1 = Client(servers, group, topic, "k1", "consumer")
    clients = [k0, k1]
    try:
        wait_settled([k0, k1], six, also=lambda: _sizes([k0, k1], [3, 3]), settle_s=1.0, timeout_s=TIMEOUT_S)
        before = _admin_view(servers, group)
        c = Client(servers, group, topic, "c", "classic", "range")
        clients.append(c)
        wait_settled(
            [k0, k1, c], six, also=lambda: _sizes([k0, k1, c], [2, 2, 2]), settle_s=1.0, timeout_s=TIMEOUT_S
        )
        mixed = _admin_view(servers, group)
        mixed_raw = _member_types(servers, group)
        commits = {"c": c.commit(200), "k0": k0.commit(300)}
        committed = _committed(servers, group, topic, 6)
        c_owned = {tp.partition for tp in c.assignment}
        k0_owned = {tp.partition for tp in k0.assignment}
        c.close()  # a classic member's LeaveGroup: the consumer-protocol members take its partitions
        wait_settled([k0, k1], six, also=lambda: _sizes([k0, k1], [3, 3]), settle_s=1.0, timeout_s=TIMEOUT_S)
        after = _admin_view(servers, group)
        errors = {x.name: x.errors for x in clients}
    finally:
        _close(clients)
    listed_empty = _listed(servers, group)
    assert (before["type"], before["state"], len(before["members"])) == ("CONSUMER", "STABLE", 2)
    assert (mixed["type"], mixed["state"], mixed["assignor"]) == ("CONSUMER", "STABLE", "uniform")
    assert [(name, len(parts)) for name, parts in mixed["members"]] == [("c", 2), ("k0", 2), ("k1", 2)]
    # two joins (epochs 2, 3), the classic member's join (4); every member at it
    assert mixed_raw == {
        "state": "Stable",
        "epochs": (4, 4),
        "members": [("c", CLASSIC, 4), ("k0", CONSUMER, 4), ("k1", CONSUMER, 4)],
    }
    assert commits == {"c": None, "k0": None}
    assert committed == {
        p: 200 + p if p in c_owned else 300 + p if p in k0_owned else -1001 for p in range(6)
    }
    assert (after["type"], after["state"], [n for n, _ in after["members"]]) == (
        "CONSUMER",
        "STABLE",
        ["k0", "k1"],
    )
    assert listed_empty == ("CONSUMER", "EMPTY")
    assert errors == {"k0": [], "k1": [], "c": []}


def test_mg_a_java_consumer_upgrades_a_classic_java_group_and_downgrades_it(
    kafka: Broker, names: str, tmp_path: Path
) -> None:
    """Kafka's own KafkaConsumer on both sides of the migration: a classic member (cooperative-sticky)
    and one with ``group.protocol=consumer``."""
    require_apache_kafka()
    group, topic = f"{names}-g", f"{names}-t"
    _create_serving(kafka, topic, 4)
    four = all_partitions({topic: 4})
    servers = kafka.bootstrap_servers
    classic = JavaConsumer(
        servers,
        group,
        [topic],
        client_id="jc",
        name="jc",
        log_dir=tmp_path,
        assignment_strategy="cooperative-sticky",
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
    )
    modern = JavaConsumer(
        servers,
        group,
        [topic],
        client_id="jm",
        name="jm",
        log_dir=tmp_path,
        config={"group.protocol": "consumer"},
    )
    try:
        classic.start()
        classic.wait_assigned(where=lambda r: r.assignment == four, timeout_s=TIMEOUT_S)
        modern.start()

        class Owner:
            def __init__(self, consumer: JavaConsumer) -> None:
                self.name = consumer.name
                self.consumer = consumer

            @property
            def assignment(self) -> frozenset[TopicPartition]:
                return self.consumer.assignment

        both = [Owner(classic), Owner(modern)]
        wait_settled(
            both,
            four,
            also=lambda: sorted(len(o.assignment) for o in both) == [2, 2],
            settle_s=1.0,
            timeout_s=TIMEOUT_S,
        )
        upgraded = _admin_view(servers, group)
        upgraded_raw = _member_types(servers, group)
        modern.close()
        wait_settled(both[:1], four, settle_s=1.0, timeout_s=TIMEOUT_S)
        downgraded = _admin_view(servers, group)
    finally:
        modern.close()
        classic.close()
    assert (upgraded["type"], upgraded["state"], [n for n, _ in upgraded["members"]]) == (
        "CONSUMER",
        "STABLE",
        ["jc", "jm"],
    )
    epoch = upgraded_raw["epochs"][0]
    assert upgraded_raw["members"] == [("jc", CLASSIC, epoch), ("jm", CONSUMER, epoch)]
    assert (downgraded["type"], downgraded["state"], downgraded["members"]) == (
        "CLASSIC",
        "STABLE",
        [("jc", sorted(str(tp) for tp in four))],
    )
    assert [e for e in classic.events if e["event"] == "error"] == []


# --- offset commits at an old member epoch, during a reassignment ----------------------------------


def _commit(raw: Raw, group: str, member: str, epoch: int, topic: str, partitions: list[int]) -> Any:
    answer = raw.call(
        "OffsetCommit",
        9,
        {
            "group_id": group,
            "generation_id_or_member_epoch": epoch,
            "member_id": member,
            "group_instance_id": None,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {
                            "partition_index": p,
                            "committed_offset": 10 + p,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                        for p in partitions
                    ],
                }
            ],
        },
    )
    return sorted((p["partition_index"], p["error_code"]) for t in answer["topics"] for p in t["partitions"])


def _owned(answer: Any) -> list[int]:
    return sorted(p for t in answer["assignment"]["topic_partitions"] for p in t["partitions"])


def _until_heartbeat(raw: Raw, what: str, fields: dict[str, Any], done: Any, timeout_s: float = 15.0) -> Any:
    """Heartbeat every 0.3 s (bounded) until ``done(answer)``."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = _heartbeat(raw, **fields)
        assert answer["error_code"] == NONE, answer
        if done(answer):
            return answer
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s} s; last {answer}"
        time.sleep(0.3)


def _create_served(kafka: Broker, topic: str) -> None:
    """A 4-partition topic, created with CreateTopics and waited for until every partition's leader
    answers ListOffsets (Apache Kafka's group coordinator sees a topic only once the metadata image
    with it is published: a member joining before that gets an empty assignment)."""
    with Raw(kafka.bootstrap_servers) as raw:
        create_topic(raw, topic, 4)


class _TwoMembers:
    """Raw ConsumerGroupHeartbeats of two members ``a`` and ``b`` on a 4-partition topic, driven to
    the middle of a reassignment: ``a`` owned all four at epoch 2, ``b`` joined (group epoch 3) and
    ``a`` was told to give up two (``kept`` / ``given``), still at epoch 2."""

    def __init__(self, raw: Raw, group: str, topic: str) -> None:
        self.raw, self.group = raw, group
        self.a, self.b = str(uuid.uuid4()), str(uuid.uuid4())
        joined = _heartbeat(raw, group_id=group, member_id=self.a, subscribed_topic_names=[topic])
        assert (joined["error_code"], joined["member_epoch"], _owned(joined)) == (NONE, 2, [0, 1, 2, 3])
        self.topic_id = uuid.UUID(joined["assignment"]["topic_partitions"][0]["topic_id"])
        self.a_acknowledged = self.heartbeat(self.a, 2, [0, 1, 2, 3])
        # a new target is computed at most once per group.consumer.assignment.interval.ms (1 s): past
        # it, b's join computes epoch 3's at once
        time.sleep(1.2)
        self.b_joined = _heartbeat(raw, group_id=group, member_id=self.b, subscribed_topic_names=[topic])
        self.revoke = self.heartbeat(self.a, 2, [0, 1, 2, 3])
        assert self.revoke["assignment"] is not None, self.revoke
        self.kept = _owned(self.revoke)
        self.given = sorted({0, 1, 2, 3} - set(self.kept))

    def owning(self, parts: list[int]) -> list[dict[str, Any]]:
        return [{"topic_id": self.topic_id, "partitions": parts}] if parts else []

    def heartbeat(self, member: str, epoch: int, owned: list[int] | None) -> Any:
        return _heartbeat(
            self.raw,
            group_id=self.group,
            member_id=member,
            member_epoch=epoch,
            rebalance_timeout=-1,
            topic_partitions=None if owned is None else self.owning(owned),
        )


def _state(answer: Any) -> tuple[int, int, list[int] | None]:
    """(error, member epoch, assigned partitions or None when the answer carries no assignment)."""
    owned = None if answer["assignment"] is None else _owned(answer)
    return (answer["error_code"], answer["member_epoch"], owned)


def test_mg_commits_at_an_old_member_epoch_follow_each_partitions_assignment_epoch(
    kafka: Broker, names: str
) -> None:
    """Kafka's rule (``ConsumerGroup.validateOffsetCommit``): a commit at the member's epoch is
    accepted for any partition; at a newer one refused; at an older one accepted only for partitions
    assigned to the member (or pending revocation) at or before that epoch — one refused partition
    fails the whole request."""
    group, topic = f"{names}-g", f"{names}-t"
    _create_served(kafka, topic)
    seen: dict[str, Any] = {}
    with Raw(find_coordinator(kafka.bootstrap_servers, group)) as raw:
        m = _TwoMembers(raw, group, topic)
        a, b, kept, given = m.a, m.b, m.kept, m.given
        seen["a acknowledged"] = (m.a_acknowledged["error_code"], m.a_acknowledged["member_epoch"])
        seen["b joined"] = _state(m.b_joined)
        seen["a told to revoke"] = (m.revoke["error_code"], m.revoke["member_epoch"], len(kept))
        seen["a revoking, commit at 2, kept and revoking"] = _commit(raw, group, a, 2, topic, [0, 1, 2, 3])
        seen["a revoking, commit at 3"] = _commit(raw, group, a, 3, topic, kept)
        seen["b waiting"] = _state(m.heartbeat(b, 3, []))
        # a acknowledges the revocation and reaches epoch 3 with the two it kept (assigned at 2)
        seen["a revoked"] = _state(m.heartbeat(a, 2, kept))
        seen["a at 3, commit at 2, kept"] = _commit(raw, group, a, 2, topic, kept)
        seen["a at 3, commit at 2, given up"] = _commit(raw, group, a, 2, topic, given[:1])
        seen["a at 3, commit at 2, kept and given up"] = _commit(raw, group, a, 2, topic, kept + given[:1])
        seen["a at 3, commit at 3, given up"] = _commit(raw, group, a, 3, topic, given[:1])
        seen["a at 3, commit at 4"] = _commit(raw, group, a, 4, topic, kept)
        # b now gets what a released, at epoch 3
        seen["b assigned"] = _state(m.heartbeat(b, 3, []))
        seen["b, commit at 2, new partitions"] = _commit(raw, group, b, 2, topic, given)
        seen["b, commit at 3"] = _commit(raw, group, b, 3, topic, given)
        seen["stranger, commit"] = _commit(raw, group, "stranger", 3, topic, [0])
        seen["no member, commit to a non-empty group"] = _commit(raw, group, "", -1, topic, [0])
        fetch = raw.call(
            "OffsetFetch",
            9,
            {
                "groups": [{"group_id": group, "member_id": a, "member_epoch": 2, "topics": None}],
                "require_stable": False,
            },
        )
        seen["a, fetch at 2"] = fetch["groups"][0]["error_code"]
        for member in (a, b):
            _heartbeat(raw, group_id=group, member_id=member, member_epoch=-1)
    stale = STALE_MEMBER_EPOCH
    assert seen == {
        "a acknowledged": (NONE, 2),
        "b joined": (NONE, 3, []),
        "a told to revoke": (NONE, 2, 2),
        "a revoking, commit at 2, kept and revoking": [(p, NONE) for p in range(4)],
        "a revoking, commit at 3": [(p, stale) for p in kept],
        "b waiting": (NONE, 3, None),
        "a revoked": (NONE, 3, None),  # its assigned partitions did not change: no assignment sent
        "a at 3, commit at 2, kept": [(p, NONE) for p in kept],
        "a at 3, commit at 2, given up": [(given[0], stale)],
        "a at 3, commit at 2, kept and given up": sorted((p, stale) for p in [*kept, given[0]]),
        "a at 3, commit at 3, given up": [(given[0], NONE)],
        "a at 3, commit at 4": [(p, stale) for p in kept],
        "b assigned": (NONE, 3, given),
        "b, commit at 2, new partitions": [(p, stale) for p in given],
        "b, commit at 3": [(p, NONE) for p in given],
        "stranger, commit": [(0, UNKNOWN_MEMBER_ID)],
        "no member, commit to a non-empty group": [(0, UNKNOWN_MEMBER_ID)],
        "a, fetch at 2": stale,
    }


# --- session expiry, and what admin tools show ------------------------------------------------------


def test_mg_a_silent_member_is_fenced_after_the_session_timeout_and_admin_tools_agree(
    kafka: Broker, names: str
) -> None:
    group, topic = f"{names}-g", f"{names}-t"
    _create_served(kafka, topic)
    servers = kafka.bootstrap_servers
    with Raw(find_coordinator(servers, group)) as raw:
        m = _TwoMembers(raw, group, topic)
        last_a = m.heartbeat(m.a, 2, m.kept)  # a acknowledges its revocation: epoch 3; then goes silent
        silent_since = time.monotonic()
        assert _state(last_a) == (NONE, 3, None)
        b3 = _until_heartbeat(
            raw,
            "b gets the two a gave up",
            {"group_id": group, "member_id": m.b, "member_epoch": 3, "rebalance_timeout": -1},
            lambda x: x["assignment"] is not None and _owned(x) == m.given,
        )
        settled_raw = _member_types(servers, group)
        settled_admin = _admin_view(servers, group)
        settled_listed = _listed(servers, group)
        old_api = raw.call("DescribeGroups", 5, {"groups": [group], "include_authorized_operations": False})
        listed_v4 = raw.call("ListGroups", 4, {"states_filter": []})
        # b heartbeats on, acknowledging what it owns, until it owns all four
        epoch, owned = b3["member_epoch"], m.given
        took = None
        for _ in range(int(3 * SESSION_MS / HEARTBEAT_MS)):
            answer = m.heartbeat(m.b, epoch, owned)
            assert answer["error_code"] == NONE, answer
            epoch = answer["member_epoch"]
            owned = owned if answer["assignment"] is None else _owned(answer)
            if owned == [0, 1, 2, 3]:
                took = time.monotonic() - silent_since
                m.heartbeat(m.b, epoch, owned)
                break
            time.sleep(HEARTBEAT_MS / 1000)
        late = m.heartbeat(m.a, 3, m.kept)
        alone_raw = _member_types(servers, group)
        alone_admin = _admin_view(servers, group)
        _heartbeat(raw, group_id=group, member_id=m.b, member_epoch=-1)
    empty_admin = _admin_view(servers, group)
    empty_listed = _listed(servers, group)
    assert took is not None, f"b never owned all four; owned {owned}"
    # fenced one session after a's last heartbeat; b hears of it at its next heartbeat (plus two
    # cores shared with other work)
    assert SESSION_MS / 1000 <= took <= SESSION_MS / 1000 + 3, took
    assert (settled_raw["state"], settled_raw["epochs"]) == ("Stable", (3, 3))
    assert [(t, e) for _, t, e in settled_raw["members"]] == [(CONSUMER, 3), (CONSUMER, 3)]
    assert (settled_admin["type"], settled_admin["state"], settled_admin["assignor"]) == (
        "CONSUMER",
        "STABLE",
        "uniform",
    )
    assert [len(parts) for _, parts in settled_admin["members"]] == [2, 2]
    assert settled_listed == ("CONSUMER", "STABLE")
    (dead,) = old_api["groups"]
    assert (dead["error_code"], dead["group_state"], dead["protocol_type"], dead["members"]) == (
        NONE,
        "Dead",
        "",
        [],
    )
    assert (group, "consumer") in [(g["group_id"], g["protocol_type"]) for g in listed_v4["groups"]]
    assert (late["error_code"], late["error_message"]) == (
        UNKNOWN_MEMBER_ID,
        f"Member {m.a} is not a member of group {group}.",
    )
    assert (alone_raw["state"], alone_raw["epochs"], [(t, e) for _, t, e in alone_raw["members"]]) == (
        "Stable",
        (4, 4),
        [(CONSUMER, 4)],
    )
    assert (alone_admin["type"], alone_admin["state"]) == ("CONSUMER", "STABLE")
    assert [parts for _, parts in alone_admin["members"]] == [[f"{topic}-{p}" for p in range(4)]]
    assert (empty_admin["type"], empty_admin["state"], empty_admin["members"]) == ("CONSUMER", "EMPTY", [])
    assert empty_listed == ("CONSUMER", "EMPTY")
    print(f"\n{type(kafka).__name__}: the silent member's partitions reached the other after {took:.2f} s")
