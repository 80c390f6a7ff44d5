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
        super().__init__(
            f"members: the sticky assignment cannot complete, as in Kafka ({kafka_message}); "
            "check the members' owned partitions and generations"
        )
