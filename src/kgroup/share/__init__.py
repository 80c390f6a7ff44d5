"""Share partitions (KIP-932) as Kafka 4.4.0 runs them, pure: the in-flight window of each share
partition (:mod:`.partition`), its acquisition locks as timer effects (:mod:`.timers`), the share
coordinator's durable state (:mod:`.persist`), its records as Kafka's bytes (:mod:`.codec`) and
``share.auto.offset.reset`` (:mod:`.reset`).
See ``docs/share-groups.md``."""

from kgroup.share import records
from kgroup.share.partition import (
    EMPTY_MEMBER_ID,
    AcknowledgementBatch,
    AcknowledgeResult,
    AcquireResult,
    PartitionState,
    PersistedPartitionState,
    SharePartition,
    SharePartitionConfig,
    StateWrite,
)
from kgroup.share.persist import (
    ShareKey,
    ShareSnapshot,
    ShareStateRecord,
    ShareStateStore,
    ShareUpdate,
    combine_state_batches,
)
from kgroup.share.records import *  # noqa: F403 - the records' names, listed in records.__all__ only
from kgroup.share.reset import ShareAutoOffsetReset, initial_start_offset, parse_share_auto_offset_reset
from kgroup.share.timers import CancelLockTimer, LockKey, ScheduleLockTimer

__all__ = [
    "EMPTY_MEMBER_ID",
    "AcknowledgeResult",
    "AcknowledgementBatch",
    "AcquireResult",
    "CancelLockTimer",
    "LockKey",
    "PartitionState",
    "PersistedPartitionState",
    "ScheduleLockTimer",
    "ShareAutoOffsetReset",
    "ShareKey",
    "SharePartition",
    "SharePartitionConfig",
    "ShareSnapshot",
    "ShareStateRecord",
    "ShareStateStore",
    "ShareUpdate",
    "StateWrite",
    "combine_state_batches",
    "initial_start_offset",
    "parse_share_auto_offset_reset",
]
__all__ += records.__all__
