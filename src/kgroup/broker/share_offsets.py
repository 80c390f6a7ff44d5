"""What Describe/Alter/DeleteShareGroupOffsets' handlers share: the versions Kafka 4.4.0 serves, the
call to the group's coordinator (kgroup.group.share.offsets), topic ids on the wire."""

from __future__ import annotations

import uuid
from typing import Any

from kgroup.broker.cluster import OFFSETS_TOPIC
from kgroup.broker.dispatch import RequestContext
from kgroup.messages import Envelope
from kgroup.model import TopicId

__all__ = [
    "ALTER_VERSIONS",
    "DELETE_VERSIONS",
    "DESCRIBE_VERSIONS",
    "ZERO_UUID",
    "call_share_coordinator",
    "to_uuid",
]

#: the versions Kafka 4.4.0 serves: DescribeShareGroupOffsets v0-v1 (v1 adds each partition's lag),
#: AlterShareGroupOffsets v0, DeleteShareGroupOffsets v0
DESCRIBE_VERSIONS = (0, 1)
ALTER_VERSIONS = (0, 0)
DELETE_VERSIONS = (0, 0)

ZERO_UUID = uuid.UUID(int=0)


def to_uuid(topic_id: TopicId | None) -> uuid.UUID:
    return ZERO_UUID if topic_id is None else uuid.UUID(int=topic_id.to_int())


async def call_share_coordinator(ctx: RequestContext, group_id: str, body: object) -> Any | None:
    """The answer of ``group_id``'s coordinator to one of kgroup.group.share.offsets' requests, or
    ``None`` when another node coordinates the group (the caller answers NOT_COORDINATOR)."""
    services = ctx.services
    cluster = services.cluster
    if OFFSETS_TOPIC not in cluster.topics:
        await services.make_offsets_topic()
    if cluster.coordinator_for(group_id) != ctx.node_id:
        return None
    coordinators = services.coordinators
    await coordinators.wait_loaded()
    envelope = Envelope(
        ctx.connection,
        ctx.header.correlation_id,
        body,  # type: ignore[arg-type]  # the share kind's own request types
        ctx.header.client_id,
        ctx.client_host,
        ctx.version,
        ctx.principal,
    )
    return await coordinators.call(ctx.node_id, envelope)
