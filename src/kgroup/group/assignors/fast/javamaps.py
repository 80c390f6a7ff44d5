"""``java.util.HashMap`` / ``HashSet`` iteration order as numba kernels over integer keys.

The same rules as :class:`kgroup.javacompat.JavaHashMap` (the readable spec, JDK 17's): buckets
``spread(hash) & (capacity - 1)``; ``put`` appends to its chain and resizes after inserting when the size
passes 0.75 × capacity; ``computeIfAbsent`` resizes first (on every call), then prepends; a chain of 9
(``put``) or 8 (``computeIfAbsent``) doubles a table under 64 buckets; a resize keeps each chain's
order, so a map iterates its keys by (bucket, sequence): sequences rise for a tail insert, fall for a
head insert. Keys are small integers (topic indices, partition numbers) whose spread hash is given.

:func:`put_order` orders a map filled by ``put`` alone (``new HashSet<>(collection)``, ``RangeAssignor``'s
member maps). :func:`replay` plays back what a KIP-848 assignor does to members' target maps —
``deepCopyAssignment`` of the current one, then removes and ``computeIfAbsent(topic, new HashSet<>(n))
.add(partition)`` — and writes each replayed member's topics and partitions in Java's order.
"""

from __future__ import annotations

import numpy as np

from kgroup._njit import njit

__all__ = [
    "OP_ADD",
    "OP_REMOVE",
    "OP_REMOVE_KEEP",
    "OP_REMOVE_TOPIC",
    "put_order",
    "record_op",
    "replay",
    "table_size_for",
]

_MAX_CAPACITY = 1 << 30
_TREEIFY = 8
_MIN_TREEIFY_CAPACITY = 64

#: ``computeIfAbsent(topic, new HashSet<>(cap)).add(partition)`` (``cap`` the set's initial capacity)
OP_ADD = 0
#: ``map.get(topic).remove(partition)``, and the topic too when its set is left empty
OP_REMOVE = 1
#: ``map.remove(topic)``
OP_REMOVE_TOPIC = 2
#: ``map.get(topic).remove(partition)``, the topic kept with its set even when emptied (``simple``)
OP_REMOVE_KEEP = 3


@njit(cache=True)
def record_op(
    ops: np.ndarray, n_ops: int, member: int, kind: int, topic: int, partition: int, capacity: int
) -> np.ndarray:
    """``ops`` (rows: member, kind, topic, partition, new set's capacity: what :func:`replay` plays
    back) with op ``n_ops`` written, grown to twice its width when full."""
    if n_ops >= ops.shape[1]:
        bigger = np.empty((5, 2 * ops.shape[1]), np.int64)
        bigger[:, : ops.shape[1]] = ops
        ops = bigger
    ops[0, n_ops] = member
    ops[1, n_ops] = kind
    ops[2, n_ops] = topic
    ops[3, n_ops] = partition
    ops[4, n_ops] = capacity
    return ops


@njit(cache=True)
def table_size_for(capacity: int) -> int:
    """``HashMap.tableSizeFor``: the smallest power of two ≥ ``capacity`` (at least 1)."""
    if capacity <= 1:
        return 1
    size = 1
    while size < capacity:
        size *= 2
    return min(size, _MAX_CAPACITY)


@njit(cache=True, inline="always")
def spread(hash_code: int) -> int:
    """``HashMap.hash``: the 32-bit hash code with its high half folded into the low half."""
    h = hash_code & 0xFFFFFFFF
    return h ^ (h >> 16)


@njit(cache=True)
def _recount(spreads: np.ndarray, count: int, capacity: int) -> np.ndarray:
    chains = np.zeros(capacity, np.int64)
    mask = capacity - 1
    for i in range(count):
        chains[spreads[i] & mask] += 1
    return chains


