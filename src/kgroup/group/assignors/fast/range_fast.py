"""``RangeAssignor`` in closed form over subscription classes: one numba pass over members × topics.

The ``r``-th subscriber of a topic (members in ``RangeAssignor``'s order) gets the partitions
``[r·q + min(r, e), …)`` of length ``q + (r < e)`` where ``q, e = divmod(partitions, subscribers)``;
the homogeneous case is the same formula with every member subscribing. A member's map is
``new HashMap<>((int) (n / 0.75f + 1))`` over its ``n`` subscribed topics with its non-empty ranges
``put`` in subscription order: its iteration order is the subscription's own put order with the empty
ones left out — computed once per subscription class — unless the table is under 64 buckets, where a
long chain can resize it, and each member's map is ordered on its own (:func:`put_order`).
"""

from __future__ import annotations

from operator import attrgetter

import numpy as np

from kgroup._njit import njit
from kgroup.group.assignors.api import (
    GroupAssignment,
    GroupSpec,
    PartitionAssignorError,
    SubscribedTopicDescriber,
    SubscriptionType,
    TopicId,
)
from kgroup.group.assignors.fast.inputs import TopicTable, classes_of, sorted_member_ids
from kgroup.group.assignors.fast.javamaps import put_order

__all__ = ["assign_range"]


