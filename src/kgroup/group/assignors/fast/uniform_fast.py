"""``UniformHomogeneousAssignmentBuilder`` as one numba pass, and Java's map order by replay.

The kernel walks members in ``memberIds()`` order exactly as the reference does (each keeps up to its
quota of its current partitions in its collections' order, the rest and the unassigned partitions form
one pool handed out in order to the members with room), and records what happens to each member's map:
the removals of ``maybeRevokePartitions`` and the ``computeIfAbsent(...).add`` of
``assignRemainingPartitions``. :func:`~kgroup.group.assignors.fast.javamaps.replay` then gives each
changed member's map in Java's iteration order; a member left alone keeps its own map.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from itertools import chain
from operator import attrgetter, methodcaller
from typing import NamedTuple

import numpy as np

from kgroup._njit import njit
from kgroup.group.assignors.api import (
    GroupAssignment,
    GroupSpec,
    InvertedTarget,
    PartitionAssignorError,
    SubscribedTopicDescriber,
    TopicId,
)
from kgroup.group.assignors.common import missing_topic
from kgroup.group.assignors.fast.answer import ArrayAssignment
from kgroup.group.assignors.fast.inputs import OldAssignments, TopicTable
from kgroup.group.assignors.fast.javamaps import OP_ADD, OP_REMOVE, OP_REMOVE_TOPIC, put_order, replay
from kgroup.group.assignors.fast.reuse import Seen, SeenMaps, gather_entries

__all__ = ["MapOps", "answer_replayed", "assign_uniform_homogeneous", "finish_replayed"]

_assignment = attrgetter("assignment")
_values = methodcaller("values")


class MapOps(NamedTuple):
    """What an assignor kernel did to the members' maps, one op a row, for
    :func:`~kgroup.group.assignors.fast.javamaps.replay`: whose map (member index), which op
    (``OP_*``), its topic and partition, and a new set's initial capacity."""

    member: np.ndarray
    kind: np.ndarray
    topic: np.ndarray
    partition: np.ndarray
    capacity: np.ndarray


OK = 0
#: "Partitions were left unassigned"
ERR_LEFT = 1
#: a current partition outside its subscribed topic: the reference answers
ERR_FALLBACK = 2


