"""The group APIs on the wire: kio requests → :mod:`kgroup.messages` → the coordinator → kio answers.

FindCoordinator is answered here (the cluster knows which broker leads the group's offsets-topic
partition); a group request at a broker that does not coordinate the group gets NOT_COORDINATOR, as
Kafka's does; everything else is the coordinator's decision.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, NamedTuple, TypeVar, cast

from kgroup.broker.answer_order import by_coordinator_partition
from kgroup.broker.cluster import OFFSETS_TOPIC
from kgroup.broker.coordinator_host import error_response
from kgroup.broker.dispatch import (
    LARGE_RESPONSE_ENTRIES,
    CloseConnection,
    LargeAnswer,
    RequestContext,
    register,
)
from kgroup.broker.handlers_txn import transaction_coordinator_of
from kgroup.broker.topic_acls import answer_with_denied_topics, any_topic_denied, split_offset_fetch
from kgroup.group.consumer.heartbeat import invalid_heartbeat_answer
from kgroup.group.discovery import coordinator_partition
from kgroup.group.records.serde import offset_commit_batch_bytes
from kgroup.group.txn_offsets import metadata_too_large
from kgroup.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribedConsumerGroup,
    DescribedShareGroup,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    Envelope,
    FindCoordinatorResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitPartition,
    OffsetCommitResponse,
    OffsetFetchPartition,
    OffsetFetchResponse,
    Request,
    Response,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    SyncGroupResponse,
)
from kgroup.model import ErrorCode, TopicPartition
from kgroup.security.acl import CLUSTER_NAME, OPERATIONS_OMITTED, AclOperation, ResourceType
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.apis import find_coordinator as find_coordinator_api
from kgroup.wire.apis import heartbeat as heartbeat_api
from kgroup.wire.apis import join_group as join_group_api
from kgroup.wire.apis import leave_group as leave_group_api
from kgroup.wire.apis import offset_commit as offset_commit_api
from kgroup.wire.apis import offset_fetch as offset_fetch_api
from kgroup.wire.apis import sync_group as sync_group_api
from kgroup.wire.apis._common import TopicIds
from kgroup.wire.apis.find_coordinator import FindCoordinatorBatchResponse, FoundCoordinator
from kgroup.wire.apis.offset_fetch import FetchedGroup, OffsetFetchBatchResponse
from kgroup.wire.consumer_group import (
    consumer_group_describe_request_from_wire,
    consumer_group_describe_response_to_wire,
    consumer_group_heartbeat_request_from_wire,
    consumer_group_heartbeat_response_to_wire,
)

__all__: list[str] = []

T = TypeVar("T")


def _group_denied(ctx: RequestContext, operation: AclOperation, group_id: str) -> bool:
    return not ctx.authorized(operation, ResourceType.GROUP, group_id)


#: for the other group handlers' modules (the share group's)
group_denied = _group_denied


def _topic_ids(ctx: RequestContext) -> TopicIds:
    """The cluster's topic ids, for the versions that name topics by id (OffsetCommit and
    OffsetFetch v10)."""
    cluster = ctx.services.cluster

    def name_of_id(topic_id: Any) -> str | None:
        info = cluster.topic_by_id(topic_id)
        return None if info is None else info.name

    def id_of_name(name: str) -> Any:
        info = cluster.topics.get(name)
        return None if info is None else info.topic_id

    return TopicIds(name_of_id, id_of_name)


#: for the transactional offset commit's handler (:mod:`kgroup.broker.handlers_txn_offsets`)
group_topic_ids = _topic_ids


async def _translate(ctx: RequestContext, large: bool, function: Callable[..., T], *args: Any) -> T:
    """``function(*args)``, a translation between the wire and typed messages: a large one runs in
    the broker's codec thread, so the event loop keeps answering other connections meanwhile."""
    if large:
        result: T = await ctx.services.off_loop(function, *args)
        return result
    return function(*args)


async def _coordinates(ctx: RequestContext, group_id: str) -> bool:
    """This node coordinates ``group_id``. A group request before any FindCoordinator makes the
    offsets topic first (off the loop) and is served (Kafka: NOT_COORDINATOR; docs/apache-kafka.md)."""
    cluster = ctx.services.cluster
    if OFFSETS_TOPIC not in cluster.topics:
        await ctx.services.make_offsets_topic()
    return cluster.coordinator_for(group_id) == ctx.node_id


