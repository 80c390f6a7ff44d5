"""RecordBatch v2 at the byte level: the 61-byte header, Kafka's produce-time checks, offset stamping.
The layout (``DefaultRecordBatch``, drawn there), its numbers and the one batch writer are
:mod:`kgroup.wire.record_batch`'s (the pure core sizes batches too, and may not import the log); this
module reads and stamps what it describes.

The broker stores a batch exactly as the producer sent it. It writes ``baseOffset`` and
``partitionLeaderEpoch`` (both outside the CRC), and — only where Kafka's ``LogValidator`` does —
the timestamp type and ``maxTimestamp`` (inside the CRC, which is then recomputed). Records are never
decoded to be re-encoded. Their framing is checked on append, as Kafka's ``LogValidator`` checks it:
a compressed payload is inflated (:mod:`kgroup.log.codecs`) and its records walked
(:mod:`kgroup.log.records`), then stored still compressed, exactly as produced.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from crc32c import crc32c

from kgroup.log.codecs import InflateError, TooLargeWhenInflated, inflate
from kgroup.log.errors import LogErrorCode, RecordErrors
from kgroup.log.records import RecordTimestamps, java_long, walk_record_timestamps
from kgroup.model import PeerError
from kgroup.wire.record_batch import (
    COMPRESSION_MASK,
    CONTROL_MASK,
    CRC_AT,
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PRODUCER_ID,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
)

__all__ = [
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "NO_BOUNDS",
    "BatchHeader",
    "TimestampBounds",
    "UnknownCodecBeforeV7",
    "ValidatedBatch",
    "batch_crc_ok",
    "check_produce_records_shape",
    "first_batch_is_transactional",
    "parse_header",
    "record_timestamps",
    "stamp_batch",
    "stamp_header",
    "validate_produce_records",
]

HEADER_SIZE_UP_TO_MAGIC = 17
MIN_RECORD_OVERHEAD = 14  # LegacyRecord.RECORD_OVERHEAD_V0: the smallest batchLength Kafka accepts to read
NO_TIMESTAMP = -1
INT32_MAX = 2**31 - 1

COMPRESSION_NONE = 0
_ZSTD = 4  # CompressionType.ZSTD
_ZSTD_FROM_VERSION = 7  # Produce v7 brought zstd (KIP-110)
#: the most a compressed batch may inflate to (kgroup's limit: the memory one batch may take on append
#: or on a timestamp lookup; Kafka streams the records and has no such limit)
MAX_INFLATED_BYTES = 64 << 20
LONG_MAX = 2**63 - 1
_NO_WRAP = 2**62  # two values of smaller magnitude differ by less than 2^63: no long overflow

_BASE_OFFSET = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_ATTRIBUTES = struct.Struct(">h")
_CRC = struct.Struct(">I")


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The fixed 61-byte header of a RecordBatch v2 (fields named as Kafka names them)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Bytes of the whole batch on disk and on the wire."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_MASK)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def last_sequence(self) -> int:
        return increment_sequence(self.base_sequence, self.last_offset_delta)


def increment_sequence(sequence: int, increment: int) -> int:
    """Sequence numbers wrap from Int.MAX to 0 (``DefaultRecordBatch.incrementSequence``)."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    """The inverse of :func:`increment_sequence` (``DefaultRecordBatch.decrementSequence``)."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def parse_header(buffer: bytes | bytearray | memoryview, position: int = 0) -> BatchHeader:
    """The header at ``position``; the caller has checked that 61 bytes are there."""
    return BatchHeader(*HEADER.unpack_from(buffer, position))


def batch_crc_ok(batch: bytes | bytearray | memoryview, header: BatchHeader) -> bool:
    """Kafka's ``DefaultRecordBatch.isValid``: long enough for a header and the CRC-32C matches."""
    if header.size < HEADER_SIZE or len(batch) < header.size:
        return False
    return crc32c(memoryview(batch)[CRC_START : header.size]) == header.crc


@dataclass(frozen=True, slots=True)
class ValidatedBatch:
    """One produced batch that passed Kafka's checks: its header, exact bytes, true max timestamp."""

    header: BatchHeader
    data: bytes | memoryview  # the producer's bytes (a view of the request's frame, in the broker)
    # The largest record timestamp, or -1 (Kafka recomputes it and rewrites the header if the
    # producer's maxTimestamp differs, for compressed batches as for uncompressed ones).
    records_max_timestamp: int


@dataclass(frozen=True, slots=True)
class TimestampBounds:
    """``message.timestamp.before.max.ms`` / ``after.max.ms`` (None: unbounded, Kafka's default)."""

    before_max_ms: int | None = None
    after_max_ms: int | None = None


