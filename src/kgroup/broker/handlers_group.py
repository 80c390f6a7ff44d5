"""The group APIs on the wire: kio requests → :mod:`kgroup.messages` → the coordinator → kio answers.

FindCoordinator is answered here (the cluster knows which broker leads the group's offsets-topic
partition); a group request at a broker that does not coordinate the group gets NOT_COORDINATOR, as
Kafka's does; everything else is the coordinator's decision.
"""

from __future__ import annotations

from typing import Any

from kgroup.broker.dispatch import RequestContext, register
from kgroup.broker.groups import error_response
from kgroup.messages import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    Envelope,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMember,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Request,
    Response,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kgroup.model import ErrorCode, TopicPartition

__all__: list[str] = []

GROUP_KEY = 0
COORDINATOR_NOT_AVAILABLE = 15
INVALID_REQUEST = 42
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


def _ms(value: Any) -> int:
    return int(value.total_seconds() * 1000)


async def _call(ctx: RequestContext, group_id: str, body: Request) -> Response:
    """The coordinator's answer, or NOT_COORDINATOR when another broker coordinates ``group_id``."""
    groups = ctx.broker.groups
    if ctx.broker.cluster.coordinator_for(group_id) != ctx.node_id:
        return error_response(body, ErrorCode.NOT_COORDINATOR)
    envelope = Envelope(
        ctx.connection, ctx.header.correlation_id, body, ctx.header.client_id, ctx.client_host, ctx.version
    )
    return await groups.call(ctx.node_id, envelope)


@register(10)
async def find_coordinator(ctx: RequestContext, request: Any) -> dict[str, Any]:
    broker = ctx.broker
    keys = list(request.coordinator_keys) if ctx.version >= 4 else [request.key]
    key_type = int(getattr(request, "key_type", GROUP_KEY))
    coordinators = []
    for key in keys:
        if key_type != GROUP_KEY:  # no transactions in kgroup
            entry = {
                "key": key,
                "node_id": -1,
                "host": "",
                "port": -1,
                "error_code": COORDINATOR_NOT_AVAILABLE,
                "error_message": "kgroup has no transaction coordinator",
            }
        else:
            node = broker.cluster.coordinator_for(key)
            if node < 0 or node not in broker.ports:
                entry = {
                    "key": key,
                    "node_id": -1,
                    "host": "",
                    "port": -1,
                    "error_code": COORDINATOR_NOT_AVAILABLE,
                    "error_message": None,
                }
            else:
                entry = {
                    "key": key,
                    "node_id": node,
                    "host": broker.config.host,
                    "port": broker.ports[node],
                    "error_code": 0,
                    "error_message": None,
                }
        coordinators.append(entry)
    if ctx.version >= 4:
        return {"throttle_time": 0, "coordinators": coordinators}
    return {"throttle_time": 0, **coordinators[0]}


@register(11)
async def join_group(ctx: RequestContext, request: Any) -> dict[str, Any]:
    session = _ms(request.session_timeout)
    # JoinGroup v0 has no rebalance timeout: Kafka uses the session timeout
    rebalance = _ms(request.rebalance_timeout) if hasattr(request, "rebalance_timeout") else session
    body = JoinGroupRequest(
        group_id=request.group_id,
        session_timeout_ms=session,
        rebalance_timeout_ms=rebalance,
        member_id=request.member_id,
        protocols=tuple(JoinGroupProtocol(p.name, bytes(p.metadata)) for p in request.protocols),
        group_instance_id=getattr(request, "group_instance_id", None),
        protocol_type=request.protocol_type,
        reason=getattr(request, "reason", None),
    )
    answer = await _call(ctx, request.group_id, body)
    assert isinstance(answer, JoinGroupResponse)
    return {
        "throttle_time": 0,
        "error_code": int(answer.error_code),
        "generation_id": answer.generation_id,
        "protocol_type": answer.protocol_type,
        # before v7 the protocol name is not nullable
        "protocol_name": answer.protocol_name if ctx.version >= 7 else (answer.protocol_name or ""),
        "leader": answer.leader,
        "skip_assignment": answer.skip_assignment,
        "member_id": answer.member_id,
        "members": [
            {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "metadata": m.metadata}
            for m in answer.members
        ],
    }


