"""A single-threaded model of how ``KafkaProducer`` and its ``RecordAccumulator`` drive a partitioner.

It keeps, per topic and partition, the queue of batches (sizes only), and calls the partitioner in
Kafka's order (``KafkaProducer.doSend`` → ``RecordAccumulator.append``):

1. partition = the record's partition if given, else ``partitioner.partition``;
2. append to the partition's last batch if it has room; otherwise, if the partitioner
   ``aborts_on_new_batch``, call ``on_new_batch(prev)``, ask for the partition again and append
   (opening a new batch if needed) — the KAFKA-9965 double call;
3. tell the partitioner how many bytes went where (the adaptive partitioner's switch).

Sizes are a model: a record occupies ``size_bytes`` (default: key + value + 10 bytes of record
framing) and a new batch adds Kafka's 61-byte v2 batch header; no compression. The sender is
explicit: :meth:`ProducerModel.drain` sends batches, :meth:`ProducerModel.sender_ready` hands the
queue sizes to the partitioner. :func:`spread_unkeyed` wraps it for the common "where do N keyless
records land" question.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from random import Random

import numpy as np
import numpy.typing as npt

from kgroup.model import KgroupError
from kgroup.partitioning.murmur2 import validate_num_partitions
from kgroup.partitioning.partitioners.api import (
    ClusterView,
    NodeLatency,
    Partitioner,
    RecordKey,
    TopicState,
    create_partitioner,
    partition_record,
)
from kgroup.wire.record_batch import HEADER_SIZE

__all__ = [
    "BATCH_HEADER_BYTES",
    "RECORD_OVERHEAD_BYTES",
    "ProducerModel",
    "null_key_chooser",
    "spread_unkeyed",
]

#: ``DefaultRecordBatch.RECORD_BATCH_OVERHEAD`` (magic v2): the header of :mod:`kgroup.wire.record_batch`
BATCH_HEADER_BYTES = HEADER_SIZE
#: Approximate per-record framing (length, attributes, deltas, key/value lengths, headers count).
RECORD_OVERHEAD_BYTES = 10


@dataclass(slots=True)
class _Batch:
    size_bytes: int
    records: int
    closed: bool = False

    def is_full(self, batch_size: int) -> bool:
        return self.closed or (self.records > 0 and self.size_bytes >= batch_size)

    def has_room_for(self, record_bytes: int, batch_size: int) -> bool:
        if self.is_full(batch_size):
            return False
        return self.records == 0 or self.size_bytes + record_bytes <= batch_size


class ProducerModel:
    """Drive ``partitioner`` over a cluster the way one producer thread would."""

    def __init__(
        self, partitioner: Partitioner, cluster: ClusterView, *, batch_size: int | None = None
    ) -> None:
        size = batch_size if batch_size is not None else getattr(partitioner, "batch_size", 16384)
        if not isinstance(size, int) or size < 1:
            raise KgroupError(f"batch_size: {size!r}; give batch.size in bytes (>= 1)")
        self.partitioner = partitioner
        self.batch_size = size
        self._cluster = cluster
        self._view: ClusterView | None = None
        self._queues: dict[str, dict[int, deque[_Batch]]] = {}
        self.batches_created = 0
        self.new_batch_calls = 0

    # -- cluster state ------------------------------------------------------------------------

    @property
    def cluster(self) -> ClusterView:
        """The cluster as the partitioner sees it, with the model's current queue sizes."""
        # Rebuilt only when a queue grew or shrank by a batch, or the metadata changed.
        if self._view is None:
            self._view = self._build_view()
        return self._view

    def _build_view(self) -> ClusterView:
        topics: dict[str, TopicState] = {}
        for name, state in self._cluster.topics.items():
            queues = self._queues.get(name, {})
            sizes = (
                tuple(len(queues[p]) for p in range(state.num_partitions))
                if len(queues) >= state.num_partitions
                else None
            )
            topics[name] = TopicState(state.num_partitions, state.leaders, sizes, state.order)
        return ClusterView(topics, self._cluster.node_latency)

    def set_cluster(self, cluster: ClusterView) -> None:
        """New metadata (leaders, partition counts) or broker latency; queues are kept."""
        self._cluster = cluster
        self._view = None

    def set_node_latency(self, node_latency: Mapping[int, NodeLatency]) -> None:
        self.set_cluster(ClusterView(self._cluster.topics, dict(node_latency)))

    def queue_sizes(self, topic: str) -> list[int]:
        n = self._cluster.num_partitions(topic)
        queues = self._queues.get(topic, {})
        return [len(queues.get(p, ())) for p in range(n)]

    # -- producing ----------------------------------------------------------------------------

    def send(
        self,
        topic: str,
        key: RecordKey = None,
        value: bytes | None = None,
        *,
        partition: int | None = None,
        size_bytes: int | None = None,
    ) -> int:
        """Produce one record; returns the partition it was appended to."""
        if size_bytes is None:
            key_len = len(key.encode("utf-8")) if isinstance(key, str) else len(key or b"")
            size_bytes = key_len + len(value or b"") + RECORD_OVERHEAD_BYTES
        if size_bytes < 1:
            raise KgroupError(f"size_bytes: {size_bytes}; a record occupies at least 1 byte")
        cluster = self.cluster
        chosen = partition_record(self.partitioner, topic, key, value, cluster, partition)
        routed = partition is None
        appended = self._append(topic, key, value, chosen, size_bytes, routed, abort=True)
        if appended is not None:
            return appended
        # abortOnNewBatch: tell the partitioner, ask again, append for real.
        self.new_batch_calls += 1
        self.partitioner.on_new_batch(topic, cluster, chosen)
        cluster = self.cluster
        chosen = partition_record(self.partitioner, topic, key, value, cluster, partition)
        result = self._append(topic, key, value, chosen, size_bytes, routed, abort=False)
        assert result is not None
        return result

    def _append(
        self,
        topic: str,
        key: RecordKey,
        value: bytes | None,
        partition: int,
        size_bytes: int,
        routed: bool,
        *,
        abort: bool,
    ) -> int | None:
        abort = abort and self.partitioner.aborts_on_new_batch
        queues = self._queues.setdefault(topic, {})
        while True:
            dq = queues.get(partition)
            if dq is None:
                dq = queues[partition] = deque()
                self._view = None  # a new queue: the partition now counts for the load stats
            cluster = self.cluster
            if routed and self.partitioner.before_append(
                topic, key, partition, cluster, queue_all_full=self._all_full(dq)
            ):
                partition = partition_record(self.partitioner, topic, key, value, self.cluster)
                continue
            last = dq[-1] if dq else None
            if last is not None and last.has_room_for(size_bytes, self.batch_size):
                last.size_bytes += size_bytes
                last.records += 1
                appended = size_bytes
            else:
                if last is not None:
                    last.closed = True
                if abort:
                    return None
                dq.append(_Batch(BATCH_HEADER_BYTES + size_bytes, 1))
                self.batches_created += 1
                self._view = None
                appended = BATCH_HEADER_BYTES + size_bytes
            if routed:
                self.partitioner.record_appended(
                    topic, key, partition, appended, cluster, enable_switch=self._all_full(dq)
                )
            return partition

    def _all_full(self, dq: deque[_Batch]) -> bool:
        return not dq or dq[-1].is_full(self.batch_size)

    # -- the sender ---------------------------------------------------------------------------

    def drain(
        self, topic: str | None = None, *, include_open: bool = True, nodes: Iterable[int] | None = None
    ) -> int:
        """Send queued batches (full ones; the open last one too if ``include_open``, as when
        ``linger.ms`` expired) of partitions whose leader is known and, if given, in ``nodes``.
        Returns the number of batches sent."""
        allowed = None if nodes is None else set(nodes)
        sent = 0
        for name, queues in self._queues.items():
            if topic is not None and name != topic:
                continue
            state = self._cluster.topic(name)
            for p, dq in queues.items():
                leader = state.leader(p) if p < state.num_partitions else None
                if leader is None or (allowed is not None and leader not in allowed):
                    continue
                while dq and (include_open or dq[0].is_full(self.batch_size)):
                    dq.popleft()
                    sent += 1
        if sent:
            self._view = None
        return sent

    def sender_ready(self) -> None:
        """One pass of the sender's ``ready()``: the partitioner sees the queue sizes."""
        cluster = self.cluster
        for name in cluster.topics:
            self.partitioner.update_load_stats(name, cluster)


