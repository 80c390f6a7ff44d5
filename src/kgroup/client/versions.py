"""Which version of each API kgroup's client speaks: its own ranges, intersected with the broker's.

The client implements the ranges below (the versions Kafka 4.0's consumer uses at the top, back to
the oldest a classic group member with static membership can use). Against a broker it sends the
highest version both support, learnt from ApiVersions, as Kafka's ``NetworkClient`` does; a broker
that supports none of a range gets a clear error, not a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kio.index import load_request_schema

from kgroup.model import ErrorCode

if TYPE_CHECKING:
    from kgroup.client.connection import BrokerConnection

__all__ = ["API_NAMES", "CLIENT_RANGES", "UnsupportedApi", "choose_versions", "negotiate"]

#: api key -> (lowest, highest) version kgroup's client implements
CLIENT_RANGES: dict[int, tuple[int, int]] = {
    18: (0, 3),  # ApiVersions
    3: (4, 12),  # Metadata
    10: (1, 6),  # FindCoordinator (v4+: batched keys)
    11: (5, 9),  # JoinGroup (v5+: group.instance.id; v9: skip_assignment, KIP-814)
    14: (3, 5),  # SyncGroup
    12: (3, 4),  # Heartbeat
    13: (3, 5),  # LeaveGroup (v3+: batched members)
    8: (7, 9),  # OffsetCommit
    9: (1, 9),  # OffsetFetch (v8+: batched groups; v9: member id and epoch, KIP-848)
    68: (0, 1),  # ConsumerGroupHeartbeat (KIP-848; v1: regex subscriptions, client-chosen member id)
    69: (0, 1),  # ConsumerGroupDescribe
    15: (0, 5),  # DescribeGroups (kgroup lag)
    2: (1, 9),  # ListOffsets (kgroup lag: the log end offsets)
}
API_NAMES = {
    18: "ApiVersions",
    3: "Metadata",
    10: "FindCoordinator",
    11: "JoinGroup",
    14: "SyncGroup",
    12: "Heartbeat",
    13: "LeaveGroup",
    8: "OffsetCommit",
    9: "OffsetFetch",
    68: "ConsumerGroupHeartbeat",
    69: "ConsumerGroupDescribe",
    15: "DescribeGroups",
    2: "ListOffsets",
}


class UnsupportedApi(ConnectionError):
    """The broker does not support any version of an API the client needs."""


def choose_versions(broker: Mapping[int, tuple[int, int]], where: str) -> dict[int, int]:
    """For each API of the client, the highest version the broker supports too."""
    chosen: dict[int, int] = {}
    for api_key, (low, high) in CLIENT_RANGES.items():
        if api_key == 18:
            continue
        theirs = broker.get(api_key)
        if theirs is None:
            continue  # checked when the API is first used
        top = min(high, theirs[1])
        if top < max(low, theirs[0]):
            continue
        chosen[api_key] = top
    return chosen


async def negotiate(connection: BrokerConnection, timeout_s: float) -> dict[int, int]:
    """ApiVersions on a fresh connection, then :func:`choose_versions`.

    Kafka's ``NetworkClient`` rule: a broker that refuses our ApiVersions version is asked again
    with the highest version it names, or with v0 (which every broker answers) if it names none.
    """
    version = CLIENT_RANGES[18][1]
    for _ in range(3):
        cls: Any = load_request_schema(18, version)
        body = cls(client_software_name="kgroup", client_software_version="0.1") if version >= 3 else cls()
        response = await connection.request(body, timeout_s=timeout_s)
        ranges = {int(a.api_key): (int(a.min_version), int(a.max_version)) for a in response.api_keys}
        if int(response.error_code) == ErrorCode.UNSUPPORTED_VERSION and version > 0:
            version = min(version - 1, ranges[18][1]) if 18 in ranges else 0
            continue
        if int(response.error_code) != ErrorCode.NONE:
            raise UnsupportedApi(f"ApiVersions answered error {int(response.error_code)}")
        return choose_versions(ranges, f"{connection.host}:{connection.port}")
    raise UnsupportedApi("the broker refused every ApiVersions version")
