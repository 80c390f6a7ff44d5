"""Scala 2.13 collections' iteration orders that Kafka's answers depend on.

Kafka's broker is partly Scala, and some answers are built by iterating a Scala map: a Produce answer
lists its partitions in the order of the ``Map[TopicIdPartition, PartitionResponse]`` that
``KafkaApis.handleProduceRequest`` merges (:mod:`kgroup.broker.answer_order`). Kafka 4.4.0 ships
Scala 2.13.18; its rules, read from that release's library sources, are these:

* ``mutable.HashMap`` keeps ``2^n`` buckets (16 to begin with, or enough for a size known up front),
  a bucket holding its keys sorted by their *improved* hash (``h ^ (h >>> 16)``, as Java's spread),
  keys of one hash in the order they came; it iterates bucket by bucket. It doubles its table when a
  put (even one that only replaces a value) finds ``size + 1 >= 0.75 · buckets``.
* ``immutable.Map`` of up to four keys (``Map1`` … ``Map4``) iterates in the order the keys came, a
  key put again keeping its place; a fifth key turns it into a ``HashMap``: a CHAMP trie over the key's
  hash improved by ``Hashing.improve``, five bits a level from the lowest. A trie node lists the keys
  alone in their slot first (by slot), then its sub-nodes (by slot), each in turn the same way; keys of
  one whole hash share a collision node, in the order they came.

Only insertions are modelled (Kafka's answers never remove from these maps).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

from kgroup.javacompat import int32

_K = TypeVar("_K", bound=Hashable)
_T = TypeVar("_T", bound=Hashable)

__all__ = [
    "ImmutableMapOrder",
    "ImmutableSetOrder",
    "champ_order",
    "mutable_hashmap_order",
    "mutable_table_after_puts",
    "mutable_table_for_size",
    "scala_improve",
]

_MASK32 = 0xFFFFFFFF
_LOAD_FACTOR = 0.75
_DEFAULT_TABLE = 16
_HASH_BITS = 32
_LEVEL_BITS = 5
_SMALL_MAP = 4  # Map1 … Map4


def scala_improve(hash_code: int) -> int:
    """``scala.collection.Hashing.improve``: the hash a CHAMP trie places a key by (as a signed int)."""
    h = hash_code & _MASK32
    h = (h + (~(h << 9) & _MASK32)) & _MASK32
    h ^= h >> 14
    h = (h + (h << 4)) & _MASK32
    h ^= h >> 10
    return int32(h)


def _table_size_for(capacity: int) -> int:
    """``mutable.HashMap.tableSizeFor``: the bucket count for an initial capacity."""
    return min((1 << (max(capacity - 1, 4).bit_length() - 1)) * 2, 1 << 30)


def mutable_table_for_size(known_size: int) -> int:
    """The bucket count of ``mutable.HashMap.from`` a collection of ``known_size`` keys (``.map`` and
    ``.to`` of a map whose size is known): room for them all up front, so no put grows it."""
    if known_size <= 0:
        return _table_size_for(_DEFAULT_TABLE)
    return _table_size_for(int((known_size + 1) / _LOAD_FACTOR))


def mutable_table_after_puts(sizes_before_put: Sequence[int]) -> int:
    """The bucket count of a ``mutable.HashMap()`` after puts made when it held ``sizes_before_put``
    keys (one entry per ``+=``, a replaced key's too): a put that finds ``size + 1 >= threshold``
    doubles the table first."""
    table = _table_size_for(_DEFAULT_TABLE)
    threshold = int(table * _LOAD_FACTOR)
    for size in sizes_before_put:
        if size + 1 >= threshold:
            table *= 2
            threshold = int(table * _LOAD_FACTOR)
    return table


def mutable_hashmap_order(keys: Sequence[_K], hashes: Sequence[int], table: int) -> list[_K]:
    """A ``mutable.HashMap``'s iteration order: ``keys`` (distinct, in the order they were first put)
    with their ``hashCode``\\ s, in a table of ``table`` buckets."""
    mask = table - 1

    def place(i: int) -> tuple[int, int, int]:
        spread = int32((hashes[i] & _MASK32) ^ ((hashes[i] & _MASK32) >> 16))
        return (spread & mask, spread, i)

    return [keys[i] for i in sorted(range(len(keys)), key=place)]


def champ_order(keys: Sequence[_K], hashes: Sequence[int]) -> list[_K]:
    """An ``immutable.HashMap``'s iteration order: ``keys`` (distinct, in the order they were first
    put) with their ``hashCode``\\ s."""
    improved = [scala_improve(h) & _MASK32 for h in hashes]
    order: list[_K] = []

    def walk(members: list[int], shift: int) -> None:
        if shift >= _HASH_BITS:  # one whole hash: a collision node, in the order they came
            order.extend(keys[i] for i in members)
            return
        slots: dict[int, list[int]] = {}
        for i in members:
            slots.setdefault((improved[i] >> shift) & 0x1F, []).append(i)
        filled = sorted(slots)
        order.extend(keys[slots[s][0]] for s in filled if len(slots[s]) == 1)
        for s in filled:
            if len(slots[s]) > 1:
                walk(slots[s], shift + _LEVEL_BITS)

    walk(list(range(len(keys))), 0)
    return order


class ImmutableMapOrder(Generic[_K]):
    """The order of an ``immutable.Map`` grown by ``+`` / ``++`` from ``Map.empty``: a small map's
    keys as they came (a key put again keeps its place), a ``HashMap``'s by :func:`champ_order`."""

    __slots__ = ("_keys",)

    def __init__(self) -> None:
        self._keys: dict[_K, int] = {}  # key -> its hashCode, in the order the keys came

    def add(self, key: _K, hash_code: int) -> None:
        if key not in self._keys:
            self._keys[key] = hash_code

    def __len__(self) -> int:
        return len(self._keys)

    def order(self) -> list[_K]:
        keys = list(self._keys)
        if len(keys) <= _SMALL_MAP:
            return keys
        return champ_order(keys, list(self._keys.values()))


