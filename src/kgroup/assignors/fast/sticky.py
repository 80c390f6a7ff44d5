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

import gc
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from itertools import chain, compress, pairwise, repeat
from operator import itemgetter
from typing import Any

import numpy as np

from kgroup.assignors.api import AssignmentRequest
from kgroup.assignors.common import PartitionMaker
from kgroup.assignors.fast.userdata import TopicNameTable, decode_sticky_user_data_flat
from kgroup.assignors.sticky import CooperativeStickyAssignor, StickyAssignor
from kgroup.assignors.sticky.owned import DEFAULT_GENERATION
from kgroup.javacompat import hashmap_iteration_order, java_string_key
from kgroup.model import Assignment, Member, TopicMetadata, TopicPartition

__all__ = ["FastCooperativeStickyAssignor", "FastStickyAssignor"]

_new_partition = partial(tuple.__new__, TopicPartition)
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
    """Partition objects for every member's flat numbers: the input's own objects where the member
    kept partitions it claimed, new ones otherwise.

    A member that keeps a run of its claimed partitions, in order (the usual sticky outcome: the
    claims were last round's sorted answer), gets a slice of the input's objects — one C copy.
    """
    bounds = out_start.tolist()
    count = len(bounds) - 1
    lists: list[list[TopicPartition] | None] = [None] * count
    pending = np.ones(out_flat.size, dtype=bool)
    if owned.objects is not None:
        objects = owned.objects
        src = out_src
        for m, (a, b) in enumerate(pairwise(bounds)):
            if b > a:
                first, last = int(src[a]), int(src[b - 1])
                if first >= 0 and last - first == b - a - 1 and (
                        b - a == 1 or bool((np.diff(src[a:b]) == 1).all())):
                    lists[m] = objects[first:last + 1]
                    pending[a:b] = False
            else:
                lists[m] = []
                continue
    else:
        for m, (a, b) in enumerate(pairwise(bounds)):
            if a == b:
                lists[m] = []
    every: list[TopicPartition] | None = None
    fresh_all = pending if owned.objects is None else pending & (out_src < 0)
    if int(fresh_all.sum()) * 3 >= topics.total:
        # most partitions are new: build every one once, topic by topic (in C); a member whose
        # partitions are evenly spaced (what a round robin over new members gives) takes a
        # strided slice of it, without touching each object more than once
        every = _every_partition(topics)
        for m, (a, b) in enumerate(pairwise(bounds)):
            if b - a >= 2 and lists[m] is None and bool(fresh_all[a:b].all()):
                steps = np.diff(out_flat[a:b])
                step = int(steps[0])
                if step > 0 and bool((steps == step).all()):
                    lists[m] = every[int(out_flat[a]):int(out_flat[b - 1]) + 1:step]
                    pending[a:b] = False
    if pending.any():
        column = np.empty(out_flat.size, dtype=object)
        fresh = pending
        if owned.objects is not None:
            kept = pending & (out_src >= 0)
            if kept.any():
                # fromiter: an object column of tuples (np.array would unpack them into a 2-D array)
                claimed = np.fromiter(owned.objects, dtype=object, count=len(owned.objects))
                column[kept] = claimed[out_src[kept]]
            fresh = pending & (out_src < 0)
        if fresh.any():
            column[fresh] = _new_partitions(out_flat[fresh], topics, every)
        for m in range(count):
            if lists[m] is None:
                lists[m] = column[bounds[m]:bounds[m + 1]].tolist()
    return lists  # type: ignore[return-value]


def _every_partition(topics: _Topics) -> list[TopicPartition]:
    """Every partition object, in flat order (one shared int object per partition number)."""
    make = PartitionMaker()
    return list(chain.from_iterable(
        make(name, int(count)) for name, count in zip(topics.names, topics.counts, strict=True)))


def _new_partitions(flat: np.ndarray, topics: _Topics, every: list[TopicPartition] | None) -> np.ndarray:
    """An object column of new partition objects for the flat numbers ``flat``."""
    if every is None and flat.size * 3 >= topics.total:
        every = _every_partition(topics)
    if every is not None:
        picked: np.ndarray = np.fromiter(every, dtype=object, count=len(every))[flat]
        return picked
    ranks = np.searchsorted(topics.bases, flat, side="right") - 1
    numbers = (flat - topics.bases[ranks]).tolist()
    names = map(topics.names.__getitem__, ranks.tolist())
    made = list(map(_new_partition, zip(names, numbers, strict=True)))
    return np.fromiter(made, dtype=object, count=len(made))


class _GcPaused:
    """Pause the cyclic garbage collector while a million tuples are built.

    Building that many container objects triggers full collections that walk every live object
    (seconds at this size); tuples of strings and ints never form cycles, so nothing is lost.
    """

    def __enter__(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._was_enabled:
            gc.enable()


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
        with _GcPaused():
            return self._fast_assign_unpaused(request)

    def _fast_assign_unpaused(self, request: AssignmentRequest) -> Assignment | None:
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
