"""The differential suite, KIP-848's consumer protocol: real consumers with ``group.protocol=consumer``
(librdkafka and Kafka's Java client) and raw ConsumerGroupHeartbeat / ConsumerGroupDescribe requests,
against kgroup's broker and Apache Kafka 4.4.0 (the ``target`` fixture); the ``[apache]`` run proves
the expected values are Kafka's.

Compared as observed: which partitions each member owns (a disjoint full cover), the group's and
members' epochs and states as ConsumerGroupDescribe answers them, error codes and messages, what
ListGroups and DescribeGroups say of a consumer group, and committed offsets read back. Member ids are
the clients' own (random) UUIDs: compared by which member they name, not by value.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.wire import Raw, create_topic, find_coordinator

from apache_kafka.groups import all_partitions, wait_settled
from kgroup.model import TopicPartition
from kgroup.testing.apache_kafka import require_apache_kafka
from kgroup.testing.apache_kafka.java_client import JavaConsumer, close_all, start_all

pytestmark = pytest.mark.slow

NONE = 0
UNKNOWN_MEMBER_ID = 25
INVALID_REQUEST = 42
GROUP_ID_NOT_FOUND = 69
FENCED_MEMBER_EPOCH = 110
OFFSET_METADATA_TOO_LARGE = 12
UNSUPPORTED_ASSIGNOR = 112

_NOT_READY = (14, 15, 16)  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


def _heartbeat(raw: Raw, version: int = 1, **fields: Any) -> Any:
    """One heartbeat; asked again (bounded) while Apache Kafka's new offsets-topic partition loads."""
    body = {
        "group_id": "",
        "member_id": "",
        "member_epoch": 0,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout": 30000,
        "subscribed_topic_names": None,
        "server_assignor": None,
        "topic_partitions": [],
    }
    if version >= 1:
        body["subscribed_topic_regex"] = None
    body.update(fields)
    deadline = time.monotonic() + 30
    while True:
        answer = raw.call("ConsumerGroupHeartbeat", version, body)
        if answer["error_code"] not in _NOT_READY or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def _describe(raw: Raw, *groups: str, version: int = 1) -> list[Any]:
    answer = raw.call(
        "ConsumerGroupDescribe", version, {"group_ids": list(groups), "include_authorized_operations": False}
    )
    return list(answer["groups"])


def _coordinator(target: Target, group: str) -> Raw:
    return Raw(find_coordinator(target.bootstrap_servers, group))