class ImmutableSetOrder(Generic[_K]):
    """An ``immutable.Set``'s elements in its iteration order, through the operations Kafka's
    answers use: ``toSet`` of a sequence (:meth:`of`), ``filter`` / ``partition`` / ``diff``
    (:meth:`filter`) and ``map`` (:meth:`map`).

    A set of up to four elements made by ``toSet`` is a ``Set1`` … ``Set4``, iterating in the order the
    elements came; a bigger one is a ``HashSet`` (a CHAMP trie, :func:`champ_order`). What an
    operation makes keeps the kind it was made from — a ``HashSet``'s filter or map is a ``HashSet``
    whatever its size, a small set's stays small — and takes its elements in the source's order."""

    __slots__ = ("_elements", "hashed")

    def __init__(self, elements: dict[_K, int], *, hashed: bool) -> None:
        self._elements = elements  # element -> its hashCode, in the order the elements came
        self.hashed = hashed

    @classmethod
    def of(cls, items: Sequence[_K], hash_code: Callable[[_K], int]) -> ImmutableSetOrder[_K]:
        """``toSet`` of ``items`` (a ``Buffer``, a ``Seq``): duplicates dropped where they came again."""
        elements: dict[_K, int] = {}
        for item in items:
            if item not in elements:
                elements[item] = hash_code(item)
        return cls(elements, hashed=len(elements) > _SMALL_MAP)

    def order(self) -> list[_K]:
        keys = list(self._elements)
        if not self.hashed:
            return keys
        return champ_order(keys, list(self._elements.values()))

    def filter(self, keep: Callable[[_K], bool]) -> ImmutableSetOrder[_K]:
        return ImmutableSetOrder({e: self._elements[e] for e in self.order() if keep(e)}, hashed=self.hashed)

    def map(self, to: Callable[[_K], _T], hash_code: Callable[[_T], int]) -> ImmutableSetOrder[_T]:
        elements: dict[_T, int] = {}
        for e in self.order():
            mapped = to(e)
            if mapped not in elements:
                elements[mapped] = hash_code(mapped)
        return ImmutableSetOrder(elements, hashed=self.hashed)

    def __contains__(self, item: object) -> bool:
        return item in self._elements

    def __len__(self) -> int:
        return len(self._elements)
