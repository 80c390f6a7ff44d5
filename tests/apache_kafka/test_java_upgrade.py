"""Kafka's documented rolling upgrade from an eager to the cooperative protocol, with Java and
librdkafka members in one group, on kgroup's broker and on Apache Kafka.

Java's steps (the ``CooperativeStickyAssignor`` documentation): bounce every member from ``[range]``
to ``[cooperative-sticky, range]`` (the group keeps choosing ``range``, everyone still eager), then
bounce every member to ``[cooperative-sticky]``. librdkafka refuses a strategy list that mixes eager
and cooperative assignors ("online migration between assignors with different protocol types is not
supported"), so its member goes from ``range`` to ``cooperative-sticky`` in one bounce — once every
other member lists ``cooperative-sticky`` (with a second librdkafka member still on ``range`` the
group would have no common protocol: INCONSISTENT_GROUP_PROTOCOL). After every single bounce each
partition has exactly one owner.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from apache_kafka.conftest import Target
from apache_kafka.groups import (
    FAST,
    GroupMember,
    RdkafkaMember,
    all_partitions,
    wait_settled,
)
from kgroup.testing.apache_kafka.java_client import JavaConsumer, close_all, start_all

pytestmark = pytest.mark.slow


def _assignor(bootstrap: str, group: str) -> str:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    description = admin.describe_consumer_groups([group], request_timeout=10)[group].result()
    return str(description.partition_assignor)


def test_rolling_upgrade_from_range_to_cooperative_sticky_with_mixed_clients(
    target: Target, names: str, tmp_path: Path
) -> None:
    topic, group = f"{names}-t", f"{names}-g"
    target.create_topic(topic, 6)
    everything = all_partitions({topic: 6})
    bootstrap = target.bootstrap_servers
    members: dict[str, GroupMember] = {}
    # every Java member's JVM starts now, side by side; each joins when its step comes
    java_members = {
        (slot, step): JavaConsumer(
            bootstrap,
            group,
            [topic],
            client_id=f"{slot}-{step}",
            name=f"{slot}-{step}",
            log_dir=tmp_path,
            subscribe=False,
            assignment_strategy=strategies,
            **FAST,
        )
        for slot in ("j0", "j1")
        for step, strategies in (
            ("range", ["range"]),
            ("both", ["cooperative-sticky", "range"]),
            ("coop", ["cooperative-sticky"]),
        )
    }
    start_all(*java_members.values())

    def java(slot: str, step: str) -> Callable[[], GroupMember]:
        def join() -> GroupMember:
            member = java_members[slot, step]
            member.subscribe()
            return member

        return join

    def rdkafka(slot: str, step: str, strategy: str) -> Callable[[], GroupMember]:
        return lambda: RdkafkaMember(
            bootstrap, group, [topic], f"{slot}-{step}", **{"partition.assignment.strategy": strategy}
        )

    def close(member: GroupMember) -> None:
        if isinstance(member, JavaConsumer):
            assert member.errors() == [], member.errors()
            member.close()
        else:
            assert isinstance(member, RdkafkaMember)
            member.close()

    def settled() -> None:
        current = list(members.values())
        wait_settled(
            current, everything, settle_s=1.0, also=lambda: all(len(m.assignment) == 2 for m in current)
        )

    steps: list[tuple[str, Callable[[], GroupMember], str]] = [
        ("j0", java("j0", "range"), "range"),
        ("j1", java("j1", "range"), "range"),
        ("r0", rdkafka("r0", "range", "range"), "range"),
        # first bounce: Java members list both; everyone is still eager and the group picks range
        ("j0", java("j0", "both"), "range"),
        ("j1", java("j1", "both"), "range"),
        # librdkafka cannot list both: it moves once every other member lists cooperative-sticky
        ("r0", rdkafka("r0", "coop", "cooperative-sticky"), "cooperative-sticky"),
        # second bounce: only cooperative-sticky
        ("j0", java("j0", "coop"), "cooperative-sticky"),
        ("j1", java("j1", "coop"), "cooperative-sticky"),
    ]
    chosen: list[str] = []
    try:
        for slot, start, _ in steps:
            old = members.pop(slot, None)
            if old is not None:
                close(old)
            members[slot] = start()
            if len(members) == 3:
                settled()
                chosen.append(_assignor(bootstrap, group))
        assert chosen == [expected for _, _, expected in steps[2:]]
    finally:
        for member in members.values():
            if not isinstance(member, JavaConsumer):
                close(member)
        close_all(*java_members.values())
