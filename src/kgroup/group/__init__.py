"""The group coordinator (Kafka 4.4's ``GroupCoordinatorShard`` / ``GroupMetadataManager``) as a pure,
replayable state machine: a router (:mod:`.coordinator`) over the registered group kinds
(:mod:`.kinds`): classic groups (:mod:`.classic`), KIP-848 consumer groups (:mod:`.consumer`) and
KIP-932 share groups (:mod:`.share`). Its names are the coordinator's and, listed once in
:mod:`.records`, the records it writes.
See ``docs/coordinator.md`` and ``docs/architecture.md``."""

from kgroup.group import records as _records
from kgroup.group.classic.group import GroupSnapshot, GroupView
from kgroup.group.classic.kind import ClassicGroups
from kgroup.group.config import CoordinatorConfig
from kgroup.group.consumer.kind import ConsumerGroups
from kgroup.group.coordinator import CoordinatorSnapshot, GroupCoordinator, UnknownGroupError
from kgroup.group.discovery import coordinator_partition
from kgroup.group.kind import GroupKind
from kgroup.group.records import *  # noqa: F403  (the coordinator's records are kgroup.group's names too)
from kgroup.group.states import ALLOWED_PREVIOUS_STATES, GroupState, IllegalStateTransition, mermaid_diagram
from kgroup.group.timer_table import TimerTable
from kgroup.group.timers import CancelTimer, ScheduleTimer, TimerEffect, TimerKey
from kgroup.group.txn import CoordinatorResult

__all__ = [
    "ALLOWED_PREVIOUS_STATES",
    "CancelTimer",
    "ClassicGroups",
    "ConsumerGroups",
    "CoordinatorConfig",
    "CoordinatorResult",
    "CoordinatorSnapshot",
    "GroupCoordinator",
    "GroupKind",
    "GroupSnapshot",
    "GroupState",
    "GroupView",
    "IllegalStateTransition",
    "ScheduleTimer",
    "TimerEffect",
    "TimerKey",
    "TimerTable",
    "UnknownGroupError",
    "coordinator_partition",
    "mermaid_diagram",
]
__all__ += _records.__all__
