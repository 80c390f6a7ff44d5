"""RecordBatch v2s built byte by byte, for what no client's encoder makes: garbage inside a valid
batch frame (right length, magic, CRC) and timestamps at the ends of Java's ``long``.

``HOSTILE`` names each case of issue 17 with the Produce error code Apache Kafka 4.4.0 answers for
it (measured against a 4.4.0 broker; tests/apache_kafka/test_diff_hostile.py keeps measuring it).
"""

from __future__ import annotations

import gzip
import random
import struct

import cramjam
from crc32c import crc32c
from tests.log.batches import BASE_TIME_MS

from kgroup.log.codecs import xxhash32

NONE = 0
UNKNOWN_SERVER_ERROR = -1
INVALID_TIMESTAMP = 32
INVALID_RECORD = 87
LONG_MAX = 2**63 - 1


def zigzag(value: int) -> bytes:
    """Kafka's zig-zag varint/varlong of ``value``."""
    raw = (value << 1) ^ (value >> 63)
    out = bytearray()
    while raw >= 0x80:
        out.append(raw & 0x7F | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def record(
    value: bytes = b"v", *, timestamp_delta: int = 0, offset_delta: int = 0, key: bytes | None = None
) -> bytes:
    """One DefaultRecord: length, attributes, deltas, key, value, no headers."""
    body = bytes([0]) + zigzag(timestamp_delta) + zigzag(offset_delta)
    body += zigzag(-1) if key is None else zigzag(len(key)) + key
    body += zigzag(len(value)) + value + zigzag(0)
    return zigzag(len(body)) + body


def batch(
    payload: bytes,
    *,
    codec: int = 0,
    count: int = 1,
    base_timestamp: int = BASE_TIME_MS,
    max_timestamp: int | None = None,
) -> bytes:
    """A batch of ``count`` records whose records section is ``payload`` (compressed or not), with a
    correct length and CRC-32C: only what the payload holds can be wrong."""
    max_timestamp = base_timestamp if max_timestamp is None else max_timestamp
    after_crc = (
        struct.pack(">hiqqqhii", codec, count - 1, base_timestamp, max_timestamp, -1, -1, -1, count) + payload
    )
    length = 4 + 1 + 4 + len(after_crc)  # leader epoch, magic, crc, then what the crc covers
    return struct.pack(">qiibI", 0, length, -1, 2, crc32c(after_crc)) + after_crc


def xerial_snappy(data: bytes) -> bytes:
    """snappy-java's framing (the Java producer's): magic, version 1, compatible 1, int32-length blocks."""
    out = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    for start in range(0, len(data), 32 * 1024):
        block = bytes(cramjam.snappy.compress_raw(data[start : start + 32 * 1024]))
        out += struct.pack(">i", len(block)) + block
    return out


def kafka_lz4(data: bytes) -> bytes:
    """An LZ4 frame as Kafka's producer writes it: version 1, independent 64 KiB blocks, no checksums."""
    descriptor = bytes([0x60, 0x40])
    out = struct.pack("<I", 0x184D2204) + descriptor + bytes([(xxhash32(descriptor) >> 8) & 0xFF])
    for start in range(0, len(data), 64 * 1024):
        block = bytes(cramjam.lz4.compress_block(data[start : start + 64 * 1024], store_size=False))
        out += struct.pack("<I", len(block)) + block
    return out + struct.pack("<I", 0)


def compressed(codec: int, data: bytes) -> bytes:
    if codec == 1:
        return gzip.compress(data)
    if codec == 2:
        return xerial_snappy(data)
    if codec == 3:
        return kafka_lz4(data)
    return bytes(cramjam.zstd.compress(data))


_JUNK = random.Random(17).randbytes(200)
ONE = record(b"hello")

#: name -> (batch, Apache Kafka 4.4.0's Produce error code)
HOSTILE: dict[str, tuple[bytes, int]] = {
    "gzip, random payload": (batch(_JUNK, codec=1), UNKNOWN_SERVER_ERROR),
    "snappy, random payload": (batch(_JUNK, codec=2), UNKNOWN_SERVER_ERROR),
    "lz4, random payload": (batch(_JUNK, codec=3), UNKNOWN_SERVER_ERROR),
    "zstd, random payload": (batch(_JUNK, codec=4), UNKNOWN_SERVER_ERROR),
    "lz4, dependent blocks": (batch(bytes(cramjam.lz4.compress(ONE)), codec=3), UNKNOWN_SERVER_ERROR),
    "codec 5": (batch(ONE, codec=5), UNKNOWN_SERVER_ERROR),
    "codec 6": (batch(ONE, codec=6), UNKNOWN_SERVER_ERROR),
    "codec 7": (batch(ONE, codec=7), UNKNOWN_SERVER_ERROR),
    "gzip, empty payload": (batch(b"", codec=1), UNKNOWN_SERVER_ERROR),
    "gzip, count 2^31-1": (batch(gzip.compress(ONE), codec=1, count=2**31 - 1), INVALID_RECORD),
    "uncompressed, count 2^31-1": (batch(ONE, count=2**31 - 1), INVALID_RECORD),
    "gzip, two records for a count of one": (batch(gzip.compress(ONE + ONE), codec=1), INVALID_RECORD),
    "zstd, one record for a count of two": (batch(compressed(4, ONE), codec=4, count=2), INVALID_RECORD),
    "snappy, a record longer than the payload": (
        batch(compressed(2, ONE[:-2]), codec=2),
        INVALID_RECORD,
    ),
    "lz4, a negative header count": (
        batch(compressed(3, zigzag(6) + bytes([0]) + zigzag(0) * 2 + zigzag(-1) * 2 + zigzag(-3)), codec=3),
        INVALID_RECORD,
    ),
    "timestamp 2^63-1 + 2^62 (wraps)": (
        batch(record(timestamp_delta=2**62), base_timestamp=LONG_MAX),
        NONE,
    ),
    "timestamp 2^63-1": (batch(record(), base_timestamp=LONG_MAX), INVALID_TIMESTAMP),
    "timestamp -2^63": (batch(record(), base_timestamp=-(2**63)), INVALID_TIMESTAMP),
}

#: each codec, a valid batch of three records (timestamps BASE_TIME_MS + 0, 7, 3)
VALID = {
    codec: batch(
        compressed(
            codec,
            record(b"a", offset_delta=0)
            + record(b"b", timestamp_delta=7, offset_delta=1, key=b"k")
            + record(b"c" * 300, timestamp_delta=3, offset_delta=2),
        ),
        codec=codec,
        count=3,
        max_timestamp=BASE_TIME_MS + 7,
    )
    for codec in (1, 2, 3, 4)
}
