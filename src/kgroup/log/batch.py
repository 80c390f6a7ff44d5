"""RecordBatch v2 at the byte level: the 61-byte header, Kafka's produce-time checks, offset stamping.

Layout (``org.apache.kafka.common.record.DefaultRecordBatch``), big-endian::

    0  baseOffset i64          12 partitionLeaderEpoch i32   17 crc u32 (CRC-32C of bytes 21..end)
    8  batchLength i32         16 magic i8                   21 attributes i16
    23 lastOffsetDelta i32     27 baseTimestamp i64          35 maxTimestamp i64
    43 producerId i64          51 producerEpoch i16          53 baseSequence i32
    57 recordsCount i32        61 records (compressed as a whole when attributes & 7 != 0)

The broker stores a batch exactly as the producer sent it. It writes ``baseOffset`` and
``partitionLeaderEpoch`` (both outside the CRC), and — only where Kafka's ``LogValidator`` does —
the timestamp type and ``maxTimestamp`` (inside the CRC, which is then recomputed). Records are never
decoded to be re-encoded; compressed payloads are never decompressed on the append path.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from crc32c import crc32c

from kgroup.log.errors import LogErrorCode
from kgroup.model import PeerError

__all__ = [
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "NO_BOUNDS",
    "BatchHeader",
    "TimestampBounds",
    "ValidatedBatch",
    "batch_crc_ok",
    "parse_header",
    "record_timestamps",
    "stamp_batch",
    "validate_produce_records",
]

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61 = DefaultRecordBatch.RECORD_BATCH_OVERHEAD
LOG_OVERHEAD = 12  # baseOffset + batchLength: the bytes not counted in batchLength
HEADER_SIZE_UP_TO_MAGIC = 17
CRC_START = 21  # the CRC covers attributes .. end of batch
MIN_RECORD_OVERHEAD = 14  # LegacyRecord.RECORD_OVERHEAD_V0: the smallest batchLength Kafka accepts to read
MAGIC_V2 = 2
NO_PRODUCER_ID = -1
NO_TIMESTAMP = -1
INT32_MAX = 2**31 - 1

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08  # 1 = LogAppendTime
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
COMPRESSION_NONE = 0
COMPRESSION_GZIP = 1
MAX_INFLATED_BYTES = 64 << 20  # a timestamp lookup inflates a gzip batch up to this size

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
    data: bytes
    # The largest record timestamp for an uncompressed batch (Kafka recomputes it and rewrites the
    # header if the producer's maxTimestamp differs); the header's value for a compressed one.
    records_max_timestamp: int


@dataclass(frozen=True, slots=True)
class TimestampBounds:
    """``message.timestamp.before.max.ms`` / ``after.max.ms`` (None: unbounded, Kafka's default)."""

    before_max_ms: int | None = None
    after_max_ms: int | None = None


NO_BOUNDS = TimestampBounds()


def validate_produce_records(
    records: bytes,
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
    sizes = _whole_batch_sizes(view)
    if not sizes:
        raise PeerError(
            "Produce requests must have at least one whole record batch per partition",
            LogErrorCode.INVALID_RECORD,
        )
    size = sizes[0]
    magic = view[16]
    if magic != MAGIC_V2:
        raise PeerError(
            f"record batch magic {magic}: only magic v2 (Produce v3+) is accepted",
            LogErrorCode.INVALID_RECORD,
        )
    if len(sizes) > 1:
        raise PeerError(
            "Produce requests are only allowed to contain exactly one record batch per partition",
            LogErrorCode.INVALID_RECORD,
        )
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
    if header.is_transactional:
        # Kafka rejects a transactional write the transaction coordinator has not verified the same
        # way; kgroup's broker has no transaction coordinator, so every transactional batch is refused.
        raise PeerError(
            "transactional record batches are not supported by kgroup's log (no transaction coordinator)",
            LogErrorCode.INVALID_TXN_STATE,
        )
    if log_append_time and header.is_log_append_time:
        raise PeerError(
            "producer should not set timestamp type to LogAppendTime", LogErrorCode.INVALID_TIMESTAMP
        )
    data = bytes(view[:size])
    if header.compression == COMPRESSION_NONE:
        stamps = [
            stamp
            for _, stamp in _record_entries(data, HEADER_SIZE, header.records_count, header.base_timestamp)
        ]
        max_timestamp = max(stamps, default=NO_TIMESTAMP)
    else:
        # a compressed payload is not inflated: its first and max timestamps stand for its records
        stamps, max_timestamp = [header.base_timestamp, header.max_timestamp], header.max_timestamp
    if not log_append_time and bounds != NO_BOUNDS:
        _check_timestamp_bounds(stamps, now_ms, bounds)
    return ValidatedBatch(header=header, data=data, records_max_timestamp=max_timestamp)


def _check_timestamp_bounds(stamps: list[int], now_ms: int, bounds: TimestampBounds) -> None:
    """``LogValidator.validateTimestamp`` for a CreateTime topic: records without a timestamp pass."""
    before, after = bounds.before_max_ms, bounds.after_max_ms
    for stamp in stamps:
        if stamp == NO_TIMESTAMP:
            continue
        if (before is not None and now_ms - stamp > before) or (after is not None and stamp - now_ms > after):
            low = "-inf" if before is None else now_ms - before
            high = "inf" if after is None else now_ms + after
            raise PeerError(
                f"timestamp {stamp} of a record is out of range: it should be within [{low}, {high}]",
                LogErrorCode.INVALID_TIMESTAMP,
            )


def _whole_batch_sizes(view: memoryview) -> list[int]:
    """Sizes of the whole batches at the start of ``view`` (Kafka's ``ByteBufferLogInputStream``).

    Stops at the first incomplete batch; a length below the minimum overhead or a magic outside 0..2
    is corrupt (``CorruptRecordException``), as in Kafka.
    """
    sizes: list[int] = []
    position = 0
    while len(sizes) < 2:  # two are enough to know there is more than one
        remaining = len(view) - position
        if remaining < LOG_OVERHEAD:
            break
        (length,) = _INT32.unpack_from(view, position + 8)
        if length < MIN_RECORD_OVERHEAD:
            raise PeerError(
                f"record size {length} is less than the minimum record overhead ({MIN_RECORD_OVERHEAD})",
                LogErrorCode.CORRUPT_MESSAGE,
            )
        if remaining < HEADER_SIZE_UP_TO_MAGIC:
            break
        magic = view[position + 16]
        if magic > MAGIC_V2:  # a signed byte: 128..255 are negative in Java
            raise PeerError(f"invalid magic found in record: {magic}", LogErrorCode.CORRUPT_MESSAGE)
        if remaining < length + LOG_OVERHEAD:
            break
        sizes.append(length + LOG_OVERHEAD)
        position += length + LOG_OVERHEAD
    return sizes


def _read_varint(data: bytes, position: int, max_bytes: int) -> tuple[int, int]:
    """A zig-zag varint (Kafka's ``ByteUtils.readVarint``/``readVarlong``): (value, next position)."""
    raw = 0
    shift = 0
    for index in range(max_bytes):
        if position + index >= len(data):
            raise PeerError("record data ends inside a varint", LogErrorCode.INVALID_RECORD)
        byte = data[position + index]
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), position + index + 1
        shift += 7
    raise PeerError("varint is longer than its maximum size", LogErrorCode.INVALID_RECORD)


def _record_entries(records: bytes, start: int, count: int, base_timestamp: int) -> list[tuple[int, int]]:
    """(offset delta, timestamp) of each record in ``records[start:]``, checking the sizes chain.

    Kafka's record iterator raises ``InvalidRecordException`` when a record's length overruns the
    batch or bytes remain after the declared count; so does this.
    """
    entries: list[tuple[int, int]] = []
    position = start
    end = len(records)
    for _ in range(count):
        length, body = _read_varint(records, position, 5)
        if length < 0 or body + length > end:
            raise PeerError("record length overruns its batch", LogErrorCode.INVALID_RECORD)
        timestamp_delta, after = _read_varint(records, body + 1, 10)  # skip the attributes byte
        offset_delta, _ = _read_varint(records, after, 5)
        entries.append((offset_delta, base_timestamp + timestamp_delta))
        position = body + length
    if position != end:
        raise PeerError(
            "incorrect declared batch size, records still remaining after the declared count",
            LogErrorCode.INVALID_RECORD,
        )
    return entries


def record_timestamps(batch: bytes, header: BatchHeader) -> list[tuple[int, int]] | None:
    """(offset, timestamp) of every record, or None when the codec cannot be read here.

    Uncompressed and gzip batches are read (gzip with the standard library); snappy, lz4 and zstd
    are not decoded by kgroup's log, so timestamp lookups fall back to batch granularity for them.
    For a LogAppendTime batch every record's timestamp is the batch's maxTimestamp, as in Kafka.
    """
    if header.compression == COMPRESSION_NONE:
        payload, start = batch, HEADER_SIZE
    elif header.compression == COMPRESSION_GZIP:
        inflater = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)
        try:
            payload, start = inflater.decompress(batch[HEADER_SIZE:], MAX_INFLATED_BYTES), 0
        except zlib.error:
            return None
        if inflater.unconsumed_tail or len(payload) >= MAX_INFLATED_BYTES:
            return None  # larger than any real batch inflates to: not worth the memory
    else:
        return None
    try:
        entries = _record_entries(payload, start, header.records_count, header.base_timestamp)
    except PeerError:
        # records inside a compressed batch are not checked on append (its payload is kept as
        # produced); ones that do not parse leave the lookup at batch granularity
        return None
    if header.is_log_append_time:
        return [(header.base_offset + delta, header.max_timestamp) for delta, _ in entries]
    return [(header.base_offset + delta, timestamp) for delta, timestamp in entries]


def stamp_batch(
    batch: ValidatedBatch, *, base_offset: int, leader_epoch: int, log_append_time_ms: int | None
) -> bytes:
    """The batch as the log stores it: what ``LogValidator``'s in-place path writes, nothing more.

    ``baseOffset`` and ``partitionLeaderEpoch`` are set (outside the CRC). With LogAppendTime the
    timestamp type bit and ``maxTimestamp = now`` are set; with CreateTime ``maxTimestamp`` becomes the
    records' true maximum for an uncompressed batch. Either header change recomputes the CRC, and only
    when the value differs (``DefaultRecordBatch.setMaxTimestamp``).
    """
    out = bytearray(batch.data)
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
        _CRC.pack_into(out, 17, crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)
