"""The coordinator's timer table: the one place a host keeps the timers a coordinator asks for.

:class:`~kgroup.group.GroupCoordinator` never keeps a clock; each :class:`CoordinatorResult` carries
timer effects (:class:`~kgroup.group.timers.ScheduleTimer` replaces a key's deadline,
:class:`~kgroup.group.timers.CancelTimer` forgets it — Kafka's ``CoordinatorTimer`` semantics). A
host applies them here and asks which key is due next; the simulator, the tests and the broker's
asyncio loop all drive the coordinator through this table.

Pure: no clock, no I/O. Keys due at the same millisecond come out in the order they were scheduled
(a sequence number breaks ties), so a run is deterministic. A host that also keeps its own event
queue can pass its queue's sequence counter, so a timer and a queued event scheduled for the same
millisecond keep the order in which they were scheduled — or a tie worked out from the key
(``key_tie``), so that keys due at the same millisecond come out in an order of their own, whenever
they were scheduled.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable

from kgroup.group.timers import CancelTimer, ScheduleTimer, TimerEffect, TimerKey

__all__ = ["TimerTable"]

#: what orders a millisecond's timers: a sequence number, or a tie worked out from the key
_Tie = int | tuple[int | str, ...]


class TimerTable:
    """Armed coordinator timers: ``key -> deadline``, popped in (deadline, tie) — scheduling order,
    unless a ``key_tie`` is given.

    A key re-armed for a later deadline — a member's session timer, at every heartbeat and offset
    commit — is not pushed onto the heap again: the entry already queued for it comes out first, and
    only then is the key's live entry pushed, if it is still armed. So the heap holds about one entry
    per key, not one per re-arming, and the order keys come out in is the same."""

    __slots__ = ("_armed", "_heap", "_queued", "_tie_of")

    def __init__(
        self,
        sequence: Callable[[], _Tie] | None = None,
        *,
        key_tie: Callable[[TimerKey], _Tie] | None = None,
    ) -> None:
        #: key -> its live entry (the very tuple: an entry is live when it *is* this one)
        self._armed: dict[TimerKey, tuple[int, _Tie, TimerKey]] = {}
        #: (deadline, tie, key), with stale entries skipped lazily
        self._heap: list[tuple[int, _Tie, TimerKey]] = []
        #: key -> the last entry pushed for it that is still on the heap; a key's live entry is either
        #: that one or a later one, pushed when that one comes out
        self._queued: dict[TimerKey, tuple[int, _Tie, TimerKey]] = {}
        if key_tie is not None:
            self._tie_of = key_tie
        else:
            next_tie = sequence if sequence is not None else itertools.count(1).__next__
            self._tie_of = lambda _key: next_tie()

    @classmethod
    def from_armed(
        cls, timers: Iterable[ScheduleTimer], sequence: Callable[[], _Tie] | None = None
    ) -> TimerTable:
        """A table holding ``timers`` (e.g. ``GroupCoordinator.armed_timers()`` after a rebuild by
        replay); ties are ordered by key, since their original scheduling order is not known."""
        table = cls(sequence)
        for timer in sorted(timers, key=lambda t: (t.deadline_ms, t.key)):
            table.schedule(timer.key, timer.deadline_ms)
        return table

    # --- effects ------------------------------------------------------------------------------------

    def schedule(self, key: TimerKey, deadline_ms: int) -> None:
        """Arm ``key`` for ``deadline_ms``, replacing any earlier deadline."""
        entry = (deadline_ms, self._tie_of(key), key)
        self._armed[key] = entry
        queued = self._queued.get(key)
        if queued is None or entry < queued:
            self._queued[key] = entry
            heapq.heappush(self._heap, entry)

    def cancel(self, key: TimerKey) -> None:
        """Forget ``key`` (harmless if it is not armed)."""
        self._armed.pop(key, None)

    def apply(self, effects: Iterable[TimerEffect]) -> None:
        """Apply a :class:`~kgroup.group.CoordinatorResult`'s ``timers``, in order."""
        armed, queued, heap, tie_of = self._armed, self._queued, self._heap, self._tie_of
        for effect in effects:
            if isinstance(effect, ScheduleTimer):  # schedule(), inlined: once per heartbeat and commit
                key = effect.key
                entry = (effect.deadline_ms, tie_of(key), key)
                armed[key] = entry
                ahead = queued.get(key)
                if ahead is None or entry < ahead:
                    queued[key] = entry
                    heapq.heappush(heap, entry)
            elif isinstance(effect, CancelTimer):
                armed.pop(effect.key, None)

    # --- reading and firing ---------------------------------------------------------------------------

    def head(self) -> tuple[int, _Tie, TimerKey] | None:
        """``(deadline, sequence, key)`` of the next timer to fire (without firing it), or ``None``."""
        heap, armed, queued = self._heap, self._armed, self._queued
        while heap:
            entry = heap[0]
            key = entry[2]
            live = armed.get(key)
            if live is entry:
                return entry
            # replaced or cancelled: dropped lazily; if it was the key's last entry on the heap, the
            # key's live entry (no earlier than it) takes its place
            if queued.get(key) is entry:
                if live is None:
                    del queued[key]
                    heapq.heappop(heap)
                else:
                    queued[key] = live
                    heapq.heapreplace(heap, live)
            else:
                heapq.heappop(heap)
        return None

    def peek(self) -> tuple[int, _Tie] | None:
        """``(deadline, sequence)`` of the next timer to fire, or ``None`` when nothing is armed."""
        entry = self.head()
        return None if entry is None else (entry[0], entry[1])

    def next_deadline(self) -> int | None:
        """When the next timer is due (``None``: nothing armed)."""
        top = self.peek()
        return None if top is None else top[0]

    def pop_due(self, now_ms: int) -> TimerKey | None:
        """Disarm and return the earliest key due by ``now_ms`` (``None`` if none is due).

        Call it until it returns ``None``: firing a key (``GroupCoordinator.on_timer``) may arm new
        keys that are already due, and they come out in their turn.
        """
        top = self.head()
        if top is None or top[0] > now_ms:
            return None
        _, _, key = heapq.heappop(self._heap)
        del self._armed[key]
        del self._queued[key]  # (the live entry just popped was the key's last one on the heap)
        return key

    def deadline(self, key: TimerKey) -> int | None:
        entry = self._armed.get(key)
        return None if entry is None else entry[0]

    def armed(self) -> dict[TimerKey, int]:
        """Every armed key and its deadline (compare with ``GroupCoordinator.armed_timers()``)."""
        return {key: entry[0] for key, entry in self._armed.items()}

    def __len__(self) -> int:
        return len(self._armed)

    def __contains__(self, key: object) -> bool:
        return key in self._armed
