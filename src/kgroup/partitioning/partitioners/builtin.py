"""The built-in producer partitioners, each modelling one Kafka class and version.

* ``keyed`` — ``KafkaProducer`` without ``partitioner.class``, keyed records; null keys delegated.
* ``adaptive`` — KIP-794 ``BuiltInPartitioner``, Kafka 3.3+ (the default): sticky, switch after
  ``batch.size`` bytes, next partition weighted against queue length.
* ``uniform-sticky`` — KIP-480 ``UniformStickyPartitioner`` / ``StickyPartitionCache``, Kafka
  2.4–3.2: sticky, switch when a new batch starts.
* ``round-robin`` — ``RoundRobinPartitioner`` (Kafka 4.0 trunk 1eb7644): per-topic counter over the
  available partitions.
* ``legacy-round-robin`` — ``DefaultPartitioner`` before Kafka 2.4: counter from a random start.

Random draws are ``Random.nextInt()`` equivalents from the injected :class:`Random`.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from random import Random

from kgroup.javacompat import int32, to_positive
from kgroup.kafka_release import KAFKA_VERSION
from kgroup.model import KgroupError
from kgroup.partitioning.murmur2 import partition_for_key
from kgroup.partitioning.partitioners.api import (
    ClusterView,
    Partitioner,
    RecordKey,
    create_partitioner,
    java_next_int,
    register_partitioner,
)

__all__ = [
    "AdaptivePartitioner",
    "KeyedPartitioner",
    "LegacyRoundRobinPartitioner",
    "RoundRobinPartitioner",
    "UniformStickyPartitioner",
]

DEFAULT_BATCH_SIZE = 16384


def _uses_key(key: RecordKey, ignore_keys: bool) -> bool:
    return key is not None and not ignore_keys


class KeyedPartitioner(Partitioner):
    """Keyed records: ``toPositive(murmur2(key)) % numPartitions`` over **all** partitions (a key's
    partition does not move when a leader is down). Null keys — and every key when
    ``ignore_keys`` (``partitioner.ignore.keys``) — go to the ``null_key`` strategy."""

    name = "keyed"
    models = "KafkaProducer keyed path (BuiltInPartitioner.partitionForKey), all versions"

    def __init__(
        self,
        *,
        rng: Random,
        null_key: str | Partitioner = "adaptive",
        ignore_keys: bool = False,
        **null_key_config: object,
    ) -> None:
        self.ignore_keys = ignore_keys
        self.null_key = (
            create_partitioner(null_key, rng=rng, **null_key_config)
            if isinstance(null_key, str)
            else null_key
        )

    @property
    def aborts_on_new_batch(self) -> bool:
        return self.null_key.aborts_on_new_batch

    def partition(self, topic: str, key: RecordKey, value: bytes | None, cluster: ClusterView) -> int:
        if _uses_key(key, self.ignore_keys):
            assert key is not None
            return partition_for_key(key, cluster.num_partitions(topic))
        return self.null_key.partition(topic, None, value, cluster)

    def on_new_batch(self, topic: str, cluster: ClusterView, prev_partition: int) -> None:
        self.null_key.on_new_batch(topic, cluster, prev_partition)

    def before_append(
        self, topic: str, key: RecordKey, partition: int, cluster: ClusterView, *, queue_all_full: bool
    ) -> bool:
        if _uses_key(key, self.ignore_keys):
            return False
        return self.null_key.before_append(topic, None, partition, cluster, queue_all_full=queue_all_full)

    def record_appended(
        self,
        topic: str,
        key: RecordKey,
        partition: int,
        size_bytes: int,
        cluster: ClusterView,
        *,
        enable_switch: bool = True,
    ) -> None:
        if not _uses_key(key, self.ignore_keys):
            self.null_key.record_appended(
                topic, None, partition, size_bytes, cluster, enable_switch=enable_switch
            )

    def update_load_stats(self, topic: str, cluster: ClusterView) -> None:
        self.null_key.update_load_stats(topic, cluster)


class RoundRobinPartitioner(Partitioner):
    """Kafka's ``RoundRobinPartitioner``: keys ignored; a per-topic counter from 0;
    ``available[toPositive(counter++) % len(available)]``, or ``toPositive(counter++) % numPartitions``
    when no partition has a leader.

    ``double_call_on_new_batch`` (default False, as in Kafka 4.4.0, whose ``KafkaProducer`` asks a
    partitioner once per record: 4.0 removed ``Partitioner.onNewBatch``, KAFKA-18295). True models the
    older producers (up to trunk 1eb7644, before 4.0) that called :meth:`partition` a second time for
    a record that starts a new batch, so such a record consumed two counter values (KAFKA-9965; with
    an even partition count half of the partitions could stay idle).
    """

    name = "round-robin"
    models = (
        f"RoundRobinPartitioner (Kafka 2.4 – {KAFKA_VERSION}; the KAFKA-9965 double call of < 4.0 on request)"
    )

    def __init__(self, *, rng: Random, double_call_on_new_batch: bool = False) -> None:
        del rng  # deterministic
        self.double_call_on_new_batch = double_call_on_new_batch
        self._counters: dict[str, int] = {}

    @property
    def aborts_on_new_batch(self) -> bool:
        return self.double_call_on_new_batch

    def partition(self, topic: str, key: RecordKey, value: bytes | None, cluster: ClusterView) -> int:
        counter = self._counters.get(topic, 0)
        self._counters[topic] = int32(counter + 1)  # AtomicInteger wraps around
        available = cluster.available_partitions(topic)
        if available:
            return available[to_positive(counter) % len(available)]
        return to_positive(counter) % cluster.num_partitions(topic)


class LegacyRoundRobinPartitioner(Partitioner):
    """``DefaultPartitioner`` before Kafka 2.4: keyed records by murmur2 (unless ``ignore_keys``);
    null keys by a per-topic counter that starts at a random int and walks the available
    partitions (all partitions if none is available). No ``onNewBatch`` existed then."""

    name = "legacy-round-robin"
    models = "DefaultPartitioner null-key round robin, Kafka 2.0 – 2.3 (older releases differ in details)"

    def __init__(self, *, rng: Random, ignore_keys: bool = False) -> None:
        self.rng = rng
        self.ignore_keys = ignore_keys
        self._counters: dict[str, int] = {}

    @property
    def aborts_on_new_batch(self) -> bool:
        return False

    def partition(self, topic: str, key: RecordKey, value: bytes | None, cluster: ClusterView) -> int:
        n = cluster.num_partitions(topic)
        if _uses_key(key, self.ignore_keys):
            assert key is not None
            return partition_for_key(key, n)
        counter = self._counters.get(topic)
        if counter is None:
            counter = java_next_int(self.rng)
        self._counters[topic] = int32(counter + 1)
        available = cluster.available_partitions(topic)
        if available:
            return available[to_positive(counter) % len(available)]
        return to_positive(counter) % n


class UniformStickyPartitioner(Partitioner):
    """KIP-480 (Kafka 2.4–3.2): stick to one random available partition until the producer starts a
    new batch for it (``onNewBatch``), then switch to a *different* random available partition.

    ``ignore_keys=True`` (default) is ``UniformStickyPartitioner``; ``ignore_keys=False`` is that
    era's ``DefaultPartitioner`` (keys by murmur2, null keys sticky). Both share
    ``StickyPartitionCache``: a switch happens only when the batch that filled was on the current
    sticky partition.
    """

    name = "uniform-sticky"
    models = "UniformStickyPartitioner / StickyPartitionCache (KIP-480), Kafka 2.4 – 3.2"

    def __init__(self, *, rng: Random, ignore_keys: bool = True) -> None:
        self.rng = rng
        self.ignore_keys = ignore_keys
        self._sticky: dict[str, int] = {}

    @property
    def aborts_on_new_batch(self) -> bool:
        return True  # the producers of its era (2.4 – 3.2) asked again after onNewBatch

    def partition(self, topic: str, key: RecordKey, value: bytes | None, cluster: ClusterView) -> int:
        if _uses_key(key, self.ignore_keys):
            assert key is not None
            return partition_for_key(key, cluster.num_partitions(topic))
        current = self._sticky.get(topic)
        return current if current is not None else self._next_partition(topic, cluster, -1)

    def on_new_batch(self, topic: str, cluster: ClusterView, prev_partition: int) -> None:
        self._next_partition(topic, cluster, prev_partition)

    def sticky_partition(self, topic: str) -> int | None:
        """The current sticky partition of ``topic`` (None before the first record)."""
        return self._sticky.get(topic)

    def _next_partition(self, topic: str, cluster: ClusterView, prev_partition: int) -> int:
        old = self._sticky.get(topic)
        if old is not None and old != prev_partition:
            return old  # the batch that filled was not on the sticky partition: keep it
        available = cluster.available_partitions(topic)
        if not available:
            new = to_positive(java_next_int(self.rng)) % cluster.num_partitions(topic)
        elif len(available) == 1:
            new = available[0]
        else:
            candidate: int | None = old
            while candidate is None or candidate == old:
                candidate = available[to_positive(java_next_int(self.rng)) % len(available)]
            new = candidate
        self._sticky[topic] = new
        return new


@dataclass(slots=True)
class _StickyInfo:
    partition: int
    produced_bytes: int = 0


@dataclass(frozen=True, slots=True)
class LoadStats:
    """The adaptive partitioner's cumulative frequency table over the partitions it may choose."""

    cumulative_frequency: tuple[int, ...]
    partition_ids: tuple[int, ...]


