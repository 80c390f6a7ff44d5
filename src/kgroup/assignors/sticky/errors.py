"""The errors the sticky assignors raise on their own: a state Kafka's assignor also fails on, and a
group Kafka's assignor never finishes."""

from __future__ import annotations

from kgroup.model import KgroupError

__all__ = ["StickyAssignmentError", "StickyReassignmentLoops"]


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


class StickyReassignmentLoops(KgroupError):
    """Kafka's ``AbstractStickyAssignor`` never returns on this group: a pass of the general builder's
    ``performReassignments`` loop (``do { … } while (modified)``) ended in a state an earlier pass
    ended in, so every later pass repeats the same moves and Kafka's leader loops forever (found in
    4.4.0 with rack-aware assignment: ``tests/apache_kafka/test_sticky_endless_loop.py``).

    kgroup stops at the first repeated state instead (beyond Kafka: it cannot answer, and it does not
    hang); ``java_exception`` is ``None`` because Kafka throws nothing, it never ends."""

    java_exception = None

    def __init__(self, repeated_pass: int, first_pass: int) -> None:
        self.repeated_pass = repeated_pass
        self.first_pass = first_pass
        super().__init__(
            f"members: Kafka's sticky assignor never finishes on this group: its reassignment pass "
            f"{repeated_pass} ends where pass {first_pass} ended, so it would move the same partitions "
            "round forever (Kafka's leader hangs in performReassignments); check the members' racks "
            "and owned partitions, or use another assignor"
        )
