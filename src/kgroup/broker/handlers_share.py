"""ShareFetch (API key 78) and ShareAcknowledge (79), KIP-932, v1–v2 as Kafka 4.4.0 serves them
(``KafkaApis.handleShareFetchRequest`` / ``handleShareAcknowledgeRequest``), over the broker's share
partitions (:mod:`kgroup.broker.share_host`) and share sessions (:mod:`kgroup.broker.share_sessions`).

The checks, in Kafka's order: a group id, not null (``INVALID_REQUEST``), READ on the group
(``GROUP_AUTHORIZATION_FAILED``), a member id of 1–36 characters (``INVALID_REQUEST``), the share
session (``SHARE_SESSION_NOT_FOUND``, ``INVALID_SHARE_SESSION_EPOCH``, ``SHARE_SESSION_LIMIT_REACHED``,
``INVALID_REQUEST`` for acknowledgements in an opening request) — each answered as the whole
response's error, without a message, as ``ShareFetchRequest.getErrorResponse`` does; then per
partition: an unknown topic id (``UNKNOWN_TOPIC_ID``), READ on the topic
(``TOPIC_AUTHORIZATION_FAILED``), an unknown partition (``UNKNOWN_TOPIC_OR_PARTITION``), a partition led
elsewhere (``NOT_LEADER_OR_FOLLOWER``, with its leader). Acknowledgement batches are checked as
``validateAcknowledgementBatches`` does (``INVALID_REQUEST`` for the partition) and applied before the
fetch; the records the acknowledgements fail on are ``INVALID_RECORD_STATE`` in the partition's
``acknowledge_error_code``.

A fetch that acquires nothing waits (``max_wait``) for an append to one of its partitions or for
records released back (a RELEASE, a lock timing out, a session closed), through the same append
waiters as Fetch (:mod:`kgroup.broker.waiters`), then looks once more each time until the wait ends.
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from kgroup.broker.dispatch import RequestContext, register
from kgroup.broker.handlers_data import leader_check
from kgroup.broker.share_host import PartitionFetch, ShareHost
from kgroup.broker.share_sessions import FINAL_EPOCH, SessionError
from kgroup.broker.waiters import FetchWaiter
from kgroup.model import ErrorCode
from kgroup.security.acl import AclOperation, ResourceType
from kgroup.share import AcknowledgementBatch
from kgroup.wire.api_keys import ApiKey

__all__: list[str] = []

#: ``KafkaApis.isMemberIdValid``
_MAX_MEMBER_ID_CHARS = 36
#: ShareFetch v2's ``share_acquire_mode``: 1 is record-limit
_RECORD_LIMIT = 1
_RENEW = 4


def _host(ctx: RequestContext) -> ShareHost:
    host = ctx.services.shares
    assert isinstance(host, ShareHost)
    return host


def _error_answer(code: int) -> dict[str, Any]:
    """``getErrorResponse``: the error, nothing else (no message, no lock timeout)."""
    return {
        "throttle_time": 0,
        "error_code": code,
        "error_message": None,
        "acquisition_lock_timeout": 0,
        "responses": [],
        "node_endpoints": [],
    }


def _topic_name(ctx: RequestContext, topic_id: uuid.UUID | None) -> str:
    info = ctx.services.cluster.topic_by_id(topic_id) if topic_id is not None else None
    return "" if info is None else info.name


def _partition_error(ctx: RequestContext, name: str, partition: int) -> int:
    """The error of one partition before its share partition is asked (0: none)."""
    if not name:
        return ErrorCode.UNKNOWN_TOPIC_ID
    if not ctx.authorized(AclOperation.READ, ResourceType.TOPIC, name):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return leader_check(ctx, name, partition)


def _batches_error(batches: Sequence[Any], renew_allowed: bool) -> bool:
    """``validateAcknowledgementBatches``: whether the partition's batches are INVALID_REQUEST."""
    previous_end = -1
    for batch in batches:
        first, last, types = int(batch.first_offset), int(batch.last_offset), tuple(batch.acknowledge_types)
        if first > last or first < previous_end or not types:
            return True
        if len(types) > 1 and last - first != len(types) - 1:
            return True
        top = _RENEW if renew_allowed else 3
        if any(t < 0 or t > top for t in types):
            return True
        previous_end = last
    return False