@register(14)
async def sync_group(ctx: RequestContext, request: Any) -> dict[str, Any]:
    body = SyncGroupRequest(
        group_id=request.group_id,
        generation_id=int(request.generation_id),
        member_id=request.member_id,
        assignments=tuple(SyncGroupAssignment(a.member_id, bytes(a.assignment)) for a in request.assignments),
        group_instance_id=getattr(request, "group_instance_id", None),
        protocol_type=getattr(request, "protocol_type", None),
        protocol_name=getattr(request, "protocol_name", None),
    )
    answer = await _call(ctx, request.group_id, body)
    assert isinstance(answer, SyncGroupResponse)
    return {
        "throttle_time": 0,
        "error_code": int(answer.error_code),
        "protocol_type": answer.protocol_type,
        "protocol_name": answer.protocol_name,
        "assignment": answer.assignment,
    }


@register(12)
async def heartbeat(ctx: RequestContext, request: Any) -> dict[str, Any]:
    body = HeartbeatRequest(
        request.group_id,
        int(request.generation_id),
        request.member_id,
        getattr(request, "group_instance_id", None),
    )
    answer = await _call(ctx, request.group_id, body)
    assert isinstance(answer, HeartbeatResponse)
    return {"throttle_time": 0, "error_code": int(answer.error_code)}


@register(13)
async def leave_group(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if ctx.version >= 3:
        members = tuple(
            LeaveGroupMember(m.member_id, m.group_instance_id, getattr(m, "reason", None))
            for m in request.members
        )
    else:
        members = (LeaveGroupMember(request.member_id),)
    answer = await _call(ctx, request.group_id, LeaveGroupRequest(request.group_id, members))
    assert isinstance(answer, LeaveGroupResponse)
    code = int(answer.error_code)
    if ctx.version < 3 and code == 0 and answer.members:
        code = int(answer.members[0].error_code)  # v0-v2: one member, its error is the answer's
    return {
        "throttle_time": 0,
        "error_code": code,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "error_code": int(m.error_code),
            }
            for m in answer.members
        ],
    }


@register(8)
async def offset_commit(ctx: RequestContext, request: Any) -> dict[str, Any]:
    topics: dict[str, list[dict[str, int]]] = {}
    cluster = ctx.broker.cluster
    offsets: list[OffsetCommitPartition] = []
    for topic in request.topics:
        info = cluster.topics.get(topic.name)
        for p in topic.partitions:
            index = int(p.partition_index)
            if info is None or not 0 <= index < info.partitions:
                # KafkaApis answers a partition it has no metadata for itself; the rest go to the coordinator
                topics.setdefault(topic.name, []).append(
                    {"partition_index": index, "error_code": int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)}
                )
                continue
            offsets.append(
                OffsetCommitPartition(
                    TopicPartition(topic.name, index),
                    int(p.committed_offset),
                    p.committed_metadata,
                    int(getattr(p, "committed_leader_epoch", -1)),
                )
            )
    if not offsets:
        return {"throttle_time": 0, "topics": [{"name": n, "partitions": p} for n, p in topics.items()]}
    body = OffsetCommitRequest(
        group_id=request.group_id,
        generation_id=int(request.generation_id_or_member_epoch),
        member_id=request.member_id,
        offsets=tuple(offsets),
        group_instance_id=getattr(request, "group_instance_id", None),
    )
    answer = await _call(ctx, request.group_id, body)
    assert isinstance(answer, OffsetCommitResponse)
    for tp, code in answer.results:
        topics.setdefault(tp.topic, []).append({"partition_index": tp.partition, "error_code": int(code)})
    return {"throttle_time": 0, "topics": [{"name": n, "partitions": p} for n, p in topics.items()]}


