"""The producer-partitioner interface, the cluster snapshot it reads, and the registry by name.

A partitioner decides the partition of a record that does not name one. Kafka's producer calls it
in a fixed order (see :func:`partition_record`): a partition given on the record always wins; then
the partitioner. Everything a partitioner needs arrives as arguments — a :class:`ClusterView`
snapshot (partition counts, which partitions have a leader, queued batches per partition, how long
each leader has kept data waiting) and an injected :class:`Random` — so a run is a pure
function of its inputs and seed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from random import Random
from typing import Any, ClassVar

from kgroup.javacompat import int32
from kgroup.model import KgroupError

__all__ = [
    "ClusterView",
    "NodeLatency",
    "Partitioner",
    "PartitionerFactory",
    "RecordKey",
    "TopicState",
    "check_null_key_strategy",
    "create_partitioner",
    "java_next_int",
    "null_key_strategy_names",
    "partition_record",
    "partitioner_names",
    "register_partitioner",
]

#: A record key: serialized bytes, a ``str`` (hashed as UTF-8), or ``None`` for no key.
RecordKey = bytes | str | None


def java_next_int(rng: Random) -> int:
    """One ``Random.nextInt()`` draw (a uniform signed 32-bit int) from the injected generator."""
    return int32(rng.getrandbits(32))


@dataclass(frozen=True, slots=True)
class NodeLatency:
    """Kafka's ``NodeLatencyStats`` for one broker, as the producer's sender thread keeps them.

    ``ready_time_ms`` moves forward every time the broker has data ready to send; ``drain_time_ms``
    only when the broker could actually take it. Their difference is how long data has been waiting
    for a broker that is not ready; above ``partitioner.availability.timeout.ms`` the adaptive
    partitioner stops choosing that broker's partitions.
    """

    ready_time_ms: int
    drain_time_ms: int

    @classmethod
    def unready_since(cls, since_ms: int, now_ms: int) -> NodeLatency:
        """A broker that has not been able to take data since ``since_ms`` (evaluated at ``now_ms``)."""
        return cls(ready_time_ms=now_ms, drain_time_ms=since_ms)

    @property
    def waiting_ms(self) -> int:
        return self.ready_time_ms - self.drain_time_ms


@dataclass(frozen=True, slots=True)
class TopicState:
    """One topic as the producer sees it.

    * ``num_partitions`` — all partitions, with or without a leader (keyed records hash over all).
    * ``leaders`` — the leader broker id of each partition, ``None`` for no leader; ``None`` for the
      whole field means every partition has a leader and partition ``p`` is led by broker ``p``.
    * ``queue_sizes`` — batches queued per partition (one entry per partition), or ``None`` while the
      producer has not yet created a batch queue for every partition (Kafka's adaptive logic waits
      for that).
    * ``order`` — the order in which the producer's ``Cluster`` lists the partitions, ``None`` for
      ascending. A Java producer's is not ascending (:mod:`kgroup.partitioning.client_order`):
      ``ClusterView.single(..., java_client_order=True)`` gives it.
    """

    num_partitions: int
    leaders: tuple[int | None, ...] | None = None
    queue_sizes: tuple[int, ...] | None = None
    order: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.num_partitions < 1:
            raise KgroupError(f"num_partitions: {self.num_partitions}; a topic has at least 1 partition")
        if self.leaders is not None and len(self.leaders) != self.num_partitions:
            raise KgroupError(
                f"leaders: {len(self.leaders)} entries; give one per partition ({self.num_partitions})"
            )
        if self.queue_sizes is not None and len(self.queue_sizes) != self.num_partitions:
            raise KgroupError(
                f"queue_sizes: {len(self.queue_sizes)} entries; "
                f"give one per partition ({self.num_partitions})"
            )
        if self.order is not None and sorted(self.order) != list(range(self.num_partitions)):
            raise KgroupError(
                f"order: not the partitions 0..{self.num_partitions - 1} each once; list every partition once"
            )

    def leader(self, partition: int) -> int | None:
        return partition if self.leaders is None else self.leaders[partition]

    @property
    def available_partitions(self) -> tuple[int, ...]:
        """Partitions with a leader, in the producer's order (Kafka's
        ``Cluster.availablePartitionsForTopic``): :attr:`order`, or ascending."""
        listed = range(self.num_partitions) if self.order is None else self.order
        if self.leaders is None:
            return tuple(listed)
        leaders = self.leaders
        return tuple(p for p in listed if leaders[p] is not None)

    @classmethod
    def with_available(cls, num_partitions: int, available: list[int] | tuple[int, ...]) -> TopicState:
        """A topic whose listed partitions have a leader (broker = partition id) and the rest none."""
        keep = set(available)
        bad = sorted(p for p in keep if not 0 <= p < num_partitions)
        if bad:
            raise KgroupError(f"available: partition {bad[0]} is not in 0..{num_partitions - 1}")
        return cls(num_partitions, tuple(p if p in keep else None for p in range(num_partitions)))


@dataclass(frozen=True, slots=True)
class ClusterView:
    """A snapshot of what the producer knows: topics and per-broker latency stats."""

    topics: Mapping[str, TopicState]
    node_latency: Mapping[int, NodeLatency] = field(default_factory=dict)

    @classmethod
    def single(
        cls,
        topic: str,
        num_partitions: int,
        *,
        available: list[int] | tuple[int, ...] | None = None,
        queue_sizes: tuple[int, ...] | None = None,
        node_latency: Mapping[int, NodeLatency] | None = None,
        java_client_order: bool = False,
    ) -> ClusterView:
        """A cluster with one topic; ``available`` lists the partitions that have a leader (all if None).
        ``java_client_order``: listed as a Java producer lists them after its first Metadata answer
        for the topic (where its ``RoundRobinPartitioner`` starts), not ascending."""
        state = (
            TopicState(num_partitions)
            if available is None
            else TopicState.with_available(num_partitions, available)
        )
        order = None
        if java_client_order:
            from kgroup.partitioning.client_order import java_client_partition_order

            order = java_client_partition_order(topic, num_partitions)
        if queue_sizes is not None or order is not None:
            sizes = None if queue_sizes is None else tuple(queue_sizes)
            state = TopicState(state.num_partitions, state.leaders, sizes, order)
        return cls({topic: state}, dict(node_latency or {}))

    def topic(self, name: str) -> TopicState:
        try:
            return self.topics[name]
        except KeyError:
            raise KgroupError(
                f"topic {name!r} is not in the cluster metadata; add it to the ClusterView"
            ) from None

    def num_partitions(self, topic: str) -> int:
        return self.topic(topic).num_partitions

    def available_partitions(self, topic: str) -> tuple[int, ...]:
        return self.topic(topic).available_partitions


class Partitioner(ABC):
    """What a producer partitioner does. Subclass it and :func:`register_partitioner` a name to plug
    in your own; only :meth:`partition` is required.

    The producer (see :class:`kgroup.partitioning.partitioners.producer.ProducerModel`) calls:

    * :meth:`partition` for every record that does not name a partition;
    * :meth:`on_new_batch` when the chosen partition has no open batch, and then :meth:`partition`
      **again** for the same record — if :attr:`aborts_on_new_batch` is true. ``KafkaProducer`` did
      that with every pluggable ``partitioner.class`` before Kafka 4.0 (``abortOnNewBatch``); 4.4.0
      asks once, so the default is false;
    * :meth:`before_append` / :meth:`record_appended` around each append of a record the partitioner
      placed (used by the built-in adaptive partitioner to count bytes and switch partitions);
    * :meth:`update_load_stats` whenever the sender thread looks at the queues.
    """

    #: Registry name and what the class models (for docs and ``--help``).
    name: ClassVar[str] = ""
    models: ClassVar[str] = ""

    @property
    def aborts_on_new_batch(self) -> bool:
        """Whether the producer asks twice when a record starts a new batch (``abortOnNewBatch``):
        false, as in Kafka 4.4.0; a partitioner modelling an older producer returns true."""
        return False

    @abstractmethod
    def partition(self, topic: str, key: RecordKey, value: bytes | None, cluster: ClusterView) -> int:
        """The partition for a record that does not name one."""

    def on_new_batch(self, topic: str, cluster: ClusterView, prev_partition: int) -> None:  # noqa: B027
        """The record about to go to ``prev_partition`` would start a new batch."""

    def before_append(
        self, topic: str, key: RecordKey, partition: int, cluster: ClusterView, *, queue_all_full: bool
    ) -> bool:
        """Called before appending to ``partition``; return True if the choice changed (ask again)."""
        return False

    def record_appended(  # noqa: B027
        self,
        topic: str,
        key: RecordKey,
        partition: int,
        size_bytes: int,
        cluster: ClusterView,
        *,
        enable_switch: bool = True,
    ) -> None:
        """``size_bytes`` were appended to ``partition``; ``enable_switch`` is false while the
        partition's last batch is still open (Kafka then delays a switch to align with batches)."""

    def update_load_stats(self, topic: str, cluster: ClusterView) -> None:  # noqa: B027
        """The sender looked at the queues: ``cluster`` carries queue sizes and broker latency."""


