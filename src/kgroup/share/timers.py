"""The acquisition lock as timer effects: a share partition asks its host to call
:meth:`SharePartition.on_lock_timeout` once a lock's deadline passes, as the group coordinator asks for
its timers (``kgroup.group.timers``). Scheduling a key that is scheduled replaces its deadline;
cancelling an unknown key is harmless; a stale firing does nothing.

Kafka arms one ``AcquisitionLockTimerTask`` per acquired batch, and one per offset for records
acquired or tracked one by one; so does this model (one lock per timer task, fired and persisted on its
own, as Kafka's are).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CancelLockTimer", "LockKey", "LockTimerEffect", "ScheduleLockTimer"]


@dataclass(frozen=True, slots=True, order=True)
class LockKey:
    """One acquisition lock of one share partition: ``lock_id`` counts up per partition."""

    group_id: str
    topic: str
    partition: int
    lock_id: int


@dataclass(frozen=True, slots=True)
class ScheduleLockTimer:
    """Call ``on_lock_timeout(now, key)`` once the clock reaches ``deadline_ms``."""

    key: LockKey
    deadline_ms: int


@dataclass(frozen=True, slots=True)
class CancelLockTimer:
    """Forget ``key``: it must not fire."""

    key: LockKey


LockTimerEffect = ScheduleLockTimer | CancelLockTimer
