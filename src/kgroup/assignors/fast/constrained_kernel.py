"""The constrained sticky path (all subscriptions equal) as one numba kernel over integer arrays.

Kafka's ``ConstrainedAssignmentBuilder`` step by step, with members as positions ``0..C-1`` in
``HashMap`` iteration order and partitions as one flat numbering ``0..P-1`` in (topic, partition)
order. Java's linked lists become arrays with explicit removal, so the iteration order of every list
is Kafka's. The kernel returns status ``OK`` or an error code; on an error the caller runs the
reference implementation, which raises Kafka's own exception for that input.

Imported lazily (numba compiles on first use; ``cache=True`` keeps the machine code on disk).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kgroup._njit import njit

__all__ = ["ERR_NO_UNFILLED", "ERR_UNFILLED_LEFT", "OK", "constrained_kernel"]

OK = 0
#: Kafka: "No more unfilled consumers to be assigned."
ERR_NO_UNFILLED = 1
#: Kafka: verifyUnfilledMembers' IllegalStateExceptions
ERR_UNFILLED_LEFT = 2


@njit(cache=True)
def _find_rack_consumer(
    mask: np.uint64, members: np.ndarray, length: int, first: int, member_rack: np.ndarray
) -> int:
    """``RackInfo.nextRackConsumer``: first member cyclically from ``first`` on one of the racks."""
    if mask == 0:
        return -1
    for i in range(length):
        index = (first + i) % length
        rack = member_rack[members[index]]
        if rack >= 0 and (mask >> np.uint64(rack)) & np.uint64(1):
            return index
    return -1


@njit(cache=True)
def _delete_at(arr: np.ndarray, length: int, index: int) -> int:
    for j in range(index, length - 1):
        arr[j] = arr[j + 1]
    return length - 1


@njit(cache=True)
def constrained_kernel(
    total: int,
    owned_start: np.ndarray,  # int64[C+1]: member m's claimed partitions are owned_idx[start[m]:start[m+1]]
    owned_idx: np.ndarray,  # int64: flat partition numbers, validated (unique, in range)
    owned_key: np.ndarray,  # int64: (partition number, topic rank) sort key of each claimed partition
    id_rank: np.ndarray,  # int64[C]: position of each member in Java String order of member ids
    rack_aware: bool,
    member_rack: np.ndarray,  # int64[C]: rack number or -1 (only read when rack_aware)
    partition_mask: np.ndarray,  # uint64[P]: racks of each partition as bits (only read when rack_aware)
    rack_sort_key: np.ndarray,  # int64[P] members on the partition's racks, or empty: no re-sort
    cooperative: bool,
) -> Any:
    """Returns (status, out_start, out_flat, out_src).

    Member ``m``'s final partitions are ``out_flat[out_start[m]:out_start[m+1]]`` (flat numbers,
    ascending); ``out_src`` gives, for each, its position in ``owned_idx`` when the member kept it
    from its owned partitions (so the caller can reuse the input's objects), else -1.
    With ``cooperative``, partitions handed to a member other than the one that had to give them up
    are withheld (Kafka's cooperative adjustment of the constrained path).
    """
    C = owned_start.shape[0] - 1
    min_quota = total // C
    max_quota = -(-total // C)
    expected_over = total % C
    current_over = 0

    count = np.zeros(C, np.int64)
    assigned = np.zeros(total, np.bool_)
    # the member that gave each partition up (beyond its quota, or on a rack it does not share), or -1
    revoked_by = np.full(total, -1, np.int64)
    under = np.empty(C, np.int64)
    n_under = 0
    # exactly-min: a queue with room for every append (owned pass, rack pass, round robin)
    exact = np.empty(3 * C + 1, np.int64)
    e_head = 0
    e_tail = 0

    kept_pos = np.empty(owned_idx.shape[0], np.int64)
    kept_start = np.zeros(C + 1, np.int64)
    n_kept = 0

    # 1. previously owned partitions, members in HashMap order
    for m in range(C):
        s = owned_start[m]
        e = owned_start[m + 1]
        valid = np.empty(e - s, np.int64)
        nv = 0
        for j in range(s, e):
            if rack_aware and member_rack[m] >= 0 and not (
                (partition_mask[owned_idx[j]] >> np.uint64(member_rack[m])) & np.uint64(1)
            ):
                revoked_by[owned_idx[j]] = m
                continue
            valid[nv] = j
            nv += 1
        valid = valid[:nv]
        keys = np.empty(nv, np.int64)
        for j in range(nv):
            keys[j] = owned_key[valid[j]]
        order = np.argsort(keys)
        keep = 0
        if nv < min_quota:
            keep = nv
            under[n_under] = m
            n_under += 1
        elif nv >= max_quota and current_over < expected_over:
            current_over += 1
            if current_over == expected_over:
                e_head = 0
                e_tail = 0
            keep = max_quota
        else:
            keep = min_quota
            if current_over < expected_over:
                exact[e_tail] = m
                e_tail += 1
        for j in range(nv):
            pos = valid[order[j]]
            if j < keep:
                kept_pos[n_kept] = pos
                n_kept += 1
                assigned[owned_idx[pos]] = True
            else:
                revoked_by[owned_idx[pos]] = m
        count[m] = keep
        kept_start[m + 1] = n_kept

    # 2. unassigned partitions in (topic, partition) order, stably re-sorted by members on their racks
    n_unassigned = 0
    for p in range(total):
        if not assigned[p]:
            n_unassigned += 1
    unassigned = np.empty(n_unassigned, np.int64)
    k = 0
    for p in range(total):
        if not assigned[p]:
            unassigned[k] = p
            k += 1
    if rack_sort_key.shape[0] > 0:
        unassigned = unassigned[np.argsort(rack_sort_key[unassigned], kind="mergesort")]

    # the under and exactly-min lists sorted by member id (Java String order)
    under_sorted = under[:n_under][np.argsort(id_rank[under[:n_under]])]
    under[:n_under] = under_sorted
    exact_sorted = exact[e_head:e_tail][np.argsort(id_rank[exact[e_head:e_tail]])]
    exact[e_head:e_tail] = exact_sorted

    new_member = np.empty(n_unassigned, np.int64)
    new_part = np.empty(n_unassigned, np.int64)
    n_new = 0

    # 3. rack-aware round robin (rack-matching members only)
    if rack_aware:
        remaining = np.empty(n_unassigned, np.int64)
        n_remaining = 0
        next_index = 0
        for u in range(n_unassigned):
            p = unassigned[u]
            mask = partition_mask[p]
            consumer = -1
            index = _find_rack_consumer(mask, under, n_under, next_index, member_rack) if n_under > 0 else -1
            if index >= 0:
                consumer = under[index]
                c = count[consumer] + 1
                if c >= min_quota:
                    n_under = _delete_at(under, n_under, index)
                    if c < max_quota and current_over < expected_over:
                        exact[e_tail] = consumer
                        e_tail += 1
                else:
                    index += 1
                next_index = index % n_under if n_under > 0 else 0
            elif e_tail > e_head:
                first = _find_rack_consumer(mask, exact[e_head:e_tail], e_tail - e_head, 0, member_rack)
                if first >= 0:
                    consumer = exact[e_head + first]
                    if count[consumer] + 1 == max_quota:
                        for j in range(e_head + first, e_tail - 1):
                            exact[j] = exact[j + 1]
                        e_tail -= 1
                        current_over += 1
                        if current_over == expected_over:
                            e_head = 0
                            e_tail = 0
            if consumer < 0:
                remaining[n_remaining] = p
                n_remaining += 1
            else:
                count[consumer] += 1
                new_member[n_new] = consumer
                new_part[n_new] = p
                n_new += 1
        unassigned = remaining[:n_remaining]
        n_unassigned = n_remaining

    # 4. round robin over the under list, then the exactly-min queue head first
    pos = 0  # the iterator's next position in under
    last = -1  # the position it last returned, -1 when none (or removed)
    for u in range(n_unassigned):
        p = unassigned[u]
        if pos < n_under:
            consumer = under[pos]
            last = pos
            pos += 1
        elif n_under == 0 and e_tail == e_head:
            return ERR_NO_UNFILLED, kept_start, kept_pos, kept_pos
        elif n_under == 0:
            consumer = exact[e_head]
            e_head += 1
            last = -1
        else:
            pos = 0
            consumer = under[pos]
            last = pos
            pos += 1
        count[consumer] += 1
        new_member[n_new] = consumer
        new_part[n_new] = p
        n_new += 1
        c = count[consumer]
        if c == min_quota:
            if last >= 0:
                n_under = _delete_at(under, n_under, last)
                pos = last
                last = -1
            exact[e_tail] = consumer
            e_tail += 1
        elif c == max_quota:
            current_over += 1

    # 5. verifyUnfilledMembers
    if n_under > 0:
        if current_over != expected_over:
            return ERR_UNFILLED_LEFT, kept_start, kept_pos, kept_pos
        for j in range(n_under):
            if count[under[j]] != min_quota:
                return ERR_UNFILLED_LEFT, kept_start, kept_pos, kept_pos

    # every member's final list, sorted by flat number = (topic, partition) order, the cooperative
    # assignor withholding the partitions that were revoked from another member
    out_start = np.zeros(C + 1, np.int64)
    for m in range(C):
        out_start[m + 1] = kept_start[m + 1] - kept_start[m]
    for j in range(n_new):
        if not (cooperative and revoked_by[new_part[j]] >= 0 and revoked_by[new_part[j]] != new_member[j]):
            out_start[new_member[j] + 1] += 1
    for m in range(C):
        out_start[m + 1] += out_start[m]
    n_out = out_start[C]
    out_flat = np.empty(n_out, np.int64)
    out_src = np.empty(n_out, np.int64)
    fill = out_start[:C].copy()
    for m in range(C):
        for j in range(kept_start[m], kept_start[m + 1]):
            out_flat[fill[m]] = owned_idx[kept_pos[j]]
            out_src[fill[m]] = kept_pos[j]
            fill[m] += 1
    for j in range(n_new):
        if not (cooperative and revoked_by[new_part[j]] >= 0 and revoked_by[new_part[j]] != new_member[j]):
            m = new_member[j]
            out_flat[fill[m]] = new_part[j]
            out_src[fill[m]] = -1
            fill[m] += 1
    for m in range(C):
        s = out_start[m]
        e = out_start[m + 1]
        ascending = True
        for j in range(s + 1, e):
            if out_flat[j] < out_flat[j - 1]:
                ascending = False
                break
        if not ascending:  # (a round robin hands out in ascending order: usually nothing to do)
            order = np.argsort(out_flat[s:e])
            out_flat[s:e] = out_flat[s:e][order]
            out_src[s:e] = out_src[s:e][order]
    return OK, out_start, out_flat, out_src