@njit(cache=True)
def put_order(spreads: np.ndarray, initial_capacity: int) -> tuple[np.ndarray, int]:
    """The positions of distinct keys ``put`` in the given order into ``new HashMap<>(initial_capacity)``,
    in the order the map iterates them, and the map's final capacity."""
    n = len(spreads)
    capacity = table_size_for(initial_capacity)
    chains = np.zeros(capacity, np.int64)
    for i in range(n):
        bucket = spreads[i] & (capacity - 1)
        chains[bucket] += 1
        if chains[bucket] > _TREEIFY and capacity < _MIN_TREEIFY_CAPACITY:
            capacity *= 2
            chains = _recount(spreads, i + 1, capacity)
        if i + 1 > (capacity * 3) // 4 and capacity < _MAX_CAPACITY:
            capacity *= 2
            chains = _recount(spreads, i + 1, capacity)
    keys = np.empty(n, np.int64)
    mask = capacity - 1
    for i in range(n):
        keys[i] = (spreads[i] & mask) * n + i
    return np.argsort(keys), capacity


@njit(cache=True, inline="always")
def _sort_by(keys: np.ndarray, items: np.ndarray, n: int) -> None:
    """Sort ``items[:n]`` by ``keys[:n]`` in place (distinct keys): insertion sort when short."""
    if n > 24:
        order = np.argsort(keys[:n])
        items[:n] = items[:n][order]
        keys[:n] = keys[:n][order]
        return
    for i in range(1, n):
        key = keys[i]
        item = items[i]
        j = i - 1
        while j >= 0 and keys[j] > key:
            keys[j + 1] = keys[j]
            items[j + 1] = items[j]
            j -= 1
        keys[j + 1] = key
        items[j + 1] = item


@njit(cache=True, inline="always")
def _grow(buffer: np.ndarray, needed: int) -> np.ndarray:
    if needed <= len(buffer):
        return buffer
    bigger = np.zeros(max(needed, 2 * len(buffer)), np.int64)
    bigger[: len(buffer)] = buffer
    return bigger


@njit(cache=True, inline="always")
def _resize_set(
    pool: np.ndarray,
    used: int,
    slot: int,
    s_cap: np.ndarray,
    s_chain: np.ndarray,
    e_slot: np.ndarray,
    e_part: np.ndarray,
    e_alive: np.ndarray,
    n_entries: int,
) -> tuple[np.ndarray, int]:
    """Double one set's table: fresh chain counts at the end of ``pool``."""
    cap = s_cap[slot] * 2
    s_cap[slot] = cap
    pool = _grow(pool, used + cap)
    s_chain[slot] = used
    pool[used : used + cap] = 0
    for j in range(n_entries):
        if e_alive[j] and e_slot[j] == slot:
            pool[used + (spread(e_part[j]) & (cap - 1))] += 1
    return pool, used + cap


@njit(cache=True, inline="always")
def _set_put(
    pool: np.ndarray,
    used: int,
    slot: int,
    p: int,
    s_cap: np.ndarray,
    s_size: np.ndarray,
    s_chain: np.ndarray,
    e_slot: np.ndarray,
    e_part: np.ndarray,
    e_alive: np.ndarray,
    n_entries: int,
) -> tuple[np.ndarray, int, bool]:
    """The table side of ``HashSet.add`` of a new partition (its entry already written): the chain
    grows; a chain of 9 doubles a table under 64 buckets (in a bigger one it becomes a tree, whose
    order is not modelled here: the third value says so); then a size past 0.75 × capacity doubles it."""
    s_size[slot] += 1
    bucket = spread(p) & (s_cap[slot] - 1)
    pool[s_chain[slot] + bucket] += 1
    tree = False
    if pool[s_chain[slot] + bucket] > _TREEIFY:
        if s_cap[slot] < _MIN_TREEIFY_CAPACITY:
            pool, used = _resize_set(pool, used, slot, s_cap, s_chain, e_slot, e_part, e_alive, n_entries)
        else:
            tree = True
    if s_size[slot] > (s_cap[slot] * 3) // 4 and s_cap[slot] < _MAX_CAPACITY:
        pool, used = _resize_set(pool, used, slot, s_cap, s_chain, e_slot, e_part, e_alive, n_entries)
    return pool, used, tree


@njit(cache=True, inline="always")
def _new_set(
    pool: np.ndarray,
    used: int,
    slot: int,
    topic: int,
    capacity: int,
    s_topic: np.ndarray,
    s_alive: np.ndarray,
    s_cap: np.ndarray,
    s_size: np.ndarray,
    s_tail: np.ndarray,
    s_chain: np.ndarray,
) -> tuple[np.ndarray, int]:
    """An empty ``HashSet`` of ``capacity`` buckets for ``topic`` in ``slot``: its chain counts at the
    end of ``pool``."""
    s_topic[slot] = topic
    s_alive[slot] = True
    s_cap[slot] = capacity
    s_size[slot] = 0
    s_tail[slot] = 0
    pool = _grow(pool, used + capacity)
    s_chain[slot] = used
    pool[used : used + capacity] = 0
    return pool, used + capacity