class AdaptivePartitioner(Partitioner):
    """KIP-794, Kafka 3.3+ (the producer's default, ``BuiltInPartitioner``).

    Keyed records by murmur2 (unless ``ignore_keys``). Null-key records stick to one partition until
    ``batch_size`` bytes were produced to it (up to ``2 × batch_size`` while its last batch is still
    open), then the next partition is drawn:

    * with load stats (``adaptive_partitioning_enable`` and a queue for every partition): weighted
      against queue length — partition ``i`` of the chosen ones gets weight ``max + 1 − queue[i]`` —
      by a cumulative frequency table and a uniform draw; partitions without a leader, and those
      whose leader kept data waiting longer than ``availability_timeout_ms`` (> 0), are left out;
    * without: uniformly among the partitions with a leader.

    The next partition may be the same as the current one (Kafka does not exclude it).
    """

    name = "adaptive"
    models = "BuiltInPartitioner (KIP-794), Kafka 3.3 – 4.0"

    def __init__(
        self,
        *,
        rng: Random,
        batch_size: int = DEFAULT_BATCH_SIZE,
        adaptive_partitioning_enable: bool = True,
        availability_timeout_ms: int = 0,
        ignore_keys: bool = False,
    ) -> None:
        if batch_size < 1:
            raise KgroupError(f"batch_size: {batch_size}; batch.size must be >= 1 for the sticky logic")
        if availability_timeout_ms < 0:
            raise KgroupError(f"availability_timeout_ms: {availability_timeout_ms}; give 0 (off) or more")
        self.rng = rng
        self.batch_size = batch_size
        self.adaptive_partitioning_enable = adaptive_partitioning_enable
        self.availability_timeout_ms = availability_timeout_ms
        self.ignore_keys = ignore_keys
        self._sticky: dict[str, _StickyInfo] = {}
        self._stats: dict[str, LoadStats | None] = {}

    @property
    def aborts_on_new_batch(self) -> bool:
        return False  # built into the accumulator, not a pluggable partitioner.class

    def load_stats(self, topic: str) -> LoadStats | None:
        return self._stats.get(topic)

    def sticky_partition(self, topic: str) -> int | None:
        info = self._sticky.get(topic)
        return None if info is None else info.partition

    def partition(self, topic: str, key: RecordKey, value: bytes | None, cluster: ClusterView) -> int:
        if _uses_key(key, self.ignore_keys):
            assert key is not None
            return partition_for_key(key, cluster.num_partitions(topic))
        info = self._sticky.get(topic)
        if info is None:
            info = self._sticky[topic] = _StickyInfo(self._next_partition(topic, cluster))
        return info.partition

    def before_append(
        self, topic: str, key: RecordKey, partition: int, cluster: ClusterView, *, queue_all_full: bool
    ) -> bool:
        # A switch delayed while the batch was open is completed once all its batches are full.
        if _uses_key(key, self.ignore_keys) or not queue_all_full:
            return False
        before = self._sticky.get(topic)
        self._update(topic, 0, cluster, enable_switch=True)
        return self._sticky.get(topic) is not before

    def record_appended(
        self,
        topic: str,
        key: RecordKey,
        partition: int,
        size_bytes: int,
        cluster: ClusterView,
        *,
        enable_switch: bool = True,
    ) -> None:
        if _uses_key(key, self.ignore_keys):
            return
        info = self._sticky.get(topic)
        if info is None or info.partition != partition:
            return
        self._update(topic, size_bytes, cluster, enable_switch=enable_switch)

    def _update(self, topic: str, appended: int, cluster: ClusterView, *, enable_switch: bool) -> None:
        info = self._sticky.get(topic)
        if info is None:
            return
        info.produced_bytes += appended
        produced = info.produced_bytes
        if (produced >= self.batch_size and enable_switch) or produced >= 2 * self.batch_size:
            self._sticky[topic] = _StickyInfo(self._next_partition(topic, cluster))

    def _next_partition(self, topic: str, cluster: ClusterView) -> int:
        draw = to_positive(java_next_int(self.rng))
        stats = self._stats.get(topic)
        if stats is None:
            available = cluster.available_partitions(topic)
            if available:
                return available[draw % len(available)]
            return draw % cluster.num_partitions(topic)
        table = stats.cumulative_frequency
        # The first entry strictly greater than the weighted draw.
        return stats.partition_ids[bisect_right(table, draw % table[-1])]

    def update_load_stats(self, topic: str, cluster: ClusterView) -> None:
        """``RecordAccumulator.partitionReady`` + ``updatePartitionLoadStats`` for one topic."""
        state = cluster.topic(topic)
        if not self.adaptive_partitioning_enable or state.queue_sizes is None:
            self._stats[topic] = None
            return
        total = state.num_partitions
        queue_sizes = [0] * total
        partition_ids = [0] * total
        index = -1
        for p in range(total):
            leader = state.leader(p)
            if leader is None:
                continue
            index += 1
            partition_ids[index] = p
            size = state.queue_sizes[p]
            if size == 0:
                # Kafka skips empty queues before recording the size or checking latency, so an idle
                # partition is never excluded and its slot keeps whatever it held.
                continue
            queue_sizes[index] = size
            latency = cluster.node_latency.get(leader)
            if (
                self.availability_timeout_ms > 0
                and latency is not None
                and latency.waiting_ms > self.availability_timeout_ms
            ):
                index -= 1
        self._stats[topic] = _load_stats(queue_sizes, partition_ids, index + 1)


def _load_stats(queue_sizes: list[int], partition_ids: list[int], length: int) -> LoadStats | None:
    """``BuiltInPartitioner.updatePartitionLoadStats``: None means "choose uniformly"."""
    if length < 1 or len(queue_sizes) < 2:
        return None
    max_plus_one = queue_sizes[0]
    all_equal = True
    for i in range(1, length):
        if queue_sizes[i] != max_plus_one:
            all_equal = False
        max_plus_one = max(max_plus_one, queue_sizes[i])
    max_plus_one += 1
    if all_equal and length == len(queue_sizes):
        return None
    table: list[int] = []
    running = 0
    for i in range(length):
        running += max_plus_one - queue_sizes[i]
        table.append(running)
    return LoadStats(tuple(table), tuple(partition_ids[:length]))


def register_builtin_partitioners() -> None:
    for cls in (
        KeyedPartitioner,
        AdaptivePartitioner,
        UniformStickyPartitioner,
        RoundRobinPartitioner,
        LegacyRoundRobinPartitioner,
    ):
        register_partitioner(cls.name, cls, replace=True)
