"""An in-memory log with the interface of ``kgroup.log`` (no durability, no CRC or sequence checks).

Stands in where storage is not the point (unit tests of the wire layer). Batches are kept as
produced; only the base offset (outside the CRC) is rewritten, as Kafka's log does.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kgroup.model import PeerError

__all__ = ["MemoryCoordinatorLog", "MemoryLogManager", "MemoryPartitionLog"]

_BATCH_HEADER = 61  # RecordBatch v2 header bytes
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class AppendResult:
    base_offset: int
    last_offset: int
    log_append_time: int
    duplicate: bool
    log_start_offset: int


def split_batches(records: bytes) -> list[tuple[int, int, bytes]]:
    """(last offset delta, max timestamp, batch bytes) of each RecordBatch v2 (else PeerError)."""
    out: list[tuple[int, int, bytes]] = []
    pos = 0
    while pos < len(records):
        if len(records) - pos < _BATCH_HEADER:
            raise PeerError("records: truncated record batch", 2)
        (length,) = _I32.unpack_from(records, pos + 8)
        end = pos + 12 + length
        if length < _BATCH_HEADER - 12 or end > len(records):
            raise PeerError("records: record batch length out of range", 2)
        magic = records[pos + 16]
        if magic != 2:
            raise PeerError(f"records: magic {magic} is not RecordBatch v2", 43)
        (delta,) = _I32.unpack_from(records, pos + 23)
        (max_ts,) = _I64.unpack_from(records, pos + 35)
        out.append((delta, max_ts, records[pos:end]))
        pos = end
    if not out:
        raise PeerError("records: no record batch", 2)
    return out


@dataclass(slots=True)
class MemoryPartitionLog:
    batches: list[tuple[int, int, int, bytes]] = field(default_factory=list)  # base, last, max ts, bytes
    end_offset: int = 0

    def append(self, records: bytes, *, now_ms: int) -> AppendResult:
        parsed = split_batches(bytes(records))
        base = self.end_offset
        for delta, max_ts, batch in parsed:
            first = self.end_offset
            self.batches.append((first, first + delta, max_ts, _I64.pack(first) + batch[8:]))
            self.end_offset = first + delta + 1
        return AppendResult(base, self.end_offset - 1, -1, False, 0)

    def read(self, offset: int, max_bytes: int) -> bytes:
        out: list[bytes] = []
        size = 0
        for _base, last, _ts, data in self.batches:
            if last < offset:
                continue
            if out and size + len(data) > max_bytes:
                break
            out.append(data)
            size += len(data)
        return b"".join(out)

    @property
    def log_start_offset(self) -> int:
        return 0

    @property
    def log_end_offset(self) -> int:
        return self.end_offset

    @property
    def high_watermark(self) -> int:
        return self.end_offset

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        for base, _last, max_ts, _data in self.batches:
            if max_ts >= timestamp:
                return base, max_ts
        return None


@dataclass(slots=True)
class MemoryCoordinatorLog:
    entries: list[tuple[bytes, bytes | None]] = field(default_factory=list)

    def append(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        self.entries.extend(entries)

    def replay(self) -> Sequence[tuple[bytes, bytes | None]]:
        return list(self.entries)


@dataclass(slots=True)
class MemoryLogManager:
    logs: dict[str, list[MemoryPartitionLog]] = field(default_factory=dict)
    coordinator: MemoryCoordinatorLog = field(default_factory=MemoryCoordinatorLog)

    def create_topic(self, name: str, partitions: int, configs: Mapping[str, str]) -> None:
        self.logs[name] = [MemoryPartitionLog() for _ in range(partitions)]

    def delete_topic(self, name: str) -> None:
        self.logs.pop(name, None)

    def add_partitions(self, name: str, total: int) -> None:
        logs = self.logs[name]
        logs.extend(MemoryPartitionLog() for _ in range(total - len(logs)))

    def topics(self) -> Mapping[str, int]:
        return {name: len(logs) for name, logs in self.logs.items()}

    def partition(self, topic: str, partition: int) -> MemoryPartitionLog:
        return self.logs[topic][partition]

    def coordinator_log(self) -> MemoryCoordinatorLog:
        return self.coordinator

    def tick(self, now_ms: int) -> None:
        return None

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None
