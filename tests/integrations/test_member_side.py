"""What a plug-in member sends: Java's ConsumerProtocolSubscription bytes, read back by every client."""

from __future__ import annotations

import struct
import subprocess
import sys

import pytest

from kgroup.assignors.sticky.userdata import encode_sticky_user_data
from kgroup.model import KgroupError, TopicPartition
from kgroup.wire.consumer_protocol import decode_subscription

pytest.importorskip("kafka")
pytest.importorskip("aiokafka")

from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from kgroup.integrations import aiokafka as aio
from kgroup.integrations import kafka_python as kp

from .callshape import aiokafka_cluster, aiokafka_members, decoded

TP = TopicPartition


def _string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def java_subscription_v3(
    topics: list[str], user_data: bytes | None, owned: dict[str, list[int]], generation: int, rack: str | None
) -> bytes:
    """ConsumerProtocolSubscription v3 as Java lays it out, written out field by field here."""
    out = struct.pack(">h", 3) + struct.pack(">i", len(topics)) + b"".join(_string(t) for t in topics)
    out += struct.pack(">i", -1) if user_data is None else struct.pack(">i", len(user_data)) + user_data
    out += struct.pack(">i", len(owned))
    for topic, parts in owned.items():
        out += _string(topic) + struct.pack(">i", len(parts)) + b"".join(struct.pack(">i", p) for p in parts)
    out += struct.pack(">i", generation)
    out += struct.pack(">h", -1) if rack is None else _string(rack)
    return out


def kafka_python_assignment(partitions: list[TopicPartition]) -> ConsumerProtocolAssignment:
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return ConsumerProtocolAssignment(version=3, assigned_partitions=list(by_topic.items()), user_data=None)


def test_a_fresh_member_sends_what_a_fresh_java_consumer_sends() -> None:
    sent = kp.CooperativeSticky(rack_id="eu-1a").metadata({"orders", "b-topic"})
    expected = java_subscription_v3(["b-topic", "orders"], struct.pack(">i", -1), {}, -1, "eu-1a")
    assert sent == expected
    assert kp.Sticky().metadata({"orders"}) == java_subscription_v3(["orders"], None, {}, -1, None)


def test_cooperative_member_reports_owned_partitions_and_generation_like_java() -> None:
    assignor = kp.CooperativeSticky()
    assignor.on_assignment(kafka_python_assignment([TP("orders", 2), TP("orders", 0), TP("gone", 1)]), 7)
    sent = assignor.metadata({"orders"})  # "gone" was unsubscribed: kafka-python revoked it before joining
    assert sent == java_subscription_v3(["orders"], struct.pack(">i", 7), {"orders": [0, 2]}, 7, None)
    decoded = ConsumerProtocolSubscription.decode(sent)  # kafka-python's own reading of the bytes
    assert decoded.generation_id == 7
    assert [(e.topic, list(e.partitions)) for e in decoded.owned_partitions] == [("orders", [0, 2])]


def test_eager_sticky_member_sends_java_v1_user_data_and_no_owned_partitions() -> None:
    assignor = kp.Sticky()
    mine = [TP("orders", 3), TP("payments", 0)]
    assignor.on_assignment(kafka_python_assignment(mine), 4)
    sent = assignor.metadata({"orders", "payments"})
    assert sent == java_subscription_v3(["orders", "payments"], encode_sticky_user_data(mine, 4), {}, 4, None)
    sub = decode_subscription(sent)
    assert sub.owned_partitions == ()  # eager: revoked before the JoinGroup, as Java's member
    assert sub.generation_id == 4


def test_aiokafka_members_send_what_aiokafka_can_know() -> None:
    sticky = aio.Sticky(rack_id="r1")
    assert sticky.metadata(["orders"]) == java_subscription_v3(["orders"], None, {}, -1, "r1")
    from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment

    assignment = ConsumerProtocolMemberAssignment(0, [("orders", [1, 4])], b"")
    sticky.on_assignment(assignment)
    # aiokafka passes no generation: the sticky user data is Java's V0 (partitions, no generation)
    sub = decode_subscription(sticky.metadata(["orders"]))
    assert sub.user_data == encode_sticky_user_data([TP("orders", 1), TP("orders", 4)], None)
    assert sub.generation_id == -1 and sub.rack_id == "r1"
    coop = aio.CooperativeSticky()
    coop.on_assignment(assignment)
    raw = coop.metadata(["orders"])
    assert raw[:2] == b"\x00\x00"  # version 0: no owned-partitions field, honestly owning nothing
    assert decode_subscription(raw).owned_partitions == ()


