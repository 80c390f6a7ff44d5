"""Eager ``sticky`` user data read straight into integer arrays (topic ranks, partition numbers).

The layout is Kafka's ``StickyAssignor`` V0/V1 schema (see :mod:`kgroup.assignors.sticky.userdata`):
``ARRAY(topic: STRING, partitions: ARRAY(INT32))`` then, in V1, ``generation: INT32``, big-endian.
A numba kernel walks the bytes and matches each topic name against the assignable topics' UTF-8
names; anything unusual (a short buffer, a negative size, a name that is not valid UTF-8) returns
``None`` so that the caller falls back to the reference decoder, which reproduces Kafka's leniency.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["TopicNameTable", "decode_sticky_user_data_flat"]


class TopicNameTable:
    """The assignable topics' UTF-8 names, packed for the kernel, with their ranks."""

    __slots__ = ("blob", "lengths", "offsets", "ranks_by_hash", "sorted_hashes")

    def __init__(self, names: list[str]) -> None:
        encoded = [n.encode("utf-8") for n in names]
        self.lengths = np.array([len(e) for e in encoded], dtype=np.int64)
        self.offsets = np.zeros(len(encoded), dtype=np.int64)
        if len(encoded) > 1:
            np.cumsum(self.lengths[:-1], out=self.offsets[1:])
        self.blob = np.frombuffer(b"".join(encoded) or b"\0", dtype=np.uint8)
        from kgroup.assignors.fast.userdata_kernel import fnv1a

        hashes = np.array(
            [fnv1a(np.frombuffer(e or b"\0", dtype=np.uint8), 0, len(e)) for e in encoded], dtype=np.uint64
        )
        order = np.argsort(hashes, kind="mergesort")
        self.sorted_hashes = hashes[order]
        self.ranks_by_hash = order.astype(np.int64)


def decode_sticky_user_data_flat(data: bytes, table: TopicNameTable) -> Any:
    """(topic ranks, partition numbers, generation or ``None`` for V0) of the assignable topics'
    claims in ``data``, or ``None`` when the reference decoder must decide."""
    from kgroup.assignors.fast.userdata_kernel import decode_kernel

    buffer = np.frombuffer(data, dtype=np.uint8)
    status, ranks, numbers, generation, has_generation = decode_kernel(
        buffer, table.blob, table.offsets, table.lengths, table.sorted_hashes, table.ranks_by_hash
    )
    if status != 0:
        return None
    return ranks, numbers, (int(generation) if has_generation else None)
