"""A KIP-848 assignor's answer kept as integer arrays until a member's assignment is read.

The homogeneous ``uniform`` builder leaves most members' maps alone in a stable group and, on a new
group, gives every member a handful of partitions: building 10,000 small dicts of tuples after the
kernels costs more than the assignment itself. :class:`ArrayAssignment` is a read-only
``Mapping[str, dict[TopicId, tuple[int, ...]]]`` over the kernels' output: a member the assignor left
alone answers its own map object (as Kafka keeps the member's immutable map); a changed member's dict
is built from the arrays the first time it is read, in Java's order, and the same object is answered
on every later read. Iteration is the group's member order; equality is a mapping's (equal to the
plain dict of the same members and assignments).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import cast

import numpy as np

from kgroup.model import TopicId

__all__ = ["ArrayAssignment"]

MemberMap = dict[TopicId, tuple[int, ...]]


class ArrayAssignment(Mapping[str, MemberMap]):
    """Member id -> topic id -> partitions, built per member on first read (see the module docstring).

    ``row[m]`` is -1 for a member answered by ``own[m]``, else the member's row in the arrays: its
    topics are ``entry_topic[entry_start[row]:entry_start[row + 1]]`` (indices into ``topics``), entry
    ``e``'s partitions ``parts[part_start[e]:part_start[e + 1]]``, all in Java's iteration order.
    """

    __slots__ = ("_arrays", "_built", "_ids", "_index", "_lists", "_own", "_topics")

    def __init__(
        self,
        member_ids: list[str],
        own: Sequence[Mapping[TopicId, Collection[int]]],
        row: np.ndarray,
        entry_start: np.ndarray,
        entry_topic: np.ndarray,
        part_start: np.ndarray,
        parts: np.ndarray,
        topics: Sequence[TopicId],
    ) -> None:
        self._ids = member_ids
        self._own = own
        self._topics = topics
        self._index: dict[str, int] | None = None
        self._built: list[MemberMap | None] = []
        # the arrays as they came, turned into Python lists once, on the first read
        self._arrays = (row, entry_start, entry_topic, part_start, parts)
        self._lists: tuple[list[int], list[int], list[int], list[int], tuple[int, ...]] | None = None

    def _position(self, member_id: object) -> int:
        index = self._index
        if index is None:
            index = self._index = dict(zip(self._ids, range(len(self._ids)), strict=True))
        found = index.get(member_id)  # type: ignore[call-overload]
        return -1 if found is None else int(found)

    def _at(self, position: int) -> MemberMap:
        lists = self._lists
        if lists is None:
            row, entry_start, entry_topic, part_start, parts = self._arrays
            lists = self._lists = (
                row.tolist(),
                entry_start.tolist(),
                entry_topic.tolist(),
                part_start.tolist(),
                tuple(parts.tolist()),
            )
            self._built = [None] * len(self._ids)
        built = self._built
        found = built[position]
        if found is not None:
            return found
        rows, entry_start_, entry_topic_, starts, flat = lists
        row_ = rows[position]
        if row_ < 0:
            found = cast(MemberMap, self._own[position])  # dicts of tuples (the caller checked)
        else:
            topics = self._topics
            found = {
                topics[entry_topic_[e]]: flat[starts[e] : starts[e + 1]]
                for e in range(entry_start_[row_], entry_start_[row_ + 1])
            }
        built[position] = found
        return found

    def answers_in_order(self, member_ids: list[str]) -> list[MemberMap] | None:
        """Every member's answer, in order, when ``member_ids`` are this answer's members in its order
        (else None): the members left alone answer their own map objects, in one list copy, and only
        the changed ones are looked at one by one (what a coordinator reads after each assignment)."""
        if member_ids != self._ids:
            return None
        answers = cast(list[MemberMap], list(self._own))
        row = self._arrays[0]
        for position in np.flatnonzero(row >= 0).tolist():
            answers[position] = self._at(position)
        return answers

    def __getitem__(self, member_id: str) -> MemberMap:
        position = self._position(member_id)
        if position < 0:
            raise KeyError(member_id)
        return self._at(position)

    def get(self, member_id: str, default: object = None) -> object:  # type: ignore[override]
        position = self._position(member_id)
        return default if position < 0 else self._at(position)

    def __contains__(self, member_id: object) -> bool:
        return self._position(member_id) >= 0

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def __repr__(self) -> str:
        return f"ArrayAssignment({dict(self.items())!r})"

    def __reduce__(self) -> tuple[object, ...]:
        # copies and pickles are plain dicts of the same assignments
        return (dict, (dict(self.items()),))
