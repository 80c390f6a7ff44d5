"""Topic DESCRIBE checks of the group APIs that name topics, as ``KafkaApis`` makes them
(``filterByAuthorized(DESCRIBE, TOPIC)``): clients may not see offsets of, or subscribe to, topics
they may not describe.

* OffsetFetch of named topics: a topic the principal may not describe is answered
  TOPIC_AUTHORIZATION_FAILED for each partition asked (committed offset -1) without asking the
  coordinator; those topics come after the coordinator's, and only when the group itself answered
  no error (``KafkaApis.fetchOffsetsForGroup``).
* OffsetFetch of all offsets: topics the principal may not describe are left out of the answer
  (``fetchAllOffsetsForGroup``).
* ConsumerGroupHeartbeat: any subscribed topic name the principal may not describe fails the whole
  heartbeat with TOPIC_AUTHORIZATION_FAILED (no message).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from kgroup.broker.dispatch import RequestContext
from kgroup.messages import OffsetFetchPartition, OffsetFetchRequest, OffsetFetchResponse
from kgroup.model import ErrorCode
from kgroup.security.acl import AclOperation, ResourceType

__all__ = ["answer_with_denied_topics", "any_topic_denied", "split_offset_fetch"]


def _describable(ctx: RequestContext, names: Iterable[str]) -> set[str]:
    return {name for name in set(names) if ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, name)}


async def any_topic_denied(ctx: RequestContext, names: Iterable[str] | None) -> bool:
    """Whether the principal may not describe one of ``names`` (``None``/empty: none named); a long
    list gives the event loop a turn every few milliseconds (``Pacer``)."""
    if not names or not ctx.services.security.config.authorizer:
        return False
    for name in set(names):
        if ctx.pacer.due():
            await ctx.pacer.pause()
        if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, name):
            return True
    return False


def split_offset_fetch(
    ctx: RequestContext, request: OffsetFetchRequest
) -> tuple[OffsetFetchRequest, tuple[OffsetFetchPartition, ...]]:
    """The group's request narrowed to the topics the principal may describe (all offsets stay all
    offsets), and the answer's partitions of the others: TOPIC_AUTHORIZATION_FAILED, offset -1."""
    if request.partitions is None:
        return request, ()
    allowed = _describable(ctx, (tp.topic for tp in request.partitions))
    denied = tuple(
        OffsetFetchPartition(tp, -1, "", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        for tp in request.partitions
        if tp.topic not in allowed
    )
    if not denied:
        return request, ()
    kept = tuple(tp for tp in request.partitions if tp.topic in allowed)
    return replace(request, partitions=kept), denied


def answer_with_denied_topics(
    ctx: RequestContext,
    answer: OffsetFetchResponse,
    *,
    all_offsets: bool,
    denied: tuple[OffsetFetchPartition, ...],
) -> OffsetFetchResponse:
    """The group's answer: the coordinator's as it gave it after a group error; otherwise the
    describable topics of all offsets, or the coordinator's partitions followed by the denied ones."""
    if answer.error_code != ErrorCode.NONE:
        return answer
    if all_offsets:
        allowed = _describable(ctx, (p.partition.topic for p in answer.partitions))
        kept = tuple(p for p in answer.partitions if p.partition.topic in allowed)
        return answer if len(kept) == len(answer.partitions) else replace(answer, partitions=kept)
    return replace(answer, partitions=answer.partitions + denied) if denied else answer
