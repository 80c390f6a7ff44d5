"""kgroup serve's share sessions and share fetches (KIP-932) on their own: the session cache's rules
(``kgroup.broker.share_sessions``, Kafka 4.4.0's ``ShareSessionCache`` / ``newContext``), a parked
ShareFetch woken by an append, the share coordinator's internal topic refusing producers, and the
settings' checks. The same requests against Apache Kafka are in
``tests/apache_kafka/test_diff_share_fetch.py``."""

from __future__ import annotations

import struct
import time
import uuid

import pytest
from confluent_kafka import Producer
from tests.apache_kafka.test_diff_share_fetch import _fetch, _part, _topic_id
from tests.apache_kafka.test_share_consumers import _produce, _RdkafkaShare, _wait
from tests.apache_kafka.wire import Raw, metadata
from tests.broker.test_share_durability import _join

from kgroup.broker.cluster import SHARE_GROUP_STATE_TOPIC
from kgroup.broker.internal_topic import record_batch
from kgroup.broker.share_host import _CHUNK_BYTES, _read_log
from kgroup.broker.share_sessions import SessionError, ShareSessionCache, next_epoch
from kgroup.model import ErrorCode, KgroupError
from kgroup.testing import KafkaBroker

T = uuid.UUID(int=1)


def test_session_epochs_partitions_and_limit() -> None:
    cache = ShareSessionCache(max_sessions=2)
    opened = cache.new_context("g", "m1", 0, [(T, 0), (T, 1)], [], False, "c1")
    assert (opened.full, opened.final, opened.partitions) == (True, False, ((T, 0), (T, 1)))
    # incremental: added and forgotten partitions, the epoch moves by one
    later = cache.new_context("g", "m1", 1, [(T, 2)], [(T, 0)], False, "c1")
    assert (later.full, later.partitions) == (False, ((T, 1), (T, 2)))
    session = cache.get("g", "m1")
    assert session is not None and session.epoch == 2
    with pytest.raises(SessionError) as wrong:
        cache.new_context("g", "m1", 1, [], [], False, "c1")
    assert wrong.value.code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    with pytest.raises(SessionError) as acking:
        cache.new_context("g", "m2", 0, [(T, 0)], [], True, "c2")
    assert acking.value.code == ErrorCode.INVALID_REQUEST
    cache.new_context("g", "m2", 0, [(T, 0)], [], False, "c2")
    with pytest.raises(SessionError) as full:
        cache.new_context("g", "m3", 0, [(T, 0)], [], False, "c3")
    assert full.value.code == ErrorCode.SHARE_SESSION_LIMIT_REACHED
    # reopening one's own session is never refused: the old one goes first
    cache.new_context("g", "m2", 0, [(T, 1)], [], False, "c2")
    # ShareAcknowledge: epoch 0 refused, the final epoch leaves the epoch as it is
    with pytest.raises(SessionError) as initial:
        cache.acknowledge_update("g", "m1", 0)
    assert initial.value.code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    cache.acknowledge_update("g", "m1", 2)
    cache.acknowledge_update("g", "m1", -1)
    assert session.epoch == 3
    # a closed connection takes the sessions it opened
    assert [s.member_id for s in cache.on_connection_closed("c2")] == ["m2"]
    assert cache.get("g", "m2") is None and len(cache) == 1
    with pytest.raises(SessionError) as gone:
        cache.new_context("g", "m2", 1, [], [], False, "c2")
    assert gone.value.code == ErrorCode.SHARE_SESSION_NOT_FOUND


def test_next_epoch_wraps_to_1() -> None:
    assert [next_epoch(e) for e in (0, 1, 0x7FFFFFFF, -1)] == [1, 2, 1, -1]


def test_a_parked_share_fetch_is_answered_by_an_append() -> None:
    with (
        KafkaBroker(topics={"jobs": 1}, share_auto_offset_reset="earliest") as kafka,
        Raw(kafka.bootstrap_servers) as raw,
    ):
        topic_id = _topic_id(raw, "jobs")
        member = _join(kafka.bootstrap_servers, "g", "jobs")
        ask = [{"topic_id": topic_id, "partitions": [_part(0)]}]
        empty = _fetch(raw, group_id="g", member_id=member, topics=ask, max_wait=0)
        assert empty["error_code"] == 0
        raw.send(
            "ShareFetch",
            1,
            {
                "group_id": "g",
                "member_id": member,
                "share_session_epoch": 1,
                "max_wait": 20_000,
                "min_bytes": 1,
                "max_bytes": 1 << 20,
                "max_records": 500,
                "batch_size": 500,
                "topics": [],
                "forgotten_topics_data": [],
            },
        )
        started = time.monotonic()
        producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
        producer.produce("jobs", value=b"x", partition=0)
        assert producer.flush(10) == 0
        answer = raw.receive()
        waited = time.monotonic() - started
    parts = [p for t in answer["responses"] for p in t["partitions"]]
    assert [a["first_offset"] for p in parts for a in p["acquired_records"]] == [0]
    assert waited < 15, waited  # the append answered it, not the 20 s wait