def partition_record(
    partitioner: Partitioner,
    topic: str,
    key: RecordKey,
    value: bytes | None,
    cluster: ClusterView,
    partition: int | None = None,
) -> int:
    """``KafkaProducer.partition``: a partition given on the record wins; else ask the partitioner.
    The answer is checked against the topic's partition count."""
    n = cluster.num_partitions(topic)
    chosen = partition if partition is not None else partitioner.partition(topic, key, value, cluster)
    if not 0 <= chosen < n:
        who = "the record" if partition is not None else f"partitioner {type(partitioner).__name__}"
        raise KgroupError(
            f"partition: {chosen} given by {who} is not in 0..{n - 1} for topic {topic!r}; "
            f"choose an existing partition"
        )
    return chosen


PartitionerFactory = Callable[..., Partitioner]
_REGISTRY: dict[str, PartitionerFactory] = {}

# Kafka's producer config names → keyword names of the built-in partitioners.
_KAFKA_CONFIG_NAMES = {
    "batch.size": "batch_size",
    "partitioner.ignore.keys": "ignore_keys",
    "partitioner.adaptive.partitioning.enable": "adaptive_partitioning_enable",
    "partitioner.availability.timeout.ms": "availability_timeout_ms",
}


def register_partitioner(name: str, factory: PartitionerFactory, *, replace: bool = False) -> None:
    """Make ``create_partitioner(name, rng=..., **config)`` call ``factory(rng=rng, **config)``."""
    if not name or name != name.strip():
        raise KgroupError(f"partitioner name {name!r}: give a non-empty name without surrounding spaces")
    if name in _REGISTRY and not replace:
        raise KgroupError(f"partitioner {name!r} is already registered; pick another name or replace=True")
    _REGISTRY[name] = factory


