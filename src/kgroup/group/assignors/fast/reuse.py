"""The current maps an assignor was handed on its last calls, as arrays, found again by identity.

The coordinator keeps each member's target assignment as one dict, replaced (never changed in place)
when a target-assignment record for the member is replayed: between two rebalances of a group, every
member the assignor left alone hands the next call the very map object it handed the last one. Reading
10,000 such maps back from Python objects is most of the homogeneous ``uniform`` builder's time when
one member joins a large group; :class:`SeenMaps` keeps, for the last few calls of one assignor
instance, each member map's topics and their sizes as arrays, holding the map objects themselves (so
an ``id`` cannot be reused while it is cached). A later call reads only the maps it has not seen:
a map that is another object (a member whose target changed since, a new member) is read as usual.
A seen map whose number of topics differs from what was read is read again too; the maps handed to an
assignor are otherwise taken as immutable, as Kafka's are (its ``MemberAssignment`` maps are
unmodifiable). Only the homogeneous ``uniform`` builder uses it; no I/O, no threads.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np

from kgroup._njit import njit
from kgroup.group.assignors.fast.inputs import TopicTable
from kgroup.model import TopicId

__all__ = ["Seen", "SeenMaps", "gather_entries", "seen_rows"]

#: calls remembered per assignor instance (a coordinator runs one instance for all its groups)
CALLS = 4
#: maps probed to pick the remembered call that saw this group
_PROBE = 32


class Seen:
    """One call's plain current maps (dicts of tuples): map ``m``'s topics are
    ``topics[entry_topic[entry_start[m]:entry_start[m + 1]]]``, their collections' sizes ``entry_len``."""

    __slots__ = ("entry_len", "entry_start", "entry_topic", "ids", "maps", "order", "topics")

    def __init__(
        self,
        maps: list[Mapping[TopicId, Collection[int]]],
        ids: np.ndarray,
        entry_start: np.ndarray,
        entry_topic: np.ndarray,
        entry_len: np.ndarray,
        topics: Sequence[TopicId],
        order: np.ndarray | None = None,
    ) -> None:
        self.maps = maps  # held: the ids below stay theirs while this is cached
        # ``order``: ``ids``' argsort, when the caller has it already (any order of equal ids will do:
        # two members handed one map object share its row's entries)
        self.order = np.argsort(ids) if order is None else order
        self.ids = ids[self.order]  # sorted, searched
        self.entry_start = entry_start
        self.entry_topic = entry_topic
        self.entry_len = entry_len
        self.topics = list(topics)

    def hits(self, ids: np.ndarray) -> int:
        """How many of these map ids were seen."""
        at = np.minimum(np.searchsorted(self.ids, ids), len(self.ids) - 1)
        return int(np.count_nonzero(self.ids[at] == ids))

    def rows(self, ids: np.ndarray, sizes: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
        """For each map (by ``id``), its row here; -1 when not seen, or seen with another number of
        topics than its ``sizes`` says now. ``order``: ``ids``' argsort, if the caller has it (sorted here
        otherwise): one merge of the two sorted id lists (:func:`seen_rows`)."""
        if order is None:
            order = np.argsort(ids)
        return seen_rows(self.ids, self.order, self.entry_start, ids, order, sizes)


@njit(cache=True)
def seen_rows(
    seen_ids: np.ndarray,  # sorted
    seen_order: np.ndarray,  # each sorted id's row
    seen_entry_start: np.ndarray,
    ids: np.ndarray,
    order: np.ndarray,  # ids' argsort
    sizes: np.ndarray,
) -> np.ndarray:
    """:meth:`Seen.rows` in one merge of the two sorted id lists."""
    rows = np.full(len(ids), -1, np.int64)
    j = 0
    for k in range(len(order)):
        i = order[k]
        wanted = ids[i]
        while j < len(seen_ids) and seen_ids[j] < wanted:
            j += 1
        if j < len(seen_ids) and seen_ids[j] == wanted:
            row = seen_order[j]
            if seen_entry_start[row + 1] - seen_entry_start[row] == sizes[i]:
                rows[i] = row
    return rows


@njit(cache=True)
def gather_entries(
    rows: np.ndarray,  # each member's row in the remembered call, -1: read from its map
    sizes: np.ndarray,
    read_topic: np.ndarray,  # the read maps' entries, in member order
    read_len: np.ndarray,
    seen_entry_start: np.ndarray,
    seen_entry_topic: np.ndarray,
    seen_entry_len: np.ndarray,
    remap: np.ndarray,  # the remembered call's topic index -> this call's
) -> tuple[np.ndarray, np.ndarray]:
    """Every member's entries (topic index, collection size) in member order: a remembered member's
    from the remembered call's arrays, the others' from what was read."""
    entries = 0
    for m in range(len(sizes)):
        entries += sizes[m]
    topic = np.empty(entries, np.int64)
    length = np.empty(entries, np.int64)
    w = 0
    r = 0
    for m in range(len(sizes)):
        row = rows[m]
        if row >= 0:
            at = seen_entry_start[row]
            for k in range(sizes[m]):
                topic[w] = remap[seen_entry_topic[at + k]]
                length[w] = seen_entry_len[at + k]
                w += 1
        else:
            for _ in range(sizes[m]):
                topic[w] = read_topic[r]
                length[w] = read_len[r]
                r += 1
                w += 1
    return topic, length


class SeenMaps:
    """The :class:`Seen` of an assignor instance's last :data:`CALLS` calls, newest first. Each is
    immutable once made and the list is replaced whole, so a call racing another only misses."""

    __slots__ = ("_calls", "_subscription")

    def __init__(self) -> None:
        self._calls: tuple[Seen, ...] = ()
        #: the last subscription tuple indexed, its topic table and its indices (the tuple held: its
        #: topics' ids stay theirs)
        self._subscription: tuple[tuple[TopicId, ...], TopicTable, list[int]] | None = None

    def subscription_table(self, subscription: object) -> tuple[TopicTable, list[int]] | None:
        """A fresh table already holding ``subscription``'s topics, and their indices, when the last
        subscription indexed was this very tuple (a homogeneous group's members share one)."""
        known = self._subscription
        if known is None or known[0] is not subscription:
            return None
        return known[1].copy(), known[2]

    def remember_subscription(self, subscription: object, table: TopicTable, listed: list[int]) -> None:
        """Remember a table that holds only ``subscription``'s topics (a tuple: immutable)."""
        if type(subscription) is tuple:
            self._subscription = (subscription, table.copy(), listed)

    def find(self, maps: list[Mapping[TopicId, Collection[int]]], ids: np.ndarray) -> Seen | None:
        """The remembered call that saw the most of the first non-empty maps (``ids``: every map's)."""
        probe = ids[[i for i, m in enumerate(maps[:_PROBE]) if m]]
        best: Seen | None = None
        hits = 0
        for seen in self._calls if len(probe) else ():
            found = seen.hits(probe)
            if found > hits:
                best, hits = seen, found
        return best

    def remember(self, seen: Seen) -> None:
        self._calls = (seen, *self._calls[: CALLS - 1])

    def clear(self) -> None:
        self._calls = ()
        self._subscription = None
