"""The consumer-protocol member's heartbeat bookkeeping: what was sent last, when the next one is due.

Kafka 4.x's ``ConsumerHeartbeatRequestManager.HeartbeatState`` (a joining member sends every field;
afterwards a field goes out only when it changed since the last heartbeat, and an error or a failed
request makes the next one full again), ``HeartbeatRequestState`` (the interval timer, one request in
flight, exponential backoff after failures) and ``Uuid.randomUuid().toString()`` for the member id the
client chooses. Randomness (backoff jitter, the member id) comes from an injected ``random.Random``.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from kgroup.model import TopicId

__all__ = [
    "NO_ASSIGNMENT",
    "RETRY_BACKOFF_JITTER",
    "ExponentialBackoff",
    "HeartbeatTimer",
    "LocalAssignment",
    "SentFields",
    "random_member_id",
]

#: ``CommonClientConfigs.RETRY_BACKOFF_JITTER``
RETRY_BACKOFF_JITTER = 0.2
_MASK64 = (1 << 64) - 1


def random_member_id(rng: random.Random) -> str:
    """``Uuid.randomUuid().toString()``: a version-4 UUID as URL-safe base64 (22 characters), never
    the reserved ids 0 and 1, never starting with ``-`` (Kafka draws again in those cases)."""
    for _ in range(1000):
        msb, lsb = rng.getrandbits(64), rng.getrandbits(64)
        msb = (msb & ~0xF000 & _MASK64) | 0x4000  # java.util.UUID.randomUUID: version 4 ...
        lsb = (lsb & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000  # ... and the IETF variant
        text = str(TopicId(msb, lsb))
        if not text.startswith("-"):
            return text
    raise AssertionError("random_member_id: the random source keeps giving ids starting with '-'")


@dataclass(frozen=True, slots=True)
class ExponentialBackoff:
    """Kafka's ``ExponentialBackoff`` (multiplier 2): ``initial * 2**attempts`` with jitter, capped."""

    initial_ms: int
    max_ms: int
    jitter: float = RETRY_BACKOFF_JITTER

    def backoff(self, attempts: int, rng: random.Random) -> int:
        initial = min(self.initial_ms, self.max_ms)
        if self.max_ms <= initial:
            return initial
        exp_max = math.log(self.max_ms / max(initial, 1)) / math.log(2)
        term = initial * 2 ** min(attempts, exp_max)
        factor = rng.uniform(1 - self.jitter, 1 + self.jitter) if self.jitter > 0 else 1.0
        return min(int(factor * term), self.max_ms)


class HeartbeatTimer:
    """Kafka's ``HeartbeatRequestState``: the interval timer, one request in flight, and the backoff.

    The interval starts at 0 (the first heartbeat goes at once) and becomes what the coordinator
    answers. A failed attempt expires the interval timer and backs off exponentially instead.
    """

    def __init__(self, backoff: ExponentialBackoff, rng: random.Random) -> None:
        self._backoff = backoff
        self._rng = rng
        self.interval_ms = 0
        self._due_ms = 0  # when the interval timer expires
        self.in_flight = False
        self._last_received_ms: int | None = None
        self._backoff_ms = 0
        self._attempts = 0

    def remaining_backoff_ms(self, now_ms: int) -> int:
        if self._last_received_ms is None:
            return 0
        return max(0, self._backoff_ms - (now_ms - self._last_received_ms))

    def can_send(self, now_ms: int) -> bool:
        return now_ms >= self._due_ms and not self.in_flight and self.remaining_backoff_ms(now_ms) <= 0

    def next_send_ms(self, now_ms: int) -> int:
        """When :meth:`can_send` becomes true (ignoring the request in flight)."""
        if now_ms >= self._due_ms:
            return now_ms + self.remaining_backoff_ms(now_ms)
        return self._due_ms

    def on_send(self, now_ms: int) -> None:
        self.in_flight = True
        self._due_ms = now_ms + self.interval_ms  # resetTimer: the interval counts from the send

    def on_success(self, now_ms: int, interval_ms: int) -> None:
        if interval_ms != self.interval_ms:
            self.interval_ms = interval_ms
            self._due_ms = now_ms + interval_ms
        self.in_flight = False
        self._last_received_ms = now_ms
        self._backoff_ms = self._backoff.backoff(0, self._rng)
        self._attempts = 0

    def on_failure(self, now_ms: int) -> None:
        self._due_ms = now_ms  # the interval timer expires: the backoff alone decides
        self.in_flight = False
        self._last_received_ms = now_ms
        self._backoff_ms = self._backoff.backoff(self._attempts, self._rng)
        self._attempts += 1

    def reset(self) -> None:
        """``RequestState.reset``: no backoff, nothing in flight (the next heartbeat may go at once)."""
        self.in_flight = False
        self._last_received_ms = None
        self._attempts = 0
        self._backoff_ms = 0


@dataclass(frozen=True, slots=True)
class LocalAssignment:
    """Kafka's ``LocalAssignment``: partitions by topic id plus a local epoch bumped on every change,
    so two equal partition sets received at different times are still different assignments."""

    local_epoch: int
    partitions: tuple[tuple[TopicId, tuple[int, ...]], ...]  # sorted by topic id, partitions sorted

    @property
    def is_none(self) -> bool:
        return self.local_epoch == -1

    def update_with(self, partitions: tuple[tuple[TopicId, tuple[int, ...]], ...]) -> LocalAssignment | None:
        """The assignment after receiving ``partitions``; ``None`` when nothing changed."""
        if not self.is_none and partitions == self.partitions:
            return None
        return LocalAssignment(self.local_epoch + 1, partitions)


NO_ASSIGNMENT = LocalAssignment(-1, ())


@dataclass(slots=True)
class SentFields:
    """What the last heartbeat carried (``HeartbeatState.SentFields``); ``reset`` makes the next full."""

    rebalance_timeout_ms: int = -1
    topic_names: tuple[str, ...] | None = None
    pattern: str | None = None
    server_assignor: str | None = None
    assignment: LocalAssignment | None = None

    def reset(self) -> None:
        self.rebalance_timeout_ms = -1
        self.topic_names = None
        self.pattern = None
        self.server_assignor = None
        self.assignment = None