async def call_coordinator(ctx: RequestContext, group_id: str, body: Request) -> Response:
    """The coordinator's answer, or NOT_COORDINATOR when another broker coordinates ``group_id``."""
    return await _call(ctx, group_id, body)


async def _call(ctx: RequestContext, group_id: str, body: Request) -> Response:
    """The coordinator's answer, or NOT_COORDINATOR when another broker coordinates ``group_id``."""
    coordinators = ctx.services.coordinators
    if not await _coordinates(ctx, group_id):
        return error_response(body, ErrorCode.NOT_COORDINATOR)
    envelope = Envelope(
        ctx.connection,
        ctx.header.correlation_id,
        body,
        ctx.header.client_id,
        ctx.client_host,
        ctx.version,
        ctx.principal,
    )
    return await coordinators.call(ctx.node_id, envelope)


@register(ApiKey.FIND_COORDINATOR, versions=(0, 6))
async def find_coordinator(ctx: RequestContext, request: Any) -> Any:
    """Each key's coordinator: the broker leading the group's ``__consumer_offsets`` partition, as the
    cluster sees it; a transactional id's: :func:`kgroup.broker.handlers_txn.transaction_coordinator_of`."""
    large = len(getattr(request, "coordinator_keys", ())) >= LARGE_RESPONSE_ENTRIES
    batch = await _translate(ctx, large, find_coordinator_api.request_from_wire, request)
    found = []
    for key in batch.keys:
        if ctx.pacer.due():
            await ctx.pacer.pause()
        found.append(_with_kafkas_message(await _coordinator_of(ctx, key, batch.key_type), ctx.version))
    response = FindCoordinatorBatchResponse(tuple(found))
    return await _translate(ctx, large, find_coordinator_api.response_to_wire, response, ctx.version)


#: ``Errors.message()`` of the codes FindCoordinator answers (before v4 Kafka sends it as the message)
_FIND_COORDINATOR_MESSAGES = {
    ErrorCode.NONE: "NONE",
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    ErrorCode.NOT_COORDINATOR: "This is not the correct coordinator.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
}
#: the first FindCoordinator version with a batch of keys (its entries' message is never set: "")
_FIND_COORDINATOR_BATCHED = 4


def _with_kafkas_message(found: FoundCoordinator, version: int) -> FoundCoordinator:
    """The message Kafka sends: before v4 its error's ``Errors.message()`` ("NONE" for none), from v4
    none (the field's default, "")."""
    if found.error_message is not None:
        return found
    if version >= _FIND_COORDINATOR_BATCHED:
        return replace(found, error_message="")
    return replace(found, error_message=_FIND_COORDINATOR_MESSAGES.get(found.response.error_code))


