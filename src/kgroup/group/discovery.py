"""Finding the coordinator: which ``__consumer_offsets`` partition owns a group. (Which node a client
asks is the client's: :func:`kgroup.client.nodes.least_loaded_node`.)"""

from __future__ import annotations

from kgroup.javacompat import java_abs, java_string_hash
from kgroup.model import KgroupError

__all__ = ["coordinator_partition"]


def coordinator_partition(group_id: str, num_partitions: int = 50) -> int:
    """``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`` (``Integer.MIN_VALUE`` -> 0)."""
    if num_partitions < 1:
        raise KgroupError(f"num_partitions: is {num_partitions}; give offsets.topic.num.partitions >= 1")
    return java_abs(java_string_hash(group_id)) % num_partitions