def test_heartbeat_errors(target: Target, names: str) -> None:
    group, topic = f"{names}-g", f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 2)
    member = str(uuid.uuid4())
    with _coordinator(target, group) as raw:
        seen = {
            "empty member id (v1)": _heartbeat(raw, group_id=group, subscribed_topic_names=[topic]),
            "no rebalance timeout": _heartbeat(
                raw, group_id=group, member_id=member, rebalance_timeout=-1, subscribed_topic_names=[topic]
            ),
            "no subscription": _heartbeat(raw, group_id=group, member_id=member),
            "owned partitions on join": _heartbeat(
                raw,
                group_id=group,
                member_id=member,
                subscribed_topic_names=[topic],
                topic_partitions=[{"topic_id": uuid.uuid4(), "partitions": [0]}],
            ),
            "unknown assignor": _heartbeat(
                raw, group_id=group, member_id=member, subscribed_topic_names=[topic], server_assignor="nope"
            ),
            "unknown member": _heartbeat(raw, group_id=group, member_id=member, member_epoch=3),
            "invalid epoch": _heartbeat(raw, group_id=group, member_id=member, member_epoch=-3),
        }
        joined = _heartbeat(
            raw, group_id=group, member_id=member, subscribed_topic_names=[topic], topic_partitions=[]
        )
        fenced = _heartbeat(
            raw,
            group_id=group,
            member_id=member,
            member_epoch=joined["member_epoch"] + 7,
            rebalance_timeout=-1,
        )
        describe_unknown = _describe(raw, f"{group}-nobody")
    codes = {what: (a["error_code"], a["error_message"]) for what, a in seen.items()}
    assert codes == {
        "empty member id (v1)": (INVALID_REQUEST, "MemberId can't be empty."),
        "no rebalance timeout": (INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request."),
        "no subscription": (
            INVALID_REQUEST,
            "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
        ),
        "owned partitions on join": (INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining."),
        "unknown assignor": (
            UNSUPPORTED_ASSIGNOR,
            "ServerAssignor nope is not supported. Supported assignors: uniform, range.",
        ),
        "unknown member": (GROUP_ID_NOT_FOUND, f"Consumer group {group} not found."),
        "invalid epoch": (INVALID_REQUEST, "MemberEpoch is invalid."),
    }
    # the first member of a new group is answered epoch 2 by Apache Kafka 4.4.0 (as observed)
    assert (joined["error_code"], joined["member_id"], joined["member_epoch"]) == (NONE, member, 2)
    assert joined["heartbeat_interval"] == 5000
    assert [p["partitions"] for p in joined["assignment"]["topic_partitions"]] == [[0, 1]]
    assert (fenced["error_code"], fenced["error_message"]) == (
        FENCED_MEMBER_EPOCH,
        f"The consumer group member has a greater member epoch (9) than the one known by the group "
        f"coordinator ({joined['member_epoch']}). The member must abandon all its partitions and rejoin.",
    )
    assert [(g["error_code"], g["group_id"], g["error_message"]) for g in describe_unknown] == [
        (GROUP_ID_NOT_FOUND, f"{group}-nobody", f"Group {group}-nobody not found.")
    ]


class Member:
    """A librdkafka consumer with ``group.protocol=consumer`` polling in a thread; on request it commits
    ``offset_base + partition`` for the partitions it owns and reads back what is committed."""

    def __init__(self, bootstrap: str, group: str, topic: str, name: str) -> None:
        self.name = name
        self.topic = topic
        self._config = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "client.id": name,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "log_level": 3,
        }
        self._lock = threading.Lock()
        self._assignment: frozenset[TopicPartition] = frozenset()
        self._commit: int | None = None
        self.committed: dict[int, int] = {}
        self._done_commit = threading.Event()
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"rdkafka-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from confluent_kafka import Consumer
        from confluent_kafka import TopicPartition as Tp

        try:
            consumer = Consumer(self._config)
            consumer.subscribe([self.topic])
            try:
                while not self._stop.is_set():
                    consumer.poll(0.1)
                    owned = frozenset(TopicPartition(tp.topic, tp.partition) for tp in consumer.assignment())
                    with self._lock:
                        self._assignment = owned
                        base, self._commit = self._commit, None
                    if base is not None:
                        offsets = [Tp(self.topic, tp.partition, base + tp.partition) for tp in owned]
                        consumer.commit(offsets=offsets, asynchronous=False)
                        everything = [Tp(self.topic, p) for p in range(6)]
                        read = consumer.committed(everything, timeout=20)
                        self.committed = {tp.partition: tp.offset for tp in read}
                        self._done_commit.set()
            finally:
                consumer.close()
        except BaseException as exc:
            self._error = exc
            self._done_commit.set()

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        with self._lock:
            if self._error is not None:
                raise AssertionError(f"{self.name} failed: {self._error}")
            return self._assignment

    def commit(self, base: int) -> dict[int, int]:
        """Commit ``base + partition`` for what it owns; every partition's committed offset after."""
        self._done_commit.clear()
        with self._lock:
            self._commit = base
        assert self._done_commit.wait(60), f"{self.name} did not commit"
        if self._error is not None:
            raise AssertionError(f"{self.name} failed: {self._error}")
        return self.committed

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)
        assert not self._thread.is_alive(), f"{self.name} did not close"
        if self._error is not None:
            raise AssertionError(f"{self.name} failed: {self._error}")


