"""The sink's bulk encoder (Arrow columns to RecordBatch v2) and the bulk path's option rules, without
a broker or Spark.

Every batch the encoder writes passes the checks Kafka's broker runs on a produced batch
(:func:`kgroup.log.batch.validate_produce_records`: CRC, counts, offsets) and decodes — through the
source's own decoder — to exactly the rows of its partition, in order: keys, values, null keys and
values, headers (null values too), fields long enough for multi-byte varints, batches cut at the byte
limit (a record larger than the limit alone in its batch), sliced and 64-bit-offset Arrow arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kgroup.log.batch import validate_produce_records
from kgroup.model import KgroupError
from kgroup.spark.source.bulk_producer import ProducerSettings
from kgroup.spark.source.bulk_sink import bulk_settings
from kgroup.spark.source.record_batches import encode_records, group_rows, seal_batch
from kgroup.spark.source.record_columns import decode_fetched

HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
T0 = 1_700_000_000_000


def _decoded(data: bytes) -> list[dict[str, Any]]:
    out = decode_fetched(
        data, topic="t", partition=0, fetch_offset=0, until_offset=2**62, include_headers=True
    )
    assert out.batch is not None
    return list(out.batch.to_pylist())


def _encode_and_read(
    keys: Any, values: Any, headers: Any, groups: Any, max_batch_bytes: int
) -> dict[int, list[dict[str, Any]]]:
    """Each group's records as the broker would store them and a consumer read them back."""
    order, bounds, group_values = group_rows(np.asarray(groups, dtype=np.int64))
    encoded = encode_records(keys, values, headers, order, bounds, max_batch_bytes)
    out: dict[int, list[dict[str, Any]]] = {}
    sequences: dict[int, int] = {}
    for batch in encoded.batches:
        group = int(group_values[batch.group])
        data = bytes(
            seal_batch(
                encoded,
                batch,
                producer_id=7,
                producer_epoch=0,
                base_sequence=sequences.get(group, 0),
                timestamp_ms=T0,
            )
        )
        sequences[group] = sequences.get(group, 0) + batch.records
        size = len(data)
        assert size <= max_batch_bytes or batch.records == 1  # only a lone record may pass the limit
        checked = validate_produce_records(data, max_message_bytes=2**30, log_append_time=False)
        assert checked.header.records_count == batch.records
        assert checked.header.producer_id == 7
        rows = _decoded(data)
        assert [r["offset"] for r in rows] == list(range(batch.records))
        assert {r["timestamp"].timestamp() * 1000 for r in rows} == {T0}
        assert {r["timestampType"] for r in rows} == {0}  # CreateTime
        out.setdefault(group, []).extend(rows)
    return out


_bytes = st.one_of(st.none(), st.binary(max_size=300))
_headers = st.one_of(
    st.none(),
    st.lists(st.tuples(st.text(max_size=20), st.one_of(st.none(), st.binary(max_size=200))), max_size=3),
)


@given(
    rows=st.lists(st.tuples(_bytes, _bytes, _headers, st.integers(0, 3)), min_size=1, max_size=60),
    max_batch_bytes=st.sampled_from([1, 200, 1_000, 1_000_000]),
)
def test_every_batch_passes_kafkas_checks_and_reads_back_as_its_rows(
    rows: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]] | None, int]],
    max_batch_bytes: int,
) -> None:
    keys = pa.array([r[0] for r in rows], pa.binary())
    values = pa.array([r[1] for r in rows], pa.binary())
    headers = pa.array(
        [None if r[2] is None else [{"key": k, "value": v} for k, v in r[2]] for r in rows], HEADERS_TYPE
    )
    groups = [r[3] for r in rows]
    got = _encode_and_read(keys, values, headers, groups, max_batch_bytes)
    assert sorted(got) == sorted(set(groups))
    for group, records in got.items():
        expected = [r for r in rows if r[3] == group]
        assert [(r["key"], r["value"]) for r in records] == [(r[0], r[1]) for r in expected]
        assert [r["headers"] or [] for r in records] == [
            [{"key": k, "value": v} for k, v in (r[2] or [])] for r in expected
        ]


def test_sliced_string_and_large_arrays_and_no_headers() -> None:
    n = 2_000
    keys = pa.array([None if i % 9 == 0 else f"key-{i}" * (i % 50) for i in range(n + 10)], pa.string())
    values = pa.array([f"value-{i}".encode() * (i % 40) for i in range(n + 10)], pa.large_binary())
    keys, values = keys.slice(10), values.slice(10)  # Arrow arrays that start inside their buffers
    got = _encode_and_read(keys, values, None, [i % 3 for i in range(n)], 10_000)
    for group, records in got.items():
        rows = [i for i in range(n) if i % 3 == group]
        assert [r["key"] for r in records] == [
            None if (i + 10) % 9 == 0 else (f"key-{i + 10}" * ((i + 10) % 50)).encode() for i in rows
        ]
        assert [r["value"] for r in records] == [f"value-{i + 10}".encode() * ((i + 10) % 40) for i in rows]
        assert {r["headers"] is None for r in records} == {True}


