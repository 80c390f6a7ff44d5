"""What the two members that heartbeat on their own share: :class:`HeartbeatMemberBase`.

The consumer-protocol member (KIP-848, :class:`~kgroup.member.ConsumerProtocolMember`) and the share
member (KIP-932, :class:`~kgroup.member.share.ShareMember`) both choose their member id, heartbeat at
the interval the coordinator names (``AbstractHeartbeatRequestManager``'s ``HeartbeatRequestState``)
and find their coordinator with Kafka's ``CoordinatorRequestManager``: FindCoordinator, retried after
an exponential backoff with jitter (``retry.backoff.ms`` up to ``retry.backoff.max.ms``) while it
fails. This holds that bookkeeping once; each member keeps its own states, requests and errors.
"""

from __future__ import annotations

import random

from kgroup.member.consumer_protocol_heartbeat import ExponentialBackoff, HeartbeatTimer, random_member_id
from kgroup.member.requests import OutboundRequest
from kgroup.messages import FindCoordinatorResponse
from kgroup.model import ErrorCode

__all__ = ["HEARTBEAT_FATAL_ERRORS", "HeartbeatMemberBase"]

#: the heartbeat errors ``AbstractHeartbeatRequestManager.onErrorResponse`` makes fatal for both members
HEARTBEAT_FATAL_ERRORS = frozenset(
    {
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        ErrorCode.UNSUPPORTED_ASSIGNOR,
        ErrorCode.UNRELEASED_INSTANCE_ID,
    }
)


class HeartbeatMemberBase:
    """The member id, epoch, heartbeat timer and coordinator lookup of a KIP-848 or KIP-932 member."""

    _member_id: str
    _epoch: int
    _coordinator: int | None
    _topics: tuple[str, ...]
    _closed: bool
    _now: int  # the time of the last call (what next_wakeup_ms counts from)

    def _init_heartbeating(
        self, retry_backoff_ms: int, retry_backoff_max_ms: int, rng: random.Random, member_id: str | None
    ) -> None:
        """Draw the member id (``Uuid.randomUuid()``) unless one is given, and start the heartbeat timer
        and the coordinator lookup (no coordinator yet; the first FindCoordinator goes at once)."""
        self._rng = rng
        self._member_id = member_id if member_id is not None else random_member_id(rng)
        self._backoff = ExponentialBackoff(retry_backoff_ms, retry_backoff_max_ms)
        self._hb = HeartbeatTimer(self._backoff, rng)
        self._coordinator = None
        self._find_retry_at = 0  # no FindCoordinator before this time (the backoff after a failure)
        self._find_attempts = 0  # failed FindCoordinators in a row

    @property
    def member_id(self) -> str:
        """Chosen by the client at construction and kept for its lifetime (KIP-848 v1)."""
        return self._member_id

    @property
    def member_epoch(self) -> int:
        return self._epoch

    @property
    def heartbeat_interval_ms(self) -> int:
        """The interval the coordinator named last (0 before its first answer)."""
        return self._hb.interval_ms

    @property
    def subscription(self) -> tuple[str, ...]:
        return self._topics

    def background(self, now_ms: int) -> list[OutboundRequest]:
        """Kafka's network thread: FindCoordinator, heartbeats, retries (and the consumer protocol's
        poll-timeout leave and auto-commit)."""
        self._now = now_ms
        return self._drive_unless_closed(now_ms, [])

    def _drive_unless_closed(self, now_ms: int, out: list[OutboundRequest]) -> list[OutboundRequest]:
        """After each call and each answer: what is due now joins ``out`` (nothing once closed)."""
        if not self._closed:
            self._drive(now_ms, out)
        return out

    def _drive(self, now_ms: int, out: list[OutboundRequest]) -> None:
        """Send what is due now (each member's own)."""
        raise NotImplementedError

    def _on_find_answer(self, now_ms: int, response: FindCoordinatorResponse) -> bool:
        """A FindCoordinator answer: the coordinator is known (``True``), or the next attempt backs off."""
        if response.error_code is ErrorCode.NONE:
            self._coordinator = response.node_id
            self._find_attempts = 0
            return True
        self._find_failed(now_ms)
        return False

    def _find_failed(self, now_ms: int) -> None:
        """A FindCoordinator failed (an error answer, a timeout, a lost connection): back off."""
        self._find_retry_at = now_ms + self._backoff.backoff(self._find_attempts, self._rng)
        self._find_attempts += 1
