"""``UniformHomogeneousAssignmentBuilder`` as one numba pass, and Java's map order by replay.

The kernel walks members in ``memberIds()`` order exactly as the reference does (each keeps up to its
quota of its current partitions in its collections' order, the rest and the unassigned partitions form
one pool handed out in order to the members with room), and records what happens to each member's map:
the removals of ``maybeRevokePartitions`` and the ``computeIfAbsent(...).add`` of
``assignRemainingPartitions``. :func:`~kgroup.group.assignors.fast.javamaps.replay` then gives each
changed member's map in Java's iteration order; a member left alone keeps its own map.
"""

from __future__ import annotations

import numpy as np

from kgroup._njit import njit
from kgroup.group.assignors.api import (
    GroupAssignment,
    GroupSpec,
    PartitionAssignorError,
    SubscribedTopicDescriber,
)
from kgroup.group.assignors.fast.inputs import OldAssignments, TopicTable, old_assignments
from kgroup.group.assignors.fast.javamaps import OP_ADD, OP_REMOVE, OP_REMOVE_TOPIC, put_order, replay

__all__ = ["assign_uniform_homogeneous"]

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
    entry_start: np.ndarray,  # int64[M+1]
    old_topic: np.ndarray,
    old_part_start: np.ndarray,
    old_parts: np.ndarray,
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(status, op_member, op_kind, op_topic, op_partition, replayed)``."""
    topic_count = len(counts)
    subscribed = np.zeros(topic_count, np.bool_)
    total = 0
    for t in subscribed_order:
        subscribed[t] = True
        total += counts[t]
    pool_topic = np.empty(total + len(old_parts), np.int64)
    pool_part = np.empty(total + len(old_parts), np.int64)
    pool = 0
    for t in subscribed_order:
        for p in range(counts[t]):
            if not taken[flat_offset[t] + p]:
                pool_topic[pool] = t
                pool_part[pool] = p
                pool += 1
    empty = np.empty(0, np.int64)
    n_ops = 0
    op_member = np.empty(total + 2 * len(old_parts) + len(old_topic), np.int64)
    op_kind = np.empty(len(op_member), np.int64)
    op_topic = np.empty(len(op_member), np.int64)
    op_partition = np.empty(len(op_member), np.int64)
    replayed = np.zeros(members, np.bool_)
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
            t = old_topic[e]
            lo, hi = old_part_start[e], old_part_start[e + 1]
            if subscribed[t]:
                for k in range(lo, hi):
                    if not 0 <= old_parts[k] < counts[t]:
                        return ERR_FALLBACK, empty, empty, empty, empty, replayed
                if hi - lo <= quota:
                    quota -= hi - lo
                    continue
                for k in range(lo, hi):
                    if quota > 0:
                        quota -= 1
                        continue
                    replayed[m] = True
                    op_member[n_ops] = m
                    op_kind[n_ops] = OP_REMOVE
                    op_topic[n_ops] = t
                    op_partition[n_ops] = old_parts[k]
                    n_ops += 1
                    pool_topic[pool] = t
                    pool_part[pool] = old_parts[k]
                    pool += 1
                continue
            replayed[m] = True
            op_member[n_ops] = m
            op_kind[n_ops] = OP_REMOVE_TOPIC
            op_topic[n_ops] = t
            op_partition[n_ops] = -1
            n_ops += 1
        if quota > 0 and has_extra and members - m > extra_left:
            quota -= 1
            has_extra = False
        if quota > 0:
            unfilled[n_unfilled] = m
            remaining[n_unfilled] = quota
            n_unfilled += 1
        if has_extra:
            extra_left -= 1
    next_index = 0
    for u in range(n_unfilled):
        m = unfilled[u]
        replayed[m] = True  # deepCopyAssignment, even when the pool is empty
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


def _taken(group: GroupSpec, table: TopicTable, old: OldAssignments, counts: np.ndarray) -> np.ndarray:
    """``isPartitionAssigned`` over flat partition ids (only partitions inside their topic count)."""
    flat_offset = np.zeros(len(counts) + 1, np.int64)
    flat_offset[1:] = np.cumsum(np.maximum(counts, 0))
    taken = np.zeros(max(int(flat_offset[-1]), 1), np.bool_)
    if group.assigned is None:
        topic_of_part = np.repeat(old.topic, old.lengths)
        parts = old.parts
        inside = (parts >= 0) & (parts < counts[topic_of_part])
        taken[flat_offset[topic_of_part[inside]] + parts[inside]] = True
        return taken
    for topic, owners in group.assigned.items():
        index = table.index(topic)
        if index >= len(counts) or not owners:
            continue
        parts = np.fromiter(owners.keys(), np.int64, len(owners))
        parts = parts[(parts >= 0) & (parts < counts[index])]
        taken[flat_offset[index] + parts] = True
    return taken


def assign_uniform_homogeneous(group: GroupSpec, topics: SubscribedTopicDescriber) -> GroupAssignment | None:
    """``UniformHomogeneousAssignmentBuilder.build``; ``None`` when the reference should answer."""
    member_ids = list(group.members)
    specs = list(group.members.values())
    table = TopicTable()
    first = specs[0].subscribed_topic_ids
    listed = table.indices(first if isinstance(first, tuple | list) else tuple(first))
    if not listed:
        return {}
    old = old_assignments(specs, table)
    counts = table.counts(topics)
    spreads = table.spreads()
    subscription = np.array(listed, np.int64)
    order, _ = put_order(spreads[subscription], max((4 * len(listed)) // 3 + 1, 16))
    if len(np.unique(subscription)) != len(subscription):
        return None
    subscribed_order = subscription[order]
    missing = subscribed_order[counts[subscribed_order] == -1]
    if len(missing):
        raise PartitionAssignorError(
            f"Members are subscribed to topic {table.topics[int(missing[0])]} which doesn't exist in the "
            "topic metadata."
        )
    taken = _taken(group, table, old, counts)
    # topics met only in `assigned` were indexed after `counts`: they are nobody's subscription
    counts = np.concatenate([counts, np.full(len(table.topics) - len(counts), -1, np.int64)])
    spreads = table.spreads()
    flat_offset = np.zeros(len(counts) + 1, np.int64)
    flat_offset[1:] = np.cumsum(np.maximum(counts, 0))
    status, op_member, op_kind, op_topic, op_partition, replayed = homogeneous_kernel(
        len(member_ids),
        subscribed_order,
        counts,
        taken,
        flat_offset,
        old.entry_start,
        old.topic,
        old.part_start,
        old.parts,
    )
    if status == ERR_FALLBACK:
        return None
    if status == ERR_LEFT:
        raise PartitionAssignorError("Partitions were left unassigned")
    capacities = np.full(len(op_member), 16, np.int64)  # new HashSet<>()
    result = finish_replayed(
        member_ids,
        old,
        table,
        spreads,
        flat_offset,
        replayed,
        op_member,
        op_kind,
        op_topic,
        op_partition,
        capacities,
    )
    return result  # None: a replayed set would have held a tree bucket; the reference answers


def finish_replayed(
    member_ids: list[str],
    old: OldAssignments,
    table: TopicTable,
    spreads: np.ndarray,
    flat_offset: np.ndarray,
    replayed: np.ndarray,
    op_member: np.ndarray,
    op_kind: np.ndarray,
    op_topic: np.ndarray,
    op_partition: np.ndarray,
    op_capacity: np.ndarray,
) -> GroupAssignment | None:
    """The result: each replayed member's map in Java's order, every other member's own map; None
    when a replayed map would have held a tree bucket (see
    :func:`~kgroup.group.assignors.fast.javamaps.replay`)."""
    if old.plain:
        result: GroupAssignment = dict(zip(member_ids, old.maps, strict=True))  # type: ignore[arg-type]
    else:
        result = {m: {t: tuple(p) for t, p in a.items()} for m, a in zip(member_ids, old.maps, strict=True)}
    which = np.flatnonzero(replayed)
    if not len(which):
        return result
    # every op belongs to a replayed member; a replayed member may have none (a bare deep copy)
    order = np.argsort(op_member, kind="mergesort")
    op_start = np.searchsorted(op_member[order], np.concatenate([which, which[-1:] + 1]))
    entry_start, entry_topic, part_start, parts, modelled = replay(
        which.astype(np.int64),
        op_start,
        op_kind[order],
        op_topic[order],
        op_partition[order],
        op_capacity[order],
        old.entry_start,
        old.topic,
        old.part_start,
        old.parts,
        spreads,
        flat_offset,
    )
    if not modelled:
        return None
    topics = list(map(table.topics.__getitem__, entry_topic.tolist()))
    flat = tuple(parts.tolist())
    bounds = part_start.tolist()
    partitions = list(map(flat.__getitem__, map(slice, bounds, bounds[1:])))
    offsets = entry_start.tolist()
    for m, lo, hi in zip(which.tolist(), offsets, offsets[1:], strict=False):
        result[member_ids[m]] = dict(zip(topics[lo:hi], partitions[lo:hi], strict=True))
    return result
