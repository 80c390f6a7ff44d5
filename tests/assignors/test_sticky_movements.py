"""The general sticky path's partition movements, and its emulation of Java ``HashSet`` order.

``JAVA_FIRST_ELEMENTS`` was recorded from a real JVM (OpenJDK 17): a ``java.util.HashSet`` of a
two-field class with ``TopicPartition``'s ``hashCode`` (``31 * (31 + partition) + topic.hashCode()``)
driven through the operations of :func:`hashset_ops`, printing ``iterator().next()`` after each. The
second half adds partitions 16 apart, which share a bucket in small tables, so it exercises the
resize that ``treeifyBin`` does instead of building a tree bin while the table is under 64 buckets.
"""

from __future__ import annotations

import random

from kgroup.assignors.sticky.movements import JavaHashSet, PartitionMovements, topic_partition_hash
from kgroup.model import TopicPartition

T = TopicPartition


def hashset_ops(seed: int) -> list[tuple[str, str, int]]:
    """Add ("+"), remove ("-"), query ("?") and fresh-set ("new") operations on one set."""
    rng = random.Random(seed)
    ops: list[tuple[str, str, int]] = []
    present: list[tuple[str, int]] = []
    topics = ("t", "topic-a", "t10", "\u00e9v", "x")
    for step in range(240):
        colliding = step >= 120  # partitions 16 apart share a bucket in small tables
        if present and rng.random() < 0.3:
            tp = present.pop(rng.randrange(len(present)))
            ops.append(("-", *tp))
        elif len(present) < 30:
            tp = ("t", 16 * rng.randrange(40)) if colliding else (rng.choice(topics), rng.randrange(60))
            if tp not in present:
                present.append(tp)
            ops.append(("+", *tp))
        ops.append(("?", "", 0))
        if step == 119:
            ops.append(("new", "", 0))
            present.clear()
    return ops


def _expand_runs(text: str) -> list[str]:
    """``"a*3 b"`` -> ``["a", "a", "a", "b"]``."""
    out: list[str] = []
    for token in text.split():
        value, _, count = token.partition("*")
        out.extend([value] * int(count or 1))
    return out


# Recorded with Java (see the module docstring), seeds 1 then 2.
JAVA_FIRST_ELEMENTS = _expand_runs(
    "topic-a-36 t-16 topic-a-36*3 empty év-38*2 topic-a-37 t10-1*15 x-25*35 év-46*61 t-32*6 t-384*5 "
    "t-368*3 t-576*5 t-112*30 t-208*8 t-592*5 t-80*22 t-400*32 t-304*4 t-5 empty t10-16*2 "
    "topic-a-27*16 x-23*9 t10-19*3 x-23 x-56*87 t-496 empty t-144*28 t-240*90 "
)


def test_first_element_matches_java_hashset() -> None:
    answers: list[str] = []
    for seed in (1, 2):
        current = JavaHashSet()
        for op, topic, partition in hashset_ops(seed):
            if op == "+":
                current.add(T(topic, partition))
            elif op == "-":
                current.discard(T(topic, partition))
            elif op == "new":
                current = JavaHashSet()
            else:
                answers.append(str(current.first()) if len(current) else "empty")
    assert len(answers) == len(JAVA_FIRST_ELEMENTS) == 480
    mismatches = [
        (i, a, j) for i, (a, j) in enumerate(zip(answers, JAVA_FIRST_ELEMENTS, strict=True)) if a != j
    ]
    assert mismatches == []


def test_topic_partition_hash_is_kafkas() -> None:
    # "t".hashCode() = 116; 31 * (31 + 5) + 116 = 1232; spread leaves a small value unchanged
    assert topic_partition_hash(T("t", 5)) == 1232
    # int32 overflow wraps, and the spread folds the high half into the low half
    h = (31 * (31 + 2**30) + 116) & 0xFFFFFFFF
    assert topic_partition_hash(T("t", 2**30)) == h ^ (h >> 16)


def test_moving_back_cancels_the_record() -> None:
    moves = PartitionMovements()
    tp = T("t", 0)
    moves.move(tp, "a", "b")
    assert moves.movements == {tp: ("a", "b")}
    moves.move(tp, "b", "c")
    assert moves.movements == {tp: ("a", "c")}  # one record from the original owner
    moves.move(tp, "c", "a")
    assert moves.movements == {} and moves.by_topic == {}


def test_an_opposite_earlier_move_of_the_same_topic_is_undone_instead() -> None:
    moves = PartitionMovements()
    moves.move(T("t", 3), "b", "a")  # t-3 went b -> a earlier
    # moving t-7 from a to b: Kafka moves t-3 back instead, so no partition of t crosses twice
    assert moves.actual_partition_to_move(T("t", 7), "a", "b") == T("t", 3)
    assert moves.actual_partition_to_move(T("u", 7), "a", "b") == T("u", 7)  # other topic
    assert moves.actual_partition_to_move(T("t", 7), "a", "c") == T("t", 7)  # other member
