"""Fast ``sticky`` and ``cooperative-sticky``: the reference assignors with a fast constrained path.

When every member subscribes to the same topics (Kafka's constrained path) and the input is clean
— owned partitions unique across members and within range — the assignment runs as one numba kernel
over integer arrays (:mod:`.constrained_kernel`): members become positions in Java ``HashMap`` order,
partitions one flat numbering in (topic, partition) order, racks bit masks. Everything else (the
general path, doubly claimed partitions, odd user data, Kafka's error cases) runs the reference
implementation this class extends, so results are the reference's in every case; the tests prove the
fast path equal on every Kafka vector and on large random groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, compress, repeat
from operator import itemgetter
from typing import Any

import numpy as np

from kgroup.assignors.api import AssignmentRequest
from kgroup.assignors.fast.partition_list import FlatPartitionList, TopicTable
from kgroup.assignors.fast.userdata import TopicNameTable, decode_sticky_user_data_flat
from kgroup.assignors.sticky import CooperativeStickyAssignor, StickyAssignor
from kgroup.assignors.sticky.owned import DEFAULT_GENERATION
from kgroup.javacompat import hashmap_iteration_order, java_string_key
from kgroup.model import Assignment, Member, TopicMetadata, TopicPartition

__all__ = ["FastCooperativeStickyAssignor", "FastStickyAssignor"]

_topic_of = itemgetter(0)
_partition_of = itemgetter(1)
#: more rack names than fit in a 64-bit mask: leave it to the reference
_MAX_RACKS = 63


class _Ranks(dict[str, int]):
    """Topic name -> rank among the assignable topics; -1 for any other topic (looked up at C speed)."""

    def __missing__(self, key: str) -> int:
        return -1


@dataclass(frozen=True, slots=True)
class _Topics:
    names: list[str]  # assignable topics in Java String order
    counts: np.ndarray  # partitions per topic
    bases: np.ndarray  # flat number of each topic's partition 0
    ranks: _Ranks
    metadata: list[TopicMetadata]

    @property
    def total(self) -> int:
        return int(self.counts.sum())


def _assignable(members: Sequence[Member], topics: Any) -> _Topics:
    found: dict[str, TopicMetadata] = {}
    # distinct subscription lists by identity first: members usually share one tuple object, and
    # hashing a tuple of 500 names 2000 times is not free
    for topic_list in set({id(m.topics): m.topics for m in members}.values()):
        for name in topic_list:
            meta = topics.get(name)
            if meta is not None and meta.partitions > 0:
                found[name] = meta
    names = sorted(found, key=java_string_key)
    counts = np.array([found[n].partitions for n in names], dtype=np.int64)
    bases = np.zeros(len(names), dtype=np.int64)
    if len(names) > 1:
        np.cumsum(counts[:-1], out=bases[1:])
    ranks = _Ranks((n, i) for i, n in enumerate(names))
    return _Topics(names, counts, bases, ranks, [found[n] for n in names])


def _all_subscriptions_equal(ordered: Sequence[Member]) -> bool:
    """``allSubscriptionsEqual``'s comparison of the raw subscription lists, in HashMap order."""
    first: set[str] = set()
    same_as_first: object = None
    for member in ordered:
        if not first:
            first.update(member.topics)
            same_as_first = member.topics
        elif member.topics is same_as_first and len(member.topics) == len(first):
            continue  # the very list that seeded the set, without duplicates: equal
        elif not (len(member.topics) == len(first) and first.issuperset(member.topics)):
            return False
    return True


@dataclass(frozen=True, slots=True)
class _Owned:
    start: np.ndarray  # CSR over members (HashMap order)
    flat: np.ndarray  # flat partition numbers
    key: np.ndarray  # (partition, topic rank) sort key
    objects: list[TopicPartition] | None  # the input's partition objects, parallel to flat (or None)


def _owned_from_objects(claims: list[Sequence[TopicPartition]], topics: _Topics) -> _Owned | None:
    """Flatten the members' claimed partitions; ``None`` when the fast path does not apply."""
    sizes = np.fromiter(map(len, claims), dtype=np.int64, count=len(claims))
    every = list(chain.from_iterable(claims))
    ranks = np.fromiter(
        map(topics.ranks.__getitem__, map(_topic_of, every)), dtype=np.int64, count=len(every)
    )
    numbers = np.fromiter(map(_partition_of, every), dtype=np.int64, count=len(every))
    keep = ranks >= 0
    objects: list[TopicPartition] = every
    if not keep.all():
        member_of = np.repeat(np.arange(len(claims)), sizes)
        sizes = np.bincount(member_of[keep], minlength=len(claims)).astype(np.int64)
        objects = list(compress(every, keep.tolist()))
        ranks, numbers = ranks[keep], numbers[keep]
    return _finish_owned(sizes, ranks, numbers, topics, objects)


