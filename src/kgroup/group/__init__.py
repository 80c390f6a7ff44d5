"""The classic group coordinator (Kafka 4.0's ``ClassicGroup`` / ``GroupMetadataManager``) as a pure,
replayable state machine. See ``docs/coordinator.md``."""

from kgroup.group.classic.group import GroupSnapshot, GroupView
from kgroup.group.config import CoordinatorConfig
from kgroup.group.coordinator import CoordinatorSnapshot, GroupCoordinator, UnknownGroupError
from kgroup.group.discovery import ConnectionState, coordinator_partition, least_loaded_node
from kgroup.group.records import (
    GenerationStarted,
    GroupCreated,
    GroupDeleted,
    GroupLeaderChanged,
    GroupProtocolTypeChanged,
    GroupRestored,
    GroupStateChanged,
    InitialDelayUpdated,
    MemberRemoved,
    MemberState,
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
    "ConnectionState",
    "CoordinatorConfig",
    "CoordinatorResult",
    "CoordinatorSnapshot",
    "GenerationStarted",
    "GroupCoordinator",
    "GroupCreated",
    "GroupDeleted",
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
    "MemberState",
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
    "least_loaded_node",
    "mermaid_diagram",
]
