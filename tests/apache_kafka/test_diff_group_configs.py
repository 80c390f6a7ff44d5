"""The differential suite, group configs (KIP-848, KIP-932): IncrementalAlterConfigs and
DescribeConfigs on GROUP resources (type 32), raw, against kgroup's broker and Apache Kafka 4.4.0.

Each config set, refused (Kafka's INVALID_CONFIG messages: not a number, below ConfigDef's minimum,
outside the broker's ``group.*.min/max.*`` bounds, not one of the strings, a bad
``share.auto.offset.reset``, an unknown name, APPEND to a config that is no list; a null value and the
empty group name INVALID_REQUEST), deleted, checked only (``validate_only``); then DescribeConfigs:
every config in Kafka's order with its value, source (GROUP_CONFIG 8 when set, DEFAULT_CONFIG 5),
type and synonyms (the group's value, then the broker setting's default).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.test_diff_share_fetch import _fetch, _part, _topic_id
from tests.apache_kafka.wire import API, Raw, create_topic, find_coordinator

pytestmark = pytest.mark.share_groups

API.setdefault("IncrementalAlterConfigs", 44)
GROUP = 32
SET, DELETE, APPEND = 0, 1, 2
RESET_MESSAGE = (
    "Invalid value {v} for configuration share.auto.offset.reset: Invalid value `{v}` for configuration "
    "share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format "
    "'by_duration:<PnDTnHnMn.nS>'."
)


def _alter(raw: Raw, group: str, ops: list[tuple[str, int, str | None]], validate_only: bool = False) -> Any:
    answer = raw.call(
        "IncrementalAlterConfigs",
        1,
        {
            "resources": [
                {
                    "resource_type": GROUP,
                    "resource_name": group,
                    "configs": [{"name": n, "config_operation": o, "value": v} for n, o, v in ops],
                }
            ],
            "validate_only": validate_only,
        },
    )
    (response,) = answer["responses"]
    return response["error_code"], response["error_message"]


def _describe(raw: Raw, group: str, keys: list[str] | None, synonyms: bool, version: int = 4) -> Any:
    answer = raw.call(
        "DescribeConfigs",
        version,
        {
            "resources": [{"resource_type": GROUP, "resource_name": group, "configuration_keys": keys}],
            "include_synonyms": synonyms,
            "include_documentation": False,
        },
    )
    (result,) = answer["results"]
    return result


def test_group_configs_set_refused_and_described(target: Target, names: str) -> None:
    group, other = f"{names}-g", f"{names}-other"
    with Raw(target.bootstrap_servers) as raw:
        fresh = _describe(raw, group, None, synonyms=False)
        seen = {
            "earliest": _alter(raw, group, [("share.auto.offset.reset", SET, "earliest")]),
            "bogus reset": _alter(raw, group, [("share.auto.offset.reset", SET, "bogus")]),
            "by_duration": _alter(raw, group, [("share.auto.offset.reset", SET, "by_duration:PT1H")]),
            "bad duration": _alter(raw, group, [("share.auto.offset.reset", SET, "by_duration:xx")]),
            "negative duration": _alter(raw, group, [("share.auto.offset.reset", SET, "by_duration:-PT1H")]),
            "lock 1000": _alter(raw, group, [("share.record.lock.duration.ms", SET, "1000")]),
            "lock 20000": _alter(raw, group, [("share.record.lock.duration.ms", SET, "20000")]),
            "lock abc": _alter(raw, group, [("share.record.lock.duration.ms", SET, "abc")]),
            "count 1": _alter(raw, group, [("share.delivery.count.limit", SET, "1")]),
            "count 11": _alter(raw, group, [("share.delivery.count.limit", SET, "11")]),
            "count 3": _alter(raw, group, [("share.delivery.count.limit", SET, "3")]),
            "locks 50": _alter(raw, group, [("share.partition.max.record.locks", SET, "50")]),
            "locks 10001": _alter(raw, group, [("share.partition.max.record.locks", SET, "10001")]),
            "locks 100": _alter(raw, group, [("share.partition.max.record.locks", SET, "100")]),
            "read_committed": _alter(raw, group, [("share.isolation.level", SET, "read_committed")]),
            "READ_COMMITTED": _alter(raw, group, [("share.isolation.level", SET, "READ_COMMITTED")]),
            "share session 1000": _alter(raw, group, [("share.session.timeout.ms", SET, "1000")]),
            "share heartbeat 1000": _alter(raw, group, [("share.heartbeat.interval.ms", SET, "1000")]),
            "consumer session 1000": _alter(raw, group, [("consumer.session.timeout.ms", SET, "1000")]),
            "consumer session 50000": _alter(raw, group, [("consumer.session.timeout.ms", SET, "50000")]),
            "consumer heartbeat 60000": _alter(
                raw, group, [("consumer.heartbeat.interval.ms", SET, "60000")]
            ),
            "unknown": _alter(raw, group, [("no.such.config", SET, "1")]),
            "append": _alter(raw, group, [("share.auto.offset.reset", APPEND, "x")]),
            "null": _alter(raw, group, [("share.auto.offset.reset", SET, None)]),
            "delete": _alter(raw, group, [("share.auto.offset.reset", DELETE, None)]),
            "validate only": _alter(
                raw, other, [("share.delivery.count.limit", SET, "4")], validate_only=True
            ),
            "empty name": _alter(raw, "", [("share.delivery.count.limit", SET, "4")]),
        }
        described = _describe(raw, group, None, synonyms=True)
        not_kept = _describe(raw, other, ["share.delivery.count.limit"], synonyms=False)
        v1 = _describe(
            raw, group, ["share.delivery.count.limit", "no.such.config"], synonyms=False, version=1
        )
    ok = (0, None)
    assert seen == {
        "earliest": ok,
        "bogus reset": (40, RESET_MESSAGE.format(v="bogus")),
        "by_duration": ok,
        "bad duration": (40, RESET_MESSAGE.format(v="by_duration:xx")),
        "negative duration": (40, RESET_MESSAGE.format(v="by_duration:-PT1H")),
        "lock 1000": (40, "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."),
        "lock 20000": ok,
        "lock abc": (
            40,
            "Invalid value abc for configuration share.record.lock.duration.ms: Not a number of type INT",
        ),
        "count 1": (
            40,
            "Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2",
        ),
        "count 11": (40, "share.delivery.count.limit must be in the range 2 to 10 inclusive."),
        "count 3": ok,
        "locks 50": (
            40,
            "Invalid value 50 for configuration share.partition.max.record.locks: Value must be at least 100",
        ),
        "locks 10001": (40, "share.partition.max.record.locks must be in the range 100 to 4000 inclusive."),
        "locks 100": ok,
        "read_committed": ok,
        "READ_COMMITTED": (
            40,
            "Invalid value READ_COMMITTED for configuration share.isolation.level: "
            "String must be one of: read_committed, read_uncommitted",
        ),
        "share session 1000": (40, "share.session.timeout.ms must be in the range 45000 to 60000 inclusive."),
        "share heartbeat 1000": (
            40,
            "share.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.",
        ),
        "consumer session 1000": (
            40,
            "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.",
        ),
        "consumer session 50000": ok,
        "consumer heartbeat 60000": (
            40,
            "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.",
        ),
        "unknown": (40, "Unknown group config name: no.such.config"),
        "append": (40, "Can't APPEND to key share.auto.offset.reset because its type is not LIST."),
        "null": (42, "Null value not supported for : share.auto.offset.reset"),
        "delete": ok,
        "validate only": ok,
        "empty name": (42, "Default group resources are not allowed."),
    }, target.kind
    # a group no one set anything on: every config at its default, in Kafka's order
    assert fresh["error_code"] == 0 and fresh["error_message"] == "", target.kind
    assert [(c["name"], c["value"], c["config_source"], c["config_type"]) for c in fresh["configs"]] == [
        ("consumer.session.timeout.ms", "45000", 5, 3),
        ("streams.assignor.name", "sticky", 5, 2),
        ("consumer.assignment.interval.ms", "1000", 5, 3),
        ("errors.deadletterqueue.copy.record.enable", "false", 5, 1),
        ("share.auto.offset.reset", "latest", 5, 2),
        ("streams.rack.aware.assignment.tags", "", 5, 7),
        ("share.renew.acknowledge.enable", "true", 5, 1),
        ("streams.initial.rebalance.delay.ms", "3000", 5, 3),
        ("share.session.timeout.ms", "45000", 5, 3),
        ("streams.assignment.interval.ms", "1000", 5, 3),
        ("share.heartbeat.interval.ms", "5000", 5, 3),
        ("streams.heartbeat.interval.ms", "5000", 5, 3),
        ("share.delivery.count.limit", "5", 5, 3),
        ("errors.deadletterqueue.topic.name", "", 5, 2),
        ("consumer.heartbeat.interval.ms", "5000", 5, 3),
        ("share.record.lock.duration.ms", "30000", 5, 3),
        ("share.assignment.interval.ms", "1000", 5, 3),
        ("share.isolation.level", "read_uncommitted", 5, 2),
        ("streams.session.timeout.ms", "45000", 5, 3),
        ("share.partition.max.record.locks", "2000", 5, 3),
        ("streams.num.standby.replicas", "0", 5, 3),
    ], target.kind
    assert all(c["synonyms"] == [] and not c["read_only"] for c in fresh["configs"]), target.kind
    by_name = {c["name"]: c for c in described["configs"]}
    syn = {n: [(s["name"], s["value"], s["source"]) for s in c["synonyms"]] for n, c in by_name.items()}
    assert (
        by_name["share.delivery.count.limit"]["value"],
        by_name["share.delivery.count.limit"]["config_source"],
    ) == (
        "3",
        8,
    ), target.kind
    assert syn["share.delivery.count.limit"] == [
        ("share.delivery.count.limit", "3", 8),
        ("group.share.delivery.count.limit", "5", 5),
    ], target.kind
    assert syn["share.record.lock.duration.ms"] == [
        ("share.record.lock.duration.ms", "20000", 8),
        ("group.share.record.lock.duration.ms", "30000", 5),
    ], target.kind
    assert syn["share.isolation.level"] == [
        ("share.isolation.level", "read_committed", 8),
        ("share.isolation.level", "read_uncommitted", 5),
    ], target.kind
    assert syn["consumer.session.timeout.ms"] == [
        ("consumer.session.timeout.ms", "50000", 8),
        ("group.consumer.session.timeout.ms", "45000", 5),
    ], target.kind
    # deleted: back to the default
    assert (by_name["share.auto.offset.reset"]["value"], syn["share.auto.offset.reset"]) == (
        "latest",
        [("share.auto.offset.reset", "latest", 5)],
    ), target.kind
    assert syn["share.heartbeat.interval.ms"] == [("group.share.heartbeat.interval.ms", "5000", 5)], (
        target.kind
    )
    assert [(c["name"], c["value"], c["config_source"]) for c in not_kept["configs"]] == [
        ("share.delivery.count.limit", "5", 5)
    ], target.kind
    assert [(c["name"], c["value"], c["config_source"]) for c in v1["configs"]] == [
        ("share.delivery.count.limit", "3", 8)
    ], target.kind


def _share_records(
    bootstrap: str, group: str, topic: str, want: int, timeout_s: float = 60
) -> list[tuple[int, int]]:
    """librdkafka's ShareConsumer in ``group``: (offset, delivery count) of what it got, each accepted,
    once ``want`` records came (or the time ran out)."""
    from tests.apache_kafka.test_share_consumers import _RdkafkaShare

    consumer = _RdkafkaShare(bootstrap, group, topic)
    try:
        deadline = time.monotonic() + timeout_s
        while len(consumer.records) < want and time.monotonic() < deadline:
            time.sleep(0.1)
        assert consumer.errors == [], consumer.errors
        return sorted((offset, count) for _, offset, count in consumer.records)
    finally:
        consumer.close()


def test_share_auto_offset_reset_and_lock_duration_from_the_group_config(target: Target, names: str) -> None:
    """Records before the group's first fetch: a group configured ``earliest`` gets them, one left at
    the default (latest) only what comes after; ShareFetch's lock timeout is the group's
    ``share.record.lock.duration.ms``."""
    from confluent_kafka import Producer

    topic, early, late = f"{names}-t", f"{names}-early", f"{names}-late"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
        assert _alter(raw, early, [("share.auto.offset.reset", SET, "earliest")]) == (0, None)
        assert _alter(raw, early, [("share.record.lock.duration.ms", SET, "20000")]) == (0, None)
    producer = Producer({"bootstrap.servers": target.bootstrap_servers, "acks": "all"})
    for i in range(5):
        producer.produce(topic, value=f"before-{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    assert _share_records(target.bootstrap_servers, early, topic, 5) == [(i, 1) for i in range(5)], (
        target.kind
    )
    # the late group's share partition starts at the end (its first fetch), then sees what comes next
    from tests.apache_kafka.test_diff_share_offsets import _join

    member = str(uuid.uuid4())
    _join(find_coordinator(target.bootstrap_servers, late), late, member, topic)
    with Raw(target.bootstrap_servers) as raw:
        topic_id = _topic_id(raw, topic)
        ask = [{"topic_id": topic_id, "partitions": [_part(0)]}]
        first = _fetch(raw, group_id=late, member_id=member, topics=ask)
        assert first["error_code"] == 0, first
        for i in range(3):
            producer.produce(topic, value=f"after-{i}".encode(), partition=0)
        assert producer.flush(30) == 0
        got = _fetch(raw, group_id=late, member_id=member, share_session_epoch=1, max_wait=5000)
        _fetch(raw, group_id=late, member_id=member, share_session_epoch=-1)
    del producer
    acquired = [
        (r["first_offset"], r["last_offset"])
        for t in got["responses"]
        for p in t["partitions"]
        for r in p["acquired_records"]
    ]
    assert acquired == [(5, 7)], (target.kind, got)
    # the lock duration ShareFetch answers: the group's config, or the broker's default
    assert (first["acquisition_lock_timeout"], got["acquisition_lock_timeout"]) == (30000, 30000), target.kind
    member = str(uuid.uuid4())
    _join(find_coordinator(target.bootstrap_servers, early), early, member, topic)
    with Raw(target.bootstrap_servers) as raw:
        opened = _fetch(raw, group_id=early, member_id=member, topics=ask)
        _fetch(raw, group_id=early, member_id=member, share_session_epoch=-1)
    assert opened["acquisition_lock_timeout"] == 20000, (target.kind, opened)


def test_share_isolation_level_read_committed(target: Target, names: str) -> None:
    """A transaction aborted (3 records) then one committed (2): a group configured
    ``share.isolation.level=read_committed`` does not acquire the aborted records (archived), one at
    the default (read_uncommitted) does — as the same raw ShareFetch shows it on both brokers."""
    from confluent_kafka import Producer

    topic, committed, everything = f"{names}-t", f"{names}-rc", f"{names}-ru"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
        for group in (committed, everything):
            assert _alter(raw, group, [("share.auto.offset.reset", SET, "earliest")]) == (0, None)
        assert _alter(raw, committed, [("share.isolation.level", SET, "read_committed")]) == (0, None)
        topic_id = _topic_id(raw, topic)
    producer = Producer({"bootstrap.servers": target.bootstrap_servers, "transactional.id": f"{names}-txn"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, value=f"aborted-{i}".encode(), partition=0)
    assert producer.flush(30) == 0  # written, then aborted (an abort drops what is not sent yet)
    producer.abort_transaction(30)
    producer.begin_transaction()
    for i in range(2):
        producer.produce(topic, value=f"committed-{i}".encode(), partition=0)
    producer.commit_transaction(30)
    del producer
    from tests.apache_kafka.test_diff_share_offsets import _join

    seen = {}
    for group in (committed, everything):
        member = str(uuid.uuid4())
        _join(find_coordinator(target.bootstrap_servers, group), group, member, topic)
        acquired: list[tuple[int, int, int]] = []
        with Raw(target.bootstrap_servers) as raw:
            got = _fetch(
                raw,
                group_id=group,
                member_id=member,
                topics=[{"topic_id": topic_id, "partitions": [_part(0)]}],
                max_wait=5000,
            )
            for epoch in range(1, 6):  # each round accepts what the last one acquired (bounded)
                rows = [
                    (r["first_offset"], r["last_offset"], r["delivery_count"])
                    for t in got["responses"]
                    for p in t["partitions"]
                    for r in p["acquired_records"]
                ]
                acquired += rows
                if not rows and epoch > 1:
                    break
                acks = [{"topic_id": topic_id, "partitions": [_part(0, *((f, la, 1) for f, la, _ in rows))]}]
                got = _fetch(
                    raw,
                    group_id=group,
                    member_id=member,
                    share_session_epoch=epoch,
                    topics=acks if rows else [],
                    max_wait=1000,
                )
            _fetch(raw, group_id=group, member_id=member, share_session_epoch=-1)
        seen[group] = acquired
    # offsets: 0-2 aborted, 3 the abort marker, 4-5 committed, 6 the commit marker; the acquired
    # ranges take in the markers (the client skips control records), read_committed archives 0-2
    assert seen == {committed: [(3, 6, 1)], everything: [(0, 6, 1)]}, (target.kind, seen)