async def _coordinator_of(ctx: RequestContext, key: str, key_type: int) -> FoundCoordinator:
    if key_type == find_coordinator_api.TRANSACTION_KEY:
        return transaction_coordinator_of(ctx, key)
    if key_type != find_coordinator_api.GROUP_KEY:
        return FoundCoordinator(
            key,
            FindCoordinatorResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE),
            f"kgroup has no coordinator of key type {key_type}",
        )
    if _group_denied(ctx, AclOperation.DESCRIBE, key):
        return FoundCoordinator(key, FindCoordinatorResponse(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    services = ctx.services
    if OFFSETS_TOPIC not in services.cluster.topics:
        # KafkaApis.getCoordinator: the offsets topic is created by the first FindCoordinator that
        # finds none, which is answered COORDINATOR_NOT_AVAILABLE (the client asks again); made off
        # the loop, and answered once made, so the next FindCoordinator finds the coordinator
        await services.make_offsets_topic()
        return FoundCoordinator(key, FindCoordinatorResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    node = services.cluster.coordinator_for(key)
    host, ports = services.advertised(ctx.listener)
    if node < 0 or node not in ports:
        return FoundCoordinator(key, FindCoordinatorResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    return FoundCoordinator(key, FindCoordinatorResponse(ErrorCode.NONE, node, host, ports[node]))


#: a new member's id is its prefix (group instance id, else client id), "-" and a 36-character UUID
_MEMBER_ID_SUFFIX_BYTES = 1 + 36
#: the longest string Kafka's records (and kgroup's) carry: an int16 length
_MAX_RECORD_STRING_BYTES = 0x7FFF


def _member_id_too_long(ctx: RequestContext, request: Any) -> bool:
    """Whether the member id the coordinator would make cannot be written into a record.

    Kafka answers such a JoinGroup UNKNOWN_SERVER_ERROR (its write fails). The coordinator's own path
    (a record that cannot be encoded is rolled back) gives the same answer, but a rollback replays the
    whole coordinator log: refused here, a client repeating such joins costs nothing.
    """
    if request.member_id:
        return False
    instance = getattr(request, "group_instance_id", None)
    prefix = instance if instance is not None else ctx.header.client_id
    return len(prefix.encode("utf-8")) + _MEMBER_ID_SUFFIX_BYTES > _MAX_RECORD_STRING_BYTES


async def _membership_call(
    ctx: RequestContext, request: Any, api: Any, answer_type: type, refused: Any
) -> Any:
    """JoinGroup, SyncGroup, Heartbeat and LeaveGroup: the ``refused`` answer if there is one, else
    the request translated by its ``api`` module, the coordinator's answer, translated back."""
    if refused is not None:
        return api.response_to_wire(refused, ctx.version)
    body = api.request_from_wire(request)
    answer = await _call(ctx, body.group_id, body)
    assert isinstance(answer, answer_type)
    return api.response_to_wire(answer, ctx.version)


def _denied(ctx: RequestContext, request: Any) -> bool:
    return _group_denied(ctx, AclOperation.READ, request.group_id)


@register(ApiKey.JOIN_GROUP, versions=(0, 9))
async def join_group(ctx: RequestContext, request: Any) -> Any:
    denied = _denied(ctx, request)
    refused = None
    if denied or _member_id_too_long(ctx, request):
        code = ErrorCode.GROUP_AUTHORIZATION_FAILED if denied else ErrorCode.UNKNOWN_SERVER_ERROR
        refused = JoinGroupResponse(code, generation_id=-1)
    return await _membership_call(ctx, request, join_group_api, JoinGroupResponse, refused)


@register(ApiKey.SYNC_GROUP, versions=(0, 5))
async def sync_group(ctx: RequestContext, request: Any) -> Any:
    refused = SyncGroupResponse(ErrorCode.GROUP_AUTHORIZATION_FAILED) if _denied(ctx, request) else None
    return await _membership_call(ctx, request, sync_group_api, SyncGroupResponse, refused)


@register(ApiKey.HEARTBEAT, versions=(0, 4))
async def heartbeat(ctx: RequestContext, request: Any) -> Any:
    refused = HeartbeatResponse(ErrorCode.GROUP_AUTHORIZATION_FAILED) if _denied(ctx, request) else None
    return await _membership_call(ctx, request, heartbeat_api, HeartbeatResponse, refused)


@register(ApiKey.LEAVE_GROUP, versions=(0, 5))
async def leave_group(ctx: RequestContext, request: Any) -> Any:
    refused = LeaveGroupResponse(ErrorCode.GROUP_AUTHORIZATION_FAILED) if _denied(ctx, request) else None
    return await _membership_call(ctx, request, leave_group_api, LeaveGroupResponse, refused)


def commit_topic_refusal(
    ctx: RequestContext, topics: Mapping[str, Any], topic: str, topic_denied: dict[str, bool]
) -> ErrorCode | None:
    """What KafkaApis answers a topic of an OffsetCommit or TxnOffsetCommit itself, before the
    coordinator: an unknown topic id (before the topic's authorization), a topic the principal may not
    read (asked once per topic, remembered in ``topic_denied``), a topic the broker does not have;
    ``None`` for a topic whose partitions it looks at one by one."""
    denied = topic_denied.get(topic)
    if denied is None:
        denied = topic_denied[topic] = not ctx.authorized(AclOperation.READ, ResourceType.TOPIC, topic)
    if TopicIds.is_unknown(topic):
        return ErrorCode.UNKNOWN_TOPIC_ID
    if denied:
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if topic not in topics:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return None


def commit_partition_refusal(
    ctx: RequestContext, topics: Mapping[str, Any], tp: TopicPartition, topic_denied: dict[str, bool]
) -> ErrorCode | None:
    """What KafkaApis answers a partition of an OffsetCommit or TxnOffsetCommit itself: its topic's
    refusal (:func:`commit_topic_refusal`), else UNKNOWN_TOPIC_OR_PARTITION for a partition the topic
    does not have; ``None`` for a partition that goes on to the coordinator."""
    code = commit_topic_refusal(ctx, topics, tp.topic, topic_denied)
    if code is None and not 0 <= tp.partition < topics[tp.topic].partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return code


def commit_request_entries(
    ctx: RequestContext,
    topics: Mapping[str, Any],
    wire_topics: Sequence[Any],
    names: Sequence[str],
    topic_denied: dict[str, bool],
    whole: ErrorCode | None = None,
) -> list[CommitEntry]:
    """Each topic entry of an OffsetCommit or TxnOffsetCommit request as :func:`commit_answer_entries`
    reads it: its topic, its number of partitions and, for an entry without partitions, whether
    KafkaApis refuses its topic itself (then its answer has the entry, empty). With an error for the
    whole request (``whole``) no topic is looked at."""
    return [
        CommitEntry(
            name,
            len(t.partitions),
            whole is None
            and not t.partitions
            and commit_topic_refusal(ctx, topics, name, topic_denied) is not None,
        )
        for t, name in zip(wire_topics, names, strict=True)
    ]


@register(ApiKey.OFFSET_COMMIT, versions=(2, 10))  # v10 addresses topics by id
async def offset_commit(ctx: RequestContext, request: Any) -> Any:
    """Kafka's checks before the coordinator (``KafkaApis.handleOffsetCommitRequest``, then
    ``CoordinatorRuntime``'s batch limit), then the coordinator's answer for the partitions left.

    A partition of a topic the broker does not have gets UNKNOWN_TOPIC_OR_PARTITION (in v10, of a
    topic id it does not know: UNKNOWN_TOPIC_ID) and never reaches
    the coordinator; with none left the coordinator is not asked at all. A commit whose offset records
    would make a batch larger than the offsets topic's ``max.message.bytes`` is answered
    UNKNOWN_SERVER_ERROR for every partition before any state changes, as Kafka's runtime refuses it
    (``RecordTooLargeException``) before replaying the records. The answer has one entry per
    partition of the request, in its order, grouped by topic.
    """
    services, pacer = ctx.services, ctx.pacer
    large = sum(len(t.partitions) for t in request.topics) >= LARGE_RESPONSE_ENTRIES
    topic_ids = _topic_ids(ctx)
    body = await _translate(ctx, large, offset_commit_api.request_from_wire, request, topic_ids)
    topics = services.cluster.topics
    metadata_limit = services.coordinators.config.offset_metadata_max_bytes
    batch_limit = services.config.offsets_max_message_bytes
    codes: list[ErrorCode | None] = []  # per request partition; None marks one the coordinator answers
    candidates: list[OffsetCommitPartition] = []
    sized: list[tuple[str, str]] = []  # (topic, metadata) of each offset record a commit would write
    group_denied = _group_denied(ctx, AclOperation.READ, body.group_id)
    topic_denied: dict[str, bool] = {}
    for offset in body.offsets:
        tp = offset.partition
        code = (
            ErrorCode.GROUP_AUTHORIZATION_FAILED
            if group_denied
            else commit_partition_refusal(ctx, topics, tp, topic_denied)
        )
        codes.append(code)
        if code is None:
            candidates.append(offset)
            if len(sized) * _MIN_OFFSET_RECORD_BYTES <= batch_limit and not metadata_too_large(
                offset.committed_metadata, metadata_limit
            ):
                sized.append((tp.topic, offset.committed_metadata or ""))
        if pacer.due():
            await pacer.pause()
    answers: list[ErrorCode] = []
    whole: ErrorCode | None = ErrorCode.GROUP_AUTHORIZATION_FAILED if group_denied else None
    if not candidates:
        pass
    elif offset_commit_batch_bytes(body.group_id, sized, stop_above=batch_limit) > batch_limit:
        answers = [ErrorCode.UNKNOWN_SERVER_ERROR] * len(candidates)  # the coordinator's write failed
    else:
        answer = await _call(ctx, body.group_id, replace(body, offsets=tuple(candidates)))
        assert isinstance(answer, OffsetCommitResponse)
        answers = [code for _, code in answer.results]
    names = offset_commit_api.request_topic_names(request, topic_ids)
    requested = commit_request_entries(ctx, topics, request.topics, names, topic_denied, whole)
    entries = commit_answer_entries(body.offsets, requested, codes, answers, whole)
    return await _translate(
        ctx, large, offset_commit_api.entries_response_to_wire, entries, ctx.version, topic_ids
    )


class CommitEntry(NamedTuple):
    """One topic entry of an OffsetCommit or TxnOffsetCommit request."""

    topic: str
    size: int
    #: an entry without partitions whose topic KafkaApis refuses itself: answered, empty
    answered_empty: bool = False


def commit_answer_entries(
    offsets: Sequence[Any],
    entries: Sequence[CommitEntry],
    codes: Sequence[ErrorCode | None],
    answers: Sequence[ErrorCode],
    whole: ErrorCode | None,
) -> list[tuple[str, list[tuple[int, ErrorCode]]]]:
    """The topic entries of an OffsetCommit (or TxnOffsetCommit) answer, as ``KafkaApis`` lays them out:
    the request's partitions (``offsets``, ``entries`` giving each request topic entry's size), each
    answered aside (``codes``) or by the coordinator (``None``: the next of ``answers``). ``whole``: an
    error the request's own error answer gives every partition, in the request's entries, an entry
    without partitions too (``getErrorResponse``). Otherwise the answers given aside are collected by
    topic (the response builder's map; an entry without partitions whose topic is refused makes its
    topic's entry there, empty), and the coordinator's come in the entries they were asked in — each as
    it is when nothing was answered aside, else added to its topic's collected entry
    (``Builder.merge``). An entry without partitions of a topic that goes on to the coordinator is not
    answered."""
    named = iter(zip(offsets, codes, strict=True))
    requested = [(entry, [next(named) for _ in range(entry.size)]) for entry in entries]
    if whole is not None:
        return [
            (entry.topic, [(o.partition.partition, whole) for o, _ in asked]) for entry, asked in requested
        ]
    asked = iter(answers)
    aside: dict[str, list[tuple[int, ErrorCode]]] = {}
    coordinator: list[tuple[str, list[tuple[int, ErrorCode]]]] = []
    for entry, partitions in requested:
        if entry.answered_empty:
            aside.setdefault(entry.topic, [])
        kept: list[tuple[int, ErrorCode]] = []
        for offset, code in partitions:
            tp = offset.partition
            if code is None:
                kept.append((tp.partition, next(asked)))
            else:
                aside.setdefault(tp.topic, []).append((tp.partition, code))
        if kept:
            coordinator.append((entry.topic, kept))
    if not aside:
        return coordinator
    for topic, kept in coordinator:
        aside.setdefault(topic, []).extend(kept)
    return list(aside.items())


#: fewer bytes than the smallest offset record Kafka writes (1-byte group id and topic: 61 bytes):
#: once this many records times the limit are sized, the batch is known to be too large
_MIN_OFFSET_RECORD_BYTES = 50


@register(ApiKey.OFFSET_FETCH, versions=(1, 10))  # v10 addresses topics by id
async def offset_fetch(ctx: RequestContext, request: Any) -> Any:
    """Each group's committed offsets, from its coordinator (one group before v8, a batch from v8).

    v10 names topics by id (``KafkaApis.fetchOffsetsForGroup``): the partitions of an id the broker
    does not know are answered UNKNOWN_TOPIC_ID beside the coordinator's answer, and an answer of
    every committed offset leaves out the topics that no longer exist (they have no id to name them by).
    """
    topic_ids = _topic_ids(ctx)
    by_id = ctx.version >= offset_fetch_api.TOPIC_IDS
    batch = offset_fetch_api.request_from_wire(request, topic_ids)
    fetched = []
    refused_topics: list[set[str]] = []  # per group: its topics answered beside the coordinator's
    for group in batch.groups:
        refused_topics.append(set())
        if ctx.pacer.due():
            await ctx.pacer.pause()
        if batch.require_stable:
            group = replace(group, require_stable=True)
        if _group_denied(ctx, AclOperation.DESCRIBE, group.group_id):
            answer: Response = OffsetFetchResponse(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        else:
            unknown: tuple[OffsetFetchPartition, ...] = ()
            if by_id and group.partitions is not None:
                unknown = tuple(
                    OffsetFetchPartition(tp, -1, "", ErrorCode.UNKNOWN_TOPIC_ID)
                    for tp in group.partitions
                    if TopicIds.is_unknown(tp.topic)
                )
                if unknown:
                    known = tuple(tp for tp in group.partitions if not TopicIds.is_unknown(tp.topic))
                    group = replace(group, partitions=known)
            allowed, denied = split_offset_fetch(ctx, group)
            answer = await _call(ctx, group.group_id, allowed)
            assert isinstance(answer, OffsetFetchResponse)
            all_offsets = group.partitions is None
            refused_topics[-1].update(p.partition.topic for p in denied + unknown)
            answer = answer_with_denied_topics(ctx, answer, all_offsets=all_offsets, denied=denied + unknown)
            if by_id and all_offsets and answer.error_code == ErrorCode.NONE:
                named = tuple(
                    p for p in answer.partitions if p.partition.topic in ctx.services.cluster.topics
                )
                if len(named) != len(answer.partitions):
                    answer = replace(answer, partitions=named)
        assert isinstance(answer, OffsetFetchResponse)
        fetched.append(FetchedGroup(group.group_id, answer))
    large = sum(len(f.response.partitions) for f in fetched) >= LARGE_RESPONSE_ENTRIES
    response = OffsetFetchBatchResponse(tuple(fetched))
    requested = offset_fetch_api.request_entries(request, topic_ids)
    layouts = [
        fetch_answer_entries(wanted, f.response, refused)
        for wanted, f, refused in zip(requested, fetched, refused_topics, strict=True)
    ]
    to_wire = offset_fetch_api.entries_response_to_wire
    return await _translate(ctx, large, to_wire, response, layouts, ctx.version, topic_ids)


def fetch_answer_entries(
    wanted: list[tuple[str, list[int]]] | None, answer: OffsetFetchResponse, refused: set[str]
) -> list[tuple[str, list[OffsetFetchPartition]]] | None:
    """A group's OffsetFetch answer laid out as ``KafkaApis.fetchOffsetsForGroup`` lays it: the
    coordinator's answer in the entries the request named (a topic named twice answered twice), then
    the entries refused beside it (an unknown topic id, a topic the principal may not describe), each
    as it was named. ``None`` (grouped by topic) for every committed offset and after a group error."""
    if wanted is None or answer.error_code != ErrorCode.NONE:
        return None
    answered = {p.partition: p for p in answer.partitions}
    if any(TopicPartition(t, i) not in answered for t, indexes in wanted for i in indexes):
        return None  # (every partition asked is answered: grouped by topic, should one not be)
    entries = [(t, [answered[TopicPartition(t, i)] for i in indexes]) for t, indexes in wanted]
    return [e for e in entries if e[0] not in refused] + [e for e in entries if e[0] in refused]


@register(ApiKey.DESCRIBE_GROUPS, versions=(0, 6))  # v6: GROUP_ID_NOT_FOUND and a message (KIP-1043)
async def describe_groups(ctx: RequestContext, request: Any) -> dict[str, Any]:
    """As ``KafkaApis.handleDescribeGroupsRequest``: the groups the principal may not describe first,
    then the coordinator's answers, grouped by coordinator partition
    (:func:`~kgroup.broker.answer_order.by_coordinator_partition`); a group named twice is described
    twice. From v3 a group described without error says what the principal may do to it, if asked
    (``authorized_operations``)."""
    with_operations = ctx.version >= 3 and bool(request.include_authorized_operations)
    denied_ones: list[dict[str, Any]] = []
    allowed: list[str] = []
    for group_id in request.groups:
        if _group_denied(ctx, AclOperation.DESCRIBE, group_id):
            denied_ones.append(_described_error(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED))
        else:
            allowed.append(group_id)
    described = []
    for group_id in allowed:
        if ctx.pacer.due():
            await ctx.pacer.pause()
        if not await _coordinates(ctx, group_id):
            described.append(_described_error(group_id, ErrorCode.NOT_COORDINATOR))
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
                    "authorized_operations": ctx.authorized_operations(ResourceType.GROUP, g.group_id)
                    if with_operations and g.error_code == ErrorCode.NONE
                    else OPERATIONS_OMITTED,
                    "error_message": g.error_message,
                }
            )
    order = by_coordinator_partition(allowed, _partition_of(ctx), OFFSETS_TOPIC)
    return {"throttle_time": 0, "groups": denied_ones + [described[i] for i in order]}


def _partition_of(ctx: RequestContext) -> Callable[[str], int]:
    partitions = ctx.services.cluster.config.offsets_topic_partitions
    return lambda group_id: coordinator_partition(group_id, partitions)


def _described_error(group_id: str, code: ErrorCode) -> dict[str, Any]:
    return {
        "error_code": int(code),
        "group_id": group_id,
        "group_state": "",
        "protocol_type": "",
        "protocol_data": "",
        "members": [],
        "authorized_operations": OPERATIONS_OMITTED,
    }


@register(ApiKey.LIST_GROUPS, versions=(0, 5))
async def list_groups(ctx: RequestContext, request: Any) -> dict[str, Any]:
    states = tuple(getattr(request, "states_filter", ()))
    types = tuple(getattr(request, "types_filter", ()))
    envelope = Envelope(
        ctx.connection,
        ctx.header.correlation_id,
        ListGroupsRequest(states, types),
        ctx.header.client_id,
        ctx.client_host,
        ctx.version,
    )
    answer = await ctx.services.coordinators.call(ctx.node_id, envelope)
    assert isinstance(answer, ListGroupsResponse)
    groups = [
        {
            "group_id": g.group_id,
            "protocol_type": g.protocol_type,
            "group_state": g.group_state,
            "group_type": g.group_type,
        }
        for g in answer.groups
        # without DESCRIBE on the cluster, only the groups the principal may describe (KafkaApis)
        if ctx.authorized(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME)
        or not _group_denied(ctx, AclOperation.DESCRIBE, g.group_id)
    ]
    return {"throttle_time": 0, "error_code": int(answer.error_code), "groups": groups}


@register(ApiKey.DELETE_GROUPS, versions=(0, 3))  # v3: an error message per group (null: none)
async def delete_groups(ctx: RequestContext, request: Any) -> dict[str, Any]:
    """As ``KafkaApis.handleDeleteGroupsRequest``: each group once (``distinct``); the coordinator's
    answers grouped by coordinator partition (:func:`~kgroup.broker.answer_order.by_coordinator_partition`),
    then the groups the principal may not delete."""
    groups = list(dict.fromkeys(request.groups_names))
    allowed = [g for g in groups if not _group_denied(ctx, AclOperation.DELETE, g)]
    answered = []
    for group_id in allowed:
        if ctx.pacer.due():
            await ctx.pacer.pause()
        if not await _coordinates(ctx, group_id):
            code = ErrorCode.NOT_COORDINATOR
        else:
            code = await ctx.services.coordinators.delete_group(ctx.node_id, group_id)
        answered.append({"group_id": group_id, "error_code": int(code), "error_message": None})
    results = [answered[i] for i in by_coordinator_partition(allowed, _partition_of(ctx), OFFSETS_TOPIC)]
    kept = set(allowed)
    results += [
        {"group_id": g, "error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED), "error_message": None}
        for g in groups
        if g not in kept
    ]
    return {"throttle_time": 0, "results": results}


# --- the consumer protocol (KIP-848) ----------------------------------------------------------------


def _heartbeat_strings(body: ConsumerGroupHeartbeatRequest) -> Iterator[str | None]:
    yield from (body.group_id, body.member_id, body.instance_id, body.rack_id)
    yield from (body.subscribed_topic_regex, body.server_assignor)
    yield from body.subscribed_topic_names or ()


def _longer_than_kafka_reads(text: str) -> bool:
    return len(text) * 3 > _MAX_RECORD_STRING_BYTES and len(text.encode("utf-8")) > _MAX_RECORD_STRING_BYTES


def _read_heartbeat(request: Any) -> tuple[ConsumerGroupHeartbeatRequest, bool]:
    """The typed heartbeat, and whether a string of it is longer than Kafka reads (a pure function:
    a 100,000-name subscription is read in the codec thread)."""
    body = consumer_group_heartbeat_request_from_wire(request)
    unreadable = any(t is not None and _longer_than_kafka_reads(t) for t in _heartbeat_strings(body))
    names = body.subscribed_topic_names
    if names is not None and len(names) > 1:
        # a subscription is a set, written to the member's record sorted: sorted here, in the codec
        # thread for a large one, the coordinator only checks the order
        body = replace(body, subscribed_topic_names=tuple(dict.fromkeys(sorted(names))))
    return body, unreadable


@register(
    ApiKey.CONSUMER_GROUP_HEARTBEAT, versions=(0, 1)
)  # KIP-848; librdkafka's group.protocol=consumer needs v1
async def consumer_group_heartbeat(ctx: RequestContext, request: Any) -> Any:
    """``KafkaApis.handleConsumerGroupHeartbeat`` then ``GroupCoordinatorService``: the ACLs come
    first (READ group, DESCRIBE subscribed topics), then the request's own checks (INVALID_REQUEST,
    UNSUPPORTED_ASSIGNOR — at any broker), then the group's coordinator (NOT_COORDINATOR at another
    broker)."""
    large = len(getattr(request, "subscribed_topic_names", None) or ()) >= LARGE_RESPONSE_ENTRIES
    body, unreadable = await _translate(ctx, large, _read_heartbeat, request)
    if unreadable:
        # Kafka's generated parser refuses a string longer than Short.MAX_VALUE (the request cannot be
        # read: the connection is closed); such a string could not be written into a record either
        raise CloseConnection("ConsumerGroupHeartbeat: a string field is longer than 32767 bytes")
    answer: ConsumerGroupHeartbeatResponse | None = None
    if _group_denied(ctx, AclOperation.READ, body.group_id):
        # KafkaApis: READ on the group, before the request's own checks (the answer has no message)
        answer = ConsumerGroupHeartbeatResponse(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    elif await any_topic_denied(ctx, body.subscribed_topic_names):
        # KafkaApis: then DESCRIBE on every subscribed topic name (no message)
        answer = ConsumerGroupHeartbeatResponse(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    else:
        answer = invalid_heartbeat_answer(
            body, ctx.version, ctx.services.coordinators.config.consumer_assignors
        )
    if answer is None:
        response = await _call(ctx, body.group_id, body)
        assert isinstance(response, ConsumerGroupHeartbeatResponse)
        answer = response
    return consumer_group_heartbeat_response_to_wire(answer, ctx.version)


_Described = TypeVar("_Described", DescribedConsumerGroup, DescribedShareGroup)


async def describe_each_group(
    ctx: RequestContext,
    group_ids: Sequence[str],
    request_type: type[ConsumerGroupDescribeRequest | ShareGroupDescribeRequest],
    response_type: type[ConsumerGroupDescribeResponse | ShareGroupDescribeResponse],
    described_type: type[_Described],
    include_operations: bool = False,
) -> list[_Described]:
    """``KafkaApis.handleConsumerGroupDescribe`` / ``handleShareGroupDescribe`` and
    ``GroupCoordinatorService``: the groups the principal may not describe first
    (GROUP_AUTHORIZATION_FAILED: KafkaApis sets the group id and the error code only), then an empty
    group id's INVALID_GROUP_ID (with an empty id), then every other group's description — or
    NOT_COORDINATOR at another broker — grouped by coordinator partition
    (:func:`~kgroup.broker.answer_order.by_coordinator_partition`). With ``include_operations`` a group
    described without error says what the principal may do to it (``authorized_operations``)."""
    denied: list[_Described] = []
    invalid: list[_Described] = []
    asked: list[str] = []
    described: list[_Described] = []
    for group_id in group_ids:
        if ctx.pacer.due():
            await ctx.pacer.pause()
        if _group_denied(ctx, AclOperation.DESCRIBE, group_id):
            denied.append(described_type(ErrorCode.GROUP_AUTHORIZATION_FAILED, group_id))
            continue
        if not group_id:
            invalid.append(described_type(ErrorCode.INVALID_GROUP_ID, ""))
            continue
        answer = await _call(ctx, group_id, request_type((group_id,)))
        assert isinstance(answer, response_type)
        (one,) = cast("tuple[_Described, ...]", answer.groups)
        asked.append(group_id)
        described.append(one)
    if include_operations:
        described = [
            replace(one, authorized_operations=ctx.authorized_operations(ResourceType.GROUP, one.group_id))
            if one.error_code == ErrorCode.NONE
            else one
            for one in described
        ]
    order = by_coordinator_partition(asked, _partition_of(ctx), OFFSETS_TOPIC)
    return denied + invalid + [described[i] for i in order]


def described_answer(translate: Callable[[Any, int], Any], response: Any, version: int) -> Any:
    """A Consumer/ShareGroupDescribe answer: translated here, or, when its groups hold
    :data:`LARGE_RESPONSE_ENTRIES` members or more, translated and encoded in the codec thread."""
    if sum(len(g.members) for g in response.groups) >= LARGE_RESPONSE_ENTRIES:
        return LargeAnswer(translate, (response, version))
    return translate(response, version)


@register(ApiKey.CONSUMER_GROUP_DESCRIBE, versions=(0, 1))
async def consumer_group_describe(ctx: RequestContext, request: Any) -> Any:
    """``GroupCoordinatorService.consumerGroupDescribe`` (:func:`describe_each_group`)."""
    body = consumer_group_describe_request_from_wire(request)
    groups = await describe_each_group(
        ctx,
        body.group_ids,
        ConsumerGroupDescribeRequest,
        ConsumerGroupDescribeResponse,
        DescribedConsumerGroup,
        body.include_authorized_operations,
    )
    response = ConsumerGroupDescribeResponse(tuple(groups))
    return described_answer(consumer_group_describe_response_to_wire, response, ctx.version)
