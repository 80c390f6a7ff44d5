"""The API versions ``kgroup serve`` answers: Kafka 4.0's ranges, capped where a newer version needs
something kgroup does not implement (topic ids in Fetch v13+ / OffsetCommit v10 / OffsetFetch v10,
Produce v13, ListOffsets v10+ timeout semantics). A client picks the highest version both sides
support, so a cap only changes which layout is spoken, not what a client can do.
"""

from __future__ import annotations

from typing import Final

__all__ = ["API_NAMES", "SUPPORTED_VERSIONS", "supported"]

#: api key -> (min version, max version) as listed in the ApiVersions answer
SUPPORTED_VERSIONS: Final[dict[int, tuple[int, int]]] = {
    0: (3, 12),  # Produce (Kafka 4.0 removed v0-v2)
    1: (4, 12),  # Fetch (v13+ address topics by id)
    2: (1, 9),  # ListOffsets
    3: (0, 12),  # Metadata
    8: (2, 9),  # OffsetCommit
    9: (1, 9),  # OffsetFetch
    10: (0, 6),  # FindCoordinator
    11: (0, 9),  # JoinGroup
    12: (0, 4),  # Heartbeat
    13: (0, 5),  # LeaveGroup
    14: (0, 5),  # SyncGroup
    15: (0, 5),  # DescribeGroups
    16: (0, 5),  # ListGroups
    17: (0, 1),  # SaslHandshake
    18: (0, 4),  # ApiVersions
    19: (2, 7),  # CreateTopics
    20: (1, 6),  # DeleteTopics
    22: (0, 5),  # InitProducerId
    29: (1, 3),  # DescribeAcls (Kafka 4 removed v0)
    30: (1, 3),  # CreateAcls
    31: (1, 3),  # DeleteAcls
    32: (1, 4),  # DescribeConfigs
    36: (0, 2),  # SaslAuthenticate
    42: (0, 2),  # DeleteGroups
    50: (0, 0),  # DescribeUserScramCredentials
    51: (0, 0),  # AlterUserScramCredentials
    68: (0, 1),  # ConsumerGroupHeartbeat (KIP-848; librdkafka's group.protocol=consumer needs v1)
    69: (0, 1),  # ConsumerGroupDescribe
}

API_NAMES: Final[dict[int, str]] = {
    0: "Produce",
    1: "Fetch",
    2: "ListOffsets",
    3: "Metadata",
    8: "OffsetCommit",
    9: "OffsetFetch",
    10: "FindCoordinator",
    11: "JoinGroup",
    12: "Heartbeat",
    13: "LeaveGroup",
    14: "SyncGroup",
    15: "DescribeGroups",
    16: "ListGroups",
    17: "SaslHandshake",
    18: "ApiVersions",
    19: "CreateTopics",
    20: "DeleteTopics",
    22: "InitProducerId",
    29: "DescribeAcls",
    30: "CreateAcls",
    31: "DeleteAcls",
    32: "DescribeConfigs",
    36: "SaslAuthenticate",
    42: "DeleteGroups",
    50: "DescribeUserScramCredentials",
    51: "AlterUserScramCredentials",
    68: "ConsumerGroupHeartbeat",
    69: "ConsumerGroupDescribe",
}


def supported(api_key: int, version: int) -> bool:
    span = SUPPORTED_VERSIONS.get(api_key)
    return span is not None and span[0] <= version <= span[1]
