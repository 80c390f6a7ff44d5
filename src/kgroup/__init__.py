"""kgroup: Apache Kafka's partitioning and consumer-group rebalance system, exact to Kafka.

The public API is re-exported here explicitly; see the README for a tour.
"""

from kgroup.model import (
    Assignment,
    ErrorCode,
    KgroupError,
    Member,
    RebalanceProtocol,
    TopicMetadata,
    TopicPartition,
)

__version__ = "0.1.0"

__all__ = [
    "Assignment",
    "ErrorCode",
    "KgroupError",
    "Member",
    "RebalanceProtocol",
    "TopicMetadata",
    "TopicPartition",
    "__version__",
]
