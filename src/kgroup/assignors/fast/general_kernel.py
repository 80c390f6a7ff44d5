"""The general sticky path (unequal subscriptions) up to its balance check, as one numba kernel.

Kafka's ``GeneralAssignmentBuilder``: keep each member's valid owned partitions that it still
subscribes to (and, rack-aware, shares a rack with), then hand every unassigned partition — topics
ordered by (number of subscribers, name) — to the first member in (assignment size, member id) order
that subscribes to its topic (rack-matching members first when rack-aware). Kafka then checks
whether the result is balanced before it tries any reassignment. This kernel stops there: when the
greedy result is balanced (the common case, and every benchmark case) it *is* Kafka's answer;
otherwise the kernel reports ``NEEDS_REBALANCE`` and the caller runs the reference implementation,
whose reassignment loop (partition movements, previous owners, reverting) then decides.

Partitions are numbered in Java topic order (``base[t] + p``); members are positions in HashMap order.
The (size, id) ``TreeSet`` is a binary heap of ``size * C + id_rank`` keys (unique, so heap order is
the set's order).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kgroup._njit import njit

__all__ = ["NEEDS_REBALANCE", "OK", "UNASSIGNED_LEFT", "general_kernel"]

OK = 0
#: the greedy assignment is not balanced: Kafka's reassignment loop runs (the reference does it)
NEEDS_REBALANCE = 1
#: a partition found no member (cannot happen for subscribed topics; left to the reference)
UNASSIGNED_LEFT = 2


@njit(cache=True)
def _sift_down(heap: np.ndarray, n: int, i: int) -> None:
    item = heap[i]
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and heap[child + 1] < heap[child]:
            child += 1
        if heap[child] < item:
            heap[i] = heap[child]
            i = child
        else:
            break
    heap[i] = item


@njit(cache=True)
def _sift_up(heap: np.ndarray, i: int) -> None:
    item = heap[i]
    while i > 0:
        parent = (i - 1) // 2
        if item < heap[parent]:
            heap[i] = heap[parent]
            i = parent
        else:
            break
    heap[i] = item


@njit(cache=True)
def _pop(heap: np.ndarray, n: int) -> Any:
    top = heap[0]
    n -= 1
    if n > 0:
        heap[0] = heap[n]
        _sift_down(heap, n, 0)
    return top, n


@njit(cache=True)
def _push(heap: np.ndarray, n: int, key: Any) -> int:
    heap[n] = key
    _sift_up(heap, n)
    return n + 1


@njit(cache=True)
def _rack_ok(rack_pass: bool, rack: Any, mask: Any) -> bool:
    """Java's ``!racksMismatch`` in the rack-matching pass (a member without a rack always matches)."""
    if not rack_pass or rack < 0:
        return True
    return bool((mask >> np.uint64(rack)) & np.uint64(1) != 0)


@njit(cache=True)
def _greedy_one_heap(unassigned: np.ndarray, topic_of: np.ndarray, subscribed: np.ndarray, rack_aware: bool,
                     member_rack: np.ndarray, partition_mask: np.ndarray, id_rank: np.ndarray,
                     by_rank: np.ndarray, owner: np.ndarray, size: np.ndarray) -> Any:
    """One heap of every member; members that do not qualify are popped and pushed back."""
    C = size.shape[0]
    heap = np.empty(C, np.int64)
    n_heap = 0
    for m in range(C):
        n_heap = _push(heap, n_heap, size[m] * C + id_rank[m])
    skipped = np.empty(C, np.int64)
    passes = 2 if rack_aware else 1
    todo = unassigned
    for pass_no in range(passes):
        rack_pass = rack_aware and pass_no == 0
        left = np.empty(todo.shape[0], np.int64)
        n_left = 0
        for j in range(todo.shape[0]):
            p = todo[j]
            t = topic_of[p]
            n_skipped = 0
            chosen = -1
            while n_heap > 0:
                key, n_heap = _pop(heap, n_heap)
                m = by_rank[key % C]
                if subscribed[m, t] and _rack_ok(rack_pass, member_rack[m] if rack_aware else -1,
                                                 partition_mask[p] if rack_aware else np.uint64(0)):
                    chosen = m
                    break
                skipped[n_skipped] = key
                n_skipped += 1
            for s in range(n_skipped):
                n_heap = _push(heap, n_heap, skipped[s])
            if chosen < 0:
                left[n_left] = p
                n_left += 1
                continue
            owner[p] = chosen
            size[chosen] += 1
            n_heap = _push(heap, n_heap, size[chosen] * C + id_rank[chosen])
        todo = left[:n_left]
    return todo


