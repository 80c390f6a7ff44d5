"""The one error the sticky assignors raise on their own: a state Kafka's assignor also fails on."""

from __future__ import annotations

from kgroup.model import KgroupError

__all__ = ["StickyAssignmentError"]


class StickyAssignmentError(KgroupError):
    """Kafka's ``AbstractStickyAssignor`` throws here too (``IllegalStateException`` or worse).

    It only happens on inconsistent input (for example owned partitions beyond a topic's partition
    count); the message carries Kafka's own words so the two can be compared.
    """

    def __init__(self, kafka_message: str) -> None:
        kind, sep, _ = kafka_message.partition(":")
        #: the class of the exception Kafka's Java assignor throws at the same point; a message
        #: without a ``Name:`` prefix is one of Kafka's own ``IllegalStateException`` texts
        self.java_exception = kind.strip() if sep and kind.strip().isidentifier() else "IllegalStateException"
        super().__init__(
            f"members: the sticky assignment cannot complete, as in Kafka ({kafka_message}); "
            "check the members' owned partitions and generations"
        )
