"""KIP-848 server-side assignors, exact to the pinned Apache Kafka (``docs/server-assignors.md``).

Built-in names: ``uniform`` (Kafka's default) and ``range``; plug-ins come from the
``kgroup.server_assignors`` entry-point group. Share groups (KIP-932) have their own assignor,
:class:`SimpleAssignor` (``simple``, Kafka's ``ShareGroupPartitionAssignor``), which a consumer group
cannot name.
"""

from kgroup.group.assignors.api import (
    GroupAssignment,
    GroupSpec,
    InvertedTarget,
    MemberAssignment,
    MemberSpec,
    PartitionAssignorError,
    ServerAssignor,
    SubscribedTopicDescriber,
    SubscriptionType,
    TopicDescriber,
    TopicId,
    assignment_from_record,
    group_spec,
    subscription_type,
    topic_id_set,
)
from kgroup.group.assignors.range import RangeAssignor
from kgroup.group.assignors.registry import (
    available_server_assignors,
    create_server_assignor,
    register_server_assignor,
)
from kgroup.group.assignors.simple import SimpleAssignor
from kgroup.group.assignors.uniform import UniformAssignor

#: Kafka's ``group.consumer.assignors`` default: the first is the one used when a member names none
DEFAULT_SERVER_ASSIGNORS = ("uniform", "range")

__all__ = [
    "DEFAULT_SERVER_ASSIGNORS",
    "GroupAssignment",
    "GroupSpec",
    "InvertedTarget",
    "MemberAssignment",
    "MemberSpec",
    "PartitionAssignorError",
    "RangeAssignor",
    "ServerAssignor",
    "SimpleAssignor",
    "SubscribedTopicDescriber",
    "SubscriptionType",
    "TopicDescriber",
    "TopicId",
    "UniformAssignor",
    "assignment_from_record",
    "available_server_assignors",
    "create_server_assignor",
    "group_spec",
    "register_server_assignor",
    "subscription_type",
    "topic_id_set",
]
