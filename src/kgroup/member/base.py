"""What both members are to their hosts alike: :class:`MemberBase`.

The classic member (:class:`~kgroup.member.ClassicConsumerMember`, core :mod:`.core`) and the
consumer-protocol member (:class:`~kgroup.member.ConsumerProtocolMember`, core
:mod:`.consumer_protocol_offsets`) hand their hosts events the same way (drained after each step; a
:class:`~kgroup.member.FatalError` is what Kafka's ``poll()`` would throw), name their coordinator and
their partitions the same way, and keep the same book of offsets
(:class:`~kgroup.member.offset_book.OffsetBook`).
"""

from __future__ import annotations

from kgroup.member.events import FatalError, MemberEvent
from kgroup.member.offset_book import OffsetBook
from kgroup.model import ErrorCode, TopicPartition

__all__ = ["MemberBase"]


class MemberBase(OffsetBook):
    """The events, the coordinator and the owned partitions of a member (its core creates them)."""

    _events: list[MemberEvent]
    _error_pending: bool
    _coordinator: int | None

    @property
    def coordinator(self) -> int | None:
        return self._coordinator

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions the member owns (the same object until the assignment changes)."""
        return self._owned

    def drain_events(self) -> list[MemberEvent]:
        events, self._events = self._events, []
        self._error_pending = False
        return events

    @property
    def error_pending(self) -> bool:
        """A :class:`~kgroup.member.FatalError` waits among the events not yet drained: Kafka's
        ``poll()`` would throw it now. A host whose application does not catch it stops before it
        polls again (the member itself would go on: see ``docs/member.md``, Errors)."""
        return self._error_pending

    def _emit(self, event: MemberEvent) -> None:
        self._events.append(event)

    def _throw(self, error: ErrorCode, reason: str) -> None:
        """What Kafka throws out of ``poll()``: a :class:`FatalError` event."""
        self._events.append(FatalError(error, reason))
        self._error_pending = True
