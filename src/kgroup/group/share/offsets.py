"""The group coordinator's part of Alter/Delete/DescribeShareGroupOffsets (KIP-932), as Kafka 4.4.0's
``GroupMetadataManager`` and ``GroupCoordinatorShard`` do it. Pure: the share coordinator's state
(the start offsets themselves) is the host's; this module decides what the group's
``ShareGroupStatePartitionMetadata`` says and which partitions the host writes or deletes.

* **Alter** (``alterShareGroupOffsets``): the share group is made if there is none
  (``getOrMaybeCreateShareGroup(id, true)``; another kind's group is ``GROUP_ID_NOT_FOUND``, "Group …
  is not a share group."), a group with members is ``NON_EMPTY_GROUP`` ("The group is not empty.");
  each partition of a known topic below its partition count is accepted (the rest, and every
  partition of an unknown topic, ``UNKNOWN_TOPIC_OR_PARTITION``); the accepted topics are written as
  initialising (``addInitializingTopicsRecords``) and handed to the host with their start offsets
  (``InitializeShareGroupState`` at the group's epoch). Once written, :class:`ShareOffsetsInitialized`
  marks them initialised (``initializeShareGroupState``).
* **Delete** (``initiateDeleteShareGroupOffsets``): the group must be a share group
  (``GROUP_ID_NOT_FOUND``, "Group … not found." or "Group … is not a share group.") and empty
  (``NON_EMPTY_GROUP``); a known topic initialised for the group has its initialised partitions
  deleted, one being initialised all its partitions; the others are ``UNKNOWN_TOPIC_OR_PARTITION``
  ("There is no offset information to delete.", or the error's own message for a topic the cluster
  does not have). The deleted topics move to ``deletingTopics``; :class:`ShareOffsetsDeleted` drops
  them from it once the host deleted their state (``completeDeleteShareGroupOffsets``).
* **Describe all** (``initializedShareGroupPartitions``): the group's initialised partitions (none for
  a group that is not a share group).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from kgroup.group.errors import ApiError
from kgroup.group.records.share import ShareGroupStatePartitionMetadata
from kgroup.group.share.group import ShareGroupData, SharePartitionStates
from kgroup.group.share.heartbeat import InitializeShareState, ShareContext, finish_initialize
from kgroup.group.txn import Txn
from kgroup.messages import Envelope
from kgroup.model import ErrorCode, TopicId

__all__ = [
    "AlterShareOffsets",
    "AlterShareOffsetsPrepared",
    "DeleteShareOffsets",
    "DeleteShareOffsetsPrepared",
    "ShareInitializedPartitions",
    "ShareInitializedPartitionsAnswer",
    "ShareOffsetsDeleted",
    "ShareOffsetsDone",
    "ShareOffsetsInitialized",
    "handle_alter_share_offsets",
    "handle_delete_share_offsets",
    "handle_initialized_partitions",
    "handle_share_offsets_deleted",
    "handle_share_offsets_initialized",
]

#: ``Errors.UNKNOWN_TOPIC_OR_PARTITION.message()``
UNKNOWN_TOPIC_OR_PARTITION_MESSAGE = "This server does not host this topic-partition."
#: ``Errors.NON_EMPTY_GROUP.message()``
NON_EMPTY_GROUP_MESSAGE = "The group is not empty."
#: ``sharePartitionsEligibleForOffsetDeletion``'s message for a topic the group has no state of
NO_OFFSETS_TO_DELETE_MESSAGE = "There is no offset information to delete."


# --- requests and answers ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AlterShareOffsets:
    """AlterShareGroupOffsets' coordinator part: topic name -> (partition, start offset)s."""

    group_id: str
    topics: tuple[tuple[str, tuple[tuple[int, int], ...]], ...]


@dataclass(frozen=True, slots=True)
class AlterShareOffsetsPrepared:
    """What the coordinator decided: a top-level error, or each topic's partitions' errors (in the
    request's order) and what the host must initialise: (topic id, name, ((partition, start), ...))."""

    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    #: (name, topic id or None, ((partition, error code, message), ...))
    results: tuple[tuple[str, TopicId | None, tuple[tuple[int, ErrorCode, str | None], ...]], ...] = ()
    initialize: tuple[tuple[TopicId, str, tuple[tuple[int, int], ...]], ...] = ()
    group_epoch: int = 0