@njit(cache=True)
def homogeneous_kernel(
    members: int,
    subscribed_order: np.ndarray,  # topic indices in the order of the subscription's HashSet
    counts: np.ndarray,  # int64[T]
    taken: np.ndarray,  # bool[flat]: isPartitionAssigned, flat ids flat_offset[t] + p
    flat_offset: np.ndarray,  # int64[T+1]
    entry_start: np.ndarray,  # int64[M+1]: member m's current topics are entries entry_start[m]:[m+1]
    entry_topic: np.ndarray,  # int64[E]
    entry_len: np.ndarray,  # int64[E]: the size of each entry's partition collection
    part_start: np.ndarray,  # int64[E+1]: the partitions read (only the replayed members' entries)
    parts: np.ndarray,
    plan_only: bool,
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(status, op_member, op_kind, op_topic, op_partition, replayed)``.

    The walk needs each current entry's size only; a member's partitions are read when it gives some
    back or its map is copied (it is *replayed*). ``plan_only`` walks on sizes alone and answers just
    which members are replayed, so that only their partitions need reading for the second, full walk."""
    topic_count = len(counts)
    subscribed = np.zeros(topic_count, np.bool_)
    total = 0
    for t in subscribed_order:
        subscribed[t] = True
        total += counts[t]
    empty = np.empty(0, np.int64)
    replayed = np.zeros(members, np.bool_)
    n_parts = len(parts)
    pool_topic = np.empty(0 if plan_only else total + n_parts, np.int64)
    pool_part = np.empty(len(pool_topic), np.int64)
    pool = 0
    if not plan_only:
        for t in subscribed_order:
            base = flat_offset[t]
            for p in range(counts[t]):
                if not taken[base + p]:
                    pool_topic[pool] = t
                    pool_part[pool] = p
                    pool += 1
        # a replayed member's current partition outside its subscribed topic: the reference answers
        for e in range(len(entry_topic)):
            t = entry_topic[e]
            if subscribed[t]:
                for k in range(part_start[e], part_start[e + 1]):
                    if not 0 <= parts[k] < counts[t]:
                        return ERR_FALLBACK, empty, empty, empty, empty, replayed
    n_ops = 0
    size = 0 if plan_only else total + 2 * n_parts + len(entry_topic)
    op_member = np.empty(size, np.int64)
    op_kind = np.empty(size, np.int64)
    op_topic = np.empty(size, np.int64)
    op_partition = np.empty(size, np.int64)
    unfilled = np.empty(members, np.int64)
    remaining = np.empty(members, np.int64)
    n_unfilled = 0
    minimum = total // members
    extra_left = total % members
    for m in range(members):
        quota = minimum
        has_extra = False
        if extra_left > 0:
            quota += 1
            has_extra = True
        for e in range(entry_start[m], entry_start[m + 1]):
            t = entry_topic[e]
            length = entry_len[e]
            if subscribed[t]:
                if length <= quota:
                    quota -= length
                    continue
                replayed[m] = True
                if plan_only:
                    quota = 0
                    continue
                lo = part_start[e]
                for k in range(lo, lo + length):
                    if quota > 0:
                        quota -= 1
                        continue
                    op_member[n_ops] = m
                    op_kind[n_ops] = OP_REMOVE
                    op_topic[n_ops] = t
                    op_partition[n_ops] = parts[k]
                    n_ops += 1
                    pool_topic[pool] = t
                    pool_part[pool] = parts[k]
                    pool += 1
                continue
            replayed[m] = True
            if plan_only:
                continue
            op_member[n_ops] = m
            op_kind[n_ops] = OP_REMOVE_TOPIC
            op_topic[n_ops] = t
            op_partition[n_ops] = -1
            n_ops += 1
        # a member that kept less than the minimum leaves the extra partition to those still to come
        # when enough of them remain to take every extra one
        if quota > 0 and has_extra and members - m > extra_left:
            quota -= 1
            has_extra = False
        if quota > 0:
            replayed[m] = True  # deepCopyAssignment, even when the pool is empty
            unfilled[n_unfilled] = m
            remaining[n_unfilled] = quota
            n_unfilled += 1
        if has_extra:
            extra_left -= 1
    if plan_only:
        return OK, empty, empty, empty, empty, replayed
    next_index = 0
    for u in range(n_unfilled):
        m = unfilled[u]
        stop = min(next_index + remaining[u], pool)
        for i in range(next_index, stop):
            op_member[n_ops] = m
            op_kind[n_ops] = OP_ADD
            op_topic[n_ops] = pool_topic[i]
            op_partition[n_ops] = pool_part[i]
            n_ops += 1
        next_index = stop
    if next_index < pool:
        return ERR_LEFT, empty, empty, empty, empty, replayed
    return OK, op_member[:n_ops], op_kind[:n_ops], op_topic[:n_ops], op_partition[:n_ops], replayed


def _taken(
    group: GroupSpec,
    table: TopicTable,
    counts: np.ndarray,
    entry_topic: np.ndarray,
    entry_len: np.ndarray,
    parts: np.ndarray,
) -> np.ndarray:
    """``isPartitionAssigned`` over flat partition ids (only partitions inside their topic count): the
    coordinator's per-topic assigned bytes (:class:`InvertedTarget`), an inverted target assignment
    read in one pass, or every member's current partitions without one."""
    flat_offset = np.zeros(len(counts) + 1, np.int64)
    flat_offset[1:] = np.cumsum(np.maximum(counts, 0))
    taken = np.zeros(max(int(flat_offset[-1]), 1), np.bool_)
    if isinstance(group.assigned, InvertedTarget):
        flags = group.assigned.flags
        chunks = list(flags.values())
        indices = np.fromiter(table.indices(list(flags)), np.int64, len(chunks))
        lengths = np.fromiter(map(len, chunks), np.int64, len(chunks))
        joined = np.frombuffer(b"".join(chunks), np.uint8)
        mark_flagged(joined, lengths, indices, counts, flat_offset, taken)
        return taken
    if group.assigned is None:
        topic_of_part = np.repeat(entry_topic, entry_len)
    else:
        owners = list(group.assigned.values())
        indices = np.fromiter(table.indices(list(group.assigned)), np.int64, len(owners))
        lengths = np.fromiter(map(len, owners), np.int64, len(owners))
        parts = _partitions(owners, int(lengths.sum()))
        topic_of_part = np.repeat(indices, lengths)
        # topics met only here were indexed after `counts`: they are nobody's subscription
        known = topic_of_part < len(counts)
        topic_of_part, parts = topic_of_part[known], parts[known]
    inside = (parts >= 0) & (parts < counts[topic_of_part])
    taken[flat_offset[topic_of_part[inside]] + parts[inside]] = True
    return taken


@njit(cache=True)
def mark_flagged(
    joined: np.ndarray,
    lengths: np.ndarray,
    topics: np.ndarray,
    counts: np.ndarray,
    flat_offset: np.ndarray,
    taken: np.ndarray,
) -> None:
    """Set ``taken`` for every flagged partition of ``joined`` (topic ``k``'s bytes follow topic
    ``k - 1``'s, ``lengths[k]`` of them) inside its topic's count; a topic indexed past ``counts``
    (met only here) is nobody's subscription."""
    at = 0
    for k in range(len(lengths)):
        topic = topics[k]
        if topic < len(counts):
            top = min(lengths[k], max(counts[topic], 0))
            base = flat_offset[topic]
            for partition in range(top):
                taken[base + partition] |= joined[at + partition] != 0  # no branch: vectorised
        at += lengths[k]


def _partitions(collections: Sequence[Collection[int]], total: int) -> np.ndarray:
    """The partitions of the collections, in order: read as bytes in one C pass when all are in 0..255
    (most topics have fewer partitions), else one by one."""
    try:
        small = bytearray(chain.from_iterable(collections))
    except (TypeError, ValueError):
        return np.fromiter(chain.from_iterable(collections), np.int64, total)
    return np.frombuffer(small, np.uint8).astype(np.int64)


def assign_uniform_homogeneous(
    group: GroupSpec, topics: SubscribedTopicDescriber, seen_maps: SeenMaps | None = None
) -> GroupAssignment | None:
    """``UniformHomogeneousAssignmentBuilder.build``; ``None`` when the reference should answer.
    ``seen_maps``: the calling assignor's recent calls' maps (:mod:`~kgroup.group.assignors.fast.reuse`)."""
    member_ids = list(group.members)
    specs = list(group.members.values())
    first = specs[0].subscribed_topic_ids
    cached = seen_maps.subscription_table(first) if seen_maps is not None else None
    if cached is None:
        table = TopicTable()
        listed = table.indices(first if isinstance(first, tuple | list) else tuple(first))
        if seen_maps is not None:
            seen_maps.remember_subscription(first, table, listed)
    else:
        table, listed = cached
    if not listed:
        return {}
    subscription = np.array(listed, np.int64)
    # a fresh table numbers distinct topics 0..n-1 in order: only a repeated topic needs looking for
    if listed[-1] != len(listed) - 1 and len(np.unique(subscription)) != len(subscription):
        return None
    # every member's current map: its topics and their sizes (the partitions only where needed);
    # the maps a recent call was handed too are not read again (see fast.reuse)
    maps: list[Mapping[TopicId, Collection[int]]] = list(map(_assignment, specs))
    sizes = np.fromiter(map(len, maps), np.int64, len(maps))
    entry_start = np.zeros(len(maps) + 1, np.int64)
    np.cumsum(sizes, out=entry_start[1:])
    entries = int(entry_start[-1])
    entry_topic, entry_len, plain = _read_entries(maps, sizes, entries, table, seen_maps)
    if plain and entries and seen_maps is not None:
        seen_maps.remember(Seen(maps, entry_start, entry_topic, entry_len, table.topics))
    counts = table.counts(topics)
    spreads = table.spreads()
    order, _ = put_order(spreads[subscription], max((4 * len(listed)) // 3 + 1, 16))
    subscribed_order = subscription[order]
    missing = subscribed_order[counts[subscribed_order] == -1]
    if len(missing):
        raise missing_topic(table.topics[int(missing[0])])
    flat_offset = np.zeros(len(counts) + 1, np.int64)
    flat_offset[1:] = np.cumsum(np.maximum(counts, 0))
    if group.assigned is None or not entries:
        part_start, parts = _read_parts(maps, entry_len, None, sizes)
    else:
        status, _, _, _, _, replayed = homogeneous_kernel(
            len(member_ids),
            subscribed_order,
            counts,
            np.zeros(1, np.bool_),
            flat_offset,
            entry_start,
            entry_topic,
            entry_len,
            np.zeros(entries + 1, np.int64),
            np.empty(0, np.int64),
            True,
        )
        part_start, parts = _read_parts(maps, entry_len, replayed, sizes)
    taken = _taken(group, table, counts, entry_topic, entry_len, parts)
    status, op_member, op_kind, op_topic, op_partition, replayed = homogeneous_kernel(
        len(member_ids),
        subscribed_order,
        counts,
        taken,
        flat_offset,
        entry_start,
        entry_topic,
        entry_len,
        part_start,
        parts,
        False,
    )
    if status == ERR_FALLBACK:
        return None
    if status == ERR_LEFT:
        raise PartitionAssignorError("Partitions were left unassigned")
    # topics met only in the current maps are nobody's subscription (no partitions of theirs are moved)
    counts = np.concatenate([counts, np.full(len(table.topics) - len(counts), -1, np.int64)])
    flat_offset = np.zeros(len(counts) + 1, np.int64)
    flat_offset[1:] = np.cumsum(np.maximum(counts, 0))
    capacities = np.full(len(op_member), 16, np.int64)  # new HashSet<>()
    # None: a replayed set would have held a tree bucket; the reference answers
    return answer_replayed(
        member_ids,
        maps,
        plain,
        entry_start,
        entry_topic,
        part_start,
        parts,
        table.topics,
        table.spreads(),
        flat_offset,
        replayed,
        MapOps(op_member, op_kind, op_topic, op_partition, capacities),
    )


def _read_entries(
    maps: list[Mapping[TopicId, Collection[int]]],
    sizes: np.ndarray,
    entries: int,
    table: TopicTable,
    seen_maps: SeenMaps | None,
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Every current entry's topic index and collection size, in member order, and whether every map
    is a dict of tuples: the maps a remembered call saw from its arrays, the others from the maps."""
    if not entries:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), True
    found = seen_maps.rows(maps, sizes) if seen_maps is not None else None
    seen, rows = found if found is not None else (None, None)
    known = None if rows is None else rows >= 0
    if seen is None or rows is None or known is None or not known.any():
        read = maps
    else:
        read = [maps[m] for m in np.flatnonzero(~known).tolist()]
    values: list[Collection[int]] = list(chain.from_iterable(map(_values, read)))
    read_topic = table.indices(list(chain.from_iterable(read)))
    read_len = np.fromiter(map(len, values), np.int64, len(values))
    #: every map a dict and every collection a tuple (a remembered call's maps all were)
    plain = set(map(type, read)) <= {dict} and set(map(type, values)) <= {tuple}
    if read is maps:
        return np.array(read_topic, np.int64), read_len, plain
    assert seen is not None and rows is not None
    remap = np.array(table.indices(seen.topics), np.int64)
    entry_topic, entry_len = gather_entries(
        rows,
        sizes,
        np.array(read_topic, np.int64),
        read_len,
        seen.entry_start,
        seen.entry_topic,
        seen.entry_len,
        remap,
    )
    return entry_topic, entry_len, plain


def _read_parts(
    maps: list[Mapping[TopicId, Collection[int]]],
    entry_len: np.ndarray,
    replayed: np.ndarray | None,
    sizes: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The partitions of the members ``replayed`` marks (every member for ``None``), as ``part_start``
    over all entries (an entry not read is empty) and the partitions in their collections' order."""
    if replayed is None:
        lengths = entry_len
        read = maps
    else:
        lengths = np.where(np.repeat(replayed, sizes), entry_len, 0) if len(entry_len) else entry_len
        read = [maps[m] for m in np.flatnonzero(replayed).tolist()]
    part_start = np.zeros(len(entry_len) + 1, np.int64)
    np.cumsum(lengths, out=part_start[1:])
    values = chain.from_iterable(map(_values, read))
    parts = np.fromiter(chain.from_iterable(values), np.int64, int(part_start[-1]))
    return part_start, parts


def finish_replayed(
    member_ids: list[str],
    old: OldAssignments,
    table: TopicTable,
    spreads: np.ndarray,
    flat_offset: np.ndarray,
    replayed: np.ndarray,
    ops: MapOps,
) -> GroupAssignment | None:
    """:func:`answer_replayed` over :class:`OldAssignments`."""
    return answer_replayed(
        member_ids,
        old.maps,
        old.plain,
        old.entry_start,
        old.topic,
        old.part_start,
        old.parts,
        table.topics,
        spreads,
        flat_offset,
        replayed,
        ops,
    )


@njit(cache=True)
def ops_by_member(
    which: np.ndarray,
    members: int,
    member: np.ndarray,
    kind: np.ndarray,
    topic: np.ndarray,
    partition: np.ndarray,
    capacity: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The ops grouped by member, in the order of ``which`` (the replayed members, ascending), each
    member's in the order they were done (a stable counting sort: one pass to count, one to place):
    ``op_start[r]:op_start[r + 1]`` are ``which[r]``'s. Ops already in member order (a new group's:
    adds only, member after member) are handed back as they are."""
    row = np.full(members, -1, np.int64)
    for r in range(len(which)):
        row[which[r]] = r
    op_start = np.zeros(len(which) + 1, np.int64)
    ordered = True
    for o in range(len(member)):
        op_start[row[member[o]] + 1] += 1
        if o and member[o] < member[o - 1]:
            ordered = False
    for r in range(len(which)):
        op_start[r + 1] += op_start[r]
    if ordered:
        return op_start, kind, topic, partition, capacity
    at = op_start[:-1].copy()
    n = len(member)
    out_kind = np.empty(n, kind.dtype)
    out_topic = np.empty(n, topic.dtype)
    out_partition = np.empty(n, partition.dtype)
    out_capacity = np.empty(n, capacity.dtype)
    for o in range(n):
        r = row[member[o]]
        k = at[r]
        at[r] = k + 1
        out_kind[k] = kind[o]
        out_topic[k] = topic[o]
        out_partition[k] = partition[o]
        out_capacity[k] = capacity[o]
    return op_start, out_kind, out_topic, out_partition, out_capacity


def answer_replayed(
    member_ids: list[str],
    maps: Sequence[Mapping[TopicId, Collection[int]]],
    plain: bool,
    entry_start: np.ndarray,
    entry_topic: np.ndarray,
    part_start: np.ndarray,
    parts: np.ndarray,
    topics: Sequence[TopicId],
    spreads: np.ndarray,
    flat_offset: np.ndarray,
    replayed: np.ndarray,
    ops: MapOps,
) -> GroupAssignment | None:
    """The answer (an :class:`~kgroup.group.assignors.fast.answer.ArrayAssignment`): each replayed
    member's map in Java's order, every other member's own map; None when a replayed map would have
    held a tree bucket (see :func:`~kgroup.group.assignors.fast.javamaps.replay`). A replayed member's
    entries must have their partitions in ``part_start``/``parts``."""
    own: Sequence[Mapping[TopicId, Collection[int]]] = (
        maps if plain else [{t: tuple(p) for t, p in a.items()} for a in maps]
    )
    which = np.flatnonzero(replayed)
    row = np.full(len(member_ids), -1, np.int64)
    if not len(which):
        empty = np.zeros(1, np.int64)
        return ArrayAssignment(member_ids, own, row, empty, empty[:0], empty, empty[:0], topics)
    # every op belongs to a replayed member; a replayed member may have none (a bare deep copy)
    which = which.astype(np.int64)
    op_start, kind, topic, partition, capacity = ops_by_member(
        which, len(member_ids), ops.member, ops.kind, ops.topic, ops.partition, ops.capacity
    )
    out_entry_start, out_topic, out_part_start, out_parts, modelled = replay(
        which,
        op_start,
        kind,
        topic,
        partition,
        capacity,
        entry_start,
        entry_topic,
        part_start,
        parts,
        spreads,
        flat_offset,
    )
    if not modelled:
        return None
    row[which] = np.arange(len(which))
    return ArrayAssignment(
        member_ids,
        own,
        row,
        out_entry_start,
        out_topic,
        out_part_start,
        out_parts,
        topics,
    )
