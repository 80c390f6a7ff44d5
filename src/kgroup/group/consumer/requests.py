"""The other requests a consumer group answers: ConsumerGroupDescribe, OffsetCommit/OffsetFetch with
member epochs, the classic protocol's requests sent to a consumer group id, ListGroups entries and
DeleteGroups — as Kafka 4.4's ``ConsumerGroup`` / ``OffsetMetadataManager`` answer them."""

from __future__ import annotations

from collections.abc import Callable

from kgroup.group.admin import described_groups, described_topics
from kgroup.group.consumer.context import ConsumerContext
from kgroup.group.consumer.group import ConsumerGroupData, ConsumerGroupState
from kgroup.group.consumer.member import ConsumerGroupMember
from kgroup.group.consumer.timers import SessionTimer
from kgroup.group.errors import ApiError
from kgroup.group.metadata import MetadataImage
from kgroup.group.records import GroupDeleted, OffsetAndMetadata, OffsetCommitted
from kgroup.group.records.consumer import TopicAssignment
from kgroup.group.txn import Txn
from kgroup.group.txn_offsets import metadata_too_large, pending_commits, stable_answer
from kgroup.javacompat import hash_set_order, java_string_hash
from kgroup.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedConsumerGroup,
    DescribedConsumerMember,
    DescribedTopicPartitions,
    Envelope,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from kgroup.model import ErrorCode, TopicId, TopicPartition

__all__ = [
    "delete_consumer_group",
    "handle_consumer_describe",
    "handle_consumer_offset_commit",
    "handle_consumer_offset_fetch",
    "handle_consumer_txn_offset_commit",
]

#: the version from which OffsetCommit must carry a member epoch for consumer-protocol members
_MEMBER_EPOCH_COMMIT_VERSION = 9


# --- ConsumerGroupDescribe ---------------------------------------------------------------------------


#: the target of a member without one (``DescribedMembers`` hands ``None`` for it)
_NO_TARGET: TopicAssignment = {}
_DescribedEntry = tuple[ConsumerGroupMember, TopicAssignment | None, MetadataImage, DescribedConsumerMember]


def _described_names(member: ConsumerGroupMember) -> tuple[str, ...]:
    # the member's names are a ``HashSet<String>``: Kafka lists them in its iteration order
    return hash_set_order(java_string_hash, member.sorted_topic_names())


def _described_owned(
    member: ConsumerGroupMember, image: MetadataImage
) -> tuple[DescribedTopicPartitions, ...]:
    owned: dict[TopicId, frozenset[int]] = {}
    for source in (member.assigned_partitions, member.partitions_pending_revocation):
        for topic, partitions in source.items():
            owned[topic] = owned.get(topic, frozenset()) | frozenset(partitions)
    return described_topics(owned, image)


def _described_target(target: TopicAssignment, image: MetadataImage) -> tuple[DescribedTopicPartitions, ...]:
    return described_topics({t: frozenset(p) for t, p in target.items()}, image)


def _describe_member(
    member: ConsumerGroupMember, target: TopicAssignment | None, image: MetadataImage
) -> DescribedConsumerMember:
    """A member as ConsumerGroupDescribe lists it (``ConsumerGroupMember.asConsumerGroupDescribeMember``),
    with its ``target`` assignment (``None``: it has none), built anew."""
    return _described(
        member,
        _described_names(member),
        _described_owned(member, image),
        _described_target(target or _NO_TARGET, image),
    )


def _described(
    member: ConsumerGroupMember,
    names: tuple[str, ...],
    owned: tuple[DescribedTopicPartitions, ...],
    target: tuple[DescribedTopicPartitions, ...],
) -> DescribedConsumerMember:
    return DescribedConsumerMember(
        member_id=member.member_id,
        instance_id=member.instance_id,
        rack_id=member.rack_id,
        member_epoch=member.member_epoch,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=names,
        subscribed_topic_regex=member.subscribed_topic_regex,
        assignment=owned,
        target_assignment=target,
        member_type=0 if member.uses_classic_protocol else 1,
    )


def _describe_again(
    member: ConsumerGroupMember,
    target: TopicAssignment | None,
    image: MetadataImage,
    previous: _DescribedEntry | None,
) -> DescribedConsumerMember:
    """:func:`_describe_member`, reusing the parts of the member's ``previous`` description built from
    the same objects: a heartbeat that rewrites a member (its epoch, its client id) usually leaves its
    partitions' maps, its target and its names as they were."""
    if previous is None:
        return _describe_member(member, target, image)
    old_member, old_target, old_image, old = previous
    same_image = old_image is image
    if (
        same_image
        and old_member.assigned_partitions is member.assigned_partitions
        and old_member.partitions_pending_revocation is member.partitions_pending_revocation
    ):
        owned = old.assignment
    else:
        owned = _described_owned(member, image)
    if same_image and old_target is target:
        described_target = old.target_assignment
    else:
        described_target = _described_target(target or _NO_TARGET, image)
    if old_member.subscribed_topic_names == member.subscribed_topic_names:
        names = old.subscribed_topic_names
    else:
        names = _described_names(member)
    return _described(member, names, owned, described_target)


