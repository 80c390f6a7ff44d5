"""kgroup: Apache Kafka's partitioning and consumer-group rebalance system, exact to Kafka.

The public API, re-exported explicitly. The model's values are imported at once; the rest is
loaded on first use (PEP 562), so ``import kgroup`` and the ``kgroup`` command start fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from kgroup.model import (
    Assignment,
    ErrorCode,
    KgroupError,
    Member,
    RebalanceProtocol,
    TopicMetadata,
    TopicPartition,
)

if TYPE_CHECKING:
    from kgroup.assignors import (
        AssignmentRequest,
        Assignor,
        available_assignors,
        create_assignor,
        register_assignor,
    )
    from kgroup.group import CoordinatorConfig, GroupCoordinator, coordinator_partition
    from kgroup.member import ClassicConsumerMember, ConsumerMember, MemberConfig
    from kgroup.partitioning import (
        assign_replicas,
        create_partitioner,
        murmur2,
        murmur2_array,
        partition_for_key,
        partitions_for_keys,
    )

__version__ = "0.1.0"

_LAZY: dict[str, str] = {
    "murmur2": "kgroup.partitioning",
    "murmur2_array": "kgroup.partitioning",
    "partition_for_key": "kgroup.partitioning",
    "partitions_for_keys": "kgroup.partitioning",
    "create_partitioner": "kgroup.partitioning",
    "assign_replicas": "kgroup.partitioning",
    "AssignmentRequest": "kgroup.assignors",
    "Assignor": "kgroup.assignors",
    "available_assignors": "kgroup.assignors",
    "create_assignor": "kgroup.assignors",
    "register_assignor": "kgroup.assignors",
    "GroupCoordinator": "kgroup.group",
    "CoordinatorConfig": "kgroup.group",
    "coordinator_partition": "kgroup.group",
    "ClassicConsumerMember": "kgroup.member",
    "ConsumerMember": "kgroup.member",  # deprecated: ClassicConsumerMember's former name
    "MemberConfig": "kgroup.member",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kgroup' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "Assignment",
    "AssignmentRequest",
    "Assignor",
    "ClassicConsumerMember",
    "ConsumerMember",
    "CoordinatorConfig",
    "ErrorCode",
    "GroupCoordinator",
    "KgroupError",
    "Member",
    "MemberConfig",
    "RebalanceProtocol",
    "TopicMetadata",
    "TopicPartition",
    "__version__",
    "assign_replicas",
    "available_assignors",
    "coordinator_partition",
    "create_assignor",
    "create_partitioner",
    "murmur2",
    "murmur2_array",
    "partition_for_key",
    "partitions_for_keys",
    "register_assignor",
]
