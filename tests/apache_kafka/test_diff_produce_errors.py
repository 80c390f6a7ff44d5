"""Differential: what a Produce answer says of a partition whose batch the log refuses — sent raw to
kgroup and to Apache Kafka 4.4.0 (the ``target`` fixture). ``ReplicaManager`` gives an error message
(and record errors) only for a ``RecordValidationException`` — a record's timestamp out of range —
and none for the others: an out-of-order sequence, an old producer epoch, a corrupt batch, a batch
larger than ``max.message.bytes``, a batch a client may not write (control, LogAppendTime).
"""

from __future__ import annotations

import re
import struct
import time
from typing import Any

import pytest
from crc32c import crc32c
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.test_diff_transactions import _produce
from tests.apache_kafka.wire import Raw, create_topic
from tests.log.batches import kio_batch

pytestmark = pytest.mark.apache_kafka

_ATTRIBUTES = 21  # a RecordBatch v2's attributes: after base offset, length, leader epoch, magic, crc


def _with_attributes(batch: bytes, bits: int) -> bytes:
    """The batch with ``bits`` set in its attributes and its CRC made again."""
    out = bytearray(batch)
    (attributes,) = struct.unpack_from(">h", out, _ATTRIBUTES)
    struct.pack_into(">h", out, _ATTRIBUTES, attributes | bits)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[_ATTRIBUTES:])))
    return bytes(out)


def _answer(raw: Raw, topic: str, batch: bytes) -> tuple[int, str | None, list[tuple[int, str | None]]]:
    answer = raw.call(
        "Produce",
        9,
        {
            "transactional_id": None,
            "acks": -1,
            "timeout": 30_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        },
    )
    (entry,) = answer["responses"][0]["partition_responses"]
    errors = [(e["batch_index"], e["batch_index_error_message"]) for e in entry["record_errors"] or []]
    return int(entry["error_code"]), entry["error_message"], errors


def _digits(text: str | None) -> str | None:
    return None if text is None else re.sub(r"-?\d+", "N", text)


def test_which_refusals_carry_a_message(target: Target, names: str) -> None:
    topic, small = f"{names}-t", f"{names}-small"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
        create_topic(raw, small, 1, {"max.message.bytes": "100"})
        _produce(raw, 9, None, topic, 0, kio_batch([b"warm"]))  # (a leader known to the broker)
        deadline = time.monotonic() + 60
        while True:  # an idempotent producer id (Apache Kafka: once its coordinator has loaded)
            init = raw.call(
                "InitProducerId",
                4,
                {
                    "transactional_id": None,
                    "transaction_timeout": 60_000,
                    "producer_id": -1,
                    "producer_epoch": -1,
                },
            )
            if init["error_code"] not in (14, 15, 16) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        pid, epoch = init["producer_id"], init["producer_epoch"]
        corrupt = bytearray(kio_batch([b"x"]))
        corrupt[-1] ^= 0xFF
        seen: dict[str, Any] = {
            "first": _answer(
                raw, topic, kio_batch([b"a"], producer_id=pid, producer_epoch=epoch, base_sequence=0)
            ),
            "out of order": _answer(
                raw, topic, kio_batch([b"a"], producer_id=pid, producer_epoch=epoch, base_sequence=5)
            ),
            "new epoch": _answer(
                raw, topic, kio_batch([b"a"], producer_id=pid, producer_epoch=epoch + 1, base_sequence=0)
            ),
            "old epoch": _answer(
                raw, topic, kio_batch([b"a"], producer_id=pid, producer_epoch=epoch, base_sequence=1)
            ),
            "corrupt": _answer(raw, topic, bytes(corrupt)),
            "too large": _answer(raw, small, kio_batch([b"x" * 300])),
            "control": _answer(raw, topic, _with_attributes(kio_batch([b"x"]), 0x20)),
            "future timestamp": _answer(
                raw,
                topic,
                kio_batch(
                    [b"x", b"y"], timestamps=[int(time.time() * 1000), int(time.time() * 1000) + 86_400_000]
                ),
            ),
        }
    assert [seen[k][0] for k in ("first", "new epoch")] == [0, 0]
    assert {k: v for k, v in seen.items() if k not in ("first", "new epoch", "future timestamp")} == {
        "out of order": (45, None, []),
        "old epoch": (47, None, []),
        "corrupt": (2, None, []),
        "too large": (10, None, []),
        "control": (87, None, []),
    }
    code, message, errors = seen["future timestamp"]
    assert (code, message, [(i, _digits(m)) for i, m in errors]) == (
        32,
        "One or more records have been rejected due to invalid timestamp",
        [(1, "Timestamp N of message with offset N is out of range. The timestamp should be within [N, N]")],
    )