@dataclass(frozen=True, slots=True)
class ShareOffsetsInitialized:
    """The host wrote the altered start offsets: mark the partitions initialised."""

    group_id: str
    group_epoch: int
    partitions: tuple[tuple[TopicId, str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class ShareOffsetsDone:
    """The coordinator's answer to :class:`ShareOffsetsInitialized` and :class:`ShareOffsetsDeleted`."""

    error_code: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True, slots=True)
class DeleteShareOffsets:
    """DeleteShareGroupOffsets' coordinator part: the topic names."""

    group_id: str
    topics: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DeleteShareOffsetsPrepared:
    """A top-level error, or the topics refused ((name, code, message)) and those whose share state
    the host deletes ((topic id, name, partitions))."""

    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    refused: tuple[tuple[str, ErrorCode, str], ...] = ()
    delete: tuple[tuple[TopicId, str, tuple[int, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class ShareOffsetsDeleted:
    """The host deleted these topics' share state: they leave ``deletingTopics``."""

    group_id: str
    topic_ids: tuple[TopicId, ...]


@dataclass(frozen=True, slots=True)
class ShareInitializedPartitions:
    """``initializedShareGroupPartitions``: for DescribeShareGroupOffsets without topics."""

    group_id: str


@dataclass(frozen=True, slots=True)
class ShareInitializedPartitionsAnswer:
    """Topic id -> partitions initialised, in the group's order."""

    topics: tuple[tuple[TopicId, tuple[int, ...]], ...] = ()


# --- handlers ---------------------------------------------------------------------------------------


def _reply(txn: Txn, env: Envelope, body: object) -> None:
    """The answer to one of this module's requests (the broker's share-offsets handlers read it; it
    is no Kafka response of its own)."""
    txn.reply(env.connection, env.correlation_id, cast(Any, body))


def _share_group(ctx: ShareContext, group_id: str, create: bool) -> ShareGroupData:
    """``shareGroup`` / ``getOrMaybeCreateShareGroup``: the errors Kafka answers for a missing group or
    another kind's group."""
    group = ctx.groups.get(group_id)
    if group is not None:
        return group
    if ctx.owned_elsewhere(group_id):
        raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
    if not create:
        raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
    return ShareGroupData(group_id)


def _states_record(group_id: str, states: SharePartitionStates) -> ShareGroupStatePartitionMetadata:
    return ShareGroupStatePartitionMetadata(group_id, states.value())


def handle_alter_share_offsets(txn: Txn, env: Envelope, req: AlterShareOffsets, ctx: ShareContext) -> None:
    try:
        group = _share_group(ctx, req.group_id, create=True)
    except ApiError as exc:
        _reply(txn, env, AlterShareOffsetsPrepared(exc.code, exc.message))
        return
    if group.members:
        _reply(
            txn,
            env,
            AlterShareOffsetsPrepared(ErrorCode.NON_EMPTY_GROUP, NON_EMPTY_GROUP_MESSAGE),
        )
        return
    results: list[tuple[str, TopicId | None, tuple[tuple[int, ErrorCode, str | None], ...]]] = []
    wanted: dict[TopicId, tuple[str, dict[int, int]]] = {}
    for name, partitions in req.topics:
        topic = ctx.image.topics.get(name)
        if topic is None:
            unknown = tuple(
                (p, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_OR_PARTITION_MESSAGE)
                for p, _ in partitions
            )
            results.append((name, None, unknown))
            continue
        answered: list[tuple[int, ErrorCode, str | None]] = []
        for partition, start in partitions:
            if partition < topic.partitions:
                answered.append((partition, ErrorCode.NONE, None))
                wanted.setdefault(topic.topic_id, (name, {}))[1][partition] = start
            else:
                answered.append(
                    (partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_OR_PARTITION_MESSAGE)
                )
        results.append((name, topic.topic_id, tuple(answered)))
    if wanted:
        # addInitializingTopicsRecords: the topics join those being initialised
        states = group.partition_states or SharePartitionStates()
        initializing = {t: (n, set(p), w) for t, (n, p, w) in states.initializing.items()}
        for topic_id, (name, offsets) in wanted.items():
            entry = initializing.setdefault(topic_id, (name, set(), txn.now_ms))
            entry[1].update(offsets)
        value = SharePartitionStates(
            {t: (n, frozenset(p), w) for t, (n, p, w) in initializing.items()},
            dict(states.initialized),
            dict(states.deleting),
        )
        txn.emit(_states_record(req.group_id, value))
    _reply(
        txn,
        env,
        AlterShareOffsetsPrepared(
            results=tuple(results),
            initialize=tuple((t, n, tuple(sorted(o.items()))) for t, (n, o) in wanted.items()),
            group_epoch=group.group_epoch,
        ),
    )


def handle_share_offsets_initialized(
    txn: Txn, env: Envelope, req: ShareOffsetsInitialized, ctx: ShareContext
) -> None:
    finish_initialize(txn, ctx, InitializeShareState(req.group_id, req.group_epoch, req.partitions), True)
    _reply(txn, env, ShareOffsetsDone())


def handle_delete_share_offsets(txn: Txn, env: Envelope, req: DeleteShareOffsets, ctx: ShareContext) -> None:
    try:
        group = _share_group(ctx, req.group_id, create=False)
    except ApiError as exc:
        _reply(txn, env, DeleteShareOffsetsPrepared(exc.code, exc.message or ""))
        return
    if group.members:
        _reply(
            txn,
            env,
            DeleteShareOffsetsPrepared(ErrorCode.NON_EMPTY_GROUP, NON_EMPTY_GROUP_MESSAGE),
        )
        return
    states = group.partition_states or SharePartitionStates()
    initialized = dict(states.initialized)
    initializing = dict(states.initializing)
    deleting = dict(states.deleting)
    refused: list[tuple[str, ErrorCode, str]] = []
    delete: list[tuple[TopicId, str, tuple[int, ...]]] = []
    for name in req.topics:
        topic = ctx.image.topics.get(name)
        if topic is not None and topic.topic_id in initialized:
            delete.append((topic.topic_id, name, tuple(sorted(initialized.pop(topic.topic_id)[1]))))
            deleting[topic.topic_id] = name
        elif topic is not None and topic.topic_id in initializing:
            initializing.pop(topic.topic_id)
            delete.append((topic.topic_id, name, tuple(range(topic.partitions))))
            deleting[topic.topic_id] = name
        elif topic is None:
            refused.append((name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_OR_PARTITION_MESSAGE))
        else:
            refused.append((name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NO_OFFSETS_TO_DELETE_MESSAGE))
    if delete:
        txn.emit(_states_record(req.group_id, SharePartitionStates(initializing, initialized, deleting)))
    _reply(
        txn,
        env,
        DeleteShareOffsetsPrepared(refused=tuple(refused), delete=tuple(delete)),
    )


def handle_share_offsets_deleted(
    txn: Txn, env: Envelope, req: ShareOffsetsDeleted, ctx: ShareContext
) -> None:
    group = ctx.groups.get(req.group_id)
    if group is not None and group.partition_states is not None:
        states = group.partition_states
        deleting = {t: n for t, n in states.deleting.items() if t not in req.topic_ids}
        if deleting != states.deleting:
            value = SharePartitionStates(dict(states.initializing), dict(states.initialized), deleting)
            txn.emit(_states_record(req.group_id, value))
    _reply(txn, env, ShareOffsetsDone())


def handle_initialized_partitions(
    txn: Txn, env: Envelope, req: ShareInitializedPartitions, ctx: ShareContext
) -> None:
    group = ctx.groups.get(req.group_id)
    topics: tuple[tuple[TopicId, tuple[int, ...]], ...] = ()
    if group is not None and group.partition_states is not None:
        topics = tuple((t, tuple(sorted(p))) for t, (_, p) in group.partition_states.initialized.items())
    _reply(txn, env, ShareInitializedPartitionsAnswer(topics))
