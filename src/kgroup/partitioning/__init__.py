"""Producer partitioning and replica placement, exact to Kafka.

* keyed partitioning: :func:`murmur2`, :func:`partition_for_key` and their vectorised forms;
* producer partitioners (explicit, keyed, round robin, uniform sticky, adaptive, legacy) by name, and
  the order a Java producer lists a topic's partitions in (where its round robin starts);
* replica placement: Kafka 4.4.0's ``StripedReplicaPlacer``, the ZooKeeper era's
  ``AdminUtils.assignReplicasToBrokers`` and the seeds' rule.
"""

from kgroup.partitioning.client_order import JavaClientMetadata, java_client_partition_order
from kgroup.partitioning.murmur2 import (
    murmur2,
    murmur2_array,
    partition_for_key,
    partitions_for_keys,
    partitions_for_keys_multi,
)
from kgroup.partitioning.partitioners import (
    AdaptivePartitioner,
    ClusterView,
    KeyedPartitioner,
    LegacyRoundRobinPartitioner,
    NodeLatency,
    Partitioner,
    ProducerModel,
    RoundRobinPartitioner,
    TopicState,
    UniformStickyPartitioner,
    create_partitioner,
    null_key_chooser,
    partition_record,
    partitioner_names,
    register_partitioner,
    spread_unkeyed,
)
from kgroup.partitioning.placement import (
    Broker,
    Placement,
    assign_replicas,
    assign_replicas_seed_rule,
    assign_replicas_striped,
    rack_alternated_brokers,
)
from kgroup.partitioning.striped import InvalidReplicationFactor, StripedReplicaPlacer, UsableBroker

__all__ = [
    "AdaptivePartitioner",
    "Broker",
    "ClusterView",
    "InvalidReplicationFactor",
    "JavaClientMetadata",
    "KeyedPartitioner",
    "LegacyRoundRobinPartitioner",
    "NodeLatency",
    "Partitioner",
    "Placement",
    "ProducerModel",
    "RoundRobinPartitioner",
    "StripedReplicaPlacer",
    "TopicState",
    "UniformStickyPartitioner",
    "UsableBroker",
    "assign_replicas",
    "assign_replicas_seed_rule",
    "assign_replicas_striped",
    "create_partitioner",
    "java_client_partition_order",
    "murmur2",
    "murmur2_array",
    "null_key_chooser",
    "partition_for_key",
    "partition_record",
    "partitioner_names",
    "partitions_for_keys",
    "partitions_for_keys_multi",
    "rack_alternated_brokers",
    "register_partitioner",
    "spread_unkeyed",
]