def partitioner_names() -> list[str]:
    return sorted(_REGISTRY)


#: partitioners that are not a way to spread keyless records: ``keyed`` hands them to a null-key strategy
_NOT_NULL_KEY_STRATEGIES = frozenset({"keyed"})


def null_key_strategy_names() -> list[str]:
    """The registered partitioners that can spread keyless records (all but ``keyed``, which
    delegates its null keys to one of these)."""
    return [n for n in partitioner_names() if n not in _NOT_NULL_KEY_STRATEGIES]


def check_null_key_strategy(name: str, field: str = "null-key-strategy") -> None:
    """Fail with one line, before any work, when ``name`` is not a null-key strategy."""
    if name not in null_key_strategy_names():
        raise KgroupError(
            f"{field}: {name!r} is not a null-key strategy; "
            f"choose one of: {', '.join(null_key_strategy_names())}"
        )


def create_partitioner(name: str, rng: Random | None = None, **config: Any) -> Partitioner:
    """A new partitioner by registry name. ``rng`` is its only source of randomness (default
    ``Random(0)``); ``config`` takes keyword names or Kafka's (``"batch.size"`` …)."""
    factory = _REGISTRY.get(name)
    if factory is None:
        raise KgroupError(f"partitioner {name!r} is unknown; choose one of: {', '.join(partitioner_names())}")
    kwargs = {_KAFKA_CONFIG_NAMES.get(k, k).replace(".", "_"): v for k, v in config.items()}
    try:
        return factory(rng=rng if rng is not None else Random(0), **kwargs)
    except TypeError as exc:
        raise KgroupError(
            f"partitioner {name!r}: bad configuration ({exc}); see docs/partitioning.md"
        ) from None