def test_a_record_larger_than_the_limit_gets_a_batch_of_its_own() -> None:
    keys = pa.array([b"a", b"b", b"c"], pa.binary())
    values = pa.array([b"x" * 10, b"y" * 5_000, b"z" * 10], pa.binary())
    order, bounds, _ = group_rows(np.zeros(3, np.int64))
    encoded = encode_records(keys, values, None, order, bounds, 1_000)
    assert [b.records for b in encoded.batches] == [1, 1, 1]
    encoded = encode_records(keys, values.slice(0, 1), None, order[:1], np.array([0, 1]), 1_000)
    assert [b.records for b in encoded.batches] == [1]


def test_a_header_without_a_key_is_refused_in_one_line() -> None:
    headers = pa.array([[{"key": None, "value": b"v"}]], HEADERS_TYPE)
    order, bounds, _ = group_rows(np.zeros(1, np.int64))
    with pytest.raises(KgroupError, match=r"^headers: a header has a null key; give every header a key"):
        encode_records(pa.array([b"k"]), pa.array([b"v"]), headers, order, bounds, 1_000)


def test_the_bulk_path_takes_the_java_producers_defaults() -> None:
    assert bulk_settings({"bootstrap.servers": "b:9092"}, 60_000) == ProducerSettings(
        acks=-1, idempotent=True, delivery_timeout_ms=60_000, max_batch_bytes=1_000_000, max_in_flight=5
    )
    # acks other than all: not idempotent, as a Java producer whose options conflict with idempotence
    assert bulk_settings({"acks": "1"}, 60_000) == ProducerSettings(acks=1, idempotent=False)
    custom = bulk_settings(
        {
            "request.required.acks": "all",
            "enable.idempotence": "false",
            "client.id": "me",
            "request.timeout.ms": "5000",
            "message.timeout.ms": "9000",
            "batch.size": "65536",
            "max.in.flight": "2",
            "retry.backoff.ms": "0",
            "linger.ms": "50",  # queueing: nothing to do when the records are in hand
            "compression.type": "none",
            "security.protocol": "PLAINTEXT",
        },
        60_000,
    )
    assert custom == ProducerSettings(-1, False, "me", 5_000, 9_000, 65_536, 2, 0)


@pytest.mark.parametrize(
    "config",
    [
        {"security.protocol": "SSL"},
        {"compression.type": "gzip"},
        {"compression.codec": "lz4"},
        {"socket.keepalive.enable": "true"},  # a librdkafka property the bulk path does not know
        {"retries": "0"},
    ],
)
def test_what_only_librdkafka_does_takes_its_path(config: dict[str, str]) -> None:
    assert bulk_settings(config, 60_000) is None


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"acks": "2"}, r"^kafka\.acks: '2' is not one of all, -1, 0, 1; give one of them$"),
        (
            {"acks": "1", "enable.idempotence": "true"},
            r"^kafka\.enable\.idempotence: an idempotent producer needs acks=all, not kafka\.acks=1",
        ),
        ({"enable.idempotence": "yes"}, r"^kafka\.enable\.idempotence: 'yes' is not true or false$"),
        ({"batch.size": "big"}, r"^kafka\.batch\.size: 'big' is not a whole number"),
        ({"request.timeout.ms": "0"}, r"^kafka\.request\.timeout\.ms: 0 is too small"),
        ({"max.in.flight": "6"}, r"^kafka\.max\.in\.flight\.requests\.per\.connection: 6 is more than"),
    ],
)
def test_bad_values_are_refused_in_one_line(config: dict[str, str], message: str) -> None:
    with pytest.raises(KgroupError, match=message):
        bulk_settings(config, 60_000)


def test_the_kernels_records_and_header_size_are_the_one_writers() -> None:
    """The numba kernel keeps its own record encoder (a kernel cannot call Python): its records are
    byte for byte what :func:`kgroup.wire.record_batch.encode_record` writes, after a header of the
    one home's size."""
    from kgroup.spark.source._batch_kernels import BATCH_HEADER_SIZE
    from kgroup.wire.record_batch import HEADER_SIZE, encode_record

    keys = pa.array([b"k", None, b"x" * 200], pa.binary())
    values = pa.array([b"v", b"w" * 70, None], pa.binary())
    order, bounds, _ = group_rows(np.zeros(3, dtype=np.int64))
    encoded = encode_records(keys, values, None, order, bounds, 1_000_000)
    (batch,) = encoded.batches
    written = bytes(memoryview(encoded.buffer)[batch.start + HEADER_SIZE : batch.end])
    expected = b"".join(
        encode_record(i, k, v)
        for i, (k, v) in enumerate(zip(keys.to_pylist(), values.to_pylist(), strict=True))
    )
    assert BATCH_HEADER_SIZE == HEADER_SIZE
    assert written == expected