NO_BOUNDS = TimestampBounds()


def validate_produce_records(
    records: bytes | memoryview,
    *,
    max_message_bytes: int,
    log_append_time: bool,
    now_ms: int = 0,
    bounds: TimestampBounds = NO_BOUNDS,
) -> ValidatedBatch:
    """The checks Kafka runs on one partition's ``records`` of a Produce request (v3+), in its order.

    ``ProduceRequest.validateRecords`` (exactly one v2 batch), ``UnifiedLog.analyzeAndValidateRecords``
    (baseOffset 0, size, CRC), ``LogValidator.validateBatch`` (offset range = count, no control batch
    from a client, a sequence with a producer id). Bytes after the one whole batch that do not form
    another batch are ignored, as Kafka's batch iterator ignores them (``trimInvalidBytes``).
    Raises :class:`PeerError` with Kafka's code.
    """
    view = memoryview(records)
    size = check_produce_records_shape(view)
    if size < HEADER_SIZE:
        raise PeerError(
            f"record batch of {size} bytes is shorter than its header",
            LogErrorCode.CORRUPT_MESSAGE,
        )
    header = parse_header(view)
    if header.base_offset != 0:
        raise PeerError(
            f"the baseOffset of a produced record batch must be 0, not {header.base_offset}",
            LogErrorCode.INVALID_RECORD,
        )
    if size > max_message_bytes:
        raise PeerError(
            f"record batch of {size} bytes exceeds max.message.bytes {max_message_bytes}",
            LogErrorCode.MESSAGE_TOO_LARGE,
        )
    if not batch_crc_ok(view, header):
        raise PeerError(f"record batch is corrupt (stored crc = {header.crc})", LogErrorCode.CORRUPT_MESSAGE)
    count_from_offsets = header.last_offset_delta + 1
    if count_from_offsets <= 0:
        raise PeerError(
            f"record batch has an invalid offset range [0, {header.last_offset_delta}]",
            LogErrorCode.INVALID_RECORD,
        )
    if header.records_count <= 0:
        raise PeerError(
            f"invalid reported count for record batch: {header.records_count}", LogErrorCode.INVALID_RECORD
        )
    if count_from_offsets != header.records_count:
        raise PeerError(
            f"inconsistent batch offset range [0, {header.last_offset_delta}] and count of records "
            f"{header.records_count}",
            LogErrorCode.INVALID_RECORD,
        )
    if header.is_control:
        raise PeerError("clients are not allowed to write control records", LogErrorCode.INVALID_RECORD)
    if header.has_producer_id and header.base_sequence < 0:
        raise PeerError(
            f"invalid sequence number {header.base_sequence} in record batch with producerId "
            f"{header.producer_id}",
            LogErrorCode.INVALID_RECORD,
        )
    if header.is_transactional and not header.has_producer_id:
        raise PeerError("transactional record batch without a producer id", LogErrorCode.INVALID_RECORD)
    if log_append_time and header.is_log_append_time:
        raise PeerError(
            "producer should not set timestamp type to LogAppendTime", LogErrorCode.INVALID_TIMESTAMP
        )
    # the producer's bytes as they are (no copy): the batch is ``records`` or its start; a read-only
    # view (the request's frame, which the broker does not reuse while the batch is in use) is kept
    # as one; bytes that can change under it (a bytearray) are copied
    if isinstance(records, bytes) or (isinstance(records, memoryview) and records.readonly):
        data: bytes | memoryview = records if size == len(records) else view[:size]
    else:
        data = bytes(view[:size])
    walked = _records_of(data, header)
    # Kafka's maxTimestamp starts at NO_TIMESTAMP and takes every larger record timestamp
    max_timestamp = NO_TIMESTAMP if walked.newest is None else max(walked.newest, NO_TIMESTAMP)
    if not log_append_time and bounds != NO_BOUNDS:  # unbounded (Kafka's default): no record is out of range
        _check_timestamp_bounds(walked, now_ms, bounds)
    return ValidatedBatch(header=header, data=data, records_max_timestamp=max_timestamp)


