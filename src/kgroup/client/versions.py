"""Which version of each API kgroup's client speaks: its own ranges, intersected with the broker's.

The client implements the ranges below (the versions Kafka 4.4.0's clients use at the top, back to
the oldest a classic group member with static membership can use). Against a broker it sends the
highest version both support, learnt from ApiVersions, as Kafka's ``NetworkClient`` does; a broker
that supports none of a range gets a clear error, not a guess.

OffsetCommit and OffsetFetch v10 name topics by id: as Kafka's consumers, a classic member names its
commits' topics (``Builder.forTopicNames``: v9 at most) and a consumer-protocol member uses v10 when
it knows the id of every topic of the request, v9 otherwise (``forTopicIdsOrNames``):
:func:`offsets_version`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from kgroup.model import ErrorCode
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.codec import request_class

__all__ = [
    "CLIENT_RANGES",
    "LAST_BY_NAME",
    "Requester",
    "UnsupportedApi",
    "broker_ranges",
    "choose_versions",
    "negotiate",
    "offsets_version",
]

#: api key -> (lowest, highest) version kgroup's client implements
CLIENT_RANGES: dict[ApiKey, tuple[int, int]] = {
    ApiKey.API_VERSIONS: (0, 5),
    ApiKey.METADATA: (4, 13),
    ApiKey.FIND_COORDINATOR: (1, 6),  # v4+: batched keys
    ApiKey.JOIN_GROUP: (5, 9),  # v5+: group.instance.id; v9: skip_assignment, KIP-814
    ApiKey.SYNC_GROUP: (3, 5),
    ApiKey.HEARTBEAT: (3, 4),
    ApiKey.LEAVE_GROUP: (3, 5),  # v3+: batched members
    ApiKey.OFFSET_COMMIT: (7, 10),  # v10: topic ids
    ApiKey.OFFSET_FETCH: (1, 10),  # v8+: batched groups; v9: member id and epoch, KIP-848; v10: topic ids
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (0, 1),  # KIP-848; v1: regex subscriptions, client-chosen member id
    ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 1),
    ApiKey.DESCRIBE_GROUPS: (0, 6),  # kgroup lag
    ApiKey.LIST_OFFSETS: (1, 11),  # kgroup lag: the log end offsets
}

#: the last OffsetCommit / OffsetFetch version that names topics (v10 names them by id)
LAST_BY_NAME = 9


def offsets_version(negotiated: int, topics: Iterable[str], topic_ids: Mapping[str, object] | None) -> int:
    """The OffsetCommit / OffsetFetch version to send for ``topics``: the negotiated one, but at most
    v9 unless ``topic_ids`` (a consumer-protocol member's; ``None`` for a classic member) knows every
    topic's id, as Kafka's ``OffsetCommitRequest.Builder.forTopicIdsOrNames`` decides."""
    if negotiated <= LAST_BY_NAME:
        return negotiated
    if topic_ids is None or not all(topic in topic_ids for topic in topics):
        return LAST_BY_NAME
    return negotiated


class Requester(Protocol):
    """What asks a broker: :class:`kgroup.client.connection.BrokerConnection`."""

    host: str
    port: int

    async def request(self, body: Any, *, timeout_s: float = ...) -> Any: ...


class UnsupportedApi(ConnectionError):
    """The broker does not support any version of an API the client needs."""


def choose_versions(broker: Mapping[int, tuple[int, int]], where: str) -> dict[int, int]:
    """For each API of the client, the highest version the broker supports too."""
    chosen: dict[int, int] = {}
    for api_key, (low, high) in CLIENT_RANGES.items():
        if api_key == ApiKey.API_VERSIONS:
            continue
        theirs = broker.get(api_key)
        if theirs is None:
            continue  # checked when the API is first used
        top = min(high, theirs[1])
        if top < max(low, theirs[0]):
            continue
        chosen[api_key] = top
    return chosen


async def negotiate(connection: Requester, timeout_s: float) -> dict[int, int]:
    """ApiVersions on a fresh connection, then :func:`choose_versions`."""
    ranges = await broker_ranges(connection, timeout_s)
    return choose_versions(ranges, f"{connection.host}:{connection.port}")


async def broker_ranges(connection: Requester, timeout_s: float) -> dict[int, tuple[int, int]]:
    """ApiVersions: api key -> (lowest, highest) version the broker supports.

    Kafka's ``NetworkClient`` rule: a broker that refuses our ApiVersions version is asked again
    with the highest version it names, or with v0 (which every broker answers) if it names none.
    """
    version = CLIENT_RANGES[ApiKey.API_VERSIONS][1]
    for _ in range(3):
        cls: Any = request_class(ApiKey.API_VERSIONS, version)
        body = cls(client_software_name="kgroup", client_software_version="0.1") if version >= 3 else cls()
        response = await connection.request(body, timeout_s=timeout_s)
        ranges = {int(a.api_key): (int(a.min_version), int(a.max_version)) for a in response.api_keys}
        if int(response.error_code) == ErrorCode.UNSUPPORTED_VERSION and version > 0:
            top = ranges.get(ApiKey.API_VERSIONS)
            version = min(version - 1, top[1]) if top is not None else 0
            continue
        if int(response.error_code) != ErrorCode.NONE:
            raise UnsupportedApi(f"ApiVersions answered error {int(response.error_code)}")
        return ranges
    raise UnsupportedApi("the broker refused every ApiVersions version")