@njit(cache=True)
def _greedy_grouped(unassigned: np.ndarray, topic_of: np.ndarray, subscribed: np.ndarray, rack_aware: bool,
                    member_rack: np.ndarray, partition_mask: np.ndarray, group_of: np.ndarray,
                    group_count: int, id_rank: np.ndarray, by_rank: np.ndarray, owner: np.ndarray,
                    size: np.ndarray) -> Any:
    """One heap per group of alike members (same subscription, same rack): the first qualifying
    member overall is the smallest top among the qualifying groups, so nobody is skipped over."""
    C = size.shape[0]
    G = group_count
    start = np.zeros(G + 1, np.int64)
    for m in range(C):
        start[group_of[m] + 1] += 1
    for g in range(G):
        start[g + 1] += start[g]
    representative = np.full(G, -1, np.int64)
    for m in range(C):
        if representative[group_of[m]] < 0:
            representative[group_of[m]] = m
    heaps = np.empty(C, np.int64)
    n = np.zeros(G, np.int64)
    for m in range(C):
        g = group_of[m]
        n[g] = _push(heaps[start[g]:start[g + 1]], n[g], size[m] * C + id_rank[m])
    passes = 2 if rack_aware else 1
    todo = unassigned
    for pass_no in range(passes):
        rack_pass = rack_aware and pass_no == 0
        left = np.empty(todo.shape[0], np.int64)
        n_left = 0
        for j in range(todo.shape[0]):
            p = todo[j]
            t = topic_of[p]
            best = -1
            best_key = 0
            for g in range(G):
                if n[g] == 0:
                    continue
                r = representative[g]
                if not subscribed[r, t]:
                    continue
                if not _rack_ok(rack_pass, member_rack[r] if rack_aware else -1,
                                partition_mask[p] if rack_aware else np.uint64(0)):
                    continue
                key = heaps[start[g]]
                if best < 0 or key < best_key:
                    best = g
                    best_key = key
            if best < 0:
                left[n_left] = p
                n_left += 1
                continue
            heap = heaps[start[best]:start[best + 1]]
            key, n[best] = _pop(heap, n[best])
            m = by_rank[key % C]
            owner[p] = m
            size[m] += 1
            n[best] = _push(heap, n[best], size[m] * C + id_rank[m])
        todo = left[:n_left]
    return todo


