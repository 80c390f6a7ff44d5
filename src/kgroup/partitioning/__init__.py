"""Producer partitioning and replica placement, exact to Kafka."""

from kgroup.partitioning.murmur2 import (
    murmur2,
    murmur2_array,
    partition_for_key,
    partitions_for_keys,
    partitions_for_keys_multi,
)

__all__ = [
    "murmur2",
    "murmur2_array",
    "partition_for_key",
    "partitions_for_keys",
    "partitions_for_keys_multi",
]