def _finish_owned(
    sizes: np.ndarray,
    ranks: np.ndarray,
    numbers: np.ndarray,
    topics: _Topics,
    objects: list[TopicPartition] | None,
) -> _Owned | None:
    if numbers.size and (numbers.min() < 0 or (numbers >= topics.counts[ranks]).any()):
        return None  # a claimed partition beyond its topic: Kafka's odd path, left to the reference
    flat = topics.bases[ranks] + numbers
    if flat.size and np.bincount(flat, minlength=topics.total).max() > 1:
        return None  # claimed twice (by two members, or one member twice): generations decide
    start = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=start[1:])
    key = numbers * max(1, len(topics.names)) + ranks
    return _Owned(start, flat, key, objects)


@dataclass(frozen=True, slots=True)
class _Racks:
    aware: bool
    member_rack: np.ndarray
    partition_mask: np.ndarray
    sort_key: np.ndarray


_NO_INT = np.zeros(0, dtype=np.int64)
_NO_RACKS = _Racks(False, _NO_INT, np.zeros(0, dtype=np.uint64), _NO_INT)


def _racks(ordered: Sequence[Member], topics: _Topics, prefer: bool) -> _Racks | None:
    """``RackInfo`` as integer arrays; ``None`` when there are too many racks for a bit mask."""
    rack_bit: dict[str, int] = {}
    members_on: list[int] = []
    member_bits: list[int] = []
    for member in ordered:
        rack = member.rack_id
        if rack:
            bit = rack_bit.setdefault(rack, len(rack_bit))
            if bit == len(members_on):
                members_on.append(0)
            members_on[bit] += 1
            member_bits.append(bit)
        else:
            member_bits.append(-1)
    if not rack_bit:
        return _NO_RACKS
    if len(rack_bit) > _MAX_RACKS:
        return None
    no_racks: frozenset[str] = frozenset()
    mask_of: dict[frozenset[str], int] = {}

    def mask(racks: frozenset[str]) -> int:
        m = 0
        for r in racks:
            bit = rack_bit.get(r)
            if bit is not None:
                m |= 1 << bit
        mask_of[racks] = m
        return m

    masks: list[int] = []
    for meta in topics.metadata:
        racks = meta.racks if meta.racks is not None else repeat(no_racks, meta.partitions)
        masks.extend(mask_of[r] if r in mask_of else mask(r) for r in racks)
    partition_mask = np.array(masks, dtype=np.uint64)
    # members on each partition's racks, per distinct mask
    distinct, inverse = np.unique(partition_mask, return_inverse=True)
    per_mask = np.array(
        [sum(members_on[b] for b in range(len(members_on)) if int(v) >> b & 1) for v in distinct],
        dtype=np.int64,
    )
    sort_key = per_mask[inverse]
    # useRackAwareAssignment: member racks meet replica racks, and (unless preferred) not every
    # partition has every rack
    all_racks: set[str] = set()
    for racks_set in mask_of:
        all_racks.update(racks_set)
    if not all_racks.intersection(rack_bit):
        aware = False
    elif prefer:
        aware = True
    else:
        aware = not all(r == all_racks for r in mask_of)
    return _Racks(aware, np.array(member_bits, dtype=np.int64), partition_mask, sort_key)