def test_aiokafka_cooperative_leader_refuses_members_whose_owned_partitions_it_cannot_see() -> None:
    from kgroup.assignors.api import AssignmentRequest
    from kgroup.model import Member, TopicMetadata

    topics = {"orders": TopicMetadata("orders", 4)}
    java_like = AssignmentRequest(
        [Member("java-1", ("orders",), owned=(TP("orders", 0),), generation=3), Member("aio-1", ("orders",))],
        topics,
    )
    leader = aio.CooperativeSticky()
    with pytest.raises(KgroupError, match=r"java-1 .*version 1"):
        leader.assign(aiokafka_cluster(topics), aiokafka_members(java_like, 3))
    # every member on version 0 (aiokafka members): nobody can own anything, so it assigns
    result = decoded(leader.assign(aiokafka_cluster(topics), aiokafka_members(java_like, 0)))
    assert sorted(len(ps) for ps in result.values()) == [2, 2]
    assert sorted(tp for ps in result.values() for tp in ps) == [TP("orders", p) for p in range(4)]


def test_the_core_never_imports_the_clients() -> None:
    code = (
        "import importlib, pkgutil, sys, kgroup\n"
        "skip = ('kgroup.integrations.kafka_python', 'kgroup.integrations.aiokafka',\n"
        "        'kgroup.spark', 'kgroup.__main__')\n"
        "for info in pkgutil.walk_packages(kgroup.__path__, 'kgroup.'):\n"
        "    if not info.name.startswith(skip):\n"
        "        importlib.import_module(info.name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('kafka', 'aiokafka'))\n"
        "print(len(sys.modules)); assert not bad, bad\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.split()[-1]) > 100  # the walk really imported kgroup's modules


def test_a_kafka_python_leader_reads_every_subscription_version_as_java_does() -> None:
    """Members of every client generation: v0 (no owned partitions) up to v3 (rack)."""
    from kafka.protocol.consumer.group import JoinGroupResponse

    from kgroup.assignors.api import AssignmentRequest
    from kgroup.assignors.registry import create_assignor
    from kgroup.messages import ConsumerSubscription
    from kgroup.model import Member, TopicMetadata
    from kgroup.wire.consumer_protocol import encode_subscription

    from .callshape import decoded, kafka_python_cluster

    topics = {"orders": TopicMetadata("orders", 9)}
    sent = {
        "v0": ConsumerSubscription(("orders",), struct.pack(">i", 2)),
        "v1": ConsumerSubscription(("orders",), struct.pack(">i", 2), (TP("orders", 0), TP("orders", 1))),
        "v2": ConsumerSubscription(("orders",), struct.pack(">i", 2), (TP("orders", 2),), 2),
        "v3": ConsumerSubscription(
            ("orders",), struct.pack(">i", 2), (TP("orders", 3), TP("orders", 4)), 2, "r1"
        ),
    }
    members = [
        JoinGroupResponse.JoinGroupResponseMember(
            member_id=name,
            group_instance_id=None,
            metadata=ConsumerProtocolSubscription.decode(encode_subscription(sub, int(name[1]))),
        )
        for name, sub in sent.items()
    ]
    got = decoded(kp.CooperativeSticky().assign(kafka_python_cluster(topics), members))
    # Java's leader sees what each version carries: v0 no owned partitions, v1 no generation field
    seen = [
        Member("v0", ("orders",), user_data=sent["v0"].user_data),
        Member("v1", ("orders",), owned=sent["v1"].owned_partitions, user_data=sent["v1"].user_data),
        Member(
            "v2", ("orders",), owned=sent["v2"].owned_partitions, generation=2, user_data=sent["v2"].user_data
        ),
        Member(
            "v3", ("orders",), sent["v3"].owned_partitions, 2, rack_id="r1", user_data=sent["v3"].user_data
        ),
    ]
    java = create_assignor("cooperative-sticky").assign(AssignmentRequest(seen, topics))
    assert got == java
    assert set(got["v3"]) >= {TP("orders", 3), TP("orders", 4)}  # kept what it owned