async def _fetch_group(ctx: RequestContext, group_id: str, topics: Any) -> OffsetFetchResponse:
    partitions = None
    if topics is not None:
        partitions = tuple(TopicPartition(t.name, int(p)) for t in topics for p in t.partition_indexes)
    answer = await _call(ctx, group_id, OffsetFetchRequest(group_id, partitions))
    assert isinstance(answer, OffsetFetchResponse)
    return answer


def _offset_topics(answer: OffsetFetchResponse) -> list[dict[str, Any]]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for p in answer.partitions:
        topics.setdefault(p.partition.topic, []).append(
            {
                "partition_index": p.partition.partition,
                "committed_offset": p.committed_offset,
                "committed_leader_epoch": p.committed_leader_epoch,
                "metadata": p.metadata,
                "error_code": int(p.error_code),
            }
        )
    return [{"name": name, "partitions": parts} for name, parts in topics.items()]


@register(9)
async def offset_fetch(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if ctx.version >= 8:
        groups = []
        for group in request.groups:
            answer = await _fetch_group(ctx, group.group_id, group.topics)
            groups.append(
                {
                    "group_id": group.group_id,
                    "topics": _offset_topics(answer),
                    "error_code": int(answer.error_code),
                }
            )
        return {"throttle_time": 0, "groups": groups}
    answer = await _fetch_group(ctx, request.group_id, request.topics)
    return {"throttle_time": 0, "topics": _offset_topics(answer), "error_code": int(answer.error_code)}


@register(15)
async def describe_groups(ctx: RequestContext, request: Any) -> dict[str, Any]:
    described = []
    for group_id in request.groups:
        if ctx.broker.cluster.coordinator_for(group_id) != ctx.node_id:
            described.append(
                {
                    "error_code": int(ErrorCode.NOT_COORDINATOR),
                    "group_id": group_id,
                    "group_state": "",
                    "protocol_type": "",
                    "protocol_data": "",
                    "members": [],
                    "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
                }
            )
            continue
        answer = await _call(ctx, group_id, DescribeGroupsRequest((group_id,)))
        assert isinstance(answer, DescribeGroupsResponse)
        for g in answer.groups:
            described.append(
                {
                    "error_code": int(g.error_code),
                    "group_id": g.group_id,
                    "group_state": g.group_state,
                    "protocol_type": g.protocol_type,
                    "protocol_data": g.protocol_data,
                    "members": [
                        {
                            "member_id": m.member_id,
                            "group_instance_id": m.group_instance_id,
                            "client_id": m.client_id,
                            "client_host": m.client_host,
                            "member_metadata": m.metadata,
                            "member_assignment": m.assignment,
                        }
                        for m in g.members
                    ],
                    "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
                }
            )
    return {"throttle_time": 0, "groups": described}


@register(16)
async def list_groups(ctx: RequestContext, request: Any) -> dict[str, Any]:
    states = tuple(getattr(request, "states_filter", ()))
    types = set(getattr(request, "types_filter", ()))
    envelope = Envelope(
        ctx.connection,
        ctx.header.correlation_id,
        ListGroupsRequest(states),
        ctx.header.client_id,
        ctx.client_host,
        ctx.version,
    )
    answer = await ctx.broker.groups.call(ctx.node_id, envelope)
    assert isinstance(answer, ListGroupsResponse)
    groups = [
        {
            "group_id": g.group_id,
            "protocol_type": g.protocol_type,
            "group_state": g.group_state,
            "group_type": "classic",
        }
        for g in answer.groups
        if not types or "classic" in {t.lower() for t in types}
    ]
    return {"throttle_time": 0, "error_code": int(answer.error_code), "groups": groups}


@register(42)
async def delete_groups(ctx: RequestContext, request: Any) -> dict[str, Any]:
    results = []
    for group_id in request.groups_names:
        if ctx.broker.cluster.coordinator_for(group_id) != ctx.node_id:
            code = ErrorCode.NOT_COORDINATOR
        else:
            code = ctx.broker.groups.delete_group(ctx.node_id, group_id)
        results.append({"group_id": group_id, "error_code": int(code)})
    return {"throttle_time": 0, "results": results}