def test_the_share_state_topic_is_internal() -> None:
    """Made at a group's first share-state initialisation, with Kafka's 50 partitions; Metadata marks
    it internal (so producers are refused, as for ``__consumer_offsets``)."""
    with KafkaBroker(topics={"jobs": 1}) as kafka:
        _join(kafka.bootstrap_servers, "g", "jobs")
        with Raw(kafka.bootstrap_servers) as raw:
            (topic,) = metadata(raw, [SHARE_GROUP_STATE_TOPIC], auto_create=False)["topics"]
    assert (topic["error_code"], topic["is_internal"], len(topic["partitions"])) == (0, True, 50)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("group_share_record_lock_duration_ms", 1000, "15000-60000"),
        ("group_share_delivery_count_limit", 11, "2-10"),
        ("share_auto_offset_reset", "sometimes", "latest, earliest or by_duration"),
    ],
)
def test_share_settings_are_checked(field: str, value: object, message: str) -> None:
    from kgroup.broker.config import BrokerConfig

    with pytest.raises(KgroupError, match=message):
        BrokerConfig(**{field: value})  # type: ignore[arg-type]


def test_share_consumers_read_partitions_led_by_three_nodes() -> None:
    """Three broker nodes lead the six partitions: each ShareFetch goes to a partition's leader (a
    partition asked of another node is NOT_LEADER_OR_FOLLOWER with its leader); librdkafka's share
    consumers read every record once."""
    with KafkaBroker(topics={"jobs": 6}, brokers=3, share_auto_offset_reset="earliest") as kafka:
        sent = _produce(kafka.bootstrap_servers, "jobs", 6, 120)
        consumers = [_RdkafkaShare(kafka.bootstrap_servers, "g", "jobs") for _ in range(2)]
        try:
            _wait(lambda: sum(len(c.records) for c in consumers) >= len(sent), 60, "every record")
            time.sleep(1.0)  # nothing more comes (a duplicate would show here)
            rows = [row for c in consumers for row in c.records]
            assert sorted((p, o) for p, o, _ in rows) == sorted(sent)
            assert {c for _, _, c in rows} == {1}
            assert [e for c in consumers for e in c.errors] == []
        finally:
            for c in consumers:
                c.close()
        leaders = {kafka.broker.cluster.partition_leader("jobs", p) for p in range(6)}
    assert len(leaders) == 3


def test_a_partition_led_elsewhere_is_not_leader_or_follower() -> None:
    with KafkaBroker(topics={"jobs": 3}, brokers=3) as kafka:
        cluster = kafka.broker.cluster
        other = next(p for p in range(3) if cluster.partition_leader("jobs", p) != 0)
        leader = cluster.partition_leader("jobs", other)
        first = kafka.bootstrap_servers.split(",")[0]
        with Raw(first) as raw:
            topic_id = _topic_id(raw, "jobs")
            answer = _fetch(
                raw,
                group_id="g",
                member_id=str(uuid.uuid4()),
                topics=[{"topic_id": topic_id, "partitions": [_part(other)]}],
                max_wait=0,
            )
    (part,) = [p for t in answer["responses"] for p in t["partitions"]]
    assert (part["error_code"], part["current_leader"]["leader_id"]) == (6, leader)
    assert [e["node_id"] for e in answer["node_endpoints"]] == [leader]


class _Log:
    """A log of ``count`` one-record batches of ``value_bytes`` each; counts the bytes read."""

    def __init__(self, count: int, value_bytes: int) -> None:
        self.batches = []
        for offset in range(count):
            batch = bytearray(record_batch([(b"k", b"v" * value_bytes)], 0))
            batch[0:8] = struct.pack(">q", offset)  # the base offset (outside the CRC)
            self.batches.append(bytes(batch))
        self.read_bytes = 0

    def read(self, offset: int, max_bytes: int) -> bytes:
        out = bytearray()
        for batch in self.batches[offset:]:
            if out and len(out) + len(batch) > max_bytes:
                break
            out += batch
        self.read_bytes += len(out)
        return bytes(out)


def test_a_share_fetch_reads_the_log_only_as_far_as_it_can_acquire() -> None:
    log = _Log(2000, 1024)  # about 2 MiB
    batches, data = _read_log(log, 0, 2000, 50 << 20, cached_end=-1, wanted=10)
    assert batches[0].base_offset == 0 and len(batches) >= 10
    assert log.read_bytes <= _CHUNK_BYTES + 1100 and len(data) == log.read_bytes
    # records inside the cached window do not count (they may be taken): it reads on past them
    log.read_bytes = 0
    batches, _ = _read_log(log, 0, 2000, 50 << 20, cached_end=999, wanted=10)
    assert batches[-1].last_offset >= 1009
    # up to the partition's share of max_bytes, the first batch whole even if larger, and below the HW
    log.read_bytes = 0
    batches, _ = _read_log(log, 0, 2000, 10, cached_end=-1, wanted=500)
    assert [b.base_offset for b in batches] == [0]
    batches, _ = _read_log(log, 0, 1500, 50 << 20, cached_end=-1, wanted=5000)
    assert (batches[0].base_offset, batches[-1].last_offset, len(batches)) == (0, 1499, 1500)
