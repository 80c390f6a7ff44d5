"""Producer partitioners: one interface, built-ins by name, custom ones by registration."""

from kgroup.partitioning.partitioners.api import (
    ClusterView,
    NodeLatency,
    Partitioner,
    RecordKey,
    TopicState,
    create_partitioner,
    java_next_int,
    partition_record,
    partitioner_names,
    register_partitioner,
)
from kgroup.partitioning.partitioners.builtin import (
    AdaptivePartitioner,
    KeyedPartitioner,
    LegacyRoundRobinPartitioner,
    LoadStats,
    RoundRobinPartitioner,
    UniformStickyPartitioner,
    register_builtin_partitioners,
)
from kgroup.partitioning.partitioners.producer import ProducerModel, null_key_chooser, spread_unkeyed

register_builtin_partitioners()

__all__ = [
    "AdaptivePartitioner",
    "ClusterView",
    "KeyedPartitioner",
    "LegacyRoundRobinPartitioner",
    "LoadStats",
    "NodeLatency",
    "Partitioner",
    "ProducerModel",
    "RecordKey",
    "RoundRobinPartitioner",
    "TopicState",
    "UniformStickyPartitioner",
    "create_partitioner",
    "java_next_int",
    "null_key_chooser",
    "partition_record",
    "partitioner_names",
    "register_partitioner",
    "spread_unkeyed",
]
