"""Online upgrade and downgrade between a classic group and a consumer group (KIP-848's migration),
as Kafka 4.4's ``convertToConsumerGroup`` / ``ConsumerGroup.fromClassicGroup`` and
``convertToClassicGroup`` / ``ClassicGroup.fromConsumerGroup`` do it.

* **Upgrade**: the first consumer-protocol member joining a non-empty classic group (that uses the
  consumer embedded protocol) turns it into a consumer group: every classic member becomes a member of
  the consumer group at the classic generation, owning what its last SyncGroup gave it, and keeps
  speaking the classic protocol; parked JoinGroup/SyncGroup requests are answered REBALANCE_IN_PROGRESS.
* **Downgrade**: when the last consumer-protocol member leaves (or is fenced) and classic members
  remain, the group becomes a classic group at the group epoch, Stable with their current target
  assignments, and a rebalance starts at once.

Offsets stay with the group id through both (Kafka keeps them apart from the group).
"""

from __future__ import annotations

from collections.abc import Callable

from kgroup.group.classic.group import GroupData
from kgroup.group.classic.rebalance import prepare_rebalance, reschedule_heartbeat
from kgroup.group.classic.timers import HeartbeatTimer, JoinTimer, SyncTimer
from kgroup.group.consumer.context import ConsumerContext, cancel_timers
from kgroup.group.consumer.group import ConsumerGroupData
from kgroup.group.consumer.member import ConsumerGroupMember, epochs_of
from kgroup.group.consumer.timers import SessionTimer
from kgroup.group.errors import ApiError
from kgroup.group.javamap import JavaHashOrder
from kgroup.group.records import ClassicGroupMember, GroupRestored
from kgroup.group.records import consumer as records
from kgroup.group.states import GroupState
from kgroup.group.txn import Txn
from kgroup.javacompat import hashmap_iteration_order
from kgroup.messages import ConsumerAssignment, JoinGroupResponse, SyncGroupResponse
from kgroup.model import ErrorCode, PeerError, TopicId, TopicPartition
from kgroup.valuetypes import replace
from kgroup.wire.consumer_protocol import decode_assignment, decode_subscription, encode_assignment

__all__ = ["can_downgrade", "can_downgrade_replacing", "downgrade", "upgrade"]


def _upgrade_error(group_id: str, why: str) -> ApiError:
    return ApiError(
        ErrorCode.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {group_id} to consumer group {why}."
    )


def upgrade(
    txn: Txn,
    classic: GroupData,
    ctx: ConsumerContext,
    emitted: list[records.ConsumerGroupRecord],
    after: list[Callable[[], None]],
) -> ConsumerGroupData:
    """``validateOnlineUpgrade`` + ``convertToConsumerGroup``: the consumer group the classic group
    becomes (built in memory from the records appended to ``emitted``; ``after`` gets the effects to
    carry out once the whole heartbeat succeeds)."""
    group_id = classic.group_id
    config = txn.config
    if config.consumer_migration_policy not in ("bidirectional", "upgrade"):
        raise _upgrade_error(group_id, "because online upgrade is disabled")
    if classic.protocol_type != "consumer":
        raise _upgrade_error(group_id, "because the group does not use the consumer embedded protocol")
    if len(classic.members) > config.consumer_max_size:
        raise _upgrade_error(group_id, "because the group size exceeds the consumer group maximum size")
    generation = classic.generation
    protocol = classic.protocol_name
    members: list[ConsumerGroupMember] = []
    targets: dict[str, dict[TopicId, tuple[int, ...]]] = {}
    for classic_member in classic.all_members():
        try:
            assigned: dict[TopicId, list[int]] = {}
            if classic_member.assignment:
                assignment = decode_assignment(classic_member.assignment)
                if assignment.user_data:
                    raise _upgrade_error(
                        group_id,
                        "because an unsupported custom assignor is in use. Please refer to the documentation "
                        "or switch to a default assignor before re-attempting the upgrade",
                    )
                for tp in assignment.partitions:
                    topic = ctx.image.topic(tp.topic)
                    if topic is not None:
                        assigned.setdefault(topic.topic_id, []).append(tp.partition)
            subscription = decode_subscription(classic_member.metadata(protocol) if protocol else b"")
        except PeerError as exc:
            raise _upgrade_error(group_id, "because the embedded consumer protocol is malformed") from exc
        target = {topic: tuple(partitions) for topic, partitions in assigned.items()}
        member = ConsumerGroupMember(
            member_id=classic_member.member_id,
            member_epoch=generation,
            previous_member_epoch=generation,
            state=records.MemberAssignmentState.STABLE,
            instance_id=classic_member.group_instance_id,
            rack_id=subscription.rack_id,
            rebalance_timeout_ms=classic_member.rebalance_timeout_ms,
            client_id=classic_member.client_id,
            client_host=classic_member.client_host,
            subscribed_topic_names=frozenset(subscription.topics),
            assigned_partitions=epochs_of(target, generation),
            classic_member_metadata=records.ClassicMemberMetadata(
                classic_member.session_timeout_ms, classic_member.protocols
            ),
        )
        members.append(member)
        targets[member.member_id] = target
    names = {name for m in members for name in m.subscribed_topic_names}
    conversion: list[records.ConsumerGroupRecord] = [
        records.ConsumerGroupMemberMetadata(group_id, m.member_id, m.metadata_value()) for m in members
    ]
    conversion.append(records.ConsumerGroupMetadata(group_id, (generation, ctx.image.group_hash(names))))
    conversion.extend(
        records.ConsumerGroupTargetAssignmentMember(group_id, m.member_id, targets[m.member_id])
        for m in members
    )
    conversion.append(
        records.ConsumerGroupTargetAssignmentMetadata(
            group_id, records.TargetAssignmentMetadataValue(generation, 0)
        )
    )
    conversion.extend(
        records.ConsumerGroupCurrentMemberAssignment(group_id, m.member_id, m.assignment_value())
        for m in members
    )
    emitted.extend(conversion)
    converted = ConsumerGroupData(group_id)
    for record in conversion:
        converted.apply(record)
    converted.offsets.update(classic.offsets)

    def finish() -> None:
        # completeAllJoinFutures / completeAllSyncFutures(REBALANCE_IN_PROGRESS); the classic timers go
        for m in classic.all_members():
            if m.awaiting_join is not None:
                txn.answer(
                    m.awaiting_join, JoinGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS, member_id=m.member_id)
                )
            if m.awaiting_sync is not None:
                txn.answer(m.awaiting_sync, SyncGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS))
            txn.cancel(HeartbeatTimer(group_id, m.member_id))
        txn.cancel(JoinTimer(group_id))
        txn.cancel(SyncTimer(group_id, generation))
        for converted_member in members:
            session = converted_member.classic_member_metadata
            assert session is not None
            txn.schedule(SessionTimer(group_id, converted_member.member_id), session.session_timeout_ms)

    after.insert(0, finish)
    return converted