def _described(target: Target, group: str, members: Sequence[Member]) -> dict[str, Any]:
    """The group as ConsumerGroupDescribe v1 answers it; members keyed by client id, with the
    partitions of each assignment and the topic named."""
    with _coordinator(target, group) as raw:
        (g,) = _describe(raw, group)
    assert g["error_code"] == NONE, g

    def parts(assignment: Any) -> list[str]:
        return sorted(
            f"{t['topic_name']}-{p}" for t in assignment["topic_partitions"] for p in t["partitions"]
        )

    return {
        "owned": {m.name: _owned(m) for m in members},  # what the clients own as the answer came
        "state": g["group_state"],
        "group_epoch": g["group_epoch"],
        "assignment_epoch": g["assignment_epoch"],
        "assignor": g["assignor_name"],
        "members": {
            m["client_id"]: (
                m["member_epoch"],
                m["member_type"],
                parts(m["assignment"]),
                parts(m["target_assignment"]),
            )
            for m in g["members"]
        },
    }


def _owned(member: Member) -> list[str]:
    return sorted(str(tp) for tp in member.assignment)


def test_confluent_consumers_share_take_over_commit_and_are_described(target: Target, names: str) -> None:
    group, topic = f"{names}-g", f"{names}-t"
    # created, then every partition serving, before anyone joins: Apache Kafka's coordinator can see
    # a topic a moment after CreateTopics answers, and a join before that bumps the epoch once more
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 6)
    everything = all_partitions({topic: 6})
    members = [Member(target.bootstrap_servers, group, topic, f"c{i}") for i in range(3)]
    try:
        # the uniform assignor balances: 2 each, then 3 each
        wait_settled(members, everything, also=lambda: all(len(m.assignment) == 2 for m in members))
        first = _described(target, group, members)
        first_owner = {tp.partition: m.name for m in members for tp in m.assignment}
        # a member that closes leaves (epoch -1): the others take its partitions over
        committed = members[1].commit(100)
        members[1].close()
        rest = [members[0], members[2]]
        wait_settled(rest, everything, also=lambda: all(len(m.assignment) == 3 for m in rest))
        second = _described(target, group, rest)
        c0_owned = members[0].assignment
        read_back = members[0].commit(200)
        with Raw(target.bootstrap_servers) as raw:
            listed = raw.call("ListGroups", 5, {"states_filter": [], "types_filter": ["consumer"]})
            classic = raw.call("ListGroups", 5, {"states_filter": [], "types_filter": ["classic"]})
        with _coordinator(target, group) as raw:
            old_api = raw.call(
                "DescribeGroups", 5, {"groups": [group], "include_authorized_operations": False}
            )
    finally:
        for member in members:
            member.close()
    for described, alive in ((first, members), (second, rest)):
        assert described["state"] == "Stable" and described["assignor"] == "uniform"
        epochs = {described["group_epoch"], described["assignment_epoch"]}
        assert set(described["members"]) == {m.name for m in alive}
        for member in alive:
            epoch, member_type, assignment, target_assignment = described["members"][member.name]
            epochs.add(epoch)
            # the assignment the broker describes is what the client owns, and is its target
            owned = described["owned"][member.name]
            assert (member_type, assignment, target_assignment) == (1, owned, owned)
        assert len(epochs) == 1, described  # settled: every member at the group's epoch
    # three joins then a leave, each one group epoch (the first member joins at 2)
    assert (first["group_epoch"], second["group_epoch"]) == (4, 5)
    # c1's commit is read back by c1, then by c0 (with c0's own, made after the takeover)
    c1 = {p for p, owner in first_owner.items() if owner == "c1"}
    assert committed == {p: 100 + p if p in c1 else -1001 for p in range(6)}
    c0 = {tp.partition for tp in c0_owned}
    assert read_back == {p: (200 + p if p in c0 else 100 + p if p in c1 else -1001) for p in range(6)}
    assert (group, "consumer", "Stable") in [
        (g["group_id"], g["group_type"], g["group_state"]) for g in listed["groups"]
    ]
    assert group not in [g["group_id"] for g in classic["groups"]]
    (dead,) = old_api["groups"]
    assert (dead["error_code"], dead["group_state"], dead["protocol_type"], dead["members"]) == (
        NONE,
        "Dead",
        "",
        [],
    )


class _Owner:
    """A Java consumer seen only by what it owns: its callbacks' generations are member epochs, which
    differ between members while the group is settled (a member whose partitions do not change gets no
    callback when its epoch rises), so ``wait_settled``'s same-generation rule does not apply."""

    def __init__(self, consumer: JavaConsumer) -> None:
        self.consumer = consumer
        self.name = consumer.name

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        return self.consumer.assignment


