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
from typing import Any

from kgroup.broker.dispatch import RequestContext
from kgroup.model import ErrorCode
from kgroup.security.acl import AclOperation, ResourceType

__all__ = ["any_topic_denied", "offset_fetch_answer_topics", "split_offset_fetch_topics"]


def _describable(ctx: RequestContext, names: Iterable[str]) -> set[str]:
    return {name for name in set(names) if ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, name)}


def any_topic_denied(ctx: RequestContext, names: Iterable[str] | None) -> bool:
    """Whether the principal may not describe one of ``names`` (``None``/empty: none named)."""
    wanted = set(names or ())
    return bool(wanted) and len(_describable(ctx, wanted)) < len(wanted)


def split_offset_fetch_topics(ctx: RequestContext, topics: Any) -> tuple[Any, list[dict[str, Any]]]:
    """The request's topics the principal may describe (``None`` stays ``None``: all offsets) and the
    answer's entries of the others."""
    if topics is None:
        return None, []
    allowed = _describable(ctx, (t.name for t in topics))
    denied = [
        {
            "name": t.name,
            "partitions": [
                {
                    "partition_index": int(p),
                    "committed_offset": -1,
                    "committed_leader_epoch": -1,
                    "metadata": "",
                    "error_code": int(ErrorCode.TOPIC_AUTHORIZATION_FAILED),
                }
                for p in t.partition_indexes
            ],
        }
        for t in topics
        if t.name not in allowed
    ]
    return [t for t in topics if t.name in allowed], denied


def offset_fetch_answer_topics(
    ctx: RequestContext,
    answered: list[dict[str, Any]],
    all_offsets: bool,
    denied: list[dict[str, Any]],
    group_error: int,
) -> list[dict[str, Any]]:
    """The answer's topics: the coordinator's as it gave them after a group error; otherwise the
    describable ones of all offsets, or the coordinator's followed by the denied ones."""
    if group_error != ErrorCode.NONE:
        return answered
    if all_offsets:
        allowed = _describable(ctx, (t["name"] for t in answered))
        return [t for t in answered if t["name"] in allowed]
    return answered + denied
