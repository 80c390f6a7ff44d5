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

Finding the maps seen: the maps' ids are read in one copy (:func:`~kgroup.object_ids.object_ids`), and
since a group's members come in the same order call after call, give or take a few members joining,
leaving or replaced, they are first lined up with the remembered call's by position
(:func:`aligned_rows`, one compiled pass); only past :data:`MAX_EDITS` edits are they found by one sort
and one merge of the two id lists (:func:`seen_rows`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np

from kgroup._njit import njit
from kgroup.group.assignors.fast.inputs import TopicTable
from kgroup.model import TopicId
from kgroup.object_ids import object_ids

__all__ = ["Seen", "SeenMaps", "aligned_rows", "gather_entries", "seen_rows"]

#: calls remembered per assignor instance (a coordinator runs one instance for all its groups)
CALLS = 4
#: maps probed to pick the remembered call that saw this group
_PROBE = 32
#: members in, out or replaced that :func:`aligned_rows` follows before the maps are sorted by ``id``
MAX_EDITS = 32
#: how far :func:`aligned_rows` looks ahead for the same id where the two lists differ
LOOKAHEAD = 8


class Seen:
    """One call's plain current maps (dicts of tuples): map ``m``'s topics are
    ``topics[entry_topic[entry_start[m]:entry_start[m + 1]]]``, their collections' sizes ``entry_len``."""

    __slots__ = ("_by_id", "entry_len", "entry_start", "entry_topic", "ids", "maps", "topics")

    def __init__(
        self,
        maps: list[Mapping[TopicId, Collection[int]]],
        entry_start: np.ndarray,
        entry_topic: np.ndarray,
        entry_len: np.ndarray,
        topics: Sequence[TopicId],
    ) -> None:
        self.maps = maps  # held: the ids below stay theirs while this is cached
        self.ids = object_ids(maps)
        self.entry_start = entry_start
        self.entry_topic = entry_topic
        self.entry_len = entry_len
        self.topics = list(topics)
        #: the ids sorted, and each sorted id's row: made when first searched by id
        self._by_id: tuple[np.ndarray, np.ndarray] | None = None

    def _sorted_ids(self) -> tuple[np.ndarray, np.ndarray]:
        by_id = self._by_id
        if by_id is None:
            # introsort: 5x a stable sort's speed on ids in no order; any order of equal ids will do
            # (two members handed one map object share its row's entries)
            order = np.argsort(self.ids)
            by_id = self._by_id = (self.ids[order], order)
        return by_id

    def hits(self, ids: np.ndarray) -> int:
        """How many of these map ids were seen."""
        seen_ids, _ = self._sorted_ids()
        at = np.minimum(np.searchsorted(seen_ids, ids), len(seen_ids) - 1)
        return int(np.count_nonzero(seen_ids[at] == ids))

    def rows(self, ids: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        """For each map (by ``id``), its row here; -1 when not seen, or seen with another number of
        topics than its ``sizes`` says now: lined up by position (:func:`aligned_rows`) when the maps
        are these in the same order but for :data:`MAX_EDITS` members in, out or replaced, else one
        sort and one merge of the two id lists (:func:`seen_rows`)."""
        rows, lined_up = aligned_rows(ids, self.ids, self.entry_start, sizes, MAX_EDITS)
        if lined_up:
            return rows
        seen_ids, seen_order = self._sorted_ids()
        return seen_rows(seen_ids, seen_order, self.entry_start, ids, np.argsort(ids), sizes)


@njit(cache=True)
def aligned_rows(
    ids: np.ndarray,
    seen_ids: np.ndarray,
    seen_entry_start: np.ndarray,
    sizes: np.ndarray,
    max_edits: int,
) -> tuple[np.ndarray, bool]:
    """:meth:`Seen.rows` when ``ids`` are ``seen_ids`` in the same order but for at most ``max_edits``
    edits (an id in, out or replaced), and whether they were. Where the two differ, the next
    :data:`LOOKAHEAD` ids on either side tell a run of new ids from a run of ids gone (else one id
    took another's place); a row is only ever given to the very same id. The few ids left without a
    row (new here, or moved: two members a hash bucket lists the other way round) are then looked for
    among the seen ids left without one, and among them all if not there, so every id seen gets a row,
    as :func:`seen_rows` gives."""
    n = len(ids)
    m = len(seen_ids)
    rows = np.full(n, -1, np.int64)
    taken = np.zeros(m, np.bool_)
    unmatched = np.empty(n, np.int64)
    left = 0
    i = 0
    j = 0
    edits = 0
    while i < n and j < m:
        if ids[i] == seen_ids[j]:
            rows[i] = j
            taken[j] = True
            i += 1
            j += 1
            continue
        skip_new = 0  # ids[i:i + skip_new] are new here
        skip_gone = 0  # seen_ids[j:j + skip_gone] are gone
        for k in range(1, LOOKAHEAD + 1):
            if i + k < n and ids[i + k] == seen_ids[j]:
                skip_new = k
                break
            if j + k < m and ids[i] == seen_ids[j + k]:
                skip_gone = k
                break
        if skip_new:
            edits += skip_new
            for k in range(skip_new):
                unmatched[left] = i + k
                left += 1
            i += skip_new
        elif skip_gone:
            edits += skip_gone
            j += skip_gone
        else:
            edits += 1  # ids[i] took seen_ids[j]'s place
            unmatched[left] = i
            left += 1
            i += 1
            j += 1
        if edits > max_edits:
            return rows, False
    # the ids left once the seen ones ran out: one edit each
    if n - i > max_edits - edits:
        return rows, False
    while i < n:
        unmatched[left] = i
        left += 1
        i += 1
    free = np.flatnonzero(~taken)
    for k in range(left):
        i = unmatched[k]
        for at in free:
            if seen_ids[at] == ids[i]:
                rows[i] = at
                break
        if rows[i] < 0:  # a map object two members share: any of its rows
            for row in range(m):
                if seen_ids[row] == ids[i]:
                    rows[i] = row
                    break
    for i in range(n):
        row = rows[i]
        if row >= 0 and seen_entry_start[row + 1] - seen_entry_start[row] != sizes[i]:
            rows[i] = -1  # seen with another number of topics: read again
    return rows, True


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


def _same(maps: Sequence[Mapping[TopicId, Collection[int]]], seen: Sequence[object]) -> int:
    """How many non-empty maps are the very object at the same place in ``seen`` (a member without a
    target may share one empty map object with others: it tells nothing)."""
    return sum(1 for a, b in zip(maps, seen, strict=False) if a is b and a)


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

    def rows(
        self, maps: list[Mapping[TopicId, Collection[int]]], sizes: np.ndarray
    ) -> tuple[Seen, np.ndarray] | None:
        """The remembered call that saw most of these maps, and each map's row in it (-1: to be read;
        see :meth:`Seen.rows`): the call whose first non-empty maps are these very objects, in place or
        one off, else the one whose ids match most of them; None when no call remembered saw any."""
        if not self._calls:
            return None
        head = maps[:_PROBE]
        best: Seen | None = None
        hits = 0
        for seen in self._calls:
            found = _same(head, seen.maps) + _same(head[1:], seen.maps)
            found += _same(head, seen.maps[1 : _PROBE + 1])
            if found > hits:
                best, hits = seen, found
        ids = object_ids(maps)
        if best is None:
            best = self.find(maps, ids)
        return None if best is None else (best, best.rows(ids, sizes))

    def remember(self, seen: Seen) -> None:
        self._calls = (seen, *self._calls[: CALLS - 1])

    def clear(self) -> None:
        self._calls = ()
        self._subscription = None
