"""``SimpleHomogeneousAssignmentBuilder`` (the share groups' ``simple`` assignor) as one numba pass.

The kernel takes the reference's steps (:class:`kgroup.group.assignors.simple._Homogeneous`) in its
order over integer arrays: partitions are flat ids (``flat_offset[t] + p``), members their index in
``memberIds()``. What the answer depends on besides the counts is the iteration order of Kafka's
working collections, each computed as Java would iterate it:

* ``assignedPartitionToMembers`` — a ``HashMap`` keyed by ``TopicIdPartition`` (a record:
  ``31 * topicId.hashCode() + partition``), filled by ``computeIfAbsent`` (head inserts, a resize
  before every call once over 0.75 × capacity): iterated by (bucket, newest first), once after the
  current assignments are read (revoking over-shared partitions) and once more after every target was
  added (handing out the rest);
* each partition's members and each member's partitions — ``HashSet``s filled by ``add`` (tail
  inserts, a resize after): iterated by (bucket, insertion);
* the unfilled and overfilled members — ``HashSet<Integer>`` sized over the member count, so each
  member has a bucket of its own: ascending.

A chain that would have become a tree (Java orders a tree bucket otherwise), a partition outside its
topic's count in a current assignment, or member indices past 65,535 make the kernel step aside: the
reference answers. What happens to each member's map (``deepCopyAssignment``, removals, adds) is
recorded as ops and replayed by :func:`~kgroup.group.assignors.fast.javamaps.replay`, as for
``uniform``.
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
from kgroup.group.assignors.common import desired_assignment_counts, missing_topic
from kgroup.group.assignors.fast.inputs import TopicTable, old_assignments
from kgroup.group.assignors.fast.javamaps import (
    OP_ADD,
    OP_REMOVE_KEEP,
    OP_REMOVE_TOPIC,
    record_op,
    table_size_for,
)
from kgroup.group.assignors.fast.uniform_fast import MapOps, finish_replayed

__all__ = ["assign_simple_homogeneous", "simple_homogeneous_kernel"]

OK = 0
#: a tree bucket, a stale partition: the reference answers
STEP_ASIDE = 1
#: ``memberIterator.next()`` on an emptied unfilled set: Java throws ``NoSuchElementException``
ERR_NO_MEMBER = 2

_TREEIFY = 8
_MIN_TREEIFY_CAPACITY = 64
_MAX_CAPACITY = 1 << 30
#: Integer keys below this spread to themselves (``h ^ h >>> 16``), so a table bigger than the member
#: count iterates members in ascending order
_PLAIN_INTEGERS = 1 << 16


@njit(cache=True)
def _recount(chains: np.ndarray, spreads: np.ndarray, keys: np.ndarray, n: int, capacity: int) -> None:
    chains[:capacity] = 0
    for i in range(n):
        chains[spreads[keys[i]] & (capacity - 1)] += 1


@njit(cache=True)
def _set_order(spreads: np.ndarray, keys: np.ndarray, n: int, chains: np.ndarray, order: np.ndarray) -> bool:
    """``keys[:n]`` (indices into ``spreads``) ``add``-ed in that order to ``new HashSet<>()``: written
    to ``order[:n]`` in the order the set iterates them. False when a chain became a tree."""
    capacity = 16
    chains[:capacity] = 0
    for i in range(n):
        bucket = spreads[keys[i]] & (capacity - 1)
        chains[bucket] += 1
        if chains[bucket] > _TREEIFY:
            if capacity >= _MIN_TREEIFY_CAPACITY:
                return False
            capacity *= 2
            _recount(chains, spreads, keys, i + 1, capacity)
        if i + 1 > (capacity * 3) // 4 and capacity < _MAX_CAPACITY:
            capacity *= 2
            _recount(chains, spreads, keys, i + 1, capacity)
    sort_keys = np.empty(n, np.int64)
    for i in range(n):
        sort_keys[i] = ((spreads[keys[i]] & (capacity - 1)) << 32) | i
    ranked = np.argsort(sort_keys)
    for i in range(n):
        order[i] = keys[ranked[i]]
    return True


@njit(cache=True)
def _compute_if_absent_all(
    calls: np.ndarray, spreads: np.ndarray, table: np.ndarray, keys: np.ndarray, seq: np.ndarray
) -> bool:
    """``assignedPartitionToMembers.computeIfAbsent`` of each of ``calls`` (flat ids), in order, on the
    map's state: ``table`` = (capacity, size, head sequence) then its chain lengths, ``keys[:size]``
    its keys in insertion order, ``seq`` each key's sequence (0: absent). An overfull table doubles
    before every call, even for a key already there; a new key goes to the head of its chain; a chain
    reaching 8 doubles a table under 64 buckets and is a tree in a bigger one (False)."""
    for flat in calls:
        cap = table[0]
        size = table[1]
        if size > (cap * 3) // 4 and cap < _MAX_CAPACITY:
            cap *= 2
            table[0] = cap
            _recount(table[3:], spreads, keys, size, cap)
        if seq[flat] != 0:
            continue
        table[2] -= 1
        seq[flat] = table[2]
        keys[size] = flat
        table[1] = size + 1
        bucket = spreads[flat] & (cap - 1)
        table[3 + bucket] += 1
        if table[3 + bucket] > _TREEIFY - 1:
            if cap >= _MIN_TREEIFY_CAPACITY:
                return False
            table[0] = cap * 2
            _recount(table[3:], spreads, keys, size + 1, cap * 2)
    return True


@njit(cache=True)
def _map_order(spreads: np.ndarray, table: np.ndarray, keys: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """The map's keys in the order it iterates them: by bucket, newest first within one."""
    cap = table[0]
    size = table[1]
    order_keys = np.empty(size, np.int64)
    for i in range(size):
        flat = keys[i]
        order_keys[i] = ((spreads[flat] & (cap - 1)) << 32) | (seq[flat] + size)
    ranked = np.argsort(order_keys)
    ordered = np.empty(size, np.int64)
    for i in range(size):
        ordered[i] = keys[ranked[i]]
    return ordered


