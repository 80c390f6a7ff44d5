"""Java semantics that Kafka's answers depend on.

Kafka orders member ids with ``String.compareTo`` (UTF-16 code units, not code points), hashes
group ids with ``String.hashCode`` and iterates members in ``java.util.HashMap`` order. Python's
``str`` does none of these the same way, so the exact rules live here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

__all__ = [
    "hashmap_iteration_order",
    "int32",
    "java_abs",
    "java_compare",
    "java_string_hash",
    "java_string_key",
    "sorted_java",
    "to_positive",
]

_MASK32 = 0xFFFFFFFF


def int32(value: int) -> int:
    """Wrap an integer to Java's signed 32-bit range."""
    value &= _MASK32
    return value - 0x1_0000_0000 if value & 0x8000_0000 else value


def to_positive(value: int) -> int:
    """Kafka's ``Utils.toPositive``: clear the sign bit (``x & 0x7fffffff``), not ``abs``."""
    return value & 0x7FFFFFFF


def java_abs(value: int) -> int:
    """Kafka's ``Utils.abs``: ``Integer.MIN_VALUE`` maps to 0, everything else to its absolute value."""
    value = int32(value)
    return 0 if value == -0x8000_0000 else abs(value)


def _utf16_units(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


@lru_cache(maxsize=65536)  # ids and topic names repeat: hashing them once pays in the hot loops
def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, int32 wrap."""
    units = _utf16_units(text)
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & _MASK32
    return int32(h)


@lru_cache(maxsize=65536)
def java_string_key(text: str) -> bytes:
    """A sort key that orders strings exactly as Java's ``String.compareTo``.

    Big-endian UTF-16 bytes compare lexicographically in code-unit order, with a proper prefix first.
    """
    return _utf16_units(text)


def java_compare(a: str, b: str) -> int:
    """Java's ``a.compareTo(b)`` reduced to its sign (-1, 0, 1)."""
    ka, kb = java_string_key(a), java_string_key(b)
    return (ka > kb) - (ka < kb)


def hashmap_iteration_order(keys: Iterable[str]) -> list[str]:
    """The order in which a ``java.util.HashMap<String, ?>`` iterates keys ``put`` in the given order.

    Buckets are ``spread(hash) & (capacity - 1)`` with ``spread(h) = h ^ (h >>> 16)``; capacity starts
    at 16 and doubles while the size exceeds 0.75 × capacity; a resize keeps each bucket's relative
    order, so within a bucket the order is insertion order. Repeated keys keep their first position.
    (Java turns buckets of 8+ colliding keys into trees once the table has 64+ buckets; member ids
    practically never collide that much, so that case is not modelled.)
    """
    seen: dict[str, int] = {}
    for key in keys:
        if key not in seen:
            h = java_string_hash(key) & _MASK32
            seen[key] = h ^ (h >> 16)
    capacity = 16
    while len(seen) > 0.75 * capacity:
        capacity *= 2
    buckets: dict[int, list[str]] = {}
    for key, spread in seen.items():
        buckets.setdefault(spread & (capacity - 1), []).append(key)
    return [key for index in sorted(buckets) for key in buckets[index]]


def sorted_java(strings: Sequence[str]) -> list[str]:
    """Strings sorted as Java's ``Collections.sort`` would sort them."""
    return sorted(strings, key=java_string_key)
