"""Java semantics that Kafka's answers depend on.

Kafka orders member ids with ``String.compareTo`` (UTF-16 code units, not code points), hashes
group ids with ``String.hashCode`` and iterates members in ``java.util.HashMap`` order. Python's
``str`` does none of these the same way, so the exact rules live here.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from decimal import Decimal
from functools import lru_cache
from typing import Generic, TypeVar

from kgroup.java_treebin import UNTREEIFY_THRESHOLD, TreeBin

_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")

__all__ = [
    "JAVA_BLANK",
    "JavaHashMap",
    "JavaHashSet",
    "JavaRandom",
    "capacity_over_load_factor",
    "hash_set_order",
    "hashmap_iteration_order",
    "hashmap_keys_order",
    "hashmap_order_by_hash",
    "hashmap_put_order",
    "int32",
    "java_abs",
    "java_compare",
    "java_double_to_string",
    "java_integer_hash",
    "java_parse_double",
    "java_parse_int",
    "java_shuffle",
    "java_spread",
    "java_string_hash",
    "java_string_key",
    "sorted_java",
    "table_size_for",
    "timeline_hashmap_order",
    "timeline_table_after_put",
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
def java_parse_int(text: str, bits: int = 32) -> int | None:
    """``Integer.parseInt(text)`` (``Long.parseLong`` with ``bits=64``): the number it reads, or
    ``None`` where Java throws ``NumberFormatException`` — an optional sign, then decimal digits only
    (any script's, as ``Character.digit`` takes them; no spaces, no underscores), within range."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body:
        return None
    limit = 1 << (bits - 1)
    value = 0
    for ch in body:
        digit = unicodedata.decimal(ch, -1)
        if digit < 0:
            return None
        value = value * 10 + digit
        if value > limit:
            return None  # (out of range either way: stop reading a long name)
    value = -value if text[0] == "-" else value
    return value if -limit <= value < limit else None


#: what Java's ``String.trim`` takes off both ends: every character up to and including a space
JAVA_BLANK = "".join(chr(c) for c in range(33))

#: ``Double.parseDouble``'s grammar (``FloatingDecimal``): ASCII digits, an optional exponent and an
#: optional type suffix, or NaN / Infinity, or a hexadecimal float
_JAVA_DECIMAL = re.compile(r"[+-]?(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?)")
_JAVA_HEX = re.compile(r"([+-]?)0[xX]([0-9a-fA-F]*\.?[0-9a-fA-F]*)[pP]([+-]?\d+)[fFdD]?")


def java_parse_double(text: str) -> float | None:
    """``Double.parseDouble(text)``: the double it reads, or ``None`` where Java throws
    ``NumberFormatException`` (surrounding characters up to ``' '`` are ignored, as Java trims them)."""
    trimmed = text.strip(JAVA_BLANK)
    if _JAVA_DECIMAL.fullmatch(trimmed):
        body = trimmed.rstrip("fFdD") if trimmed[-1:] in "fFdD" and "Infinity" not in trimmed else trimmed
        return float(body.replace("Infinity", "inf"))
    hexa = _JAVA_HEX.fullmatch(trimmed)
    if hexa and hexa.group(2) not in ("", "."):
        sign, mantissa, exponent = hexa.groups()
        return float.fromhex(f"{sign}0x{mantissa or '0'}p{exponent}")
    return None


def java_double_to_string(value: float) -> str:
    """``Double.toString(value)``: plain between 10^-3 and 10^7 (at least one decimal), else
    computerized scientific notation (``9.99999999999999E14``), with the shortest digits."""
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7:
        return sign + repr(magnitude)  # (Python's repr is plain here, with a decimal)
    digits_tuple = Decimal(repr(magnitude)).as_tuple()
    digits = "".join(map(str, digits_tuple.digits))
    exponent = int(digits_tuple.exponent) + len(digits) - 1
    digits = digits.rstrip("0") or "0"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


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
    unique = list(dict.fromkeys(keys))
    return hashmap_order_of(unique, len(unique))


def hashmap_order_of(keys: Iterable[str], size: int, insertion: Iterable[str] | None = None) -> list[str]:
    """The order in which a ``HashMap<String, ?>`` of ``size`` distinct keys iterates ``keys``, some
    of them: the table's capacity is the whole map's, so only the keys asked about are hashed (a
    100,000-name subscription of which three topics exist costs three hashes). Keys that share a
    bucket come in insertion order: the order of ``insertion`` (all the map's keys, read only when
    two of ``keys`` share a bucket), else the order ``keys`` are given in."""
    capacity = 16
    while size > 0.75 * capacity:
        capacity *= 2
    mask = capacity - 1
    buckets: dict[int, list[str]] = {}
    shared = False
    for key in keys:
        h = java_string_hash(key) & _MASK32
        bucket = buckets.setdefault((h ^ (h >> 16)) & mask, [])
        bucket.append(key)
        shared = shared or len(bucket) > 1
    if shared and insertion is not None:
        wanted = {key for chain in buckets.values() if len(chain) > 1 for key in chain}
        position = {key: i for i, key in enumerate(insertion) if key in wanted}
        for chain in buckets.values():
            if len(chain) > 1:
                chain.sort(key=position.__getitem__)
    return [key for index in sorted(buckets) for key in buckets[index]]


# --- org.apache.kafka.timeline.TimelineHashMap (BaseHashTable), keyed by strings ---------------------
#
# A consumer group's members live in a ``TimelineHashMap`` (``ModernGroup.members``), and the target
# assignment's ``GroupSpec`` is filled by iterating it, so which members of one ``HashMap`` bucket the
# assignor sees first follows that table's order. ``BaseHashTable`` chains separately in a power-of-two
# table (2 slots to start), slot = the top log2(table) bits of ``hashCode × -7046029254386353131``
# (Fibonacci hashing, ``findSlot``); a put appends a new key to its slot's chain and replaces an
# existing one in place, a removal keeps the others' order, a resize splits slot s into 2s and 2s+1
# keeping each chain's order. So a chain's order is its keys' insertion order, and the latest
# version iterates slots upward, each chain from its last key to its first
# (``SnapshottableHashTable.CurrentIterator``).

_MASK64 = (1 << 64) - 1
_FIBONACCI = -7046029254386353131


def hashmap_put_order(keys: Sequence[str]) -> list[str] | None:
    """The order a ``HashMap<String, ?>`` (default capacity) iterates once ``keys`` are put in turn,
    worked out at once: while every chain stays within the 8 keys that would make ``putVal``
    resize early or treeify a bucket, the map grows by its load factor alone and a resize keeps each
    bucket's keys in order, so the keys iterate by their bucket in the final table, then by when they
    were first put. Each table the map passes through is checked against the keys it held then; None
    when some chain would reach 9 (put them into a :class:`JavaHashMap` instead)."""
    import numpy as np

    distinct = list(dict.fromkeys(keys))  # a key put again keeps its place
    count = len(distinct)
    if count < 2:
        return distinct
    spreads = np.fromiter(map(java_string_hash, distinct), np.int64, count) & _MASK32
    spreads ^= spreads >> 16
    capacity = 16
    while True:
        held = min(count, (capacity * 3) // 4 + 1)  # the put past the threshold resizes after it
        if np.bincount(spreads[:held] & (capacity - 1)).max() > _TREEIFY_THRESHOLD:
            return None
        if count <= (capacity * 3) // 4:  # no put left past this table's threshold
            break
        capacity *= 2
    if capacity > _MAX_CAPACITY:
        return None
    order = np.argsort(spreads & (capacity - 1), kind="stable")
    return [distinct[i] for i in order.tolist()]


def hashmap_order_by_hash(keys: Sequence[_K], hashes: Sequence[int]) -> list[_K] | None:
    """:func:`hashmap_put_order` for any keys: ``keys`` distinct, in the order first put, with their
    ``hashCode``\\ s; None when some chain would reach 9 (use a :class:`JavaHashMap`). Plain Python,
    for the few dozen keys of one request (no array set-up)."""
    count = len(keys)
    if count < 2:
        return list(keys)
    spreads = [(h & _MASK32) ^ ((h & _MASK32) >> 16) for h in hashes]
    capacity = 16
    while True:
        mask = capacity - 1
        chains: dict[int, int] = {}
        for spread in spreads[: min(count, (capacity * 3) // 4 + 1)]:
            chain = chains.get(spread & mask, 0) + 1
            if chain > _TREEIFY_THRESHOLD:
                return None
            chains[spread & mask] = chain
        if count <= (capacity * 3) // 4:
            break
        capacity *= 2
    if capacity > _MAX_CAPACITY:
        return None
    mask = capacity - 1
    return [keys[i] for i in sorted(range(count), key=lambda i: spreads[i] & mask)]


def hashmap_keys_order(keys: Sequence[_K], java_hash: Callable[[_K], int]) -> list[_K]:
    """The order a ``new HashMap<>()`` iterates ``keys`` (distinct) put in turn: worked out at once
    (:func:`hashmap_order_by_hash`), or put into a :class:`JavaHashMap` when a chain of nine makes Java
    resize early or build a tree."""
    order = hashmap_order_by_hash(keys, [java_hash(k) for k in keys])
    if order is not None:
        return order
    puts: JavaHashMap[_K, None] = JavaHashMap(java_hash)
    for key in keys:
        puts.put(key, None)
    return puts.keys_in_order()


def timeline_table_after_put(size: int, table: int) -> int:
    """``BaseHashTable.baseAddOrReplace``'s growth: before every put — a new key or a replaced one —
    into a table of ``table`` slots holding ``size`` elements, it doubles when (size + 1) × 0.75 > table.
    The table never shrinks."""
    return table * 2 if (size + 1) * 0.75 > table else table


def _timeline_slot(key: str, table: int) -> int:
    return ((java_string_hash(key) * _FIBONACCI) & _MASK64) >> (65 - table.bit_length())


def timeline_hashmap_order(keys: Iterable[str], table: int) -> list[str]:
    """The order a ``TimelineHashMap<String, ?>`` of ``table`` slots iterates ``keys`` (its keys, given
    in the order they were first put since their last removal — a Python dict's order): by slot, and
    within a slot the key put last first. The slots of many keys are computed as arrays (the 64-bit
    product wraps in ``uint64`` as Java's ``long`` does)."""
    listed = list(keys)
    if len(listed) < 32:
        slots = [_timeline_slot(key, table) for key in listed]
        return [listed[i] for i in sorted(range(len(listed)), key=lambda i: (slots[i], -i))]
    import numpy as np

    hashes = np.fromiter(map(java_string_hash, listed), np.int64, len(listed)).astype(np.uint64)
    with np.errstate(over="ignore"):
        products = hashes * np.uint64(_FIBONACCI & _MASK64)
    slot = products >> np.uint64(65 - table.bit_length())
    order = np.lexsort((-np.arange(len(listed)), slot))
    return [listed[i] for i in order.tolist()]


def sorted_java(strings: Sequence[str]) -> list[str]:
    """Strings sorted as Java's ``Collections.sort`` would sort them."""
    return sorted(strings, key=java_string_key)


# --- java.util.HashMap / HashSet, for keys of any type ------------------------------------------------
#
# Kafka's KIP-848 assignors walk HashMaps and HashSets keyed by topic Uuids and partition Integers, and
# copy and grow them as they go; which partitions a member keeps depends on that order. The rules are
# JDK 17's (the JDK Kafka 4 runs on and kgroup's harness uses): a table of power-of-two buckets, bucket
# ``spread(hash) & (capacity - 1)``, ``put`` appends to its bucket's chain, ``computeIfAbsent`` prepends
# to it, a table doubles when the size passes 0.75 × capacity (``put`` checks after inserting,
# ``computeIfAbsent`` before, on every call), or when a chain reaches 9 (8 for ``computeIfAbsent``)
# while the table is under 64 buckets; a resize keeps each chain's relative order. A chain of 9 (8)
# in a table of 64+ becomes a tree, which orders its bucket its own way (:mod:`kgroup.java_treebin`).

_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64
_MAX_CAPACITY = 1 << 30


def java_spread(hash_code: int) -> int:
    """``HashMap.hash``: the hash code with its high half folded into the low half."""
    h = hash_code & _MASK32
    return h ^ (h >> 16)


def java_integer_hash(value: int) -> int:
    """``Integer.hashCode``: the value itself."""
    return value


def table_size_for(capacity: int) -> int:
    """``HashMap.tableSizeFor``: the smallest power of two ≥ ``capacity`` (at least 1)."""
    if capacity <= 1:
        return 1
    return min(1 << (capacity - 1).bit_length(), _MAX_CAPACITY)


def capacity_over_load_factor(count: int) -> int:
    """``(int) (count / 0.75f + 1.0f)`` — the sizing Kafka writes out by hand (exact for counts < 2^22)."""
    return (4 * count) // 3 + 1


class JavaHashMap(Generic[_K, _V]):
    """A ``java.util.HashMap`` whose iteration order is Java's (see the rules above).

    ``java_hash`` is the keys' ``hashCode``; ``initial_capacity`` is the ``HashMap(int)`` argument
    (``None`` for ``new HashMap<>()``, 16 buckets). Iterating yields keys in Java's order.

    No bucket array is kept (a map sized for 1,000 keys may hold 2): each key has a sequence number,
    rising for a tail insert and falling for a head insert, so a chain's order is its keys' sequence
    order, which a resize keeps; the iteration order is (bucket, sequence).
    """

    __slots__ = (
        "_capacity",
        "_chains",
        "_hash",
        "_head",
        "_order",
        "_spread",
        "_tail",
        "_threshold",
        "_trees",
        "_values",
        "treeified",
    )

    def __init__(self, java_hash: Callable[[_K], int], initial_capacity: int | None = None) -> None:
        capacity = 16 if initial_capacity is None else table_size_for(initial_capacity)
        self._hash = java_hash
        self._capacity = capacity
        self._threshold = (capacity * 3) // 4
        self._values: dict[_K, _V] = {}
        self._spread: dict[_K, tuple[int, int]] = {}  # key -> (spread hash, sequence)
        self._chains: dict[int, int] = {}  # bucket -> chain length
        self._head = 0
        self._tail = 0
        self._order: list[_K] | None = None
        self._trees: dict[int, TreeBin[_K]] = {}  # bucket -> its tree (a chain Java treeified)
        #: True once a bucket became a tree (its order is modelled: see :mod:`kgroup.java_treebin`)
        self.treeified = False

    @property
    def capacity(self) -> int:
        return self._capacity

    def _resize(self) -> None:
        old_capacity = self._capacity
        self._capacity = min(self._capacity * 2, _MAX_CAPACITY)
        self._threshold = (self._capacity * 3) // 4
        mask = self._capacity - 1
        chains: dict[int, int] = {}
        for spread, _ in self._spread.values():
            chains[spread & mask] = chains.get(spread & mask, 0) + 1
        self._chains = chains
        self._order = None
        if self._trees and self._capacity > old_capacity:
            self._split_trees(old_capacity)

    def _split_trees(self, bit: int) -> None:
        """``TreeNode.split`` of every tree bucket: each half in ``next`` order; a half of 6 or fewer
        becomes a plain chain, a bigger one a new tree when the other half is not empty."""
        trees: dict[int, TreeBin[_K]] = {}
        for index, tree in self._trees.items():
            keys = list(tree.keys())
            lo = [k for k in keys if self._spread[k][0] & bit == 0]
            hi = [k for k in keys if self._spread[k][0] & bit != 0]
            for half, at, other in ((lo, index, hi), (hi, index + bit, lo)):
                if not half:
                    continue
                if len(half) <= UNTREEIFY_THRESHOLD:
                    self._untreeify(half)
                elif other:
                    trees[at] = TreeBin((k, self._spread[k][0]) for k in half)
                else:
                    trees[at] = tree
        self._trees = trees

    def _untreeify(self, chain: list[_K]) -> None:
        """A tree bucket made a plain chain again: its keys keep their order (sequences reassigned)."""
        sequences = sorted(self._spread[k][1] for k in chain)
        for key, sequence in zip(chain, sequences, strict=True):
            self._spread[key] = (self._spread[key][0], sequence)

    def _insert(self, key: _K, value: _V, sequence: int, limit: int) -> None:
        spread = java_spread(self._hash(key))
        bucket = spread & (self._capacity - 1)
        length = self._chains.get(bucket, 0) + 1
        self._chains[bucket] = length
        self._values[key] = value
        self._spread[key] = (spread, sequence)
        self._order = None
        tree = self._trees.get(bucket)
        if tree is not None:
            tree.put(key, spread)  # putTreeVal: no threshold
            return
        if length > limit:
            if self._capacity < _MIN_TREEIFY_CAPACITY:
                self._resize()
            else:
                self.treeified = True
                chain = sorted(
                    (k for k, (s, _) in self._spread.items() if s & (self._capacity - 1) == bucket),
                    key=lambda k: self._spread[k][1],
                )
                self._trees[bucket] = TreeBin((k, self._spread[k][0]) for k in chain)

    def put(self, key: _K, value: _V) -> None:
        """``map.put``: a new key goes to the tail of its chain."""
        if key in self._values:
            self._values[key] = value
            return
        self._tail += 1
        self._insert(key, value, self._tail, _TREEIFY_THRESHOLD)  # putVal: the 9th entry of a chain
        if len(self._values) > self._threshold:
            self._resize()

    def compute_if_absent(self, key: _K, make: Callable[[], _V]) -> _V:
        """``map.computeIfAbsent``: a new key goes to the head of its chain (Java's own quirk), and an
        overfull table is resized first, even when the key is there already."""
        if len(self._values) > self._threshold:
            self._resize()
        if key in self._values:
            return self._values[key]
        value = make()
        self._head -= 1
        self._insert(key, value, self._head, _TREEIFY_THRESHOLD - 1)  # computeIfAbsent: already the 8th
        return value

    def remove(self, key: _K) -> None:
        """``map.remove``; the table never shrinks."""
        if key in self._values:
            del self._values[key]
            spread, _ = self._spread.pop(key)
            bucket = spread & (self._capacity - 1)
            self._chains[bucket] -= 1
            self._order = None
            tree = self._trees.get(bucket)
            if tree is not None and tree.remove(key):
                del self._trees[bucket]
                self._untreeify(list(tree.keys()))

    def get(self, key: _K) -> _V | None:
        return self._values.get(key)

    def __getitem__(self, key: _K) -> _V:
        return self._values[key]

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __len__(self) -> int:
        return len(self._values)

    def keys_in_order(self) -> list[_K]:
        """The keys in Java's iteration order."""
        if self._order is None:
            mask = self._capacity - 1
            entries = self._spread
            if len(entries) < 2:
                self._order = list(entries)
            elif self._trees:
                position = {k: i for tree in self._trees.values() for i, k in enumerate(tree.keys())}
                self._order = sorted(
                    entries, key=lambda k: (entries[k][0] & mask, position.get(k, entries[k][1]))
                )
            else:
                self._order = sorted(entries, key=lambda k: (entries[k][0] & mask, entries[k][1]))
        return self._order

    def __iter__(self) -> Iterator[_K]:
        return iter(self.keys_in_order())

    def items(self) -> Iterator[tuple[_K, _V]]:
        values = self._values
        return ((key, values[key]) for key in self.keys_in_order())


class JavaHashSet(JavaHashMap[_K, None]):
    """A ``java.util.HashSet`` (a HashMap with no values): ``add`` is ``put``."""

    __slots__ = ()

    def add(self, key: _K) -> None:
        self.put(key, None)

    @classmethod
    def copy_of(cls, java_hash: Callable[[_K], int], items: Iterable[_K]) -> JavaHashSet[_K]:
        """``new HashSet<>(collection)`` on JDK 17: ``max((int) (n / .75f) + 1, 16)`` buckets, ``addAll``."""
        listed = list(items)
        copy = cls(java_hash, max((4 * len(listed)) // 3 + 1, 16))
        for item in listed:
            copy.put(item, None)
        return copy


def hash_set_order(java_hash: Callable[[_K], int], items: Iterable[_K]) -> tuple[_K, ...]:
    """The iteration order of ``new HashSet<>(items)`` (:meth:`JavaHashSet.copy_of`'s), without making
    the set when ``items`` holds fewer than two (their order is themselves): a described member's one
    topic and one partition, 10,000 times in a 5,000-member group's ConsumerGroupDescribe."""
    listed = items if isinstance(items, list | tuple) else list(items)
    if len(listed) < 2:
        return tuple(listed)
    return tuple(JavaHashSet.copy_of(java_hash, listed))


# --- java.util.Random ---------------------------------------------------------------------------------
#
# Kafka's controller places replicas with a ``java.util.Random`` (``StripedReplicaPlacer``); with the same
# seed, the same draws give the same placement. ``Random`` is a 48-bit linear congruential generator whose
# algorithm the JDK documents as fixed ("the algorithms shown here are used by class Random for the sake
# of absolute portability of Java code"), so it is reproduced here draw for draw.

_RANDOM_MULTIPLIER = 0x5DEECE66D
_RANDOM_ADDEND = 0xB
_RANDOM_MASK = (1 << 48) - 1


class JavaRandom:
    """``java.util.Random(seed)``: ``next_int()`` and ``next_int(bound)`` give the values Java's
    ``nextInt()`` / ``nextInt(bound)`` give for the same seed and the same sequence of calls."""

    __slots__ = ("_seed",)

    def __init__(self, seed: int) -> None:
        self._seed = (seed ^ _RANDOM_MULTIPLIER) & _RANDOM_MASK  # Random.initialScramble

    def _next(self, bits: int) -> int:
        self._seed = (self._seed * _RANDOM_MULTIPLIER + _RANDOM_ADDEND) & _RANDOM_MASK
        return int32(self._seed >> (48 - bits))

    def next_int(self, bound: int | None = None) -> int:
        """``nextInt()`` (a signed 32-bit int), or ``nextInt(bound)`` (0 ≤ value < bound, Java's
        rejection of the values that would bias the result included)."""
        if bound is None:
            return self._next(32)
        if not 0 < bound <= 0x7FFF_FFFF:
            raise ValueError(f"bound must be positive and fit Java's int, not {bound}")
        r = self._next(31)
        m = bound - 1
        if bound & m == 0:  # a power of two: the high bits
            return (bound * r) >> 31
        u = r
        r = u % bound
        while int32(u - r + m) < 0:  # u - r + m overflowed: u fell in the biased top range, draw again
            u = self._next(31)
            r = u % bound
        return r


def java_shuffle(items: list[_V], rnd: JavaRandom) -> None:
    """``Collections.shuffle(list, rnd)`` on a random-access list, in place: from the last index
    down, swap each element with one at ``rnd.nextInt(i + 1)``."""
    for i in range(len(items), 1, -1):
        j = rnd.next_int(i)
        items[i - 1], items[j] = items[j], items[i - 1]