def _records_of(data: bytes | memoryview, header: BatchHeader) -> RecordTimestamps:
    """(offset delta, timestamp) of every record, the payload inflated first if it is compressed.

    As Kafka's ``LogValidator`` reads them: a payload that does not inflate or an unknown codec is a
    ``KafkaException`` / ``IllegalArgumentException`` there, answered UNKNOWN_SERVER_ERROR; records
    that do not parse are INVALID_RECORD.
    """
    log_append_time = header.max_timestamp if header.is_log_append_time else None
    if header.compression == COMPRESSION_NONE:
        return walk_record_timestamps(
            data, HEADER_SIZE, header.records_count, header.base_timestamp, log_append_time
        )
    try:
        payload = inflate(header.compression, memoryview(data)[HEADER_SIZE:], MAX_INFLATED_BYTES)
    except TooLargeWhenInflated as exc:
        raise PeerError(
            f"{exc.message} (kgroup's limit for one batch, MAX_INFLATED_BYTES)", LogErrorCode.INVALID_RECORD
        ) from None
    except InflateError as exc:
        raise PeerError(exc.message, LogErrorCode.UNKNOWN_SERVER_ERROR) from None
    return walk_record_timestamps(payload, 0, header.records_count, header.base_timestamp, log_append_time)


def _check_timestamp_bounds(walked: RecordTimestamps, now_ms: int, bounds: TimestampBounds) -> None:
    """``LogValidator.validateTimestamp`` for a CreateTime topic, in Java ``long`` arithmetic.

    Records without a timestamp (-1) pass. Every record is checked; the refusal lists each record
    out of range, as Kafka's ``RecordValidationException`` does.
    """
    before = LONG_MAX if bounds.before_max_ms is None else bounds.before_max_ms
    after = LONG_MAX if bounds.after_max_ms is None else bounds.after_max_ms
    oldest, newest = walked.oldest, walked.newest
    if oldest is None or newest is None:
        return  # no records
    if -_NO_WRAP < now_ms < _NO_WRAP:
        # the common case at once: when the oldest and the newest record are in range and no
        # difference can wrap around, every record is (one that has no timestamp passes anyway)
        no_wrap = oldest > -_NO_WRAP and newest < _NO_WRAP
        if no_wrap and now_ms - oldest <= before and newest - now_ms <= after:
            return
    errors: list[tuple[int, str]] = []
    for index, (offset_delta, stamp) in enumerate(walked.entries()):
        if stamp == NO_TIMESTAMP:
            continue
        difference = java_long(now_ms - stamp)
        if difference > before or java_long(-difference) > after:
            errors.append(
                (
                    index,
                    f"Timestamp {stamp} of message with offset {offset_delta} is out of range. The "
                    f"timestamp should be within [{java_long(now_ms - before)}, {java_long(now_ms + after)}]",
                )
            )
    if errors:
        raise RecordErrors(
            "One or more records have been rejected due to invalid timestamp",
            LogErrorCode.INVALID_TIMESTAMP,
            tuple(errors),
        )


class UnknownCodecBeforeV7(PeerError):
    """A Produce before v7 whose batch names codec id 5-7: Kafka's shape check asks for the batch's
    codec (to refuse zstd) and the lookup throws, which fails the whole request, not the partition."""


def check_produce_records_shape(records: bytes | memoryview, produce_version: int | None = None) -> int:
    """Kafka's ``ProduceRequest.validateRecords``, which ``KafkaApis`` runs on each partition's records
    before anything else looks at them: one whole batch of magic v2 (not zstd before Produce v7) and no
    second whole batch. Returns the batch's size; raises :class:`PeerError` (INVALID_RECORD,
    UNSUPPORTED_COMPRESSION_TYPE, or CORRUPT_MESSAGE where Kafka's batch reader finds a length or
    magic it cannot read). ``produce_version`` None skips the version's codec check."""
    view = memoryview(records)
    size = _next_whole_batch(view, 0)
    if size is None:
        raise PeerError(
            "Produce requests must have at least one whole record batch per partition",
            LogErrorCode.INVALID_RECORD,
        )
    magic = view[16]
    if magic != MAGIC_V2:
        raise PeerError(
            f"record batch magic {magic}: only magic v2 (Produce v3+) is accepted",
            LogErrorCode.INVALID_RECORD,
        )
    if produce_version is not None and produce_version < _ZSTD_FROM_VERSION and view[22] & 0x07 > _ZSTD:
        # CompressionType.forId throws IllegalArgumentException: out of KafkaApis, failing the request
        raise UnknownCodecBeforeV7(
            f"Unknown compression type id: {view[22] & 0x07}", LogErrorCode.UNKNOWN_SERVER_ERROR
        )
    if produce_version is not None and produce_version < _ZSTD_FROM_VERSION and view[22] & 0x07 == _ZSTD:
        raise PeerError(
            f"Produce requests with version {produce_version} are not allowed to use ZStandard compression",
            LogErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
        )
    if _next_whole_batch(view, size) is not None:
        raise PeerError(
            "Produce requests are only allowed to contain exactly one record batch per partition",
            LogErrorCode.INVALID_RECORD,
        )
    return size