def can_downgrade(txn: Txn, group: ConsumerGroupData, leaving: list[ConsumerGroupMember]) -> bool:
    """``validateOnlineDowngradeWithFencedMembers``: only classic members would remain, at least one,
    the policy allows it and they fit a classic group."""
    excluded_classic = sum(1 for m in leaving if m.uses_classic_protocol)
    if group.num_classic_members() - excluded_classic != len(group.members) - len(leaving):
        return False
    remaining = len(group.members) - len(leaving)
    if remaining <= 0:
        return False
    if txn.config.consumer_migration_policy not in ("bidirectional", "downgrade"):
        return False
    return remaining <= txn.config.group_max_size


def can_downgrade_replacing(txn: Txn, group: ConsumerGroupData, replaced: ConsumerGroupMember) -> bool:
    """``validateOnlineDowngradeWithReplacedMember``: a classic static member replaces the last
    consumer-protocol member, the policy allows a downgrade and the group fits a classic group."""
    if replaced.uses_classic_protocol or group.num_classic_members() != len(group.members) - 1:
        return False
    if txn.config.consumer_migration_policy not in ("bidirectional", "downgrade"):
        return False
    return len(group.members) <= txn.config.group_max_size


def downgrade(
    txn: Txn,
    group: ConsumerGroupData,
    leaving: list[ConsumerGroupMember],
    ctx: ConsumerContext,
    *,
    rebalance: bool = True,
) -> None:
    """``convertToClassicGroup(group, leaving, …, rebalance)``: write the consumer group's tombstones
    and the classic group, restart the members' classic sessions and, if ``rebalance``, start a
    rebalance. Called once the request (or timer) that fences ``leaving`` — or replaced a static
    member, already replayed into ``group`` — succeeded."""
    group_id = group.group_id
    leaving_ids = {m.member_id for m in leaving}
    remaining = [group.members[m] for m in hashmap_iteration_order(group.members) if m not in leaving_ids]
    order = JavaHashOrder()
    classic_members: list[ClassicGroupMember] = []
    for member in remaining:
        classic_metadata = member.classic_member_metadata
        assert classic_metadata is not None
        classic_members.append(
            ClassicGroupMember(
                member_id=member.member_id,
                group_instance_id=member.instance_id,
                client_id=member.client_id,
                client_host=member.client_host,
                rebalance_timeout_ms=member.rebalance_timeout_ms,
                session_timeout_ms=classic_metadata.session_timeout_ms,
                protocol_type="consumer",
                protocols=classic_metadata.supported_protocols,
            )
        )
        order.put(member.member_id)
    restored = GroupRestored(
        group_id=group_id,
        state=GroupState.STABLE,
        previous_state=GroupState.EMPTY,
        state_timestamp_ms=txn.now_ms,
        generation=group.group_epoch,
        protocol_type="consumer",
        protocol_name=None,
        leader=classic_members[0].member_id,
        members=tuple(classic_members),
        member_capacity=order.capacity,
        pending_join=(),
        pending_sync=(),
        new_member_added=False,
        initial_delay=None,
    )
    protocol = GroupData.from_restored(restored).select_protocol()
    with_assignments = []
    for classic_member in classic_members:
        metadata = classic_member.metadata(protocol)
        version = int.from_bytes(metadata[:2], "big", signed=True) if len(metadata) >= 2 else 0
        partitions: list[tuple[str, int]] = []
        for topic_id, numbers in group.target_of(classic_member.member_id).items():
            topic = ctx.image.topic_by_id(topic_id)
            if topic is not None:
                partitions.extend((topic.name, p) for p in numbers)
        assignment = encode_assignment(
            ConsumerAssignment(tuple(TopicPartition(t, p) for t, p in partitions)), max(version, 0)
        )
        with_assignments.append(replace(classic_member, assignment=assignment))
    for member_id in list(group.members):
        cancel_timers(txn, ctx, group_id, member_id)
    for record in group.tombstone_records():
        txn.emit(record)
    txn.emit(replace(restored, protocol_name=protocol, members=tuple(with_assignments)))
    classic = ctx.classic.groups[group_id]
    for classic_member in classic.all_members():
        reschedule_heartbeat(txn, classic, classic_member.member_id)
    if rebalance:
        prepare_rebalance(txn, classic)