def null_key_chooser(
    strategy: str | Partitioner,
    num_partitions: int,
    *,
    rng: Random,
    record_bytes: int = 100,
    batch_size: int = 16384,
    topic: str = "topic",
) -> Callable[..., int]:
    """A function returning the partition of the next keyless record of one producer.

    Call it with no argument (a record of ``record_bytes``) or with the record's size in bytes.
    The model's broker keeps up: every batch is sent as soon as it is full, and the sender passes
    the queue sizes to the partitioner after each new batch. All randomness comes from ``rng``.
    """
    n = validate_num_partitions(num_partitions)
    if record_bytes < 1:
        raise KgroupError(f"record_bytes: {record_bytes}; a record occupies at least 1 byte")
    if isinstance(strategy, str):
        config: dict[str, object] = {}
        if strategy in ("adaptive", "keyed"):
            config["batch_size"] = batch_size
        partitioner = create_partitioner(strategy, rng=rng, **config)
    else:
        partitioner = strategy
    model = ProducerModel(partitioner, ClusterView({topic: TopicState(n)}), batch_size=batch_size)
    created = [0]

    def next_partition(size_bytes: int = record_bytes) -> int:
        partition = model.send(topic, None, None, size_bytes=size_bytes)
        if model.batches_created != created[0]:
            created[0] = model.batches_created
            model.drain(topic, include_open=False)
            model.sender_ready()
        return partition

    return next_partition


def spread_unkeyed(
    strategy: str | Partitioner,
    count: int,
    num_partitions: int,
    *,
    seed: int = 0,
    record_bytes: int | npt.NDArray[np.integer] = 100,
    batch_size: int = 16384,
) -> npt.NDArray[np.int32]:
    """The partitions of ``count`` keyless records produced in a row by one producer
    (see :func:`null_key_chooser`). ``record_bytes`` is one size for all records or one per record.
    Deterministic for a given ``seed``."""
    if count < 0:
        raise KgroupError(f"count: {count}; give the number of records (>= 0)")
    sizes = np.broadcast_to(np.asarray(record_bytes, dtype=np.int64), (count,))
    if count and int(sizes.min()) < 1:
        raise KgroupError("record_bytes: a size below 1; a record occupies at least 1 byte")
    choose = null_key_chooser(
        strategy, num_partitions, rng=Random(seed), record_bytes=1, batch_size=batch_size
    )
    out = np.empty(count, dtype=np.int32)
    for i in range(count):
        out[i] = choose(int(sizes[i]))
    return out