async def _acknowledge(
    ctx: RequestContext, group_id: str, member_id: str, topics: Sequence[Any], renew: bool
) -> dict[tuple[uuid.UUID, int], tuple[int, str | None]]:
    """The acknowledgements of a request, applied: (topic id, partition) -> (error code, message).
    A partition with no batches is answered only when it has an error (an unknown topic id, a topic
    the member may not read…): Kafka 4.4.0 leaves the others out of the answer."""
    answers: dict[tuple[uuid.UUID, int], tuple[int, str | None]] = {}
    wanted: list[tuple[uuid.UUID, str, int, list[AcknowledgementBatch]]] = []
    for topic in topics:
        topic_id = topic.topic_id or uuid.UUID(int=0)
        name = _topic_name(ctx, topic.topic_id)
        for part in topic.partitions:
            batches = part.acknowledgement_batches
            index = int(part.partition_index)
            code: int = ErrorCode.UNKNOWN_TOPIC_ID if not name else ErrorCode.NONE
            if code == ErrorCode.NONE and _batches_error(batches, renew):
                code = ErrorCode.INVALID_REQUEST
            if code == ErrorCode.NONE:
                code = _partition_error(ctx, name, index)
                if code == ErrorCode.NOT_LEADER_OR_FOLLOWER and not batches:
                    code = ErrorCode.NONE  # the leader is asked only for batches to apply
            if code != ErrorCode.NONE:
                answers[(topic_id, index)] = (code, None)
            elif batches:
                wanted.append(
                    (
                        topic_id,
                        name,
                        index,
                        [
                            AcknowledgementBatch(
                                int(b.first_offset),
                                int(b.last_offset),
                                tuple(int(t) for t in b.acknowledge_types),
                            )
                            for b in batches
                        ],
                    )
                )
    if wanted:
        results = await _host(ctx).acknowledge(group_id, member_id, wanted)
        for (topic_id, _, index, _), result in zip(wanted, results, strict=True):
            answers[(topic_id, index)] = result
    return answers


def _leader(ctx: RequestContext, name: str, partition: int) -> dict[str, int]:
    if not name or name not in ctx.services.cluster.topics:
        return {"leader_id": -1, "leader_epoch": -1}
    return {"leader_id": ctx.services.cluster.partition_leader(name, partition), "leader_epoch": 0}


def _endpoints(ctx: RequestContext, nodes: set[int]) -> list[dict[str, Any]]:
    if not nodes:
        return []
    host, ports = ctx.services.advertised(ctx.listener)
    return [{"node_id": n, "host": host, "port": ports[n], "rack": None} for n in sorted(nodes) if n in ports]


def _answer(
    ctx: RequestContext,
    group_id: str,
    topics: Iterable[tuple[uuid.UUID, Iterable[dict[str, Any]]]],
    leaders: set[int],
) -> dict[str, Any]:
    """ShareFetch's and ShareAcknowledge's answer: no top-level error, the group's record lock
    duration, each topic's partitions, the endpoints of the leaders the partitions name."""
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "acquisition_lock_timeout": _host(ctx).group_settings(group_id)[0].record_lock_duration_ms,
        "responses": [{"topic_id": topic_id, "partitions": list(parts)} for topic_id, parts in topics],
        "node_endpoints": _endpoints(ctx, leaders),
    }