def handle_consumer_describe(
    txn: Txn, env: Envelope, req: ConsumerGroupDescribeRequest, ctx: ConsumerContext
) -> None:
    default_assignor = txn.config.consumer_assignors[0]
    described = described_groups(
        req.group_ids,
        ctx.groups,
        kind="consumer",
        owned_elsewhere=lambda group_id: group_id in ctx.classic.groups or ctx.owned_elsewhere(group_id),
        described_type=DescribedConsumerGroup,
        assignor=lambda group: group.preferred_server_assignor() or default_assignor,
        members=lambda group: group.described_members.describe(
            group.members, group.members, group.target_assignment, ctx.image, _describe_again
        ),
    )
    txn.reply(env.connection, env.correlation_id, ConsumerGroupDescribeResponse(described))


# --- ListGroups / DeleteGroups -----------------------------------------------------------------------


def delete_consumer_group(txn: Txn, group: ConsumerGroupData, *, keep_offsets: bool = False) -> ErrorCode:
    """DeleteGroups of a consumer group: only an Empty one (``validateDeleteGroup``); Kafka's tombstones
    for its records (``createGroupTombstoneRecords``), and its offsets with it unless ``keep_offsets``
    (an empty consumer group that a JoinGroup turns into a classic group)."""
    if group.state is not ConsumerGroupState.EMPTY:
        return ErrorCode.NON_EMPTY_GROUP
    group_id = group.group_id
    txn.cancel_group_timers(group_id)
    for record in group.tombstone_records():
        txn.emit(record)
    if not keep_offsets:
        txn.emit(GroupDeleted(group_id))
    return ErrorCode.NONE


# --- offsets -----------------------------------------------------------------------------------------------


def _validate_commit(
    group: ConsumerGroupData,
    req: OffsetCommitRequest | TxnOffsetCommitRequest,
    version: int,
    *,
    transactional: bool = False,
) -> Callable[[TopicPartition, TopicId | None], None] | None:
    """``ConsumerGroup.validateOffsetCommit``: ``None`` when every partition may be committed, else a
    per-partition check (raising :class:`ApiError`) against the epoch each partition was assigned at.
    A TxnOffsetCommit (``transactional``) with no member (epoch -1, no member or instance id) passes,
    and needs no version."""
    epoch = req.generation_id
    if epoch < 0 and not group.members:
        return None
    if transactional and epoch == -1 and not req.member_id and req.group_instance_id is None:
        return None
    member = group.members.get(req.member_id)
    if member is None:
        raise ApiError(
            ErrorCode.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a member of group {group.group_id}."
        )
    classic = member.uses_classic_protocol
    if not transactional and not classic and version < _MEMBER_EPOCH_COMMIT_VERSION:
        raise ApiError(
            ErrorCode.UNSUPPORTED_VERSION,
            "OffsetCommit version 9 or above must be used by members using the consumer group protocol",
        )
    if epoch == member.member_epoch:
        return None
    stale = ErrorCode.ILLEGAL_GENERATION if classic else ErrorCode.STALE_MEMBER_EPOCH
    if epoch > member.member_epoch:
        raise ApiError(
            stale, f"Received member epoch {epoch} is newer than current member epoch {member.member_epoch}."
        )

    def check(partition: TopicPartition, topic_id: TopicId | None) -> None:
        assigned_at = None
        if topic_id is not None:
            assigned_at = member.assignment_epoch(topic_id, partition.partition)
            if assigned_at is None:
                assigned_at = member.pending_revocation_epoch(topic_id, partition.partition)
        if assigned_at is None:
            raise ApiError(
                stale,
                f"Partition {partition.topic}-{partition.partition} is not assigned or pending "
                "revocation for member.",
            )
        if epoch < assigned_at:
            raise ApiError(
                stale,
                f"Received member epoch {epoch} is older than assignment epoch {assigned_at} for partition "
                f"{partition.topic}-{partition.partition}.",
            )

    return check