@njit(cache=True)
def simple_homogeneous_kernel(
    members: int,
    desired: np.ndarray,  # int64[M]: each member's quota
    sharing: int,
    targets: np.ndarray,  # int64[P]: the assignable partitions' flat ids, in the reference's order
    flat_topic: np.ndarray,  # int64[F]: each flat id's topic index (F = every subscribed topic's partitions)
    flat_part: np.ndarray,  # int64[F]: each flat id's partition
    flat_offset: np.ndarray,  # int64[T+1]
    subscribed: np.ndarray,  # bool[T]
    tp_spread: np.ndarray,  # int64[F]: HashMap.hash of each flat id's TopicIdPartition
    entry_start: np.ndarray,  # int64[M+1]: member m's current topics, in its map's order
    entry_topic: np.ndarray,
    part_start: np.ndarray,  # int64[E+1]
    parts: np.ndarray,
    by_partition_capacity: int,  # the table size of newHashMap(P)
) -> tuple[int, np.ndarray, np.ndarray]:
    """``(status, ops, replayed)``: ``ops`` as :func:`~kgroup.group.assignors.fast.javamaps.record_op`
    writes them."""
    replayed = np.zeros(members, np.bool_)
    flats = len(flat_topic)
    n_old = len(parts)
    ops = np.empty((5, max(16, len(entry_topic) + n_old + len(targets))), np.int64)
    n_ops = 0
    # the current holders, in insertion order: pair i is (holder_flat[i], holder_member[i])
    holder_flat = np.empty(n_old, np.int64)
    holder_member = np.empty(n_old, np.int64)
    holder_alive = np.zeros(n_old, np.bool_)
    n_holders = 0
    held = np.zeros(members, np.int64)  # memberAssignedPartitions' sizes
    unfilled = np.zeros(members, np.bool_)
    overfilled = np.zeros(members, np.bool_)

    # revokeUnassignablePartitions: every current partition of a subscribed topic is recorded
    for m in range(members):
        assigned = 0
        for e in range(entry_start[m], entry_start[m + 1]):
            t = entry_topic[e]
            if not subscribed[t]:
                replayed[m] = True
                ops = record_op(ops, n_ops, m, OP_REMOVE_TOPIC, t, -1, 0)
                n_ops += 1
                continue
            for k in range(part_start[e], part_start[e + 1]):
                p = parts[k]
                if not 0 <= p < flat_offset[t + 1] - flat_offset[t]:
                    return STEP_ASIDE, ops[:, :0], replayed
                holder_flat[n_holders] = flat_offset[t] + p
                holder_member[n_holders] = m
                holder_alive[n_holders] = True
                n_holders += 1
                held[m] += 1
                assigned += 1
                if assigned >= desired[m]:
                    replayed[m] = True  # deepCopyAssignment
        if assigned < desired[m]:
            unfilled[m] = True
        elif assigned > desired[m]:
            overfilled[m] = True
    # assignedPartitionToMembers, by computeIfAbsent of those partitions in that order
    table = np.zeros(3 + 2 * by_partition_capacity + 2 * table_size_for(2 * flats + 2), np.int64)
    table[0] = by_partition_capacity
    bp_keys = np.empty(flats, np.int64)
    bp_seq = np.zeros(flats, np.int64)
    if not _compute_if_absent_all(holder_flat[:n_holders], tp_spread, table, bp_keys, bp_seq):
        return STEP_ASIDE, ops[:, :0], replayed

    # each member's partitions (its pairs, in order) and each partition's members (likewise)
    by_member_start = np.zeros(members + 1, np.int64)
    by_flat_start = np.zeros(flats + 1, np.int64)
    for i in range(n_holders):
        by_member_start[holder_member[i] + 1] += 1
        by_flat_start[holder_flat[i] + 1] += 1
    for m in range(members):
        by_member_start[m + 1] += by_member_start[m]
    for f in range(flats):
        by_flat_start[f + 1] += by_flat_start[f]
    pairs_of_member = np.empty(n_holders, np.int64)
    pairs_of_flat = np.empty(n_holders, np.int64)
    fill_m = by_member_start[:-1].copy()
    fill_f = by_flat_start[:-1].copy()
    for i in range(n_holders):
        pairs_of_member[fill_m[holder_member[i]]] = i
        fill_m[holder_member[i]] += 1
        pairs_of_flat[fill_f[holder_flat[i]]] = i
        fill_f[holder_flat[i]] += 1
    member_spread = np.arange(members, dtype=np.int64)  # Integer.hashCode, spread: itself (< 65,536)
    scratch_chains = np.zeros(2 * table_size_for(max(16, 2 * max(members, n_holders) + 2)), np.int64)
    scratch_order = np.empty(max(members, n_holders, 1), np.int64)

    # revokeOverfilledMembers: in ascending member order, each one's partitions in its set's order
    for m in range(members):
        if not overfilled[m] or held[m] <= desired[m]:
            continue
        pairs = pairs_of_member[by_member_start[m] : by_member_start[m + 1]]
        n = len(pairs)
        if not _set_order(tp_spread, holder_flat[pairs], n, scratch_chains, scratch_order):
            return STEP_ASIDE, ops[:, :0], replayed
        for i in range(n):
            flat = scratch_order[i]
            # the pair of (flat, m): the member holds each partition once
            for j in range(by_member_start[m], by_member_start[m + 1]):
                pair = pairs_of_member[j]
                if holder_flat[pair] == flat:
                    holder_alive[pair] = False
            ops = record_op(ops, n_ops, m, OP_REMOVE_KEEP, flat_topic[flat], flat_part[flat], 0)
            n_ops += 1
            held[m] -= 1
            if held[m] == desired[m]:
                break

    # revokeOversharedPartitions: the map's keys in its order now, each partition's members likewise
    for flat in _map_order(tp_spread, table, bp_keys, bp_seq):
        count = 0
        for j in range(by_flat_start[flat], by_flat_start[flat + 1]):
            if holder_alive[pairs_of_flat[j]]:
                count += 1
        if count <= sharing:
            continue
        pairs = pairs_of_flat[by_flat_start[flat] : by_flat_start[flat + 1]]
        n = len(pairs)
        if not _set_order(member_spread, holder_member[pairs], n, scratch_chains, scratch_order):
            return STEP_ASIDE, ops[:, :0], replayed
        for i in range(n):
            m = scratch_order[i]
            for j in range(by_flat_start[flat], by_flat_start[flat + 1]):
                pair = pairs_of_flat[j]
                if holder_member[pair] == m and holder_alive[pair]:
                    holder_alive[pair] = False
                    replayed[m] = True
                    ops = record_op(ops, n_ops, m, OP_REMOVE_KEEP, flat_topic[flat], flat_part[flat], 0)
                    n_ops += 1
                    count -= 1
                    held[m] -= 1
                    unfilled[m] = True
            if count <= sharing:
                break

    # every target joins the map (computeIfAbsent, as above)
    if not _compute_if_absent_all(targets, tp_spread, table, bp_keys, bp_seq):
        return STEP_ASIDE, ops[:, :0], replayed

    # assignRemainingPartitions: the unfilled members, ascending, round the partitions short of sharers
    holders = np.zeros(flats, np.int64)
    for i in range(n_holders):
        if holder_alive[i]:
            holders[holder_flat[i]] += 1
    left = 0
    for m in range(members):
        if unfilled[m]:
            left += 1
    if left == 0:
        return OK, ops[:, :n_ops], replayed
    snapshot = np.flatnonzero(unfilled)
    n_snapshot = len(snapshot)
    # holding[m] == flat: m is among the partition's members (the handing out does not add to them,
    # as the reference's does not); given[m] == flat: m's set has it (a second give adds nothing)
    holding = np.full(members, -1, np.int64)
    given = np.full(members, -1, np.int64)
    at = 0
    assigned_this_pass = False
    for flat in _map_order(tp_spread, table, bp_keys, bp_seq):
        if holders[flat] < sharing:
            for j in range(by_flat_start[flat], by_flat_start[flat + 1]):
                if holder_alive[pairs_of_flat[j]]:
                    holding[holder_member[pairs_of_flat[j]]] = flat
            to_make = sharing - holders[flat]
            while to_make > 0:
                if at == n_snapshot:
                    if not assigned_this_pass:
                        break
                    snapshot = np.flatnonzero(unfilled)
                    n_snapshot = len(snapshot)
                    if n_snapshot == 0:
                        return ERR_NO_MEMBER, ops[:, :0], replayed
                    at = 0
                    assigned_this_pass = False
                m = snapshot[at]
                at += 1
                if holding[m] == flat:
                    continue
                to_make -= 1
                assigned_this_pass = True
                replayed[m] = True
                ops = record_op(ops, n_ops, m, OP_ADD, flat_topic[flat], flat_part[flat], 16)
                n_ops += 1
                if given[m] != flat:
                    given[m] = flat
                    held[m] += 1
                if held[m] >= desired[m] and unfilled[m]:
                    unfilled[m] = False
                    left -= 1
        if left == 0:
            break
    return OK, ops[:, :n_ops], replayed