@njit(cache=True, inline="always")
def _set_add(
    pool: np.ndarray,
    used: int,
    slot: int,
    p: int,
    entry: int,
    s_cap: np.ndarray,
    s_size: np.ndarray,
    s_tail: np.ndarray,
    s_chain: np.ndarray,
    e_slot: np.ndarray,
    e_part: np.ndarray,
    e_seq: np.ndarray,
    e_alive: np.ndarray,
) -> tuple[np.ndarray, int, bool]:
    """``HashSet.add`` of partition ``p``, not in the set yet, as ``entry`` (the newest): a tail insert,
    then the table side (:func:`_set_put`)."""
    e_slot[entry] = slot
    e_part[entry] = p
    s_tail[slot] += 1
    e_seq[entry] = s_tail[slot]
    e_alive[entry] = True
    return _set_put(pool, used, slot, p, s_cap, s_size, s_chain, e_slot, e_part, e_alive, entry + 1)


@njit(cache=True, inline="always")
def _double_topic_map(
    t_chains: np.ndarray,
    t_cap: int,
    n_slots: int,
    s_alive: np.ndarray,
    s_topic: np.ndarray,
    topic_spread: np.ndarray,
) -> tuple[np.ndarray, int]:
    """Double the member's topic map: its live topics' chain counts in the bigger table."""
    t_cap *= 2
    t_chains = _grow(t_chains, t_cap)
    t_chains[:t_cap] = 0
    for j in range(n_slots):
        if s_alive[j]:
            t_chains[topic_spread[s_topic[j]] & (t_cap - 1)] += 1
    return t_chains, t_cap


#: a member whose map starts empty and only gains partitions, with at most this many topics, is
#: ordered by :func:`_fresh_member` (no chain of its topic map can reach the tree threshold)
_FRESH_TOPICS = 7


