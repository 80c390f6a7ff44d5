"""``UniformHeterogeneousAssignmentBuilder`` as one numba pass, and Java's map order by replay.

The kernel follows :mod:`kgroup.group.assignors.uniform_heterogeneous` (the readable spec) step by
step over integer arrays: members keep what they own of the topics they still subscribe to (a topic
they left is removed from their map), each topic's free partitions go to its least loaded subscribers
(topics with the most partitions per subscriber first), then up to 16 rounds move partitions from the
most to the least loaded subscribers of each shared topic. It records what happens to each member's
map — the topic removals, then each partition's ``removePartitionFromAssignment`` from its old owner
and ``computeIfAbsent(topic, new HashSet<>(n)).add`` to its new one — and
:func:`~kgroup.group.assignors.fast.javamaps.replay` gives each changed member's map in Java's order;
a member left alone keeps its own map. Subscribers per topic come from the members' subscription
classes, so equal subscriptions are read once.

Anything the spec would answer with an error (a subscribed topic missing from the metadata, a current
partition outside its topic) and a map Java would have turned into a tree bucket is left to the
reference, which answers it exactly.
"""

from __future__ import annotations

import numpy as np

from kgroup._njit import njit
from kgroup.group.assignors.api import GroupAssignment, GroupSpec, SubscribedTopicDescriber
from kgroup.group.assignors.fast.inputs import TopicTable, classes_of, old_assignments
from kgroup.group.assignors.fast.javamaps import OP_ADD, OP_REMOVE, OP_REMOVE_TOPIC, record_op
from kgroup.group.assignors.fast.uniform_fast import MapOps, finish_replayed

__all__ = ["assign_uniform_heterogeneous"]

OK = 0
#: the reference answers (it raises, or the case is outside what the kernel models)
FALLBACK = 1

_MAX_ITERATION_COUNT = 16

# the balancer's state, one int64 array (MemberAssignmentBalancer's fields)
_LEAST_END, _LEAST_COUNT, _NEXT_LEAST, _MOST_START, _MOST_END, _MOST_COUNT, _NEXT_MOST, _LENGTH = range(8)


@njit(cache=True)
def _initialize(state: np.ndarray, ordered: np.ndarray, subscribers: np.ndarray, sizes: np.ndarray) -> int:
    """Sort ``subscribers`` (ascending member indices) by (load, index) into ``ordered``; the spread
    between the extremes. Loads are small: a counting sort by load keeps the index order within one."""
    n = len(subscribers)
    low = high = sizes[subscribers[0]]
    for i in range(1, n):
        size = sizes[subscribers[i]]
        low = min(low, size)
        high = max(high, size)
    if high - low <= 4 * n:
        starts = np.zeros(high - low + 2, np.int64)
        for i in range(n):
            starts[sizes[subscribers[i]] - low + 1] += 1
        for k in range(1, len(starts)):
            starts[k] += starts[k - 1]
        for i in range(n):
            slot = sizes[subscribers[i]] - low
            ordered[starts[slot]] = subscribers[i]
            starts[slot] += 1
    else:
        width = len(sizes)
        keys = np.empty(n, np.int64)
        for i in range(n):
            keys[i] = sizes[subscribers[i]] * width + subscribers[i]
        order = np.argsort(keys)
        for i in range(n):
            ordered[i] = subscribers[order[i]]
    first, last = sizes[ordered[0]], sizes[ordered[n - 1]]
    state[_LEAST_END] = 0
    state[_LEAST_COUNT] = first - 1
    state[_NEXT_LEAST] = 0
    state[_MOST_START] = n
    state[_MOST_END] = n
    state[_MOST_COUNT] = last + 1
    state[_NEXT_MOST] = n - 1
    state[_LENGTH] = n
    return int(last - first)


@njit(cache=True)
def _next_least_loaded(state: np.ndarray, ordered: np.ndarray, sizes: np.ndarray) -> int:
    n = state[_LENGTH]
    if state[_NEXT_LEAST] >= state[_LEAST_END]:
        state[_LEAST_COUNT] += 1
        while state[_LEAST_END] < n and sizes[ordered[state[_LEAST_END]]] == state[_LEAST_COUNT]:
            state[_LEAST_END] += 1
        state[_NEXT_LEAST] = 0
    member = ordered[state[_NEXT_LEAST]]
    state[_NEXT_LEAST] += 1
    return int(member)


@njit(cache=True)
def _next_most_loaded(state: np.ndarray, ordered: np.ndarray, sizes: np.ndarray) -> int:
    if state[_NEXT_MOST] < state[_MOST_START]:
        if state[_MOST_END] <= state[_MOST_START] and state[_MOST_START] > 0:
            state[_MOST_COUNT] = sizes[ordered[state[_MOST_START] - 1]]
        else:
            state[_MOST_COUNT] -= 1
        while state[_MOST_START] > 0 and sizes[ordered[state[_MOST_START] - 1]] == state[_MOST_COUNT]:
            state[_MOST_START] -= 1
        state[_NEXT_MOST] = state[_MOST_END] - 1
    if state[_NEXT_MOST] < 0:
        return -1
    member = ordered[state[_NEXT_MOST]]
    state[_NEXT_MOST] -= 1
    return int(member)


