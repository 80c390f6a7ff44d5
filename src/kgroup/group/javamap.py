"""The iteration order of a live ``java.util.HashMap<String, ?>`` that keys are put into and removed from.

:func:`kgroup.javacompat.hashmap_iteration_order` answers for a map that was only ever filled. A
group's member map also loses members and gains new ones, and Java's table never shrinks: its
capacity is set by the largest size the map ever had. Within a bucket entries stay in insertion order
(a removed key that returns goes to the tail), and a resize splits buckets without reordering them, so
the order is "by bucket index under the current capacity, then by insertion sequence".
"""

from __future__ import annotations

from kgroup.javacompat import java_string_hash

__all__ = ["JavaHashOrder"]

_MASK32 = 0xFFFFFFFF
_INITIAL_CAPACITY = 16
_LOAD_FACTOR = 0.75


def _spread(key: str) -> int:
    h = java_string_hash(key) & _MASK32
    return h ^ (h >> 16)


class JavaHashOrder:
    """Tracks which keys a Java ``HashMap`` holds and the order it iterates them."""

    __slots__ = ("_cached", "_capacity", "_entries", "_next_seq")

    def __init__(self) -> None:
        self._capacity = _INITIAL_CAPACITY
        self._entries: dict[str, tuple[int, int]] = {}  # key -> (spread hash, insertion sequence)
        self._next_seq = 0
        self._cached: tuple[str, ...] | None = None

    def put(self, key: str) -> None:
        """``map.put(key, …)``: a new key goes to its bucket's tail; an existing key keeps its place."""
        if key in self._entries:
            return
        self._entries[key] = (_spread(key), self._next_seq)
        self._next_seq += 1
        self._cached = None
        while len(self._entries) > _LOAD_FACTOR * self._capacity:
            self._capacity *= 2

    def remove(self, key: str) -> None:
        """``map.remove(key)``; the capacity stays (Java never shrinks a table)."""
        if self._entries.pop(key, None) is not None:
            self._cached = None

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def order(self) -> tuple[str, ...]:
        """The keys in Java's iteration order."""
        if self._cached is None:
            mask = self._capacity - 1
            entries = self._entries
            self._cached = tuple(sorted(entries, key=lambda k: (entries[k][0] & mask, entries[k][1])))
        return self._cached

    def state(self) -> tuple[int, tuple[str, ...]]:
        """A comparable summary: capacity and the iteration order (what determines future orders)."""
        return (self._capacity, self.order())

    @property
    def capacity(self) -> int:
        return self._capacity

    def insertion_order(self) -> tuple[str, ...]:
        """The keys in the order they were put: with the capacity, what rebuilds this map."""
        entries = self._entries
        return tuple(sorted(entries, key=lambda k: entries[k][1]))

    @classmethod
    def restored(cls, capacity: int, keys: tuple[str, ...]) -> JavaHashOrder:
        """The map whose :attr:`capacity` and :meth:`insertion_order` these are (a checkpoint's)."""
        order = cls()
        for key in keys:
            order.put(key)
        if capacity < order._capacity or capacity & (capacity - 1):
            raise ValueError(f"capacity {capacity} cannot hold {len(keys)} keys (or is not a power of 2)")
        order._capacity = capacity
        return order