@njit(cache=True)
def range_kernel(
    member_class: np.ndarray,  # int64[M]: subscription class of each member, members in range order
    class_start: np.ndarray,  # int64[C+1]
    class_topics: np.ndarray,  # topic indices of each class, in subscription order
    counts: np.ndarray,  # int64[T]
    spreads: np.ndarray,  # int64[T]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each member's ranges in its map's order: ``(start[M+1], topic, first, end)``."""
    members = len(member_class)
    classes = len(class_start) - 1
    topic_count = len(counts)
    per_class = np.zeros(classes, np.int64)
    for m in range(members):
        per_class[member_class[m]] += 1
    subscribers = np.zeros(topic_count, np.int64)
    for c in range(classes):
        for i in range(class_start[c], class_start[c + 1]):
            subscribers[class_topics[i]] += per_class[c]
    # each class's put order over its whole subscription, and whether a member's own order can differ
    orders = np.empty(len(class_topics), np.int64)
    small = np.zeros(classes, np.bool_)
    for c in range(classes):
        lo, hi = class_start[c], class_start[c + 1]
        n = hi - lo
        initial = (4 * n) // 3 + 1
        order, _ = put_order(spreads[class_topics[lo:hi]], initial)
        orders[lo:hi] = order
        size = 1
        while size < initial:
            size *= 2
        small[c] = size < 64
    quota = np.zeros(topic_count, np.int64)
    extra = np.zeros(topic_count, np.int64)
    for t in range(topic_count):
        if subscribers[t] > 0:
            quota[t] = counts[t] // subscribers[t]
            extra[t] = counts[t] % subscribers[t]
    next_start = np.zeros(topic_count, np.int64)
    total = 0
    for t in range(topic_count):
        if subscribers[t] > 0:
            total += counts[t]
    start = np.zeros(members + 1, np.int64)
    out_topic = np.empty(max(total, 1), np.int64)
    out_first = np.empty(max(total, 1), np.int64)
    out_end = np.empty(max(total, 1), np.int64)
    at = 0
    scratch_first = np.empty(max(len(class_topics), 1), np.int64)
    scratch_end = np.empty(max(len(class_topics), 1), np.int64)
    scratch_topic = np.empty(max(len(class_topics), 1), np.int64)
    # each class's topics still holding partitions, in the order the member's map will list them (its
    # put order; subscription order for a small table): a member walks only those
    live = np.empty(max(len(class_topics), 1), np.int64)
    live_end = np.empty(classes, np.int64)
    for c in range(classes):
        lo, hi = class_start[c], class_start[c + 1]
        w = lo
        for k in range(lo, hi):
            t = class_topics[lo + orders[k]] if not small[c] else class_topics[k]
            if counts[t] > 0:
                live[w] = t
                w += 1
        live_end[c] = w
    for m in range(members):
        c = member_class[m]
        lo = class_start[c]
        w = lo
        n = 0
        for k in range(lo, live_end[c]):
            t = live[k]
            first = next_start[t]
            if first >= counts[t]:
                continue  # used up by other members: every later range of it is empty
            size = quota[t]
            if extra[t] > 0:
                size += 1
                extra[t] -= 1
            end = min(first + size, counts[t])
            next_start[t] = end
            if end < counts[t]:
                live[w] = t
                w += 1
            if end > first:
                scratch_topic[n] = t
                scratch_first[n] = first
                scratch_end[n] = end
                n += 1
        live_end[c] = w
        if small[c] and n > 1:
            order, _ = put_order(spreads[scratch_topic[:n]], (4 * (class_start[c + 1] - lo)) // 3 + 1)
            for k in range(n):
                j = order[k]
                out_topic[at] = scratch_topic[j]
                out_first[at] = scratch_first[j]
                out_end[at] = scratch_end[j]
                at += 1
        else:
            out_topic[at : at + n] = scratch_topic[:n]
            out_first[at : at + n] = scratch_first[:n]
            out_end[at : at + n] = scratch_end[:n]
            at += n
        start[m + 1] = at
    return start, out_topic[:at], out_first[:at], out_end[:at]


def range_tuples(first: np.ndarray, end: np.ndarray, bound: int) -> list[tuple[int, ...]]:
    """``tuple(range(first[i], end[i]))`` for every ``i``, each distinct range built once."""
    if not len(first):
        return []
    every = tuple(range(bound))
    side = bound + 1
    code = first * side + end
    if side * side <= 8 * len(code) + 4096:
        present = np.zeros(side * side, np.bool_)
        present[code] = True
        distinct = np.flatnonzero(present)
        number = np.cumsum(present) - 1
        ids = number[code]
    else:
        distinct, ids = np.unique(code, return_inverse=True)
    built = [every[c // side : c % side] for c in distinct.tolist()]
    return list(map(built.__getitem__, ids.tolist()))


def assign_range(group: GroupSpec, topics: SubscribedTopicDescriber) -> GroupAssignment | None:
    """``RangeAssignor.assign``; ``None`` when the reference should answer (a subscription listing a
    topic twice)."""
    member_ids = sorted_member_ids(group)
    members = group.members
    table = TopicTable()
    if group.subscription_type is SubscriptionType.HOMOGENEOUS:
        subscriptions = [members[member_ids[0]].subscribed_topic_ids] * len(member_ids)
    else:
        subscriptions = list(map(attrgetter("subscribed_topic_ids"), map(members.__getitem__, member_ids)))
    classes = classes_of(subscriptions, table)
    for c in range(len(classes.start) - 1):
        listed = classes.of(c)
        if len(np.unique(listed)) != len(listed):
            return None
    counts = table.counts(topics)
    if len(classes.topics) and (counts[classes.topics] == -1).any():
        raise PartitionAssignorError("Member is subscribed to a non-existent topic")
    start, topic, first, end = range_kernel(
        classes.member_class, classes.start, classes.topics, counts, table.spreads()
    )
    alike = one_range_over_shared_keys(start, topic, first, end)
    sizes = np.diff(start)
    # what is read entry by entry: every entry of a map built key by key, the one range of the others
    read = np.where(alike, np.minimum(sizes, 1), sizes)
    keep = np.repeat(~alike, sizes)
    keep[start[:-1][alike & (sizes > 0)]] = True
    topic_objects = list(map(table.topics.__getitem__, topic[keep].tolist()))
    ranges = range_tuples(first[keep], end[keep], int(counts.max()) if len(counts) else 0)
    offsets = np.concatenate(([0], np.cumsum(read))).tolist()
    template: dict[TopicId, tuple[int, ...]] | None = None
    if alike.any():
        lo = int(start[np.argmax(alike)])
        keys = topic[lo : lo + int(sizes.max())].tolist()
        # the shared keys in their order, each hashed once: fromkeys copies a dict's stored hashes
        template = dict.fromkeys(map(table.topics.__getitem__, keys), ())
    result: dict[str, dict[TopicId, tuple[int, ...]]] = {}
    for member_id, lo, hi, same in zip(member_ids, offsets, offsets[1:], alike.tolist(), strict=False):
        if same:
            assert template is not None
            result[member_id] = dict.fromkeys(template, ranges[lo])
        else:
            result[member_id] = dict(zip(topic_objects[lo:hi], ranges[lo:hi], strict=True)) if hi > lo else {}
    return result


def one_range_over_shared_keys(
    start: np.ndarray, topic: np.ndarray, first: np.ndarray, end: np.ndarray
) -> np.ndarray:
    """For each member (entries ``start[m]:start[m + 1]``): whether its map lists the same topics in
    the same order as the first member with the most entries, each with one and the same range — what
    a homogeneous group over topics of equal partition counts gives most members. Such a map is built
    from one template by ``dict.fromkeys``, which reuses the template's stored hashes (a ``TopicId``
    hashes through Python)."""
    sizes = np.diff(start)
    alike = np.zeros(len(sizes), np.bool_)
    if not len(sizes) or sizes.max() < 2:
        return alike
    width = int(sizes.max())
    rows = np.flatnonzero(sizes == width)
    at = start[rows][:, None] + np.arange(width)
    keys, firsts, ends = topic[at], first[at], end[at]
    alike[rows] = (
        (keys == keys[0]).all(axis=1)
        & (firsts == firsts[:, :1]).all(axis=1)
        & (ends == ends[:, :1]).all(axis=1)
    )
    return alike
