"""A member's assigned partitions, kept as integers until someone looks at them.

An assignment of a million partitions is a million ``TopicPartition`` tuples; building them costs
more than the assignment itself (about 130 ns each in CPython, and, being instances of a tuple
*subclass*, they stay tracked by the cyclic garbage collector, which then walks them on every full
collection). The fast assignors therefore return, for members whose partitions are all new, a
:class:`FlatPartitionList`: a real ``list`` (``isinstance(x, list)``, equal to the plain list of the
same partitions, JSON-, pickle- and copy-compatible) that holds the member's partitions as flat
partition numbers over the assignment's topic table and builds its ``TopicPartition`` objects when
it is read. Callers that never read a member's partitions never pay for them.

Every ``list`` method and operator first materialises the list, after which it is an ordinary
list. ``len()`` and truth tests need no materialisation, and iterating over an unread list builds
the objects for that pass only (equal objects on each pass; indexing, slicing and mutation store
them). The one way to see the empty storage underneath is to call C-level ``list`` slots directly
on an unread list (``list.__len__(x)``, ``operator.concat(x, y)``, ``heapq`` on it): do not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import repeat
from typing import Any, SupportsIndex

import numpy as np

from kgroup.model import TopicPartition

__all__ = ["FlatPartitionList", "TopicTable", "flat_numbering", "lists_by_owner", "owner_array"]


class TopicTable:
    """The topics of one assignment: names in flat order and the flat number of each one's partition 0."""

    __slots__ = ("bases", "names")

    def __init__(self, names: Sequence[str], bases: np.ndarray) -> None:
        self.names = names
        self.bases = bases

    def partitions(self, flat: np.ndarray) -> list[TopicPartition]:
        """``TopicPartition`` objects for ascending or unordered flat numbers, built in C."""
        if flat.size == 0:
            return []
        ranks = np.searchsorted(self.bases, flat, side="right") - 1
        numbers = (flat - self.bases[ranks]).tolist()
        names = map(self.names.__getitem__, ranks.tolist())
        made: list[TopicPartition] = list(
            map(tuple.__new__, repeat(TopicPartition), zip(names, numbers, strict=True))
        )
        return made


class FlatPartitionList(list[TopicPartition]):
    """A list of ``TopicPartition`` given as flat partition numbers over a :class:`TopicTable`,
    materialised on first use (see the module docstring)."""

    __slots__ = ("_flat", "_table")

    def __init__(self, flat: np.ndarray, table: TopicTable) -> None:
        super().__init__()
        self._flat: np.ndarray | None = flat
        self._table = table

    def _fill(self) -> None:
        flat = self._flat
        if flat is None:
            return
        made = self._table.partitions(flat)
        # replacing the whole storage is idempotent, so two threads filling at once both leave the
        # same list; ``_flat`` is cleared only once the storage is complete
        list.__setitem__(self, slice(None), made)
        self._flat = None

    def unread(self) -> tuple[np.ndarray, TopicTable] | None:
        """The flat partition numbers and their topic table while the objects are not built yet
        (``None`` once they are): for callers that only encode the partitions."""
        flat = self._flat
        return None if flat is None else (flat, self._table)

    def is_materialised(self) -> bool:
        """Whether the ``TopicPartition`` objects have been built."""
        return self._flat is None

    def __iter__(self) -> Iterator[TopicPartition]:
        # reading through an unread list builds its objects for this pass only, without storing
        # them: a reader that does not keep them frees them as it goes, so a million partitions read
        # once never become a million long-lived objects for the collector to walk
        flat = self._flat
        if flat is None:
            return list.__iter__(self)
        return iter(self._table.partitions(flat))

    def __len__(self) -> int:
        flat = self._flat
        return int(flat.size) if flat is not None else list.__len__(self)

    def __radd__(self, other: Any) -> Any:
        # ``[...] + x``: Python asks the subclass first; fill, then let list's own concatenation run
        self._fill()
        return NotImplemented

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        # copies and pickles are plain lists of the same partitions
        return (list, (list(self),))

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))


def _filling(name: str) -> Callable[..., Any]:
    """``list.<name>`` after materialising ``self`` (and a ``FlatPartitionList`` argument: list's C
    code reads another list's storage directly)."""
    base = getattr(list, name)

    def method(self: FlatPartitionList, *args: Any, **kwargs: Any) -> Any:
        self._fill()
        for arg in args:
            if isinstance(arg, FlatPartitionList):
                arg._fill()
        return base(self, *args, **kwargs)

    method.__name__ = name
    method.__qualname__ = f"FlatPartitionList.{name}"
    method.__doc__ = base.__doc__
    return method


_LIST_METHODS = (
    "__reversed__", "__getitem__", "__setitem__", "__delitem__", "__contains__",
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
    "__add__", "__iadd__", "__mul__", "__rmul__", "__imul__", "__repr__", "__sizeof__",
    "append", "extend", "insert", "remove", "pop", "clear", "index", "count", "sort", "reverse", "copy",
)
for _name in _LIST_METHODS:
    setattr(FlatPartitionList, _name, _filling(_name))
del _name


#: up to this many members, member positions fit an int16, which numpy's stable sort radix-sorts
_INT16_MEMBERS = 32_767


def flat_numbering(counts: Sequence[int], names: Sequence[str]) -> tuple[np.ndarray, TopicTable]:
    """Partition counts as an array and the table numbering all partitions flat, topic after topic."""
    count_array = np.array(counts, dtype=np.int64)
    bases = np.zeros(count_array.size, dtype=np.int64)
    if count_array.size > 1:
        np.cumsum(count_array[:-1], out=bases[1:])
    return count_array, TopicTable(names, bases)


def owner_array(total: int, member_count: int) -> np.ndarray:
    """An uninitialised array for the receiving member position of each of ``total`` partitions."""
    return np.empty(total, dtype=np.int16 if member_count <= _INT16_MEMBERS else np.int64)


def lists_by_owner(owner: np.ndarray, member_count: int, table: TopicTable) -> list[list[TopicPartition]]:
    """Each member position's partitions (flat order: topic, then partition), given the receiving
    member of every flat partition; one stable sort by member (a radix sort on int16)."""
    flat = np.argsort(owner, kind="stable")
    ends = np.cumsum(np.bincount(owner, minlength=member_count)).tolist()
    lists: list[list[TopicPartition]] = []
    start = 0
    for end in ends:
        lists.append(FlatPartitionList(flat[start:end], table) if end > start else [])
        start = end
    return lists
