"""Which version of each API kgroup's client speaks: its own ranges, intersected with the broker's.

The client implements the ranges below (the versions Kafka 4.0's consumer uses at the top, back to
the oldest a classic group member with static membership can use). Against a broker it sends the
highest version both support, learnt from ApiVersions, as Kafka's ``NetworkClient`` does; a broker
that supports none of a range gets a clear error, not a guess.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["API_NAMES", "CLIENT_RANGES", "UnsupportedApi", "choose_versions"]

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
    9: (1, 9),  # OffsetFetch (v8+: batched groups)
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
