"""The group coordinator (Kafka 4.4's ``GroupCoordinatorShard`` / ``GroupMetadataManager``) as a pure,
replayable state machine: a router (:mod:`.coordinator`) over the registered group kinds
(:mod:`.kinds`): classic groups (:mod:`.classic`) and KIP-848 consumer groups (:mod:`.consumer`).
See ``docs/coordinator.md`` and ``docs/architecture.md``."""

from kgroup.group.classic.group import GroupSnapshot, GroupView
from kgroup.group.classic.kind import ClassicGroups
from kgroup.group.config import CoordinatorConfig
from kgroup.group.consumer.kind import ConsumerGroups
from kgroup.group.coordinator import CoordinatorSnapshot, GroupCoordinator, UnknownGroupError
from kgroup.group.discovery import coordinator_partition
from kgroup.group.kind import GroupKind
from kgroup.group.records import (
    ClassicGroupMember,
    GenerationStarted,
    GroupCreated,
    GroupDeleted,
    GroupLeaderChanged,
    GroupProtocolTypeChanged,
    GroupRestored,
    GroupStateChanged,
    InitialDelayUpdated,
    MemberRemoved,
    MemberUpserted,
    OffsetAndMetadata,
    OffsetCommitted,
    Parked,
    PendingMemberAdded,
    PendingMemberRemoved,
    PendingSyncMemberRemoved,
    PendingSyncMembersSet,
    Record,
    StaticMemberReplaced,
    TimerArmed,
    TimerDisarmed,
)
from kgroup.group.states import ALLOWED_PREVIOUS_STATES, GroupState, IllegalStateTransition, mermaid_diagram
from kgroup.group.timer_table import TimerTable
from kgroup.group.timers import CancelTimer, ScheduleTimer, TimerEffect, TimerKey
from kgroup.group.txn import CoordinatorResult

__all__ = [
    "ALLOWED_PREVIOUS_STATES",
    "CancelTimer",
    "ClassicGroupMember",
    "ClassicGroups",
    "ConsumerGroups",
    "CoordinatorConfig",
    "CoordinatorResult",
    "CoordinatorSnapshot",
    "GenerationStarted",
    "GroupCoordinator",
    "GroupCreated",
    "GroupDeleted",
    "GroupKind",
    "GroupLeaderChanged",
    "GroupProtocolTypeChanged",
    "GroupRestored",
    "GroupSnapshot",
    "GroupState",
    "GroupStateChanged",
    "GroupView",
    "IllegalStateTransition",
    "InitialDelayUpdated",
    "MemberRemoved",
    "MemberUpserted",
    "OffsetAndMetadata",
    "OffsetCommitted",
    "Parked",
    "PendingMemberAdded",
    "PendingMemberRemoved",
    "PendingSyncMemberRemoved",
    "PendingSyncMembersSet",
    "Record",
    "ScheduleTimer",
    "StaticMemberReplaced",
    "TimerArmed",
    "TimerDisarmed",
    "TimerEffect",
    "TimerKey",
    "TimerTable",
    "UnknownGroupError",
    "coordinator_partition",
    "mermaid_diagram",
]