@njit(cache=True, inline="always")
def _fresh_member(
    lo: int,
    hi: int,
    op_kind: np.ndarray,
    op_topic: np.ndarray,
    op_partition: np.ndarray,
    op_capacity: np.ndarray,
    topic_spread: np.ndarray,
    slot_topic: np.ndarray,  # scratch, at least _FRESH_TOPICS
    slot_first: np.ndarray,  # scratch, at least _FRESH_TOPICS
    slot_count: np.ndarray,  # scratch, at least _FRESH_TOPICS
    op_slot: np.ndarray,  # scratch, at least hi - lo
    keys: np.ndarray,  # scratch, at least hi - lo
    items: np.ndarray,  # scratch, at least hi - lo
    out_topic: np.ndarray,
    part_start: np.ndarray,
    out_parts: np.ndarray,
    n_entries_out: int,
    n_parts_out: int,
) -> tuple[bool, int, int]:
    """The common case of :func:`replay` without its general tables: a member whose current map is
    empty and whose ops are all ``computeIfAbsent(...).add`` of distinct partitions. Its topic map
    (``new HashMap<>(0)``, head inserts, a resize before every call once over 0.75 × capacity) has at
    most :data:`_FRESH_TOPICS` topics; each set ends at the capacity its size forces, and either has
    at most 8 partitions or never resized and ends with no chain over 8 — so no chain ever reached
    the tree threshold and each set iterates by (bucket, insertion). Anything else answers False
    (nothing written) and the general path orders the member."""
    n_topics = 0
    t_cap = 1
    for o in range(lo, hi):
        if op_kind[o] != OP_ADD:
            return False, n_entries_out, n_parts_out
        topic = op_topic[o]
        if n_topics > (t_cap * 3) // 4:  # before every call, even for a topic already there
            t_cap *= 2
        slot = -1
        for j in range(n_topics):
            if slot_topic[j] == topic:
                slot = j
        if slot == -1:
            if n_topics == _FRESH_TOPICS:
                return False, n_entries_out, n_parts_out
            slot = n_topics
            n_topics += 1
            slot_topic[slot] = topic
            slot_first[slot] = o
            slot_count[slot] = 0
        slot_count[slot] += 1
        op_slot[o - lo] = slot
    # the topics by (bucket, newest first: head inserts)
    for j in range(n_topics):
        keys[j] = (topic_spread[slot_topic[j]] & (t_cap - 1)) * (_FRESH_TOPICS + 1) + (_FRESH_TOPICS - j)
        items[j] = j
    _sort_by(keys, items, n_topics)
    for j in range(n_topics):
        slot_first[j] = items[j]  # reuse: the slots in the map's order
    entries_here = n_entries_out
    parts_here = n_parts_out
    for a in range(n_topics):
        slot = slot_first[a]
        n = slot_count[slot]
        first_cap = 0
        k = 0
        for o in range(lo, hi):
            if op_slot[o - lo] == slot:
                if k == 0:
                    first_cap = table_size_for(op_capacity[o])
                items[k] = op_partition[o]
                k += 1
        cap = first_cap
        while n > (cap * 3) // 4 and cap < _MAX_CAPACITY:
            cap *= 2
        if n > _TREEIFY and cap != first_cap:
            return False, n_entries_out, n_parts_out
        for i in range(n):
            keys[i] = (spread(items[i]) & (cap - 1)) * (n + 1) + i
        _sort_by(keys, items, n)
        # equal partitions share a bucket: a run of one bucket holds any duplicate and is its chain
        run = 0
        for i in range(1, n):
            if keys[i] // (n + 1) == keys[i - 1] // (n + 1):
                run += 1
                for j in range(i - run, i):
                    if items[j] == items[i]:
                        return False, n_entries_out, n_parts_out
                if run >= _TREEIFY:
                    return False, n_entries_out, n_parts_out
            else:
                run = 0
        out_topic[entries_here] = slot_topic[slot]
        for i in range(n):
            out_parts[parts_here] = items[i]
            parts_here += 1
        entries_here += 1
        part_start[entries_here] = parts_here
    return True, entries_here, parts_here


