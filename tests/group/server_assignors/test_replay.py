"""The replay of Java's map order (:func:`kgroup.group.assignors.fast.javamaps.replay`) against the
readable models (:class:`kgroup.javacompat.JavaHashMap` / ``JavaHashSet``), for members whose map starts
empty and only gains partitions (the short path of the replay) and members that start from a map."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kgroup.group.assignors.fast.javamaps import OP_ADD, OP_REMOVE, replay
from kgroup.javacompat import JavaHashMap, JavaHashSet, java_integer_hash, java_spread

_Adds = list[tuple[int, int]]  # (topic index, partition)


def ints(values: list[int]) -> np.ndarray:
    return np.array(values, np.int64)


def _model(
    old: list[tuple[int, list[int]]], adds: _Adds, removes: _Adds, hashes: list[int], capacity: int
) -> list[tuple[int, list[int]]] | None:
    """Java's ``deepCopyAssignment`` of the member's map, its removes, then its
    ``computeIfAbsent(topic, new HashSet<>(capacity)).add(partition)``s, in the models."""
    topic_map: JavaHashMap[int, JavaHashSet[int]] = JavaHashMap(hashes.__getitem__, len(old))
    for topic, partitions in old:
        topic_map.put(topic, JavaHashSet.copy_of(java_integer_hash, partitions))
    for topic, partition in removes:
        found = topic_map.get(topic)
        if found is not None and partition in found:
            found.remove(partition)
            if len(found) == 0:
                topic_map.remove(topic)
    for topic, partition in adds:
        topic_map.compute_if_absent(topic, lambda: JavaHashSet(java_integer_hash, capacity)).add(partition)
    if topic_map.treeified or any(s.treeified for _, s in topic_map.items()):
        return None
    return [(topic, list(partitions)) for topic, partitions in topic_map.items()]


@st.composite
def _members(
    draw: st.DrawFn,
) -> tuple[list[int], list[tuple[list[tuple[int, list[int]]], _Adds, _Adds]], int]:
    topics = draw(st.integers(1, 12))
    partitions = draw(st.sampled_from([4, 20, 70]))
    hashes = draw(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=topics, max_size=topics))
    members = []
    for _ in range(draw(st.integers(1, 6))):
        old: list[tuple[int, list[int]]] = []
        if draw(st.booleans()):
            for topic in draw(st.lists(st.integers(0, topics - 1), max_size=4, unique=True)):
                old.append(
                    (
                        topic,
                        draw(st.lists(st.integers(0, partitions - 1), min_size=1, max_size=8, unique=True)),
                    )
                )
        removes = [(t, p) for t, ps in old for p in ps if draw(st.integers(0, 3)) == 0]
        adds = draw(
            st.lists(
                st.tuples(st.integers(0, topics - 1), st.integers(0, partitions - 1)),
                max_size=30,
                unique=True,
            )
        )
        members.append((old, adds, removes))
    return hashes, members, draw(st.sampled_from([1, 16, 64]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_members())
def test_replay_orders_maps_as_java(
    case: tuple[list[int], list[tuple[list[tuple[int, list[int]]], _Adds, _Adds]], int],
) -> None:
    hashes, members, capacity = case
    counts = np.full(len(hashes), 70, np.int64)
    flat_offset = np.zeros(len(hashes) + 1, np.int64)
    flat_offset[1:] = np.cumsum(counts)
    old_start, old_topic, old_part_start, old_parts = [0], [], [0], []
    op_start, kinds, topics, parts = [0], [], [], []
    for old, adds, removes in members:
        for topic, ps in old:
            old_topic.append(topic)
            old_parts.extend(ps)
            old_part_start.append(len(old_parts))
        old_start.append(len(old_topic))
        for kind, ops in ((OP_REMOVE, removes), (OP_ADD, adds)):
            for topic, partition in ops:
                kinds.append(kind)
                topics.append(topic)
                parts.append(partition)
        op_start.append(len(kinds))
    entry_start, entry_topic, part_start, out_parts, modelled = replay(
        np.arange(len(members), dtype=np.int64),
        ints(op_start),
        ints(kinds),
        ints(topics),
        ints(parts),
        np.full(len(kinds), capacity, np.int64),
        ints(old_start),
        ints(old_topic),
        ints(old_part_start),
        ints(old_parts),
        ints([java_spread(h) for h in hashes]),
        flat_offset,
    )
    expected = [_model(old, adds, removes, hashes, capacity) for old, adds, removes in members]
    if any(e is None for e in expected):
        assert not modelled  # a tree bucket: the replay steps aside
        return
    assert modelled
    got = []
    for r in range(len(members)):
        got.append(
            [
                (int(entry_topic[e]), out_parts[part_start[e] : part_start[e + 1]].tolist())
                for e in range(entry_start[r], entry_start[r + 1])
            ]
        )
    assert got == expected


@st.composite
def _one_topic_members(draw: st.DrawFn) -> tuple[list[int], list[_Adds], int]:
    """Members whose empty map gains partitions of one topic only (the replay's commonest case, a new
    group's), drawn to collide: partitions ``offset + k * stride``, so one bucket can hold a chain past
    the tree threshold (a resize of a small table, or a tree), and a partition may be added twice."""
    stride = draw(st.sampled_from([1, 16, 32, 64, 128]))
    offset = draw(st.integers(0, 15))
    members: list[_Adds] = []
    for _ in range(draw(st.integers(1, 5))):
        topic = draw(st.integers(0, 2))
        ks = draw(st.lists(st.integers(0, 40), min_size=1, max_size=40))
        members.append([(topic, offset + k * stride) for k in ks])
    hashes = draw(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=3, max_size=3))
    return hashes, members, draw(st.sampled_from([1, 16, 64]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_one_topic_members())
# a chain of 10 in a table of 64 becomes a tree; the 50th partition doubles the table, which splits
# that bucket into two of 5, plain chains again but in the tree's order: no chain over 8 is left to see
@example(case=([7, 8, 9], [[(0, 64 * k) for k in range(10)] + [(0, p) for p in range(1, 41)]], 64))
def test_replay_of_one_topic_added_to_an_empty_map(case: tuple[list[int], list[_Adds], int]) -> None:
    hashes, members, capacity = case
    counts = np.full(len(hashes), 16 + 40 * 128, np.int64)
    flat_offset = np.zeros(len(hashes) + 1, np.int64)
    flat_offset[1:] = np.cumsum(counts)
    op_start = np.cumsum([0] + [len(adds) for adds in members]).astype(np.int64)
    flat = [op for adds in members for op in adds]
    entry_start, entry_topic, part_start, out_parts, modelled = replay(
        np.arange(len(members), dtype=np.int64),
        op_start,
        np.full(len(flat), OP_ADD, np.int64),
        ints([t for t, _ in flat]),
        ints([p for _, p in flat]),
        np.full(len(flat), capacity, np.int64),
        np.zeros(len(members) + 1, np.int64),
        ints([]),
        np.zeros(1, np.int64),
        ints([]),
        ints([java_spread(h) for h in hashes]),
        flat_offset,
    )
    expected = [_model([], adds, [], hashes, capacity) for adds in members]
    if any(e is None for e in expected):
        assert not modelled  # a tree bucket: the replay steps aside
        return
    assert modelled
    got = [
        [
            (int(entry_topic[e]), out_parts[part_start[e] : part_start[e + 1]].tolist())
            for e in range(entry_start[r], entry_start[r + 1])
        ]
        for r in range(len(members))
    ]
    assert got == expected
