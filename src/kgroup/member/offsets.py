"""The consumer member's offsets: positions, auto-commit, the pre-join commit, OffsetFetch.

Kafka's ``ConsumerCoordinator`` commit and fetch paths; :class:`OffsetsMixin` is the offset half of
:class:`~kgroup.member.ClassicConsumerMember` (the application's book of offsets is :mod:`.offset_book`'s,
which the consumer-protocol member keeps too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kgroup.member.core import MemberCore
from kgroup.member.errors import RETRIABLE
from kgroup.member.events import (
    CommitFailed,
    OffsetsCommitted,
)
from kgroup.member.requests import (
    COORDINATOR_MOVED,
    RETRIABLE_COMMIT,
    CommitPurpose,
    InFlight,
    Kind,
    OutboundRequest,
)
from kgroup.member.states import Phase
from kgroup.messages import (
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from kgroup.model import (
    ErrorCode,
    TopicPartition,
    sorted_partitions,
)

__all__ = ["OffsetsMixin"]

# Kafka's state is not STABLE (generationIfStable() is null, so a commit fails locally): a JoinGroup or
# SyncGroup in flight (PREPARING_REBALANCE / COMPLETING_REBALANCE), or a failed member. (kgroup's
# PREPARING is still Kafka's STABLE; UNJOINED has no generation.)
_NOT_STABLE = frozenset({Phase.JOINING, Phase.SYNCING, Phase.FAILED})


class OffsetsMixin(MemberCore):
    """Positions and committed offsets, and the OffsetCommit / OffsetFetch requests."""

    def commit(self, now_ms: int, offsets: Mapping[TopicPartition, int]) -> list[OutboundRequest]:
        """The application's ``commitAsync(offsets)`` with the member's current generation.

        Returns the OffsetCommit to send; its outcome arrives as :class:`OffsetsCommitted` or
        :class:`CommitFailed` (errors handled as for every commit: a stale generation resets it, a
        rebalance in progress asks for a rejoin). Nothing is sent — an empty list — when the member is
        not in an active generation, is rebalancing (JoinGroup or SyncGroup in flight: Kafka's
        ``generationIfStable()`` is null) or has no coordinator (Kafka fails such a commit at once with
        ``CommitFailedException``, ``RebalanceInProgressException`` or a retriable coordinator error).
        """
        self._check_open("commit")
        self._check_commit_offsets(offsets)
        out: list[OutboundRequest] = []
        if self._phase in _NOT_STABLE or not offsets:
            return out
        self._send_commit(now_ms, dict(offsets), CommitPurpose.USER, out)
        return out

    def _consumed_offsets(self) -> dict[TopicPartition, int]:
        """Kafka's ``allConsumed``: the positions of assigned partitions that have a valid one, in
        the (Java) order a commit lists them."""
        positions = self._positions
        return {tp: pos for tp in self._owned_order if (pos := positions.get(tp, -1)) >= 0}

    def _maybe_auto_commit(self, now_ms: int, out: list[OutboundRequest]) -> None:
        if not self.config.enable_auto_commit or self._next_auto_commit_at is None:
            return
        if now_ms < self._next_auto_commit_at:
            return
        self._next_auto_commit_at = now_ms + self.config.auto_commit_interval_ms
        self._send_commit(now_ms, self._consumed_offsets(), CommitPurpose.AUTO, out, in_order=True)

    def _commit_on_revoke(
        self, now_ms: int, partitions: Sequence[TopicPartition], out: list[OutboundRequest]
    ) -> None:
        """``commit_on_revoke``: the application commits what it gives up (skipping what is already sent)."""
        if not self.config.commit_on_revoke or self._generation.is_reset:
            return
        given = set(partitions)
        offsets = {
            tp: pos
            for tp, pos in self._consumed_offsets().items()
            if tp in given and self._commit_sent.get(tp) != pos
        }
        self._send_commit(now_ms, offsets, CommitPurpose.REVOKE, out, in_order=True)

    def _send_commit(
        self,
        now_ms: int,
        offsets: dict[TopicPartition, int],
        purpose: CommitPurpose,
        out: list[OutboundRequest],
        *,
        in_order: bool = False,
    ) -> int | None:
        """Send an OffsetCommit; ``None`` when there is nothing to send or no way to send it.
        ``in_order``: ``offsets`` are already in Java order (:meth:`_consumed_offsets`)."""
        if not offsets:
            return None
        if self._coordinator is None or self._generation.is_reset:
            # Kafka fails the commit locally ("not part of an active group") or defers it until the
            # coordinator is found; kgroup retries the auto-commit after the backoff.
            if purpose is CommitPurpose.AUTO:
                self._next_auto_commit_at = now_ms + self.config.retry_backoff_ms
            return None
        # the in-flight record keeps the offsets in the request's (Java) order, so the answer's
        # event lists them without sorting again
        ordered = offsets if in_order else {tp: offsets[tp] for tp in sorted_partitions(offsets)}
        generation = self._generation
        body = OffsetCommitRequest(
            self.config.group_id,
            generation.generation_id,
            generation.member_id,
            tuple([OffsetCommitPartition(tp, offset) for tp, offset in ordered.items()]),
            self.config.group_instance_id,
        )
        self._commit_sent.update(ordered)
        return self._send(out, body, InFlight(Kind.COMMIT, generation, offsets=ordered, purpose=purpose))

    def _record_commit_success(self, sent: InFlight, resp: OffsetCommitResponse) -> bool:
        none = ErrorCode.NONE
        for _, err in resp.results:
            if err is not none:
                return False
        self._committed.update(sent.offsets)
        # a commit's offsets are kept in the request's sorted order (_send_commit)
        self._emit(OffsetsCommitted(tuple(sent.offsets.items()), sent.generation.generation_id))
        return True

    def _on_commit_response(
        self, now_ms: int, sent: InFlight, resp: OffsetCommitResponse, out: list[OutboundRequest]
    ) -> None:
        if self._record_commit_success(sent, resp):
            self._after_commit(now_ms, sent, retriable=False, out=out)
            return
        error = next(err for _, err in resp.results if err is not ErrorCode.NONE)
        for tp in sent.offsets:
            if self._commit_sent.get(tp) == sent.offsets[tp]:
                del self._commit_sent[tp]
        self._emit(CommitFailed(error, tuple(sorted_partitions(sent.offsets))))
        if error in COORDINATOR_MOVED or error is ErrorCode.REQUEST_TIMED_OUT:
            self._mark_coordinator_unknown(now_ms, out)
        elif error is ErrorCode.FENCED_INSTANCE_ID:
            if self._generation == sent.generation:
                self._fenced()
                return
        elif error is ErrorCode.REBALANCE_IN_PROGRESS:
            self._request_rejoin("offset commit failed since group is already rebalancing")
        elif error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            # reset unless the generation moved on and the member is rejoining with it (Kafka:
            # RebalanceInProgressException then); also when it is already reset, so UNKNOWN_MEMBER_ID
            # still drops a member id an earlier ILLEGAL_GENERATION kept
            stale_during_join = self._generation != sent.generation and self._phase is Phase.JOINING
            if not stale_during_join:
                self._reset_generation(
                    f"encountered {error.name} from OFFSET_COMMIT response",
                    error is ErrorCode.UNKNOWN_MEMBER_ID,
                )
        self._after_commit(now_ms, sent, retriable=error in RETRIABLE_COMMIT, out=out)

    def _after_commit(
        self, now_ms: int, sent: InFlight, *, retriable: bool, out: list[OutboundRequest]
    ) -> None:
        if sent.purpose is CommitPurpose.AUTO and retriable and self._next_auto_commit_at is not None:
            self._next_auto_commit_at = now_ms + self.config.retry_backoff_ms
        if sent is self._prepare_commit and self._phase is Phase.PREPARING:
            self._prepare_commit = None
            if retriable and now_ms < self._prepare_deadline:
                self._prepare_retry_at = now_ms + self.config.retry_backoff_ms
            else:
                self._finish_prepare(now_ms, out)

    def _send_fetch(self, out: list[OutboundRequest]) -> None:
        partitions = tuple(sorted_partitions(self._fetch_pending))
        self._fetch_pending.clear()
        self._send(
            out,
            OffsetFetchRequest(self.config.group_id, partitions),
            InFlight(Kind.FETCH, self._generation, partitions=partitions),
        )

    def _on_fetch_response(
        self, now_ms: int, sent: InFlight, resp: OffsetFetchResponse, out: list[OutboundRequest]
    ) -> None:
        """Kafka's ``OffsetFetchResponseHandler`` and ``fetchCommittedOffsets``: a retriable failure is
        retried after the backoff; any other is thrown out of ``poll()`` (a :class:`FatalError` here)
        and the next ``poll()`` fetches again, as the partitions still wait for their positions."""
        error = resp.error_code
        if error is not ErrorCode.NONE:
            if error in COORDINATOR_MOVED:
                self._mark_coordinator_unknown(now_ms, out)
            if error in RETRIABLE:
                self._retry_fetch(now_ms, sent.partitions)
            else:
                self._fetch_thrown(now_ms, sent.partitions, error, f"fetch offset failed: {error.name}")
            return
        by_tp = {p.partition: p for p in resp.partitions}
        unstable = False
        unauthorized: OffsetFetchPartition | None = None
        for p in by_tp.values():
            if p.error_code is ErrorCode.UNSTABLE_OFFSET_COMMIT:
                unstable = True
            elif p.error_code is ErrorCode.TOPIC_AUTHORIZATION_FAILED:
                unauthorized = unauthorized or p
            elif p.error_code is not ErrorCode.NONE:
                reason = f"fetch offset failed for {p.partition}: {p.error_code.name}"
                self._fetch_thrown(now_ms, sent.partitions, p.error_code, reason)
                return
        if unauthorized is not None:
            self._fetch_thrown(
                now_ms,
                sent.partitions,
                unauthorized.error_code,
                f"fetch offset failed for {unauthorized.partition}: {unauthorized.error_code.name}",
            )
            return
        if unstable:
            self._retry_fetch(now_ms, sent.partitions)
            return
        self._fill_fetched(sent.partitions, by_tp)

    def _fetch_thrown(
        self, now_ms: int, partitions: Sequence[TopicPartition], error: ErrorCode, reason: str
    ) -> None:
        """A failed OffsetFetch Kafka throws out of ``poll()``: reported; fetched again at the next one."""
        self._retry_fetch(now_ms, partitions)
        self._fetch_on_poll = True
        self._throw(error, reason)