@njit(cache=True)
def replay(
    members: np.ndarray,  # int64[R]: the replayed members (each has ops)
    op_start: np.ndarray,  # int64[R+1]: member members[r]'s ops are op_*[op_start[r]:op_start[r+1]]
    op_kind: np.ndarray,
    op_topic: np.ndarray,
    op_partition: np.ndarray,
    op_capacity: np.ndarray,  # OP_ADD: the new set's initial capacity
    old_start: np.ndarray,  # int64[M+1]: member m's current topics are old_topic[old_start[m]:old_start[m+1]]
    old_topic: np.ndarray,
    old_part_start: np.ndarray,  # int64[E+1]: entry e's partitions old_parts[old_part_start[e]:...+1]]
    old_parts: np.ndarray,
    topic_spread: np.ndarray,  # int64[T]
    flat_offset: np.ndarray,  # int64[T+1]: topic t's partitions are flat ids flat_offset[t] + p
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]:
    """Each replayed member's map after ``deepCopyAssignment`` of its current one and its ops.

    Returns ``(entry_start[R+1], entry_topic, part_start[E'+1], parts)``: member ``members[r]``'s topics
    in Java's order are ``entry_topic[entry_start[r]:entry_start[r+1]]``, entry ``e``'s partitions in
    Java's order ``parts[part_start[e]:part_start[e+1]]``. A partition outside its topic's
    ``flat_offset`` range is kept but cannot be removed (the callers never remove one). The last value
    is False (and the rest empty) when a chain would have become a tree: Java then orders that bucket
    as :mod:`kgroup.java_treebin` does, which this kernel does not follow; the caller answers with the
    reference."""
    replayed = len(members)
    total_old_parts = 0
    total_old_entries = 0
    total_ops = 0
    max_slots = 1
    max_entries = 1
    for r in range(replayed):
        m = members[r]
        parts_here = old_part_start[old_start[m + 1]] - old_part_start[old_start[m]]
        ops_here = op_start[r + 1] - op_start[r]
        total_old_parts += parts_here
        total_old_entries += old_start[m + 1] - old_start[m]
        total_ops += ops_here
        max_slots = max(max_slots, old_start[m + 1] - old_start[m] + ops_here)
        max_entries = max(max_entries, parts_here + ops_here)
    entry_start = np.zeros(replayed + 1, np.int64)
    # a topic's set may be empty (``simple`` keeps emptied ones): entries are bounded by the current
    # maps' topics and the ops, partitions by the current maps' partitions and the ops
    out_topic = np.empty(max(1, total_old_entries + total_ops), np.int64)
    part_start = np.zeros(max(1, total_old_entries + total_ops) + 1, np.int64)
    out_parts = np.empty(max(1, total_old_parts + total_ops), np.int64)
    n_entries_out = 0
    n_parts_out = 0

    topic_count = len(topic_spread)
    slot_of_topic = np.full(topic_count, -1, np.int64)
    entry_of_flat = np.full(max(1, flat_offset[topic_count]), -1, np.int64)
    # per topic slot of the member's map
    s_topic = np.empty(max_slots, np.int64)
    s_seq = np.empty(max_slots, np.int64)
    s_alive = np.zeros(max_slots, np.bool_)
    s_cap = np.empty(max_slots, np.int64)
    s_size = np.empty(max_slots, np.int64)
    s_tail = np.empty(max_slots, np.int64)
    s_chain = np.empty(max_slots, np.int64)  # where the set's chain counts start in `pool`
    # per partition entry
    e_slot = np.empty(max_entries, np.int64)
    e_part = np.empty(max_entries, np.int64)
    e_seq = np.empty(max_entries, np.int64)
    e_alive = np.zeros(max_entries, np.bool_)
    pool = np.zeros(1024, np.int64)
    sort_keys = np.empty(max_slots, np.int64)
    sort_items = np.empty(max_slots, np.int64)
    counts = np.zeros(max_slots + 1, np.int64)
    fill = np.zeros(max_slots, np.int64)
    grouped = np.empty(max_entries, np.int64)
    entry_keys = np.empty(max_entries, np.int64)
    entry_items = np.empty(max_entries, np.int64)
    t_chains = np.zeros(64, np.int64)

    max_ops = 1
    for r in range(replayed):
        max_ops = max(max_ops, op_start[r + 1] - op_start[r])
    f_topic = np.empty(_FRESH_TOPICS, np.int64)
    f_first = np.empty(_FRESH_TOPICS, np.int64)
    f_count = np.empty(_FRESH_TOPICS, np.int64)
    f_slot = np.empty(max_ops, np.int64)
    f_keys = np.empty(max(max_ops, _FRESH_TOPICS), np.int64)
    f_items = np.empty(max(max_ops, _FRESH_TOPICS), np.int64)

    for r in range(replayed):
        m = members[r]
        lo = op_start[r]
        hi = op_start[r + 1]
        if old_start[m + 1] == old_start[m] and hi > lo:
            # the commonest case, written out here (a call passing the scratch arrays costs more than
            # the work): adds of one topic's partitions to an empty map
            single = op_kind[lo] == OP_ADD
            for o in range(lo + 1, hi):
                if op_topic[o] != op_topic[lo] or op_kind[o] != OP_ADD:
                    single = False
                    break
            if single:
                n = hi - lo
                cap = table_size_for(op_capacity[lo])
                first_cap = cap
                while n > (cap * 3) // 4 and cap < _MAX_CAPACITY:
                    cap *= 2
                for i in range(n):
                    f_items[i] = op_partition[lo + i]
                    f_keys[i] = ((spread(f_items[i]) & (cap - 1)) << 32) | i
                _sort_by(f_keys, f_items, n)
                # equal partitions share a bucket: a run of one bucket holds any duplicate, and is a chain
                run = 0
                for i in range(1, n):
                    if (f_keys[i] >> 32) == (f_keys[i - 1] >> 32):
                        run += 1
                        for j in range(i - run, i):
                            if f_items[j] == f_items[i]:
                                single = False
                        if run >= _TREEIFY:
                            single = False
                    else:
                        run = 0
                if n > _TREEIFY and cap != first_cap:
                    single = False
            if single:
                out_topic[n_entries_out] = op_topic[lo]
                for i in range(n):
                    out_parts[n_parts_out + i] = f_items[i]
                n_parts_out += n
                n_entries_out += 1
                part_start[n_entries_out] = n_parts_out
                entry_start[r + 1] = n_entries_out
                continue
        if old_start[m + 1] == old_start[m]:
            done, n_entries_out, n_parts_out = _fresh_member(
                op_start[r],
                op_start[r + 1],
                op_kind,
                op_topic,
                op_partition,
                op_capacity,
                topic_spread,
                f_topic,
                f_first,
                f_count,
                f_slot,
                f_keys,
                f_items,
                out_topic,
                part_start,
                out_parts,
                n_entries_out,
                n_parts_out,
            )
            if done:
                entry_start[r + 1] = n_entries_out
                continue
        n_slots = 0
        n_entries = 0
        used = 0  # bump allocator over pool
        # the topic map: new HashMap<>(size of the current assignment)
        t_cap = table_size_for(old_start[m + 1] - old_start[m])
        t_chains = _grow(t_chains, t_cap)
        t_chains[:t_cap] = 0
        t_head = 0
        t_tail = 0
        t_size = 0
        for e in range(old_start[m], old_start[m + 1]):
            topic = old_topic[e]
            count = old_part_start[e + 1] - old_part_start[e]
            # new HashSet<>(set): max((int) (n / .75f) + 1, 16) buckets, then addAll
            slot = n_slots
            n_slots += 1
            slot_of_topic[topic] = slot
            capacity = table_size_for(max((4 * count) // 3 + 1, 16))
            pool, used = _new_set(
                pool, used, slot, topic, capacity, s_topic, s_alive, s_cap, s_size, s_tail, s_chain
            )
            for k in range(old_part_start[e], old_part_start[e + 1]):
                p = old_parts[k]
                flat = -1
                if 0 <= p < flat_offset[topic + 1] - flat_offset[topic]:
                    flat = flat_offset[topic] + p
                    if entry_of_flat[flat] != -1:
                        continue  # already in the set (put of a present key)
                else:
                    dup = False
                    for j in range(n_entries):
                        if e_alive[j] and e_slot[j] == slot and e_part[j] == p:
                            dup = True
                    if dup:
                        continue
                entry = n_entries
                n_entries += 1
                if flat >= 0:
                    entry_of_flat[flat] = entry
                pool, used, tree = _set_add(
                    pool, used, slot, p, entry, s_cap, s_size, s_tail, s_chain, e_slot, e_part, e_seq, e_alive
                )
                if tree:
                    return entry_start, out_topic[:0], part_start[:1], out_parts[:0], False
            # HashMap.put of the topic (tail insert)
            t_tail += 1
            s_seq[slot] = t_tail
            t_size += 1
            bucket = topic_spread[topic] & (t_cap - 1)
            t_chains[bucket] += 1
            if t_chains[bucket] > _TREEIFY and t_cap >= _MIN_TREEIFY_CAPACITY:
                return entry_start, out_topic[:0], part_start[:1], out_parts[:0], False
            if t_chains[bucket] > _TREEIFY and t_cap < _MIN_TREEIFY_CAPACITY:
                t_chains, t_cap = _double_topic_map(t_chains, t_cap, n_slots, s_alive, s_topic, topic_spread)
            if t_size > (t_cap * 3) // 4 and t_cap < _MAX_CAPACITY:
                t_chains, t_cap = _double_topic_map(t_chains, t_cap, n_slots, s_alive, s_topic, topic_spread)

        for o in range(op_start[r], op_start[r + 1]):
            kind = op_kind[o]
            topic = op_topic[o]
            slot = slot_of_topic[topic]
            if kind != OP_ADD:
                if slot == -1 or not s_alive[slot]:
                    continue
                if kind != OP_REMOVE_TOPIC:
                    p = op_partition[o]
                    flat = flat_offset[topic] + p
                    entry = entry_of_flat[flat]
                    if entry == -1 or not e_alive[entry]:
                        continue
                    e_alive[entry] = False
                    entry_of_flat[flat] = -1
                    pool[s_chain[slot] + (spread(p) & (s_cap[slot] - 1))] -= 1
                    s_size[slot] -= 1
                    if s_size[slot] > 0 or kind == OP_REMOVE_KEEP:
                        continue
                # map.remove(topic); the table never shrinks
                s_alive[slot] = False
                t_size -= 1
                t_chains[topic_spread[topic] & (t_cap - 1)] -= 1
                continue
            # OP_ADD: computeIfAbsent resizes first when over the threshold, even for a present key
            if t_size > (t_cap * 3) // 4 and t_cap < _MAX_CAPACITY:
                t_chains, t_cap = _double_topic_map(t_chains, t_cap, n_slots, s_alive, s_topic, topic_spread)
            if slot == -1 or not s_alive[slot]:
                slot = n_slots
                n_slots += 1
                slot_of_topic[topic] = slot
                capacity = table_size_for(op_capacity[o])
                pool, used = _new_set(
                    pool, used, slot, topic, capacity, s_topic, s_alive, s_cap, s_size, s_tail, s_chain
                )
                t_head -= 1
                s_seq[slot] = t_head
                t_size += 1
                bucket = topic_spread[topic] & (t_cap - 1)
                t_chains[bucket] += 1
                if t_chains[bucket] > _TREEIFY - 1 and t_cap >= _MIN_TREEIFY_CAPACITY:
                    return entry_start, out_topic[:0], part_start[:1], out_parts[:0], False
                if t_chains[bucket] > _TREEIFY - 1 and t_cap < _MIN_TREEIFY_CAPACITY:
                    t_chains, t_cap = _double_topic_map(
                        t_chains, t_cap, n_slots, s_alive, s_topic, topic_spread
                    )
            p = op_partition[o]
            flat = flat_offset[topic] + p
            if entry_of_flat[flat] != -1:
                continue
            entry = n_entries
            n_entries += 1
            entry_of_flat[flat] = entry
            pool, used, tree = _set_add(
                pool, used, slot, p, entry, s_cap, s_size, s_tail, s_chain, e_slot, e_part, e_seq, e_alive
            )
            if tree:
                return entry_start, out_topic[:0], part_start[:1], out_parts[:0], False

        # the member's map in Java's order: topics by (bucket, sequence), each set likewise
        k = 0
        for j in range(n_slots):
            if s_alive[j]:
                sort_keys[k] = (topic_spread[s_topic[j]] & (t_cap - 1)) * (4 * max_slots + 4) + (
                    s_seq[j] + 2 * max_slots + 2
                )
                sort_items[k] = j
                k += 1
        _sort_by(sort_keys, sort_items, k)
        alive_slots = k
        # the entries of each slot, gathered
        counts[: n_slots + 1] = 0
        for j in range(n_entries):
            if e_alive[j]:
                counts[e_slot[j] + 1] += 1
        for j in range(n_slots):
            counts[j + 1] += counts[j]
        fill[:n_slots] = counts[:n_slots]
        for j in range(n_entries):
            if e_alive[j]:
                grouped[fill[e_slot[j]]] = j
                fill[e_slot[j]] += 1
        for a in range(alive_slots):
            slot = sort_items[a]
            out_topic[n_entries_out] = s_topic[slot]
            lo = counts[slot]
            hi = counts[slot + 1]
            cap = s_cap[slot]
            for i in range(lo, hi):
                j = grouped[i]
                entry_keys[i - lo] = (spread(e_part[j]) & (cap - 1)) * (max_entries + 1) + e_seq[j]
                entry_items[i - lo] = j
            _sort_by(entry_keys, entry_items, hi - lo)
            for i in range(hi - lo):
                out_parts[n_parts_out] = e_part[entry_items[i]]
                n_parts_out += 1
            n_entries_out += 1
            part_start[n_entries_out] = n_parts_out
        entry_start[r + 1] = n_entries_out
        # reset the scratch the member used
        for j in range(n_slots):
            slot_of_topic[s_topic[j]] = -1
        for j in range(n_entries):
            p = e_part[j]
            topic = s_topic[e_slot[j]]
            if 0 <= p < flat_offset[topic + 1] - flat_offset[topic]:
                entry_of_flat[flat_offset[topic] + p] = -1
            e_alive[j] = False
        for j in range(n_slots):
            s_alive[j] = False
    return (
        entry_start,
        out_topic[:n_entries_out],
        part_start[: n_entries_out + 1],
        out_parts[:n_parts_out],
        True,
    )