def assign_simple_homogeneous(group: GroupSpec, topics: SubscribedTopicDescriber) -> GroupAssignment | None:
    """``SimpleHomogeneousAssignmentBuilder.build``; ``None`` when the reference should answer."""
    member_ids = list(group.members)
    if len(member_ids) >= _PLAIN_INTEGERS:
        return None
    specs = list(group.members.values())
    table = TopicTable()
    subscription = list(specs[0].subscribed_topic_ids)
    if not subscription:
        return {}
    listed = table.indices(subscription)
    if len(set(listed)) != len(listed):
        return None
    # every member's current map (its topics indexed after the subscription's), then every topic's count
    old = old_assignments(specs, table)
    counts = table.counts(topics)
    for t in listed:  # a subscribed topic the metadata lacks throws
        if counts[t] == -1:
            raise missing_topic(table.topics[t])
    # flat ids for the subscribed topics' partitions only (a current map may name other topics)
    subscribed = np.zeros(len(table.topics), np.bool_)
    subscribed[listed] = True
    sizes_by_topic = np.where(subscribed, np.maximum(counts, 0), 0)
    flat_offset = np.zeros(len(table.topics) + 1, np.int64)
    np.cumsum(sizes_by_topic, out=flat_offset[1:])
    # the partitions to share, in the reference's order
    targets: list[int] = []
    for t in listed:
        base = int(flat_offset[t])
        if group.assignable is None:
            targets.extend(range(base, base + int(counts[t])))
        else:
            topic = table.topics[t]
            targets.extend(base + p for p in range(int(counts[t])) if group.is_partition_assignable(topic, p))
    sharing, desired = desired_assignment_counts(len(member_ids), len(targets))
    flat_topic = np.repeat(np.arange(len(table.topics), dtype=np.int64), sizes_by_topic)
    flat_part = np.arange(int(flat_offset[-1]), dtype=np.int64) - flat_offset[flat_topic]
    hashes = np.array([topic.java_hash for topic in table.topics], np.int64)
    raw = (31 * hashes[flat_topic] + flat_part) & 0xFFFFFFFF  # the record's hashCode, as 32 bits
    tp_spread = raw ^ (raw >> 16)
    status, ops, replayed = simple_homogeneous_kernel(
        len(member_ids),
        np.array(desired, np.int64),
        sharing,
        np.array(targets, np.int64),
        flat_topic,
        flat_part,
        flat_offset,
        subscribed,
        tp_spread,
        old.entry_start,
        old.topic,
        old.part_start,
        old.parts,
        table_size_for((4 * (len(targets) + 1)) // 3 + 1),
    )
    if status == STEP_ASIDE:
        return None
    if status == ERR_NO_MEMBER:
        raise PartitionAssignorError(
            "NoSuchElementException: no unfilled member left for a partition short of sharers"
        )
    # the replay's own flat ids, over every topic met (a current map may name one nobody subscribes to)
    whole = np.zeros(len(table.topics) + 1, np.int64)
    np.cumsum(np.maximum(counts, 0), out=whole[1:])
    ops_arrays = MapOps(*(row.copy() for row in ops))
    return finish_replayed(member_ids, old, table, table.spreads(), whole, replayed, ops_arrays)
