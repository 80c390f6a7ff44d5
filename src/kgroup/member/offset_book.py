"""The member's offsets as the application sees them, alike in both protocols: :class:`OffsetBook`.

A classic member (:class:`~kgroup.member.ClassicConsumerMember`, through :mod:`.offsets`) and a
consumer-protocol member (:class:`~kgroup.member.ConsumerProtocolMember`, through
:mod:`.consumer_protocol_offsets`) keep the same book: the next offset to process per owned partition,
the committed offsets known, the partitions waiting for an OffsetFetch; the application seeks and records
what it processed, and an OffsetFetch's answer fills the book the same way. What differs — how a commit
carries the generation or the member epoch, and how each protocol answers a failed commit or fetch —
stays with each member.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from kgroup.member.events import MemberEvent, OffsetsFetched
from kgroup.messages import OffsetFetchPartition
from kgroup.model import KgroupError, TopicPartition

__all__ = ["OffsetBook"]


class _Backoff(Protocol):
    @property
    def retry_backoff_ms(self) -> int: ...


class OffsetBook:
    """Positions, committed offsets and pending fetches of the partitions a member owns (a base of
    both members' cores, which create the state)."""

    config: _Backoff
    #: the partitions the application owns (Kafka's ``subscriptions.assignedPartitions()``)
    _owned: frozenset[TopicPartition]
    _positions: dict[TopicPartition, int]
    _committed: dict[TopicPartition, int]
    _fetch_pending: set[TopicPartition]
    _fetch_retry_at: int

    def positions(self) -> Mapping[TopicPartition, int]:
        """Next offset to process per owned partition whose committed offset is known.

        ``-1`` means nothing was committed: the host applies its ``auto.offset.reset`` policy (and may
        :meth:`seek`). Partitions still waiting for OffsetFetch are absent.
        """
        return dict(self._positions)

    def committed(self) -> Mapping[TopicPartition, int]:
        """Committed offsets this member knows of (fetched or successfully committed)."""
        return dict(self._committed)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._check_owned(tp, "seek")
        if offset < 0:
            raise KgroupError(f"seek offset: {offset} for {tp}; give an offset of 0 or more")
        self._positions[tp] = offset

    def record_processed(self, tp: TopicPartition, next_offset: int) -> None:
        self._check_owned(tp, "record_processed")
        if next_offset < 0:
            raise KgroupError(f"next_offset: {next_offset} for {tp}; give an offset of 0 or more")
        self._positions[tp] = next_offset

    def record_processed_many(self, processed: Iterable[tuple[TopicPartition, int]]) -> None:
        """:meth:`record_processed` for each ``(partition, next_offset)`` in turn."""
        owned, positions = self._owned, self._positions
        for tp, next_offset in processed:
            if next_offset < 0 or tp not in owned:
                self.record_processed(tp, next_offset)  # raises, naming the field
            positions[tp] = next_offset

    def _check_owned(self, tp: TopicPartition, what: str) -> None:
        if tp not in self._owned:
            raise KgroupError(f"{what}: {tp} is not assigned to this member; use one of assignment()")

    @staticmethod
    def _check_commit_offsets(offsets: Mapping[TopicPartition, int]) -> None:
        for tp, offset in offsets.items():
            if offset < 0:
                raise KgroupError(f"commit offset: {offset} for {tp}; give an offset of 0 or more")

    def _emit(self, event: MemberEvent) -> None:
        raise NotImplementedError  # MemberBase's

    def _fill_fetched(
        self, partitions: Sequence[TopicPartition], by_tp: Mapping[TopicPartition, OffsetFetchPartition]
    ) -> None:
        """An OffsetFetch's answer for ``partitions``: each committed offset is known from now; an
        owned partition with no position yet starts there (``-1``: none committed)."""
        fetched: list[tuple[TopicPartition, int]] = []
        for tp in partitions:
            entry = by_tp.get(tp)
            offset = entry.committed_offset if entry is not None and entry.committed_offset >= 0 else -1
            if offset >= 0:
                self._committed[tp] = offset
            if tp in self._owned and tp not in self._positions:
                self._positions[tp] = offset
                fetched.append((tp, offset))
        if fetched:
            self._emit(OffsetsFetched(tuple(fetched)))

    def _retry_fetch(self, now_ms: int, partitions: Sequence[TopicPartition]) -> None:
        self._fetch_pending |= {tp for tp in partitions if tp in self._owned and tp not in self._positions}
        self._fetch_retry_at = now_ms + self.config.retry_backoff_ms
