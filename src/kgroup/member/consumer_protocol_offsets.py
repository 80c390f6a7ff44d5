"""The consumer-protocol member's shared state, its coordinator lookup, and its offsets.

Kafka 4.x's ``CoordinatorRequestManager`` (FindCoordinator with backoff) and ``CommitRequestManager``
(OffsetCommit carrying the member epoch as the generation id; OffsetFetch v9 carrying the member id
and epoch; auto-commit on a timer; the commit before a reconciliation, retried on retriable errors
and on STALE_MEMBER_EPOCH until the rebalance timeout). :class:`ConsumerProtocolCore` is the base of
:class:`~kgroup.member.consumer_protocol.ConsumerProtocolMember`, which adds the membership.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Mapping
from dataclasses import dataclass, field

from kgroup.member.base import MemberBase
from kgroup.member.consumer_protocol_config import ConsumerProtocolConfig
from kgroup.member.consumer_protocol_states import ConsumerMemberState
from kgroup.member.errors import RETRIABLE
from kgroup.member.events import CommitFailed, MemberEvent, OffsetsCommitted
from kgroup.member.heartbeat_member import HeartbeatMemberBase
from kgroup.member.requests import COORDINATOR_MOVED, RETRIABLE_COMMIT, OutboundRequest
from kgroup.messages import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Request,
)
from kgroup.model import ErrorCode, KgroupError, TopicPartition, sorted_partitions

__all__ = ["CommitPurpose", "ConsumerProtocolCore", "Sent", "SentKind"]

# OffsetFetch errors after which Kafka fetches again (besides the retriable ones): the epoch moved on
_REFETCH = frozenset({ErrorCode.STALE_MEMBER_EPOCH, ErrorCode.UNSTABLE_OFFSET_COMMIT})


class SentKind(enum.Enum):
    FIND = "FindCoordinator"
    HEARTBEAT = "ConsumerGroupHeartbeat"
    LEAVE_HEARTBEAT = "ConsumerGroupHeartbeat (leave, answer ignored)"
    COMMIT = "OffsetCommit"
    FETCH = "OffsetFetch"


class CommitPurpose(enum.Enum):
    AUTO = "auto"  # the auto-commit timer
    RECONCILE = "reconcile"  # maybeAutoCommitSyncBeforeRebalance: the reconciliation waits for it
    USER = "user"  # the application's commit
    CLOSE = "close"


@dataclass(slots=True)
class Sent:
    kind: SentKind
    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    purpose: CommitPurpose | None = None
    partitions: tuple[TopicPartition, ...] = ()


class ConsumerProtocolCore(MemberBase, HeartbeatMemberBase):
    """State both halves share, FindCoordinator, and the offsets (see the module docstring)."""

    config: ConsumerProtocolConfig

    def __init__(
        self, config: ConsumerProtocolConfig, *, rng: random.Random, member_id: str | None = None
    ) -> None:
        if member_id is not None and not member_id:
            raise KgroupError("member_id: empty; pass None to draw one as Kafka's client does")
        self.config = config
        self._init_heartbeating(config.retry_backoff_ms, config.retry_backoff_max_ms, rng, member_id)
        self._state = ConsumerMemberState.UNSUBSCRIBED
        self._epoch = 0
        self._in_flight: dict[int, Sent] = {}
        self._next_correlation = 1
        self._events: list[MemberEvent] = []
        self._error_pending = False
        self._closed = False
        # the partitions the application owns (Kafka's subscriptions.assignedPartitions())
        self._owned: frozenset[TopicPartition] = frozenset()
        self._positions: dict[TopicPartition, int] = {}
        self._committed: dict[TopicPartition, int] = {}
        self._fetch_pending: set[TopicPartition] = set()
        self._fetch_retry_at = 0
        self._fetch_on_poll = False
        self._next_auto_commit_at: int | None = None
        # the commit a reconciliation waits for, and its deadline (the rebalance timeout)
        self._reconcile_commit: int | None = None
        self._reconcile_commit_deadline = 0
        self._reconcile_commit_retry_at: int | None = None

    # --- read-only views -----------------------------------------------------------------------------

    @property
    def state(self) -> ConsumerMemberState:
        return self._state

    @property
    def generation(self) -> int:
        """The member epoch (what OffsetCommit carries as the generation id)."""
        return self._epoch

    @property
    def closed(self) -> bool:
        return self._closed

    # --- the application's offsets --------------------------------------------------------------------

    def commit(self, now_ms: int, offsets: Mapping[TopicPartition, int]) -> list[OutboundRequest]:
        """The application's ``commitAsync(offsets)`` with the current member epoch.

        Nothing is sent (an empty list) while the member has no epoch in the group or no coordinator:
        Kafka's consumer would then commit without an epoch (or fail), see the docs' differences."""
        self._check_open("commit")
        self._check_commit_offsets(offsets)
        out: list[OutboundRequest] = []
        self._send_commit(dict(offsets), CommitPurpose.USER, out)
        return out

    # --- internals: requests --------------------------------------------------------------------------

    def _send(self, out: list[OutboundRequest], body: Request, sent: Sent) -> int:
        cid = self._next_correlation
        self._next_correlation += 1
        self._in_flight[cid] = sent
        out.append(OutboundRequest(cid, body, None if sent.kind is SentKind.FIND else self._coordinator))
        return cid

    def _has_in_flight(self, kind: SentKind) -> bool:
        return any(s.kind is kind for s in self._in_flight.values())

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise KgroupError(f"{what}: the member is closed; create a new ConsumerProtocolMember to rejoin")

    def _set_owned(self, partitions: frozenset[TopicPartition]) -> None:
        self._owned = partitions
        for tp in [tp for tp in self._positions if tp not in partitions]:
            del self._positions[tp]
        self._fetch_pending &= partitions

    # --- the coordinator ------------------------------------------------------------------------------

    def _needs_coordinator(self) -> bool:
        raise NotImplementedError

    def _ensure_coordinator(self, now_ms: int, out: list[OutboundRequest]) -> None:
        if (
            self._coordinator is None
            and self._needs_coordinator()
            and not self._has_in_flight(SentKind.FIND)
            and now_ms >= self._find_retry_at
        ):
            self._send(out, FindCoordinatorRequest(key=self.config.group_id), Sent(SentKind.FIND))

    def _on_find_response(self, now_ms: int, resp: FindCoordinatorResponse) -> None:
        if self._on_find_answer(now_ms, resp):
            return
        if resp.error_code is ErrorCode.GROUP_AUTHORIZATION_FAILED:
            # CoordinatorRequestManager keeps it as a fatal error the heartbeat manager propagates
            self._throw(
                resp.error_code, f"FindCoordinator failed: not authorized to group {self.config.group_id}"
            )

    def _mark_coordinator_unknown(self, now_ms: int, out: list[OutboundRequest]) -> None:
        """Forget the coordinator; what is in flight to it is failed (Kafka disconnects it)."""
        if self._coordinator is None:
            return
        self._coordinator = None
        for cid in [c for c, s in self._in_flight.items() if s.kind is not SentKind.FIND]:
            sent = self._in_flight.pop(cid, None)
            if sent is not None:
                self._on_failure(now_ms, cid, sent, out)

    def _on_failure(self, now_ms: int, cid: int, sent: Sent, out: list[OutboundRequest]) -> None:
        raise NotImplementedError

    # --- commits --------------------------------------------------------------------------------------

    def _consumed_offsets(self) -> dict[TopicPartition, int]:
        """Kafka's ``allConsumed``: the valid positions of owned partitions."""
        return {tp: pos for tp in sorted_partitions(self._owned) if (pos := self._positions.get(tp, -1)) >= 0}

    def _send_commit(
        self, offsets: dict[TopicPartition, int], purpose: CommitPurpose, out: list[OutboundRequest]
    ) -> int | None:
        if not offsets or self._coordinator is None or self._epoch <= 0:
            return None
        ordered = {tp: offsets[tp] for tp in sorted_partitions(offsets)}
        body = OffsetCommitRequest(
            self.config.group_id,
            self._epoch,  # the member epoch travels as the generation id (OffsetCommit v9+)
            self._member_id,
            tuple(OffsetCommitPartition(tp, offset) for tp, offset in ordered.items()),
            self.config.group_instance_id,
        )
        return self._send(out, body, Sent(SentKind.COMMIT, offsets=ordered, purpose=purpose))

    def _maybe_auto_commit(self, now_ms: int, out: list[OutboundRequest]) -> None:
        at = self._next_auto_commit_at
        if not self.config.enable_auto_commit or at is None or now_ms < at:
            return
        self._next_auto_commit_at = now_ms + self.config.auto_commit_interval_ms
        self._send_commit(self._consumed_offsets(), CommitPurpose.AUTO, out)

    def _on_commit_response(
        self, now_ms: int, cid: int, sent: Sent, resp: OffsetCommitResponse, out: list[OutboundRequest]
    ) -> None:
        error = next((err for _, err in resp.results if err is not ErrorCode.NONE), ErrorCode.NONE)
        if error is ErrorCode.NONE:
            self._committed.update(sent.offsets)
            self._emit(OffsetsCommitted(tuple(sent.offsets.items()), self._epoch))
            if cid == self._reconcile_commit:
                self._reconcile_commit_done(now_ms, out)
            return
        if error in COORDINATOR_MOVED or error is ErrorCode.REQUEST_TIMED_OUT:
            self._mark_coordinator_unknown(now_ms, out)
        self._commit_failed(now_ms, cid, sent, error, out)

    def _commit_failed(
        self, now_ms: int, cid: int, sent: Sent, error: ErrorCode, out: list[OutboundRequest]
    ) -> None:
        retriable = error in RETRIABLE_COMMIT or error is ErrorCode.NETWORK_EXCEPTION
        if cid == self._reconcile_commit:
            self._reconcile_commit = None
            # retried with the latest offsets and epoch until the rebalance timeout (STALE_MEMBER_EPOCH
            # too: the epoch may have moved on while the reconciliation ran)
            if (
                retriable or error is ErrorCode.STALE_MEMBER_EPOCH
            ) and now_ms < self._reconcile_commit_deadline:
                self._reconcile_commit_retry_at = now_ms + self._backoff.backoff(0, self._rng)
            else:
                self._emit(CommitFailed(error, tuple(sent.offsets)))
                self._reconcile_commit_done(now_ms, out)
            return
        self._emit(CommitFailed(error, tuple(sent.offsets)))
        if sent.purpose is CommitPurpose.AUTO and retriable and self._next_auto_commit_at is not None:
            self._next_auto_commit_at = now_ms + self.config.retry_backoff_ms

    def _start_reconcile_commit(self, now_ms: int, out: list[OutboundRequest]) -> bool:
        """``maybeAutoCommitSyncBeforeRebalance``: True when the reconciliation must wait for a commit."""
        if not self.config.enable_auto_commit:
            return False
        self._reconcile_commit_deadline = now_ms + self.config.max_poll_interval_ms
        return self._send_reconcile_commit(now_ms, out)

    def _send_reconcile_commit(self, now_ms: int, out: list[OutboundRequest]) -> bool:
        self._reconcile_commit_retry_at = None
        offsets = self._consumed_offsets()
        if not offsets or now_ms >= self._reconcile_commit_deadline or self._epoch <= 0:
            return False
        if self._coordinator is None:
            self._reconcile_commit_retry_at = now_ms + self.config.retry_backoff_ms
            return True
        self._reconcile_commit = self._send_commit(offsets, CommitPurpose.RECONCILE, out)
        return self._reconcile_commit is not None

    def _drive_reconcile_commit(self, now_ms: int, out: list[OutboundRequest]) -> None:
        at = self._reconcile_commit_retry_at
        if at is not None and now_ms >= at and not self._send_reconcile_commit(now_ms, out):
            self._reconcile_commit_done(now_ms, out)

    def _reconcile_commit_done(self, now_ms: int, out: list[OutboundRequest]) -> None:
        raise NotImplementedError

    # --- OffsetFetch ----------------------------------------------------------------------------------

    def _drive_fetch(self, now_ms: int, out: list[OutboundRequest]) -> None:
        if (
            not self._fetch_pending
            or self._fetch_on_poll
            or self._coordinator is None
            or self._has_in_flight(SentKind.FETCH)
            or now_ms < self._fetch_retry_at
        ):
            return
        partitions = tuple(sorted_partitions(self._fetch_pending))
        self._fetch_pending.clear()
        in_group = self._epoch > 0
        body = OffsetFetchRequest(
            self.config.group_id,
            partitions,
            member_id=self._member_id if in_group else None,
            member_epoch=self._epoch if in_group else -1,
        )
        self._send(out, body, Sent(SentKind.FETCH, partitions=partitions))

    def _on_fetch_response(
        self, now_ms: int, sent: Sent, resp: OffsetFetchResponse, out: list[OutboundRequest]
    ) -> None:
        error = resp.error_code
        if error is ErrorCode.NONE:
            error = next(
                (p.error_code for p in resp.partitions if p.error_code is not ErrorCode.NONE), ErrorCode.NONE
            )
        if error is not ErrorCode.NONE:
            if error in COORDINATOR_MOVED:
                self._mark_coordinator_unknown(now_ms, out)
            self._retry_fetch(now_ms, sent.partitions)
            if error not in RETRIABLE and error not in _REFETCH:
                self._fetch_on_poll = True  # thrown out of poll(); the next poll() fetches again
                self._throw(error, f"fetch offset failed: {error.name}")
            return
        by_tp = {p.partition: p for p in resp.partitions}
        self._fill_fetched(sent.partitions, by_tp)