@njit(cache=True)
def _exclude_most_loaded(state: np.ndarray, ordered: np.ndarray) -> None:
    i, j = state[_NEXT_MOST] + 1, state[_MOST_END] - 1
    member = ordered[i]
    ordered[i] = ordered[j]
    ordered[j] = member
    state[_MOST_END] -= 1


@njit(cache=True)
def _topic_order(
    topics: np.ndarray, counts: np.ndarray, subscriber_count: np.ndarray, rank: np.ndarray
) -> np.ndarray:
    """``topics`` by (most partitions per subscriber, fewest subscribers, ``Uuid.compareTo``)."""
    order = topics[np.argsort(rank[topics], kind="mergesort")]
    order = order[np.argsort(subscriber_count[order], kind="mergesort")]
    ratio = np.empty(len(order), np.float64)
    for i in range(len(order)):
        ratio[i] = -(counts[order[i]] / subscriber_count[order[i]])
    return order[np.argsort(ratio, kind="mergesort")]


@njit(cache=True)
def heterogeneous_kernel(
    members: int,
    member_class: np.ndarray,  # int64[M]
    class_start: np.ndarray,  # int64[C+1]
    class_topics: np.ndarray,  # topic indices of each class's subscription
    counts: np.ndarray,  # int64[T]: numPartitions (-1: not in the metadata)
    rank: np.ndarray,  # int64[T]: each topic's place in Uuid.compareTo order
    flat_offset: np.ndarray,  # int64[T+1]
    entry_start: np.ndarray,
    old_topic: np.ndarray,
    old_part_start: np.ndarray,
    old_parts: np.ndarray,
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(status, op_member, op_kind, op_topic, op_partition, op_capacity, replayed)``."""
    topic_count = len(counts)
    empty = np.empty(0, np.int64)
    replayed = np.zeros(members, np.bool_)
    # subscribers of each topic, in member order
    subscriber_count = np.zeros(topic_count, np.int64)
    for m in range(members):
        c = member_class[m]
        for k in range(class_start[c], class_start[c + 1]):
            subscriber_count[class_topics[k]] += 1
    for t in range(topic_count):
        if subscriber_count[t] > 0 and counts[t] < 0:
            return FALLBACK, empty, empty, empty, empty, empty, replayed
    # a topic's new sets: `new HashSet<>(capacityOverLoadFactor(ceil(partitions / subscribers)))`
    capacity = np.zeros(topic_count, np.int64)
    for t in range(topic_count):
        if subscriber_count[t] > 0:
            per_subscriber = (counts[t] + subscriber_count[t] - 1) // subscriber_count[t]
            capacity[t] = (4 * per_subscriber) // 3 + 1
    sub_start = np.zeros(topic_count + 1, np.int64)
    for t in range(topic_count):
        sub_start[t + 1] = sub_start[t] + subscriber_count[t]
    sub_members = np.empty(sub_start[topic_count], np.int64)
    filled = sub_start[:topic_count].copy()
    for m in range(members):
        c = member_class[m]
        for k in range(class_start[c], class_start[c + 1]):
            t = class_topics[k]
            sub_members[filled[t]] = m
            filled[t] += 1
    total = flat_offset[topic_count]
    owners = np.full(max(total, 1), -1, np.int64)
    sizes = np.zeros(members, np.int64)
    size = 2 * total + len(old_topic) + 16
    ops = np.empty((5, size), np.int64)
    n_ops = 0
    # maybeRevokePartitions
    mark = np.zeros(topic_count, np.bool_)
    for m in range(members):
        c = member_class[m]
        for k in range(class_start[c], class_start[c + 1]):
            mark[class_topics[k]] = True
        for e in range(entry_start[m], entry_start[m + 1]):
            t = old_topic[e]
            lo, hi = old_part_start[e], old_part_start[e + 1]
            if mark[t]:
                sizes[m] += hi - lo
                for k in range(lo, hi):
                    p = old_parts[k]
                    if not 0 <= p < counts[t]:
                        return FALLBACK, empty, empty, empty, empty, empty, replayed
                    owners[flat_offset[t] + p] = m
                continue
            replayed[m] = True
            ops = record_op(ops, n_ops, m, OP_REMOVE_TOPIC, t, -1, 0)
            n_ops += 1
        for k in range(class_start[c], class_start[c + 1]):
            mark[class_topics[k]] = False
    state = np.zeros(8, np.int64)
    ordered = np.empty(members, np.int64)
    # assignRemainingPartitions: topics with a free partition, in order
    with_free = np.zeros(topic_count, np.bool_)
    for t in range(topic_count):
        if subscriber_count[t] == 0:
            continue
        for p in range(counts[t]):
            if owners[flat_offset[t] + p] == -1:
                with_free[t] = True
                break
    free_topics = np.flatnonzero(with_free)
    for t in _topic_order(free_topics, counts, subscriber_count, rank):
        subscribers = sub_members[sub_start[t] : sub_start[t + 1]]
        _initialize(state, ordered, subscribers, sizes)
        for p in range(counts[t]):
            flat = flat_offset[t] + p
            if owners[flat] != -1:
                continue
            m = _next_least_loaded(state, ordered, sizes)
            replayed[m] = True
            ops = record_op(ops, n_ops, m, OP_ADD, t, p, capacity[t])
            n_ops += 1
            owners[flat] = m
            sizes[m] += 1
    # balance: the topics two or more members share, in order
    n_shared = 0
    for t in range(topic_count):
        if subscriber_count[t] >= 2:
            n_shared += 1
    shared = np.empty(n_shared, np.int64)
    i = 0
    for t in range(topic_count):
        if subscriber_count[t] >= 2:
            shared[i] = t
            i += 1
    shared = _topic_order(shared, counts, subscriber_count, rank)
    run_start = np.full(members, -1, np.int64)
    run_end = np.full(members, -1, np.int64)
    last_rebalanced = -1
    done = n_shared == 0
    for _ in range(_MAX_ITERATION_COUNT):
        if done:
            break
        for topic_index in range(n_shared):
            if topic_index == last_rebalanced:
                done = True  # a full round without a move
                break
            t = shared[topic_index]
            subscribers = sub_members[sub_start[t] : sub_start[t + 1]]
            moved = 0
            if _initialize(state, ordered, subscribers, sizes) > 1:
                base = flat_offset[t]
                topic_owners = owners[base : base + counts[t]]
                partitions = np.argsort(topic_owners, kind="mergesort")  # by owner, then partition
                for s in subscribers:
                    run_start[s] = -1
                    run_end[s] = -1
                for j in range(len(partitions)):
                    owner = topic_owners[partitions[j]]
                    if run_start[owner] == -1:
                        run_start[owner] = j
                    run_end[owner] = j + 1
                while state[_MOST_COUNT] - state[_LEAST_COUNT] > 1:
                    most = -1
                    while True:
                        most = _next_most_loaded(state, ordered, sizes)
                        if most == -1 or run_end[most] - run_start[most] > 0:
                            break
                        _exclude_most_loaded(state, ordered)
                    if most == -1:
                        break
                    p = partitions[run_end[most] - 1]
                    run_end[most] -= 1
                    least = _next_least_loaded(state, ordered, sizes)
                    if state[_MOST_COUNT] - state[_LEAST_COUNT] <= 1:
                        break
                    replayed[most] = True
                    ops = record_op(ops, n_ops, most, OP_REMOVE, t, p, 0)
                    n_ops += 1
                    sizes[most] -= 1
                    replayed[least] = True
                    ops = record_op(ops, n_ops, least, OP_ADD, t, p, capacity[t])
                    n_ops += 1
                    owners[base + p] = least
                    sizes[least] += 1
                    moved += 1
            if moved > 0 or last_rebalanced == -1:
                last_rebalanced = topic_index
    return (
        OK,
        ops[0, :n_ops].copy(),
        ops[1, :n_ops].copy(),
        ops[2, :n_ops].copy(),
        ops[3, :n_ops].copy(),
        ops[4, :n_ops].copy(),
        replayed,
    )


def assign_uniform_heterogeneous(
    group: GroupSpec, topics: SubscribedTopicDescriber
) -> GroupAssignment | None:
    """``UniformHeterogeneousAssignmentBuilder.build``; ``None`` when the reference should answer."""
    member_ids = list(group.members)
    specs = list(group.members.values())
    table = TopicTable()
    classes = classes_of([s.subscribed_topic_ids for s in specs], table)
    if not len(classes.topics):
        return {}
    old = old_assignments(specs, table)
    counts = table.counts(topics)
    spreads = table.spreads()
    rank = np.empty(len(table.topics), np.int64)
    rank[sorted(range(len(table.topics)), key=table.topics.__getitem__)] = np.arange(len(table.topics))
    flat_offset = np.zeros(len(counts) + 1, np.int64)
    flat_offset[1:] = np.cumsum(np.maximum(counts, 0))
    status, op_member, op_kind, op_topic, op_partition, op_capacity, replayed = heterogeneous_kernel(
        len(member_ids),
        classes.member_class,
        classes.start,
        classes.topics,
        counts,
        rank,
        flat_offset,
        old.entry_start,
        old.topic,
        old.part_start,
        old.parts,
    )
    if status != OK:
        return None
    ops = MapOps(op_member, op_kind, op_topic, op_partition, op_capacity)
    return finish_replayed(member_ids, old, table, spreads, flat_offset, replayed, ops)
