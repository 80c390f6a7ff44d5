"""OffsetCommit and OffsetFetch for classic groups (Kafka's ``OffsetMetadataManager``, classic paths).

Committed offsets are :class:`~kgroup.group.records.OffsetCommitted` records: they live in the
group's state, survive every state change, and come back when the log is replayed.
"""

from __future__ import annotations

from kgroup.group.classic.group import GroupData
from kgroup.group.classic.rebalance import reschedule_heartbeat
from kgroup.group.records import GroupCreated, OffsetAndMetadata, OffsetCommitted
from kgroup.group.states import GroupState
from kgroup.group.txn import Txn
from kgroup.group.txn_offsets import metadata_too_large, pending_commits, stable_answer
from kgroup.messages import (
    Envelope,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from kgroup.model import ErrorCode, TopicPartition

__all__ = ["handle_offset_commit", "handle_offset_fetch", "handle_txn_offset_commit"]

S = GroupState

#: from OffsetCommit v9 a commit with a generation for a group that does not exist gets GROUP_ID_NOT_FOUND
_GROUP_ID_NOT_FOUND_VERSION = 9
#: from TxnOffsetCommit v6 (KIP-1319) the same, and STALE_MEMBER_EPOCH is answered as it is
TXN_GROUP_ID_NOT_FOUND_VERSION = 6


def _validate_commit(
    group: GroupData, req: OffsetCommitRequest | TxnOffsetCommitRequest, *, transactional: bool = False
) -> ErrorCode | None:
    """``ClassicGroup.validateOffsetCommit``; a TxnOffsetCommit (``transactional``) is not refused for
    a member-less commit to a group that is not Empty, nor while the group completes a rebalance."""
    if group.in_state(S.DEAD):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if req.generation_id < 0 and group.in_state(S.EMPTY):
        return None  # a "simple" commit: admin client or a consumer without group management
    if req.generation_id >= 0 or req.member_id or req.group_instance_id is not None:
        error = group.validate_member(req.member_id, req.group_instance_id)
        if error is not None:
            return error
        if req.generation_id != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
    elif not transactional and not group.in_state(S.EMPTY):
        return ErrorCode.UNKNOWN_MEMBER_ID
    if not transactional and group.in_state(S.COMPLETING_REBALANCE):
        # the member saw the new generation but has not synced: let it finish the rebalance first
        return ErrorCode.REBALANCE_IN_PROGRESS
    return None


def handle_txn_offset_commit(
    txn: Txn, groups: dict[str, GroupData], env: Envelope, req: TxnOffsetCommitRequest
) -> None:
    """``OffsetMetadataManager.commitTransactionalOffset`` for a classic group (or none yet): the
    offsets are written pending (:mod:`kgroup.group.txn_offsets`) until the transaction ends."""
    group = groups.get(req.group_id)
    if group is None:
        if req.generation_id >= 0:
            code = (
                ErrorCode.GROUP_ID_NOT_FOUND
                if env.api_version >= TXN_GROUP_ID_NOT_FOUND_VERSION
                else ErrorCode.ILLEGAL_GENERATION
            )
            body = TxnOffsetCommitResponse(tuple((p.partition, code) for p in req.offsets))
            txn.reply(env.connection, env.correlation_id, body)
            return
        txn.emit(GroupCreated(req.group_id, txn.now_ms))  # a "simple" group, created by the commit
        group = groups[req.group_id]
    error = _validate_commit(group, req, transactional=True)
    if error is not None:
        body = TxnOffsetCommitResponse(tuple((p.partition, error) for p in req.offsets))
        txn.reply(env.connection, env.correlation_id, body)
        return
    results, records = pending_commits(txn, group.group_id, req, req.offsets)
    for record in records:
        txn.emit(record)
    txn.reply(env.connection, env.correlation_id, TxnOffsetCommitResponse(tuple(results)))


def _answer_all(txn: Txn, env: Envelope, req: OffsetCommitRequest, error: ErrorCode) -> None:
    body = OffsetCommitResponse(tuple([(p.partition, error) for p in req.offsets]))
    txn.reply(env.connection, env.correlation_id, body)


def handle_offset_commit(
    txn: Txn, groups: dict[str, GroupData], env: Envelope, req: OffsetCommitRequest
) -> None:
    # the empty group id is a group like any other here (Kafka keeps it for old "simple consumer"
    # commits; only JoinGroup, SyncGroup, Heartbeat and LeaveGroup refuse it)
    group = groups.get(req.group_id)
    if group is None:
        if req.generation_id >= 0:
            # Kafka answers GROUP_ID_NOT_FOUND from OffsetCommit v9; older versions ILLEGAL_GENERATION
            if env.api_version >= _GROUP_ID_NOT_FOUND_VERSION:
                return _answer_all(txn, env, req, ErrorCode.GROUP_ID_NOT_FOUND)
            return _answer_all(txn, env, req, ErrorCode.ILLEGAL_GENERATION)
        txn.emit(GroupCreated(req.group_id, txn.now_ms))  # a "simple" group, created by the commit
        group = groups[req.group_id]
    error = _validate_commit(group, req)
    if error is not None:
        return _answer_all(txn, env, req, error)
    if (group.state is S.STABLE or group.state is S.PREPARING_REBALANCE) and req.member_id in group.members:
        # in the classic protocol an offset commit also keeps the member's session alive
        reschedule_heartbeat(txn, group, req.member_id)
    results: list[tuple[TopicPartition, ErrorCode]] = []
    committed: list[OffsetCommitted] = []
    now_ms, group_id = txn.now_ms, group.group_id
    max_bytes = txn.config.offset_metadata_max_bytes
    none = ErrorCode.NONE
    for entry in req.offsets:
        tp = entry.partition
        metadata = entry.committed_metadata
        # (a commit without metadata, the usual one, needs no look at its size)
        if metadata and metadata_too_large(metadata, max_bytes):
            results.append((tp, ErrorCode.OFFSET_METADATA_TOO_LARGE))
            continue
        epoch = entry.committed_leader_epoch
        value = OffsetAndMetadata(entry.committed_offset, epoch, metadata or "", now_ms)
        committed.append(OffsetCommitted(group_id, tp, value))
        results.append((tp, none))
    if committed:
        txn.emit_all_to(group, committed)
    txn.reply(env.connection, env.correlation_id, OffsetCommitResponse(tuple(results)))
    return None


def _fetched(group: GroupData | None, tp: TopicPartition) -> OffsetFetchPartition:
    value = None if group is None else group.offsets.get(tp)
    if value is None:
        return OffsetFetchPartition(tp, -1, "", ErrorCode.NONE, -1)
    return OffsetFetchPartition(tp, value.offset, value.metadata, ErrorCode.NONE, value.leader_epoch)


def handle_offset_fetch(
    txn: Txn, groups: dict[str, GroupData], env: Envelope, req: OffsetFetchRequest
) -> None:
    group = groups.get(req.group_id)
    if group is not None and group.in_state(S.DEAD):
        group = None  # a Dead group's offsets are not served: every partition reads as uncommitted
    if req.partitions is None:
        committed = [] if group is None else sorted(group.offsets, key=TopicPartition.java_key)
        partitions = tuple(_fetched(group, tp) for tp in committed)
    else:
        partitions = tuple(_fetched(group, tp) for tp in req.partitions)
    answer = stable_answer(txn, req, OffsetFetchResponse(ErrorCode.NONE, partitions))
    txn.reply(env.connection, env.correlation_id, answer)
