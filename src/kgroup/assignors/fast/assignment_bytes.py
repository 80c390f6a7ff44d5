"""``ConsumerProtocolAssignment`` bytes straight from flat partition numbers: the leader's last step
without a ``TopicPartition`` object per partition.

:func:`kgroup.wire.consumer_protocol.encode_assignment` takes a member's partitions as objects. The
fast assignors answer with flat partition numbers over a topic table (:mod:`.partition_list`); when
the answer is only sent on — the group leader's SyncGroup — building a million objects to encode them
costs more than the assignment. Here one numba kernel writes every member's bytes from the integers:

* the layout is :func:`~kgroup.wire.consumer_protocol.encode_assignment`'s (Kafka's
  ``ConsumerProtocol.serializeAssignment``): an int16 version, an int32 topic count, per topic (in
  order of first appearance) its int16-length-prefixed UTF-8 name, an int32 count and the partition
  numbers as big-endian int32s in their order, then the user data (here always null: int32 -1);
* the tests prove the bytes equal to ``encode_assignment``'s on random assignments and on Kafka's
  vectors (``tests/assignors/test_assignment_bytes.py``).

Imported lazily (numba compiles on first use; ``cache=True`` keeps the machine code on disk).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kgroup._njit import njit
from kgroup.model import KgroupError

__all__ = ["encode_flat_assignments", "encode_ranked_assignments", "topic_name_blob"]

_MAX_STRING = 0x7FFF


def topic_name_blob(names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Every topic's name as Kafka writes it (int16 length, then UTF-8), concatenated, and the
    start of each one (``len(names) + 1`` offsets)."""
    parts: list[bytes] = []
    starts = np.zeros(len(names) + 1, dtype=np.int64)
    total = 0
    for i, name in enumerate(names):
        data = name.encode("utf-8")
        if len(data) > _MAX_STRING:
            raise KgroupError(
                f"assignment.partitions: topic name of {len(data)} bytes is longer than a Kafka string "
                "(32767); shorten it"
            )
        parts.append(len(data).to_bytes(2, "big"))
        parts.append(data)
        total += 2 + len(data)
        starts[i + 1] = total
    blob = np.frombuffer(b"".join(parts), dtype=np.uint8) if parts else np.zeros(0, dtype=np.uint8)
    return blob, starts


@njit(cache=True, inline="always")
def _put_int32(out: Any, at: int, value: int) -> None:  # pragma: no cover - compiled
    v = np.uint32(value & 0xFFFFFFFF)
    out[at] = np.uint8((v >> np.uint32(24)) & np.uint32(0xFF))
    out[at + 1] = np.uint8((v >> np.uint32(16)) & np.uint32(0xFF))
    out[at + 2] = np.uint8((v >> np.uint32(8)) & np.uint32(0xFF))
    out[at + 3] = np.uint8(v & np.uint32(0xFF))


@njit(cache=True)
def _encode_kernel(
    ranks: Any, numbers: Any, starts: Any, topics: int, blob: Any, blob_start: Any, version: int
) -> tuple[Any, Any]:  # pragma: no cover - compiled
    """Every member's assignment bytes into one buffer; member ``m``'s are ``out[at[m]:at[m+1]]``.

    Member ``m``'s partitions are entries ``starts[m]:starts[m+1]``: topic ``ranks[i]`` (an index
    into the name blob), partition ``numbers[i]`` (a Java int)."""
    members = starts.size - 1
    seen = np.full(topics, -1, dtype=np.int64)  # the member that last touched the topic
    count = np.zeros(topics, dtype=np.int64)
    write = np.zeros(topics, dtype=np.int64)  # next byte of the topic's partition numbers
    order = np.empty(topics, dtype=np.int64)  # the member's topics in order of first appearance
    # pass 1: sizes
    at = np.zeros(members + 1, dtype=np.int64)
    for m in range(members):
        size = 2 + 4 + 4  # version, topic count, null user data
        for i in range(starts[m], starts[m + 1]):
            r = ranks[i]
            if seen[r] != m:
                seen[r] = m
                size += blob_start[r + 1] - blob_start[r] + 4
            size += 4
        at[m + 1] = at[m] + size
    out = np.empty(at[members], dtype=np.uint8)
    seen[:] = -1
    # pass 2: bytes
    for m in range(members):
        pos = at[m]
        out[pos] = np.uint8((version >> 8) & 0xFF)
        out[pos + 1] = np.uint8(version & 0xFF)
        pos += 2
        distinct = 0
        for i in range(starts[m], starts[m + 1]):
            r = ranks[i]
            if seen[r] != m:
                seen[r] = m
                count[r] = 0
                order[distinct] = r
                distinct += 1
            count[r] += 1
        _put_int32(out, pos, distinct)
        pos += 4
        for k in range(distinct):
            r = order[k]
            for b in range(blob_start[r], blob_start[r + 1]):
                out[pos] = blob[b]
                pos += 1
            _put_int32(out, pos, count[r])
            pos += 4
            write[r] = pos
            pos += 4 * count[r]
        for i in range(starts[m], starts[m + 1]):
            r = ranks[i]
            _put_int32(out, write[r], numbers[i])
            write[r] += 4
        _put_int32(out, pos, -1)  # user data: null
        pos += 4
    return out, at


def encode_ranked_assignments(
    ranks: np.ndarray, numbers: np.ndarray, starts: np.ndarray, names: Sequence[str], version: int
) -> list[bytes]:
    """Member ``m``'s ``ConsumerProtocolAssignment`` bytes (null user data) for the partitions
    ``(names[ranks[i]], numbers[i])``, ``i`` in ``starts[m]:starts[m+1]`` (numbers must be Java ints).
    ``version`` must already be checked (0..3)."""
    blob, blob_start = topic_name_blob(names)
    out, at = _encode_kernel(
        np.ascontiguousarray(ranks, dtype=np.int64),
        np.ascontiguousarray(numbers, dtype=np.int64),
        np.ascontiguousarray(starts, dtype=np.int64),
        len(names),
        blob,
        blob_start,
        version,
    )
    data = out.tobytes()
    bounds = at.tolist()
    return [data[bounds[m]:bounds[m + 1]] for m in range(len(bounds) - 1)]


def encode_flat_assignments(
    flat: np.ndarray,
    starts: np.ndarray,
    names: Sequence[str],
    bases: np.ndarray,
    version: int,
) -> list[bytes]:
    """:func:`encode_ranked_assignments` for flat partition numbers ``flat`` over topics ``names``
    whose partition 0 has flat number ``bases`` (non-decreasing: a topic's partitions run up to the
    next topic's base; as :class:`~.partition_list.TopicTable` reads them)."""
    bases = np.ascontiguousarray(bases, dtype=np.int64)
    flat = np.ascontiguousarray(flat, dtype=np.int64)
    end = int(bases[-1]) if bases.size else 0
    if flat.size:
        end = max(end, int(flat.max()) + 1)
    # the topic of every flat number up to the largest one used, as TopicTable.partitions finds it
    # (side="right": of topics sharing a base, the last one, the only one with partitions)
    counts = np.diff(np.append(bases, end))
    topic_of = np.repeat(np.arange(len(names), dtype=np.int64), counts)
    ranks = topic_of[flat]
    return encode_ranked_assignments(ranks, flat - bases[ranks], starts, names, version)