def first_batch_is_transactional(records: bytes | memoryview) -> bool:
    """Whether ``records`` begin with a whole transactional batch, as ``RequestUtils``'
    ``hasTransactionalRecords`` reads a Produce partition's first batch (a legacy batch never is);
    raises :class:`PeerError` (CORRUPT_MESSAGE) where Kafka's batch reader would."""
    view = memoryview(records)
    if _next_whole_batch(view, 0) is None:
        return False
    return bool(view[16] == MAGIC_V2 and view[22] & TRANSACTIONAL_MASK)


def _next_whole_batch(view: memoryview, position: int) -> int | None:
    """The size of the whole batch at ``position``, or None when the bytes there do not hold one
    (Kafka's ``ByteBufferLogInputStream.nextBatch``): a length below the minimum overhead or a magic
    outside 0..2 is corrupt (``CorruptRecordException``), as in Kafka."""
    remaining = len(view) - position
    if remaining < LOG_OVERHEAD:
        return None
    (length,) = _INT32.unpack_from(view, position + 8)
    if length < MIN_RECORD_OVERHEAD:
        raise PeerError(
            f"Record size {length} is less than the minimum record overhead ({MIN_RECORD_OVERHEAD})",
            LogErrorCode.CORRUPT_MESSAGE,
        )
    if remaining < HEADER_SIZE_UP_TO_MAGIC:
        return None
    magic = view[position + 16]
    if magic > MAGIC_V2:  # a signed byte: 128..255 are negative in Java
        signed = magic - 256 if magic > 127 else magic
        raise PeerError(f"Invalid magic found in record: {signed}", LogErrorCode.CORRUPT_MESSAGE)
    if remaining < length + LOG_OVERHEAD:
        return None
    return int(length + LOG_OVERHEAD)


def record_timestamps(batch: bytes, header: BatchHeader) -> list[tuple[int, int]] | None:
    """(offset, timestamp) of every record, or None when the records cannot be read here.

    Every codec Kafka has is read. A payload that does not inflate, inflates to more than
    :data:`MAX_INFLATED_BYTES` or holds records that do not parse gives None (such a batch can only
    have been stored before kgroup checked compressed batches on append); timestamp lookups then
    stay at batch granularity. For a LogAppendTime batch every record's timestamp is the batch's
    maxTimestamp, as in Kafka.
    """
    try:
        entries = _records_of(batch, header).entries()
    except PeerError:
        return None
    return [(header.base_offset + delta, timestamp) for delta, timestamp in entries]


def stamp_header(
    batch: ValidatedBatch, *, base_offset: int, leader_epoch: int, log_append_time_ms: int | None
) -> bytearray:
    """The batch's header (its first :data:`HEADER_SIZE` bytes) as the log stores it: what
    ``LogValidator``'s in-place path writes, nothing more; the records after it are stored as produced.

    ``baseOffset`` and ``partitionLeaderEpoch`` are set (outside the CRC). With LogAppendTime the
    timestamp type bit and ``maxTimestamp = now`` are set; with CreateTime ``maxTimestamp`` becomes the
    records' true maximum (-1 when none is larger). Either header change recomputes the CRC (over the
    new header's covered part, then the unchanged records), and only when the value differs
    (``DefaultRecordBatch.setMaxTimestamp``). The log writes this header and the produced bytes after
    it with one ``writev``: the batch is not copied to be stamped.
    """
    data = memoryview(batch.data)
    out = bytearray(data[:HEADER_SIZE])
    _BASE_OFFSET.pack_into(out, 0, base_offset)
    _INT32.pack_into(out, 12, leader_epoch)
    header = batch.header
    if log_append_time_ms is not None:
        attributes, max_timestamp = header.attributes | TIMESTAMP_TYPE_MASK, log_append_time_ms
    else:
        attributes, max_timestamp = header.attributes & ~TIMESTAMP_TYPE_MASK, batch.records_max_timestamp
    if attributes != header.attributes or max_timestamp != header.max_timestamp:
        _ATTRIBUTES.pack_into(out, 21, attributes)
        _BASE_OFFSET.pack_into(out, 35, max_timestamp)
        _CRC.pack_into(out, CRC_AT, crc32c(data[HEADER_SIZE:], crc32c(memoryview(out)[CRC_START:])))
    return out


def stamp_batch(
    batch: ValidatedBatch, *, base_offset: int, leader_epoch: int, log_append_time_ms: int | None
) -> bytearray:
    """The whole batch as the log stores it, in one new buffer: :func:`stamp_header`, then the records."""
    out = stamp_header(
        batch, base_offset=base_offset, leader_epoch=leader_epoch, log_append_time_ms=log_append_time_ms
    )
    out += memoryview(batch.data)[HEADER_SIZE:]
    return out
