"""What the broker's share host and transaction host share: a thread of their own for their pure
core's work, the task that loads their internal topic and the reading of it, their timers and
background tasks, and closing all of it (:class:`~kgroup.broker.share_host.ShareHost`,
:class:`~kgroup.broker.txn_host.TransactionHost`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from kgroup.broker.internal_topic import record_batch
from kgroup.log.batch import HEADER_SIZE, parse_header
from kgroup.wire.varint import read_uvarint

if TYPE_CHECKING:
    from kgroup.broker.cluster import Cluster

__all__ = ["HostThread", "read_batch_entries"]

K = TypeVar("K")
T = TypeVar("T")

#: bytes read per call when a host's topic is replayed
_READ_BYTES = 1 << 20


def _signed(data: bytes | memoryview, at: int, end: int) -> tuple[int, int]:
    raw, at = read_uvarint(data, at, end)
    return (raw >> 1) ^ -(raw & 1), at


def read_batch_entries(data: bytes | memoryview) -> Iterator[tuple[int, bytes, bytes | None]]:
    """(offset, key, value) of every record of the uncompressed RecordBatch v2 batches in ``data`` (a
    trailing partial batch is ignored): what a host wrote to its internal topic."""
    view = memoryview(data)
    position = 0
    while position + HEADER_SIZE <= len(view):
        header = parse_header(view, position)
        end = position + header.size
        if end > len(view):
            return
        if header.compression != 0 or header.is_control:
            position = end
            continue
        at = position + HEADER_SIZE
        for _ in range(header.records_count):
            length, at = _signed(view, at, end)
            stop = at + length
            at += 1  # attributes
            _, at = _signed(view, at, stop)  # timestamp delta
            delta, at = _signed(view, at, stop)
            key_length, at = _signed(view, at, stop)
            key = bytes(view[at : at + max(key_length, 0)])
            at += max(key_length, 0)
            value_length, at = _signed(view, at, stop)
            value = None if value_length < 0 else bytes(view[at : at + value_length])
            yield header.base_offset + delta, key, value
            at = stop
        position = end


@dataclass(frozen=True, slots=True)
class _Read:
    entries: list[tuple[bytes, bytes | None]]
    next_offset: int


def _entries_from(data: bytes, offset: int) -> _Read:
    """The (key, value) records at or after ``offset`` in ``data`` (batches read from ``offset``), and
    the offset after the last one."""
    entries: list[tuple[bytes, bytes | None]] = []
    last = offset - 1
    for record_offset, key, value in read_batch_entries(data):
        if record_offset >= offset:
            entries.append((key, value))
        last = max(last, record_offset)
    return _Read(entries, last + 1)


class HostThread(Generic[K]):
    """A host's thread (``thread_name_prefix``), its loading task, its timers by key ``K`` and its
    background tasks; :meth:`close` cancels them and stops the thread."""

    def __init__(
        self,
        cluster: Cluster,
        thread_name_prefix: str,
        notify_appended: Callable[[str, int, int], None] | None,
    ) -> None:
        self.cluster = cluster
        self._notify = notify_appended
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=thread_name_prefix)
        self._lock: asyncio.Lock | None = None
        self._timers: dict[K, asyncio.TimerHandle] = {}
        #: the background tasks running (referenced until done; cancelled at close)
        self._tasks: set[asyncio.Task[None]] = set()
        self._loading: asyncio.Task[None] | None = None
        self._closed = False

    async def wait_loaded(self) -> None:
        if self._loading is not None:
            await asyncio.shield(self._loading)

    async def close(self) -> None:
        self._closed = True
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._loading is not None and not self._loading.done():
            self._loading.cancel()
            await asyncio.gather(self._loading, return_exceptions=True)
        self._thread.shutdown(wait=True, cancel_futures=True)

    async def _on_thread(self, function: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, function, *args)

    async def _read_all(self, topic: str) -> list[tuple[bytes, bytes | None]]:
        """Every record of ``topic``, partition by partition: read on the broker's loop (the
        partitions' logs and their open files are the loop's), a megabyte at a time, the loop given a
        turn after each read; decoded on the host's thread."""
        entries: list[tuple[bytes, bytes | None]] = []
        info = self.cluster.topics.get(topic)
        if info is None:
            return entries
        for partition in range(info.partitions):
            plog = self.cluster.partition_log(topic, partition)
            if plog is None:
                continue
            offset = plog.log_start_offset
            while offset < plog.log_end_offset:
                data = bytes(plog.read(offset, _READ_BYTES))
                if not data:
                    break
                read = await self._on_thread(_entries_from, data, offset)
                await asyncio.sleep(0)
                if read.next_offset <= offset:
                    break
                entries.extend(read.entries)
                offset = read.next_offset
        return entries

    def _append_batches(
        self, topic: str, by_partition: dict[int, list[tuple[bytes, bytes | None]]], now_ms: int
    ) -> None:
        """Each partition's (key, value) entries appended to ``topic`` as one record batch, partitions
        in order, the broker told of each append; raises OSError when a partition is not there or the
        disk refuses."""
        for partition, entries in sorted(by_partition.items()):
            plog = self.cluster.partition_log(topic, partition)
            if plog is None:
                raise OSError(f"{topic}-{partition} is not there")
            data = record_batch(entries, now_ms)
            plog.append(plog.validate(data, now_ms=now_ms), now_ms=now_ms)
            if self._notify is not None:
                self._notify(topic, partition, len(data))