@register(ApiKey.SHARE_FETCH, versions=(1, 2))
async def share_fetch(ctx: RequestContext, request: Any) -> dict[str, Any]:
    group_id = request.group_id
    if group_id is None:  # a null id only: an empty one is a group like any other, as in Kafka
        return _error_answer(ErrorCode.INVALID_REQUEST)  # "Invalid group id in the request."
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, group_id):
        return _error_answer(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    member_id = request.member_id or ""
    if not 0 < len(member_id) <= _MAX_MEMBER_ID_CHARS:
        return _error_answer(ErrorCode.INVALID_REQUEST)  # "Invalid member id in the request."
    version = ctx.version
    renew = version >= 2 and bool(getattr(request, "is_renew_ack", False))
    if renew and any(
        int(v) != 0
        for v in (request.max_bytes, request.min_bytes, request.max_records, request.max_wait.total_seconds())
    ):
        # "maxBytes must be set to 0, … if isRenewAck is true.": a renewing request fetches nothing
        return _error_answer(ErrorCode.INVALID_REQUEST)
    host = _host(ctx)
    acknowledging = any(p.acknowledgement_batches for t in request.topics for p in t.partitions)
    requested = [
        (t.topic_id or uuid.UUID(int=0), int(p.partition_index)) for t in request.topics for p in t.partitions
    ]
    forgotten = [
        (t.topic_id or uuid.UUID(int=0), int(p)) for t in request.forgotten_topics_data for p in t.partitions
    ]
    epoch = int(request.share_session_epoch)
    try:
        context = host.sessions.new_context(
            group_id, member_id, epoch, requested, forgotten, acknowledging, ctx.connection
        )
    except SessionError as exc:
        return _error_answer(exc.code)

    acks: dict[tuple[uuid.UUID, int], tuple[int, str | None]] = {}
    if acknowledging:
        acks = await _acknowledge(ctx, group_id, member_id, request.topics, renew)

    fetched: dict[tuple[uuid.UUID, int], PartitionFetch] = {}
    names: dict[uuid.UUID, str] = {}
    if not context.final and not renew:  # v2 renewing acknowledgements: no fetch
        fetched = await _fetch(ctx, request, group_id, member_id, context.partitions, names)

    # the answer: per topic (in the order first named), the fetched partitions, then acknowledgements alone
    order: dict[uuid.UUID, dict[int, dict[str, Any]]] = {}
    leaders: set[int] = set()
    for (topic_id, index), result in fetched.items():
        if not context.full and not (result.error or result.acquired or (topic_id, index) in acks):
            continue
        entry = _partition_entry(index, result.error, result.error_message)
        if result.error == ErrorCode.NOT_LEADER_OR_FOLLOWER:
            entry["current_leader"] = _leader(ctx, names.get(topic_id, ""), index)
            leaders.add(entry["current_leader"]["leader_id"])
        entry["records"] = result.records
        entry["acquired_records"] = [
            {"first_offset": a.first_offset, "last_offset": a.last_offset, "delivery_count": a.delivery_count}
            for a in result.acquired
        ]
        order.setdefault(topic_id, {})[index] = entry
    for (topic_id, index), (code, message) in acks.items():
        found = order.setdefault(topic_id, {}).get(index)
        if found is None:
            found = order[topic_id][index] = _partition_entry(index, ErrorCode.NONE, None)
        entry = found
        entry["acknowledge_error_code"] = code
        entry["acknowledge_error_message"] = message
    if context.final:
        await host.close_session(group_id, member_id)
    return _answer(ctx, group_id, ((topic_id, parts.values()) for topic_id, parts in order.items()), leaders)


def _partition_entry(index: int, code: int, message: str | None) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": code,
        "error_message": message,
        "acknowledge_error_code": 0,
        "acknowledge_error_message": None,
        "current_leader": {"leader_id": -1, "leader_epoch": -1},
        "records": b"",
        "acquired_records": [],
    }