def _build_lists(out_start: np.ndarray, out_flat: np.ndarray, out_src: np.ndarray, owned: _Owned,
                 topics: _Topics) -> list[list[TopicPartition]]:
    """Every member's list: the input's own objects where the member kept a run of its claimed
    partitions, in order (the usual sticky outcome: the claims were last round's sorted answer) — one
    C copy of a slice; otherwise a :class:`FlatPartitionList` that builds its ``TopicPartition``
    objects only when it is first read.

    No partition object is created here: an initial assignment of a million partitions returns in
    the time of its integer kernel, and the cyclic garbage collector never sees a million new tuples.
    """
    bounds = out_start.tolist()
    count = len(bounds) - 1
    table = TopicTable(topics.names, topics.bases)
    kept_run = _kept_runs(out_start, out_src) if owned.objects is not None else None
    lists: list[list[TopicPartition]] = []
    for m in range(count):
        a, b = bounds[m], bounds[m + 1]
        if a == b:
            lists.append([])
        elif kept_run is not None and kept_run[m]:
            first = int(out_src[a])
            lists.append(owned.objects[first:first + b - a])  # type: ignore[index]
        else:
            lists.append(FlatPartitionList(out_flat[a:b], table))
    return lists


def _kept_runs(out_start: np.ndarray, out_src: np.ndarray) -> list[bool]:
    """Per member: its output is a non-empty run of consecutive claimed partitions (``out_src``
    ascending by one from a position >= 0), computed for all members at once."""
    starts, ends = out_start[:-1], out_start[1:]
    nonempty = ends > starts
    if out_src.size == 0:
        return [False] * int(starts.size)
    # breaks[i] = how many of out_src[0..i] do not continue the run before them
    breaks = np.concatenate(([0], np.cumsum(np.diff(out_src) != 1)))
    first = np.where(nonempty, out_src[np.minimum(starts, out_src.size - 1)], -1)
    last_index = np.maximum(ends - 1, 0)
    unbroken = breaks[last_index] == breaks[np.minimum(starts, out_src.size - 1)]
    result: list[bool] = (nonempty & (first >= 0) & unbroken).tolist()
    return result


class _FastConstrained:
    """The fast constrained path shared by both assignors."""

    cooperative = False
    #: below this many partitions the reference is already fast (milliseconds) and the kernels'
    #: one-off compilation (seconds, then cached on disk) would not pay; 0 forces the fast path
    fast_path_min_partitions = 5_000
    _max_generation: int

    def _member_claims(self, ordered: Sequence[Member], topics: _Topics) -> tuple[_Owned | None, int]:
        raise NotImplementedError

    def _fast_assign(self, request: AssignmentRequest) -> Assignment | None:
        members = request.members
        if not members:
            return None
        ids = [m.member_id for m in members]
        if len(set(ids)) != len(ids):
            return None
        order = hashmap_iteration_order(ids)
        by_id = {m.member_id: m for m in members}
        ordered = [by_id[i] for i in order]
        all_equal = _all_subscriptions_equal(ordered)
        topics = _assignable(members, request.topics)
        if topics.total == 0 or topics.total < self.fast_path_min_partitions:
            return None
        owned, max_generation = self._member_claims(ordered, topics)
        if owned is None:
            return None
        racks = _racks(ordered, topics, request.prefer_rack_aware_logic)
        if racks is None:
            return None
        by_id_order = sorted(range(len(order)), key=lambda i: java_string_key(order[i]))
        id_rank = np.empty(len(order), dtype=np.int64)
        id_rank[np.array(by_id_order, dtype=np.int64)] = np.arange(len(order), dtype=np.int64)
        if all_equal:
            from kgroup.assignors.fast.constrained_kernel import OK, constrained_kernel

            status, out_start, out_flat, out_src = constrained_kernel(
                topics.total, owned.start, owned.flat, owned.key, id_rank, racks.aware,
                racks.member_rack, racks.partition_mask, racks.sort_key, self.cooperative)
        else:
            from kgroup.assignors.fast.general_kernel import OK, general_kernel

            subscribed = _subscription_matrix(ordered, topics)
            if subscribed is None:
                return None
            subscribers = subscribed.sum(axis=0)
            general_order = np.lexsort((np.arange(len(topics.names)), subscribers)).astype(np.int64)
            topic_of = np.repeat(np.arange(len(topics.names), dtype=np.int64), topics.counts)
            raw_owner = np.full(topics.total, -1, dtype=np.int64)
            if self.cooperative:
                raw_owner[owned.flat] = np.repeat(np.arange(len(order), dtype=np.int64), np.diff(owned.start))
            group_of, group_count = _member_groups(ordered, racks)
            status, out_start, out_flat, out_src = general_kernel(
                topics.bases, topics.counts, topic_of, general_order, subscribed, owned.start, owned.flat,
                id_rank, racks.aware, racks.member_rack, racks.partition_mask, raw_owner, self.cooperative,
                group_of, group_count)
        if status != OK:
            return None  # Kafka throws, or rebalances by moving partitions: the reference does it
        # only now, as the reference does on success, carry the generation over
        self._max_generation = max(self._max_generation, max_generation)
        lists = _build_lists(out_start, out_flat, out_src, owned, topics)
        position = {member_id: i for i, member_id in enumerate(order)}
        return {m.member_id: lists[position[m.member_id]] for m in members}