def test_java_consumers_share_and_take_over(target: Target, names: str, tmp_path: Path) -> None:
    """Kafka's own KafkaConsumer with ``group.protocol=consumer`` (its AsyncKafkaConsumer)."""
    require_apache_kafka()
    group, topic = f"{names}-g", f"{names}-t"
    # created, then every partition serving, before anyone joins: Apache Kafka's coordinator can see
    # a topic a moment after CreateTopics answers, and a join before that bumps the epoch once more
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 4)
    everything = all_partitions({topic: 4})
    consumers = [
        JavaConsumer(
            target.bootstrap_servers,
            group,
            [topic],
            client_id=name,
            name=name,
            log_dir=tmp_path,
            config={"group.protocol": "consumer"},
        )
        for name in ("j0", "j1")
    ]
    try:
        start_all(*consumers)
        owners = [_Owner(c) for c in consumers]
        wait_settled(owners, everything, also=lambda: all(len(c.assignment) == 2 for c in consumers))
        with _coordinator(target, group) as raw:
            (both,) = _describe(raw, group)
        consumers[1].close()
        wait_settled(owners[:1], everything)
        with _coordinator(target, group) as raw:
            (one,) = _describe(raw, group)
    finally:
        close_all(*consumers)
    assert [
        (m["client_id"], m["member_epoch"], m["member_type"])
        for m in sorted(both["members"], key=lambda m: m["client_id"])
    ] == [
        ("j0", 3, 1),
        ("j1", 3, 1),
    ]
    assert (both["group_state"], both["group_epoch"], both["assignment_epoch"]) == ("Stable", 3, 3)
    assert [(m["client_id"], m["member_epoch"]) for m in one["members"]] == [("j0", 4)]
    assert (one["group_state"], one["group_epoch"], one["assignment_epoch"]) == ("Stable", 4, 4)


def test_offset_metadata_is_measured_in_java_chars(target: Target, names: str) -> None:
    """A consumer group's OffsetCommit checks ``offset.metadata.max.bytes`` (4096) as every group kind
    does, ``metadata.length()``: Java's UTF-16 code units. 4,096 accented letters (8,192 UTF-8 bytes)
    are committed and read back; 2,049 emoji (4,098 code units) are OFFSET_METADATA_TOO_LARGE."""
    group, topic = f"{names}-g", f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 2)
    member = str(uuid.uuid4())
    fits, too_long = "\u00e9" * 4096, "\U0001f600" * 2049
    with _coordinator(target, group) as raw:
        joined = _heartbeat(raw, group_id=group, member_id=member, subscribed_topic_names=[topic])
        assert joined["error_code"] == NONE, joined
        answer = raw.call(
            "OffsetCommit",
            9,
            {
                "group_id": group,
                "generation_id_or_member_epoch": joined["member_epoch"],
                "member_id": member,
                "group_instance_id": None,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {
                                "partition_index": p,
                                "committed_offset": 7,
                                "committed_leader_epoch": -1,
                                "committed_metadata": metadata,
                            }
                            for p, metadata in ((0, fits), (1, too_long))
                        ],
                    }
                ],
            },
        )
        codes = sorted(
            (p["partition_index"], p["error_code"]) for t in answer["topics"] for p in t["partitions"]
        )
        assert codes == [(0, NONE), (1, OFFSET_METADATA_TOO_LARGE)]
        fetched = raw.call(
            "OffsetFetch",
            9,
            {
                "groups": [
                    {
                        "group_id": group,
                        "member_id": member,
                        "member_epoch": joined["member_epoch"],
                        "topics": [{"name": topic, "partition_indexes": [0, 1]}],
                    }
                ],
                "require_stable": False,
            },
        )
        read = sorted(
            (p["partition_index"], p["committed_offset"], p["metadata"])
            for t in fetched["groups"][0]["topics"]
            for p in t["partitions"]
        )
        assert read == [(0, 7, fits), (1, -1, "")]