async def _fetch(
    ctx: RequestContext,
    request: Any,
    group_id: str,
    member_id: str,
    partitions: Sequence[tuple[uuid.UUID, int]],
    names: dict[uuid.UUID, str],
) -> dict[tuple[uuid.UUID, int], PartitionFetch]:
    """Acquire from the session's partitions, waiting up to ``max_wait`` while nothing is acquired."""
    host = _host(ctx)
    out: dict[tuple[uuid.UUID, int], PartitionFetch] = {}
    valid: list[tuple[uuid.UUID, str, int]] = []
    for topic_id, index in partitions:
        if topic_id not in names:
            names[topic_id] = _topic_name(ctx, topic_id)
        name = names[topic_id]
        code = _partition_error(ctx, name, index)
        if code != ErrorCode.NONE:
            out[(topic_id, index)] = PartitionFetch(code)
        else:
            out[(topic_id, index)] = PartitionFetch()
            valid.append((topic_id, name, index))
    if not valid:
        return out
    acquire = functools.partial(
        host.acquire,
        group_id,
        member_id,
        valid,
        max_bytes=int(request.max_bytes),
        max_records=int(request.max_records),
        batch_size=int(request.batch_size),
        record_limit=ctx.version >= 2 and int(getattr(request, "share_acquire_mode", 0)) == _RECORD_LIMIT,
    )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(0.0, request.max_wait.total_seconds())
    while True:
        released = host.released_event()
        waiter = FetchWaiter(
            1, {(name, index): 0x7FFFFFFF for _, name, index in valid}, {}, loop.create_future()
        )
        ctx.services.watch_appends(waiter)
        try:
            got = await acquire()
            # a share partition's own error (not initialised, …) does not end the wait, as in
            # Kafka's DelayedShareFetch: it is answered with the rest when the wait ends
            if any(r.acquired for r in got.values()) or loop.time() >= deadline:
                out.update(got)
                return out
            wake: asyncio.Future[Any] = asyncio.ensure_future(released.wait())
            try:
                pending: list[asyncio.Future[Any]] = [waiter.done, wake]
                await asyncio.wait(
                    pending, timeout=deadline - loop.time(), return_when=asyncio.FIRST_COMPLETED
                )
            finally:
                wake.cancel()
        finally:
            ctx.services.unwatch_appends(waiter)
        if loop.time() >= deadline:
            got = await acquire()
            out.update(got)
            return out


@register(ApiKey.SHARE_ACKNOWLEDGE, versions=(1, 2))
async def share_acknowledge(ctx: RequestContext, request: Any) -> dict[str, Any]:
    group_id = request.group_id
    if group_id is None:
        return _error_answer(ErrorCode.INVALID_REQUEST)
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, group_id):
        return _error_answer(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    member_id = request.member_id or ""
    if not 0 < len(member_id) <= _MAX_MEMBER_ID_CHARS:
        return _error_answer(ErrorCode.INVALID_REQUEST)
    host = _host(ctx)
    epoch = int(request.share_session_epoch)
    try:
        host.sessions.acknowledge_update(group_id, member_id, epoch)
    except SessionError as exc:
        return _error_answer(exc.code)
    renew = ctx.version >= 2 and bool(getattr(request, "is_renew_ack", False))
    acks = await _acknowledge(ctx, group_id, member_id, request.topics, renew)
    order: dict[uuid.UUID, list[dict[str, Any]]] = {}
    leaders: set[int] = set()
    for (topic_id, index), (code, message) in acks.items():
        entry: dict[str, Any] = {
            "partition_index": index,
            "error_code": code,
            "error_message": message,
            "current_leader": {"leader_id": -1, "leader_epoch": -1},
        }
        if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
            entry["current_leader"] = _leader(ctx, _topic_name(ctx, topic_id), index)
            leaders.add(entry["current_leader"]["leader_id"])
        order.setdefault(topic_id, []).append(entry)
    if epoch == FINAL_EPOCH:
        await host.close_session(group_id, member_id)
    return _answer(ctx, group_id, order.items(), leaders)
