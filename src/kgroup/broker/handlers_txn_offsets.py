"""TxnOffsetCommit (API 28) on ``kgroup serve``, as Apache Kafka 4.4.0's ``KafkaApis`` and
``GroupCoordinatorService`` answer it; the group side of a transaction.

In Kafka's order: the transactional id's WRITE ACL (``TRANSACTIONAL_ID_AUTHORIZATION_FAILED`` for every
partition), the group's READ ACL (``GROUP_AUTHORIZATION_FAILED``), then per topic its READ ACL
(``TOPIC_AUTHORIZATION_FAILED``) and whether it and each partition exist (``UNKNOWN_TOPIC_OR_PARTITION``;
v6 names topics by id: an id the broker does not know is ``UNKNOWN_TOPIC_ID``). The partitions left go to
the group's coordinator: an empty group id is ``INVALID_GROUP_ID``, another broker's group
``NOT_COORDINATOR``, a coordinator still loading ``COORDINATOR_LOAD_IN_PROGRESS``
(``COORDINATOR_NOT_AVAILABLE`` before v2, as KafkaApis rewrites it for clients older than KAFKA-7296).
Before the coordinator writes, the producer's transaction is checked (Kafka's
``scheduleTransactionalWriteOperation``, KIP-890): from v5 (a transactions-v2 client) the group's
``__consumer_offsets`` partition is added to the transaction, before v5 it must already be in it
(AddOffsetsToTxn). The coordinator then checks the group, member and generation or member epoch
(:mod:`kgroup.group.classic.offsets`, :mod:`kgroup.group.consumer.requests`) and writes the offsets
pending (:mod:`kgroup.group.txn_offsets`) until the transaction's marker.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kgroup.broker.dispatch import RequestContext, register
from kgroup.broker.handlers_group import (
    call_coordinator,
    commit_answer_entries,
    commit_partition_refusal,
    commit_request_entries,
    group_topic_ids,
)
from kgroup.broker.txn_host import TransactionHost, verification_error
from kgroup.group.discovery import coordinator_partition
from kgroup.group.records.serde import offset_commit_batch_bytes
from kgroup.group.txn_offsets import metadata_too_large
from kgroup.messages import OffsetCommitPartition, TxnOffsetCommitRequest, TxnOffsetCommitResponse
from kgroup.model import ErrorCode, TopicPartition
from kgroup.security.acl import AclOperation, ResourceType
from kgroup.transactions import api
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.apis import txn_offset_commit as txn_offset_commit_api

__all__: list[str] = []

OFFSETS_TOPIC = "__consumer_offsets"
#: TxnOffsetCommit v5+ comes from a transactions-v2 client: the coordinator adds the partition itself
_ADD_PARTITION_VERSION = 5
#: v4 knows TRANSACTION_ABORTABLE (KIP-890)
_ABORTABLE_VERSION = 4
#: before v2 COORDINATOR_LOAD_IN_PROGRESS is answered COORDINATOR_NOT_AVAILABLE (KAFKA-7296)
_LOAD_IN_PROGRESS_VERSION = 2


async def _verify(ctx: RequestContext, body: TxnOffsetCommitRequest) -> ErrorCode:
    """The transaction check before the coordinator writes (Kafka's partition writer verifying with
    the transaction coordinator, ``AddPartitionsToTxnManager``'s errors as the group coordinator's
    runtime maps them)."""
    host: TransactionHost = ctx.services.transactions
    if host.coordinator_node(body.transactional_id) < 0:
        # no __transaction_state (or no leader of the id's partition): the verification finds no
        # transaction coordinator (AddPartitionsToTxnManager), which the runtime answers so
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    partitions = ctx.services.cluster.config.offsets_topic_partitions
    error = await host.verify_partition(
        api.TransactionalProducer(body.transactional_id, body.producer_id, body.producer_epoch),
        TopicPartition(OFFSETS_TOPIC, coordinator_partition(body.group_id, partitions)),
        add=ctx.version >= _ADD_PARTITION_VERSION,
    )
    error = verification_error(error, abortable=ctx.version >= _ABORTABLE_VERSION)
    # the runtime answers the partition writer's NOT_ENOUGH_REPLICAS COORDINATOR_NOT_AVAILABLE
    return ErrorCode.COORDINATOR_NOT_AVAILABLE if error is ErrorCode.NOT_ENOUGH_REPLICAS else error


@register(ApiKey.TXN_OFFSET_COMMIT, versions=(0, 6))
async def txn_offset_commit(ctx: RequestContext, request: Any) -> Any:
    topic_ids = group_topic_ids(ctx)
    body = txn_offset_commit_api.request_from_wire(request, topic_ids)

    names = txn_offset_commit_api.request_topic_names(request, topic_ids)
    topics = ctx.services.cluster.topics
    denied: dict[str, bool] = {}

    def answer(codes: list[ErrorCode | None], asked: list[ErrorCode], whole: ErrorCode | None = None) -> Any:
        requested = commit_request_entries(ctx, topics, request.topics, names, denied, whole)
        entries = commit_answer_entries(body.offsets, requested, codes, asked, whole)
        if ctx.version < _LOAD_IN_PROGRESS_VERSION:
            entries = [
                (topic, [(p, _before_load_in_progress(c)) for p, c in parts]) for topic, parts in entries
            ]
        return txn_offset_commit_api.entries_response_to_wire(entries, ctx.version, topic_ids)

    def every(code: ErrorCode) -> Any:  # the request's own error answer (getErrorResponse)
        return answer([code] * len(body.offsets), [], code)

    if not ctx.authorized(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id):
        return every(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, body.group_id):
        return every(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    codes: list[ErrorCode | None] = []
    candidates = []
    for offset in body.offsets:
        code = commit_partition_refusal(ctx, topics, offset.partition, denied)
        codes.append(code)
        if code is None:
            candidates.append(offset)
        if ctx.pacer.due():
            await ctx.pacer.pause()
    asked: list[ErrorCode] = []
    if candidates:
        allowed = replace(body, offsets=tuple(candidates))
        error = _precheck(ctx, body)
        if error is ErrorCode.NONE and _too_large(ctx, body.group_id, candidates):
            error = ErrorCode.UNKNOWN_SERVER_ERROR
        if error is ErrorCode.NONE:
            error = await _verify(ctx, body)
        if error is not ErrorCode.NONE:
            asked = [error] * len(candidates)
        else:
            coordinated = await call_coordinator(ctx, body.group_id, allowed)
            assert isinstance(coordinated, TxnOffsetCommitResponse)
            asked = [code for _, code in coordinated.results]
    # Kafka's answer builder: the broker's own errors collected by topic, the coordinator's answers in
    # the entries they were asked in, merged into those (commit_answer_entries)
    return answer(codes, asked)


def _before_load_in_progress(code: ErrorCode) -> ErrorCode:
    """TxnOffsetCommit before v4 knows no COORDINATOR_LOAD_IN_PROGRESS: COORDINATOR_NOT_AVAILABLE."""
    return ErrorCode.COORDINATOR_NOT_AVAILABLE if code is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS else code


def _too_large(ctx: RequestContext, group_id: str, offsets: list[OffsetCommitPartition]) -> bool:
    """Whether the offset records would make a batch larger than the offsets topic's
    ``max.message.bytes``: Kafka's runtime refuses such a write (``RecordTooLargeException``,
    answered UNKNOWN_SERVER_ERROR) before any state changes, as for OffsetCommit."""
    limit = ctx.services.config.offsets_max_message_bytes
    metadata_limit = ctx.services.coordinators.config.offset_metadata_max_bytes
    sized = [
        (o.partition.topic, o.committed_metadata or "")
        for o in offsets
        if not metadata_too_large(o.committed_metadata, metadata_limit)
    ]
    return offset_commit_batch_bytes(group_id, sized, stop_above=limit) > limit


def _precheck(ctx: RequestContext, body: TxnOffsetCommitRequest) -> ErrorCode:
    """``GroupCoordinatorService``'s checks before the operation: the group id, then whether this
    node coordinates the group and has loaded it."""
    if not body.group_id:
        return ErrorCode.INVALID_GROUP_ID
    coordinators = ctx.services.coordinators
    if ctx.services.cluster.coordinator_for(body.group_id) != ctx.node_id:
        return ErrorCode.NOT_COORDINATOR
    if not coordinators.loaded:
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    return ErrorCode.NONE
