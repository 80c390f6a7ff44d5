"""The source's bulk read path: raw Fetch answers decoded into Arrow columns by numba kernels.

* hand-built RecordBatch v2 bytes (:func:`decode_fetched` alone): offsets of compacted batches kept as
  gaps, the range cut exactly, control batches dropped, aborted transactions skipped in
  read_committed only, LogAppendTime, a batch cut short by the fetch limit, a corrupt CRC named;
* records produced by confluent-kafka with every ``compression.type`` to kgroup's broker: the bulk
  path gives exactly what the confluent-kafka path gives (same Arrow rows) for an exact range;
* transactions on kgroup serve and on Apache Kafka (confluent-kafka's transactional producer):
  committed, aborted and plain records, read_committed and read_uncommitted, bulk path ==
  confluent-kafka path == expected;
* a Spark read through the bulk path with exact offsets, compressed records and headers.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest
from crc32c import crc32c
from tests.log.hostile_batches import compressed, zigzag

from kgroup.model import ErrorCode, KgroupError
from kgroup.spark.source.bulk_read import can_read_in_bulk, read_range_in_bulk
from kgroup.spark.source.kafka_io import fetch_range_with_librdkafka
from kgroup.spark.source.options import ReadKind, parse_source_options
from kgroup.spark.source.partition_fetcher import PartitionFetcher
from kgroup.spark.source.ranges import OffsetRange
from kgroup.spark.source.record_columns import AbortedTransaction, decode_fetched
from kgroup.wire.api_keys import ApiKey

T0 = 1_700_000_000_000
TRANSACTIONAL, CONTROL, LOG_APPEND_TIME = 0x10, 0x20, 0x08


def _record(offset_delta: int, value: bytes | None, key: bytes | None = None, ts_delta: int = 0) -> bytes:
    body = bytes([0]) + zigzag(ts_delta) + zigzag(offset_delta)
    body += zigzag(-1) if key is None else zigzag(len(key)) + key
    body += zigzag(-1) if value is None else zigzag(len(value)) + value
    body += zigzag(0)
    return zigzag(len(body)) + body


def _batch(
    base_offset: int,
    records: list[bytes],
    *,
    last_offset_delta: int | None = None,
    attributes: int = 0,
    producer_id: int = -1,
    max_timestamp: int = T0,
) -> bytes:
    payload = b"".join(records)
    if attributes & 0x07:
        payload = compressed(attributes & 0x07, payload)
    delta = len(records) - 1 if last_offset_delta is None else last_offset_delta
    after_crc = (
        struct.pack(">hiqqqhii", attributes, delta, T0, max_timestamp, producer_id, 0, 0, len(records))
        + payload
    )
    length = 4 + 1 + 4 + len(after_crc)
    return struct.pack(">qiibI", base_offset, length, -1, 2, crc32c(after_crc)) + after_crc


def _marker(base_offset: int, producer_id: int, commit: bool) -> bytes:
    key = struct.pack(">hh", 0, 1 if commit else 0)
    body = bytes([0]) + zigzag(0) + zigzag(0) + zigzag(len(key)) + key + zigzag(6) + bytes(6) + zigzag(0)
    return _batch(
        base_offset, [zigzag(len(body)) + body], attributes=TRANSACTIONAL | CONTROL, producer_id=producer_id
    )


def _decode(data: bytes, low: int, high: int, **kwargs: Any) -> tuple[list[dict[str, Any]], int]:
    out = decode_fetched(data, topic="t", partition=3, fetch_offset=low, until_offset=high, **kwargs)
    return ([] if out.batch is None else out.batch.to_pylist()), out.next_offset


def test_compacted_offsets_stay_gaps_and_the_range_is_cut_exactly() -> None:
    data = _batch(100, [_record(0, b"a"), _record(2, b"b", b"k"), _record(5, None)], last_offset_delta=5)
    data += _batch(106, [_record(0, b"c", ts_delta=7)], attributes=1)  # gzip
    rows, next_offset = _decode(data, 101, 107)
    assert [(r["offset"], r["key"], r["value"]) for r in rows] == [
        (102, b"k", b"b"),
        (105, None, None),
        (106, None, b"c"),
    ]
    assert next_offset == 107
    assert {(r["topic"], r["partition"], r["timestampType"]) for r in rows} == {("t", 3, 0)}
    assert rows[2]["timestamp"].timestamp() * 1000 == T0 + 7
    rows, _ = _decode(data, 100, 105)
    assert [r["offset"] for r in rows] == [100, 102]


def test_control_batches_and_aborted_transactions() -> None:
    pid = 7
    data = _batch(0, [_record(0, b"plain")])
    data += _batch(
        1, [_record(0, b"aborted-1"), _record(1, b"aborted-2")], attributes=TRANSACTIONAL, producer_id=pid
    )
    data += _batch(3, [_record(0, b"other producer")], attributes=TRANSACTIONAL, producer_id=8)
    data += _marker(4, pid, commit=False)
    data += _batch(5, [_record(0, b"committed")], attributes=TRANSACTIONAL | 4, producer_id=pid)  # zstd
    data += _marker(6, pid, commit=True)
    data += _marker(7, 8, commit=True)
    aborted = [AbortedTransaction(pid, 1)]
    committed, next_offset = _decode(data, 0, 100, read_committed=True, aborted=aborted)
    assert [r["value"] for r in committed] == [b"plain", b"other producer", b"committed"]
    assert next_offset == 8
    everything, _ = _decode(data, 0, 100, read_committed=False, aborted=aborted)
    assert [r["offset"] for r in everything] == [0, 1, 2, 3, 5]


def test_log_append_time_a_cut_batch_and_a_corrupt_one() -> None:
    whole = _batch(
        0,
        [_record(0, b"x", ts_delta=-5), _record(1, b"y")],
        attributes=LOG_APPEND_TIME,
        max_timestamp=T0 + 99,
    )
    cut = _batch(2, [_record(0, b"z")])
    rows, next_offset = _decode(whole + cut[:-3], 0, 10)
    assert [(r["value"], r["timestampType"], r["timestamp"].timestamp() * 1000) for r in rows] == [
        (b"x", 1, T0 + 99),
        (b"y", 1, T0 + 99),
    ]
    assert next_offset == 2  # the cut batch is fetched again
    broken = bytearray(whole)
    broken[-2] ^= 0xFF
    with pytest.raises(KgroupError, match="t-3: record batch at offset 0 is corrupt"):
        _decode(bytes(broken), 0, 10)


def test_only_plaintext_connections_take_the_bulk_path() -> None:
    assert can_read_in_bulk({})
    assert can_read_in_bulk({"security.protocol": "PLAINTEXT"})
    assert not can_read_in_bulk({"security.protocol": "SASL_SSL"})


# --- against brokers ---------------------------------------------------------------------------


def _options(bootstrap: str, topic: str, **extra: str) -> Any:
    return parse_source_options(
        {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "includeHeaders": "true", **extra},
        ReadKind.BATCH,
    )


def _both_paths(options: Any, piece: OffsetRange) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    losses: list[str] = []
    bulk = [r for b in read_range_in_bulk(options, piece, losses.append, 1_000) for r in b.to_pylist()]
    librdkafka = [
        r for b in fetch_range_with_librdkafka(options, piece, losses.append, 1_000) for r in b.to_pylist()
    ]
    assert losses == []
    return bulk, librdkafka


def test_the_fetcher_speaks_the_newest_versions_both_sides_support(kafka_cluster: Any) -> None:
    """ApiVersions decides, as in Kafka's clients: Kafka 4.4.0 and kgroup both serve Fetch v18 (the
    topic named by the id Metadata v13 gave) and ListOffsets v11."""
    from confluent_kafka import Producer

    topic = kafka_cluster.new_topic("bulk-read-versions")
    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap, "log_level": 3})
    for i in range(10):
        producer.produce(topic, b"v%d" % i, None, 2)
    assert producer.flush(30) == 0
    fetcher = PartitionFetcher(kafka_cluster.bootstrap, topic, 2, timeout_s=30, read_committed=False)
    try:
        assert fetcher.earliest_offset() == 0
        answer = fetcher.fetch(0)
    finally:
        fetcher.close()
    assert (answer.error, answer.high_watermark) == (ErrorCode.NONE, 10) and answer.records
    assert fetcher.versions_spoken == {ApiKey.METADATA: 13, ApiKey.LIST_OFFSETS: 11, ApiKey.FETCH: 18}


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_every_codec_reads_as_the_confluent_kafka_path_reads(kgroup_cluster: Any, codec: str) -> None:
    from confluent_kafka import Producer

    topic = kgroup_cluster.new_topic(f"bulk-{codec}")
    producer = Producer(
        {
            "bootstrap.servers": kgroup_cluster.bootstrap,
            "compression.type": codec,
            "linger.ms": 5,
            "log_level": 3,
        }
    )
    for i in range(3_000):
        headers = [("n", str(i).encode()), ("null", None)] if i % 3 == 0 else None
        producer.produce(
            topic, f"value-{i}".encode() * (i % 5), None if i % 7 == 0 else b"k%d" % i, 1, headers=headers
        )
    assert producer.flush(30) == 0
    bulk, librdkafka = _both_paths(
        _options(kgroup_cluster.bootstrap, topic), OffsetRange(topic, 1, 11, 2_990)
    )
    assert [r["offset"] for r in bulk] == list(range(11, 2_990))
    assert bulk == librdkafka
    assert bulk[1]["headers"] == [{"key": "n", "value": b"12"}, {"key": "null", "value": None}]
    assert bulk[0]["headers"] is None and bulk[3]["key"] is None


def test_transactions_read_as_the_confluent_kafka_path_reads(kafka_cluster: Any) -> None:
    """Records of a real transactional producer (confluent-kafka), on kgroup serve (its transaction
    coordinator, markers and last stable offset) and on Apache Kafka 4.4.0."""
    from confluent_kafka import Producer

    topic = kafka_cluster.new_topic("bulk-transactions")
    bootstrap = kafka_cluster.bootstrap
    plain = Producer({"bootstrap.servers": bootstrap, "log_level": 3})
    txn = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": kafka_cluster.new_group("bulk-read"),
            "log_level": 3,
        }
    )
    txn.init_transactions(30)
    expected_committed = []
    for round_ in range(4):
        txn.begin_transaction()
        for i in range(50):
            txn.produce(topic, f"txn-{round_}-{i}".encode(), partition=0)
        plain.produce(topic, f"plain-{round_}".encode(), partition=0)
        assert plain.flush(30) == 0
        txn.flush(30)
        if round_ % 2:
            txn.abort_transaction(30)
        else:
            txn.commit_transaction(30)
            expected_committed += [f"txn-{round_}-{i}".encode() for i in range(50)]
        expected_committed.append(f"plain-{round_}".encode())
    from confluent_kafka import Consumer, TopicPartition

    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "bulk-probe", "log_level": 3})
    _low, high = probe.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
    probe.close()
    piece = OffsetRange(topic, 0, 0, high)
    committed, librdkafka = _both_paths(
        _options(bootstrap, topic, **{"kafka.isolation.level": "read_committed"}), piece
    )
    assert committed == librdkafka
    assert sorted(r["value"] for r in committed) == sorted(expected_committed)
    everything, librdkafka = _both_paths(_options(bootstrap, topic), piece)
    assert everything == librdkafka
    assert len(everything) == 4 * 51  # every record, no transaction marker


@pytest.mark.spark
def test_a_spark_read_takes_exact_offsets_of_compressed_records(
    kgroup_spark: Any, kgroup_cluster: Any
) -> None:
    from confluent_kafka import Producer

    topic = kgroup_cluster.new_topic("bulk-spark")
    for codec in ("gzip", "zstd"):
        producer = Producer(
            {
                "bootstrap.servers": kgroup_cluster.bootstrap,
                "compression.type": codec,
                "linger.ms": 5,
                "log_level": 3,
            }
        )
        for i in range(400):
            producer.produce(
                topic, b"%s-%d" % (codec.encode(), i), b"k", i % 2, headers=[("c", codec.encode())]
            )
        assert producer.flush(30) == 0
    offsets = {topic: {"0": 150, "1": 0}}
    ending = {topic: {"0": 350, "1": 1}}
    rows = (
        kgroup_spark.read.format("kgroup")
        .option("kafka.bootstrap.servers", kgroup_cluster.bootstrap)
        .option("assign", json.dumps({topic: [0, 1]}))
        .option("startingOffsets", json.dumps(offsets))
        .option("endingOffsets", json.dumps(ending))
        .option("includeHeaders", "true")
        .load()
        .collect()
    )
    got = sorted((r["partition"], r["offset"], bytes(r["value"])) for r in rows)
    assert got == [
        (0, o, b"%s-%d" % (b"gzip" if o < 200 else b"zstd", (o % 200) * 2)) for o in range(150, 350)
    ] + [(1, 0, b"gzip-1")]
    assert {bytes(r["headers"][0]["value"]) for r in rows} == {b"gzip", b"zstd"}