def handle_consumer_offset_commit(
    txn: Txn, env: Envelope, req: OffsetCommitRequest, group: ConsumerGroupData, ctx: ConsumerContext
) -> None:
    """``OffsetMetadataManager.commitOffset`` for a consumer group: one failing partition fails the
    whole request (Kafka's operation throws; every partition gets the error)."""
    try:
        check = _validate_commit(group, req, env.api_version)
        committed: list[OffsetCommitted] = []
        results: list[tuple[TopicPartition, ErrorCode]] = []
        max_bytes = txn.config.offset_metadata_max_bytes
        for entry in req.offsets:
            metadata = entry.committed_metadata
            if metadata_too_large(metadata, max_bytes):  # Java chars, as for every group kind
                results.append((entry.partition, ErrorCode.OFFSET_METADATA_TOO_LARGE))
                continue
            if check is not None:
                topic = ctx.image.topic(entry.partition.topic)
                check(entry.partition, topic.topic_id if topic is not None else None)
            results.append((entry.partition, ErrorCode.NONE))
            value = OffsetAndMetadata(
                entry.committed_offset, entry.committed_leader_epoch, metadata, txn.now_ms
            )
            committed.append(OffsetCommitted(group.group_id, entry.partition, value))
    except ApiError as error:
        body = OffsetCommitResponse(tuple((p.partition, error.code) for p in req.offsets))
        txn.reply(env.connection, env.correlation_id, body)
        return
    txn.emit_all_to(group, committed)
    txn.reply(env.connection, env.correlation_id, OffsetCommitResponse(tuple(results)))


#: TxnOffsetCommit answers STALE_MEMBER_EPOCH from v6 (KIP-1319), ILLEGAL_GENERATION before
_TXN_STALE_MEMBER_EPOCH_VERSION = 6


def handle_consumer_txn_offset_commit(
    txn: Txn, env: Envelope, req: TxnOffsetCommitRequest, group: ConsumerGroupData, ctx: ConsumerContext
) -> None:
    """``OffsetMetadataManager.commitTransactionalOffset`` for a consumer group: the member epoch
    checked as for OffsetCommit (STALE_MEMBER_EPOCH is ILLEGAL_GENERATION before v6), each partition's
    metadata first, and the offsets written pending until the transaction ends."""
    version = env.api_version
    try:
        check = _validate_commit(group, req, version, transactional=True)
        if check is not None:
            max_bytes = txn.config.offset_metadata_max_bytes
            for entry in req.offsets:
                if not metadata_too_large(entry.committed_metadata, max_bytes):
                    topic = ctx.image.topic(entry.partition.topic)
                    check(entry.partition, topic.topic_id if topic is not None else None)
    except ApiError as error:
        code = error.code
        if code is ErrorCode.STALE_MEMBER_EPOCH and version < _TXN_STALE_MEMBER_EPOCH_VERSION:
            code = ErrorCode.ILLEGAL_GENERATION
        body = TxnOffsetCommitResponse(tuple((p.partition, code) for p in req.offsets))
        txn.reply(env.connection, env.correlation_id, body)
        return
    results, records = pending_commits(txn, group.group_id, req, req.offsets)
    for record in records:
        txn.emit(record)
    txn.reply(env.connection, env.correlation_id, TxnOffsetCommitResponse(tuple(results)))


def handle_consumer_offset_fetch(
    txn: Txn, env: Envelope, req: OffsetFetchRequest, group: ConsumerGroupData
) -> None:
    """OffsetFetch of a consumer group: a member asking (v9+) must be in the group at its epoch
    (``validateOffsetFetch``): UNKNOWN_MEMBER_ID or STALE_MEMBER_EPOCH otherwise."""
    if req.member_id is not None or req.member_epoch >= 0:
        member = group.members.get(req.member_id or "")
        error: ErrorCode | None = None
        if member is None:
            error = ErrorCode.UNKNOWN_MEMBER_ID
        elif req.member_epoch != member.member_epoch:
            error = (
                ErrorCode.ILLEGAL_GENERATION if member.uses_classic_protocol else ErrorCode.STALE_MEMBER_EPOCH
            )
        if error is not None:
            txn.reply(env.connection, env.correlation_id, OffsetFetchResponse(error))
            return
    offsets = group.offsets
    wanted = req.partitions if req.partitions is not None else tuple(offsets)
    partitions = []
    for partition in wanted:
        value = offsets.get(partition)
        if value is None:
            partitions.append(OffsetFetchPartition(partition, -1, "", ErrorCode.NONE, -1))
        else:
            partitions.append(
                OffsetFetchPartition(
                    partition, value.offset, value.metadata, ErrorCode.NONE, value.leader_epoch
                )
            )
    answer = stable_answer(txn, req, OffsetFetchResponse(ErrorCode.NONE, tuple(partitions)))
    txn.reply(env.connection, env.correlation_id, answer)


def restart_sessions(txn: Txn, group: ConsumerGroupData) -> None:
    """``onLoaded``: every member's session starts again from now."""
    for member_id in group.members:
        txn.schedule(SessionTimer(group.group_id, member_id), txn.config.consumer_session_timeout_ms)