#: above this many groups of alike members, one heap for everyone is cheaper than a scan of groups
_MAX_GROUPS = 32


def _member_groups(ordered: Sequence[Member], racks: _Racks) -> tuple[np.ndarray, int]:
    """Group members by (subscription list object, rack when rack-aware); ``(…, 0)`` when too many."""
    index: dict[tuple[int, int], int] = {}
    group_of = np.empty(len(ordered), dtype=np.int64)
    for i, member in enumerate(ordered):
        rack = int(racks.member_rack[i]) if racks.aware else -1
        group_of[i] = index.setdefault((id(member.topics), rack), len(index))
        if len(index) > _MAX_GROUPS:
            return group_of, 0
    return group_of, len(index)


def _subscription_matrix(ordered: Sequence[Member], topics: _Topics) -> np.ndarray | None:
    """bool[member, topic rank]: the assignable topics each member subscribes to; ``None`` when a
    subscription lists a topic twice (Kafka then counts it twice: left to the reference)."""
    rows: dict[int, np.ndarray | None] = {}
    matrix = np.zeros((len(ordered), len(topics.names)), dtype=np.bool_)
    for i, member in enumerate(ordered):
        key = id(member.topics)
        if key not in rows:
            ranks = [r for r in map(topics.ranks.__getitem__, member.topics) if r >= 0]
            if len(set(ranks)) != len(ranks):
                rows[key] = None
            else:
                fresh = np.zeros(len(topics.names), dtype=np.bool_)
                fresh[np.array(ranks, dtype=np.int64)] = True
                rows[key] = fresh
        row = rows[key]
        if row is None:
            return None
        matrix[i] = row
    return matrix


class FastStickyAssignor(_FastConstrained, StickyAssignor):
    """``sticky`` with the fast constrained path; exactly :class:`kgroup.assignors.sticky.StickyAssignor`."""

    def _member_claims(self, ordered: Sequence[Member], topics: _Topics) -> tuple[_Owned | None, int]:
        max_generation = self._max_generation
        sizes: list[int] = []
        ranks: list[np.ndarray] = []
        numbers: list[np.ndarray] = []
        table: TopicNameTable | None = None
        for member in ordered:
            if not member.user_data:
                sizes.append(0)
                continue
            if table is None:
                table = TopicNameTable(topics.names)
            decoded = decode_sticky_user_data_flat(member.user_data, table)
            if decoded is None:
                return None, max_generation  # unreadable or unusual: the reference decides
            r, n, generation = decoded
            max_generation = max(max_generation, DEFAULT_GENERATION if generation is None else generation)
            sizes.append(r.size)
            ranks.append(r)
            numbers.append(n)
        all_ranks = np.concatenate(ranks) if ranks else _NO_INT
        all_numbers = np.concatenate(numbers) if numbers else _NO_INT
        owned = _finish_owned(np.array(sizes, dtype=np.int64), all_ranks, all_numbers, topics, None)
        return owned, max_generation

    def assign(self, request: AssignmentRequest) -> Assignment:
        fast = self._fast_assign(request)
        return fast if fast is not None else super().assign(request)


class FastCooperativeStickyAssignor(_FastConstrained, CooperativeStickyAssignor):
    """``cooperative-sticky`` with the fast constrained path; exactly the reference's results."""

    cooperative = True

    def _member_claims(self, ordered: Sequence[Member], topics: _Topics) -> tuple[_Owned | None, int]:
        max_generation = self._max_generation
        for member in ordered:
            if member.generation < 0 and member.user_data is not None:
                return None, max_generation  # generation from user data: the reference's path
            max_generation = max(
                max_generation, member.generation if member.generation >= 0 else DEFAULT_GENERATION
            )
        return _owned_from_objects([m.owned for m in ordered], topics), max_generation

    def assign(self, request: AssignmentRequest) -> Assignment:
        fast = self._fast_assign(request)
        return fast if fast is not None else super().assign(request)