@njit(cache=True)
def general_kernel(
    bases: np.ndarray,          # int64[T]: flat number of partition 0 of each topic (Java topic order)
    counts: np.ndarray,         # int64[T]
    topic_of: np.ndarray,       # int64[P]: topic rank of each flat partition
    general_order: np.ndarray,  # int64[T]: topic ranks sorted by (subscribers, name)
    subscribed: np.ndarray,     # bool[C, T]
    owned_start: np.ndarray,    # int64[C+1] CSR of validated claims (flat numbers)
    owned_idx: np.ndarray,
    id_rank: np.ndarray,        # int64[C]
    rack_aware: bool,
    member_rack: np.ndarray,    # int64[C] (read only when rack_aware)
    partition_mask: np.ndarray,  # uint64[P] (read only when rack_aware)
    raw_owner: np.ndarray,      # int64[P]: the member whose subscription claims the partition, or -1
    cooperative: bool,
    group_of: np.ndarray,       # int64[C]: members with the same subscription (and rack) share a group
    group_count: int,           # number of groups; 0: one heap for everyone
) -> Any:
    """Returns (status, out_start, out_flat, out_src) as the constrained kernel does."""
    T = counts.shape[0]
    C = owned_start.shape[0] - 1
    P = topic_of.shape[0]
    owner = np.full(P, -1, np.int64)
    kept_from = np.full(P, -1, np.int64)  # position in owned_idx of a partition kept by its claimant
    size = np.zeros(C, np.int64)
    subscribers = np.zeros(T, np.int64)
    for m in range(C):
        for t in range(T):
            if subscribed[m, t]:
                subscribers[t] += 1
    max_size = np.zeros(C, np.int64)
    for m in range(C):
        total = 0
        for t in range(T):
            if subscribed[m, t]:
                total += counts[t]
        max_size[m] = total

    # 1. keep valid owned partitions the member still subscribes to (and shares a rack with)
    revocation_required = False
    for m in range(C):
        for j in range(owned_start[m], owned_start[m + 1]):
            p = owned_idx[j]
            t = topic_of[p]
            mismatch = False
            if rack_aware and member_rack[m] >= 0:
                mismatch = not ((partition_mask[p] >> np.uint64(member_rack[m])) & np.uint64(1))
            if subscribed[m, t] and not mismatch:
                owner[p] = m
                kept_from[p] = j
                size[m] += 1
            else:
                revocation_required = True

    # 2. unassigned partitions, topics in (subscribers, name) order
    n_unassigned = 0
    for p in range(P):
        if owner[p] < 0:
            n_unassigned += 1
    unassigned = np.empty(n_unassigned, np.int64)
    k = 0
    for g in range(T):
        t = general_order[g]
        for p in range(bases[t], bases[t] + counts[t]):
            if owner[p] < 0:
                unassigned[k] = p
                k += 1
    unassigned_nonfixed = False
    for j in range(n_unassigned):
        if subscribers[topic_of[unassigned[j]]] >= 2:
            unassigned_nonfixed = True
            break

    # 3. greedy: each partition to the first subscribed member by (size, id), rack-matching first
    by_rank = np.empty(C, np.int64)
    for m in range(C):
        by_rank[id_rank[m]] = m
    if group_count > 0:
        todo = _greedy_grouped(unassigned, topic_of, subscribed, rack_aware, member_rack, partition_mask,
                               group_of, group_count, id_rank, by_rank, owner, size)
    else:
        todo = _greedy_one_heap(unassigned, topic_of, subscribed, rack_aware, member_rack, partition_mask,
                                id_rank, by_rank, owner, size)
    if todo.shape[0] > 0:
        return UNASSIGNED_LEFT, owned_start, owned_idx, owned_idx

    # 4. members out of the reassignment: holding all they could, only on single-subscriber topics
    participates = np.zeros(C, np.bool_)
    reassignable = False
    for t in range(T):
        if subscribers[t] >= 2:
            reassignable = True
    for p in range(P):
        m = owner[p]
        if m >= 0 and subscribers[topic_of[p]] >= 2:
            participates[m] = True
    for m in range(C):
        if size[m] < max_size[m]:
            participates[m] = True

    # 5. the balance check that precedes Kafka's reassignment loop
    if (not revocation_required and unassigned_nonfixed) or reassignable:
        lo = -1
        hi = -1
        for m in range(C):
            if participates[m]:
                if lo < 0 or size[m] < lo:
                    lo = size[m]
                if size[m] > hi:
                    hi = size[m]
        if lo >= 0 and lo < hi - 1:
            # per topic, the two largest holders among participating members
            best = np.full(T, -1, np.int64)
            best_owner = np.full(T, -1, np.int64)
            second = np.full(T, -1, np.int64)
            seen = np.full(C, -1, np.int64)  # last topic each member was counted for
            for t in range(T):
                for p in range(bases[t], bases[t] + counts[t]):
                    h = owner[p]
                    if h < 0 or not participates[h] or seen[h] == t:
                        continue
                    seen[h] = t
                    if size[h] > best[t]:
                        second[t] = best[t]
                        best[t] = size[h]
                        best_owner[t] = h
                    elif size[h] > second[t]:
                        second[t] = size[h]
            for m in range(C):
                if not participates[m] or size[m] == max_size[m]:
                    continue
                for t in range(T):
                    if subscribed[m, t]:
                        other = best[t] if best_owner[t] != m else second[t]
                        if size[m] + 1 < other:
                            return NEEDS_REBALANCE, owned_start, owned_idx, owned_idx

    # 6. every member's partitions in flat order; cooperative withholds what changed owner
    out_start = np.zeros(C + 1, np.int64)
    for p in range(P):
        m = owner[p]
        if cooperative and raw_owner[p] >= 0 and raw_owner[p] != m:
            continue
        out_start[m + 1] += 1
    for m in range(C):
        out_start[m + 1] += out_start[m]
    out_flat = np.empty(out_start[C], np.int64)
    out_src = np.empty(out_start[C], np.int64)
    fill = out_start[:C].copy()
    for p in range(P):
        m = owner[p]
        if cooperative and raw_owner[p] >= 0 and raw_owner[p] != m:
            continue
        out_flat[fill[m]] = p
        out_src[fill[m]] = kept_from[p]
        fill[m] += 1
    return OK, out_start, out_flat, out_src
