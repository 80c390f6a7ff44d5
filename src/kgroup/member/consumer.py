"""The consumer member: Kafka's classic ``ConsumerCoordinator`` + ``AbstractCoordinator`` as a pure
state machine.

Nothing here reads a clock or touches a network. The host calls

* :meth:`ClassicConsumerMember.poll` when the *application* polls (joins, rejoins, auto-commits, and resets
  the ``max.poll.interval.ms`` timer — Kafka starts a rebalance only from the application's poll);
* :meth:`ClassicConsumerMember.background` at :meth:`ClassicConsumerMember.next_wakeup_ms` (Kafka's
  heartbeat thread: heartbeats, session and poll-timeout checks, and the protocol's retries);
* :meth:`ClassicConsumerMember.on_response` / :meth:`ClassicConsumerMember.on_request_failed` when a
  request is answered or fails (timeout, disconnect).

Each returns the requests to send now, in order (the coordinator handles one connection's requests
in order, which is what makes "commit, then JoinGroup" synchronous). Rebalance callbacks and errors
are queued as events (:mod:`kgroup.member.events`). Phases move only through the table in
:mod:`kgroup.member.states`.

The member is split in layers: :mod:`kgroup.member.core` (state and primitives),
:mod:`kgroup.member.offsets` (positions, commits, OffsetFetch), :mod:`kgroup.member.heartbeat`
(heartbeats, the poll-timeout LeaveGroup, failing for good) and this module (the rebalance and the
public driving calls).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from kgroup.javacompat import hashmap_iteration_order
from kgroup.member.core import checked_topics
from kgroup.member.errors import (
    DISCONNECT,
    KAFKA_EXCEPTION,
    SYNC_GROUP_ERRORS,
    exception_name,
    truncate_reason,
)
from kgroup.member.events import (
    CommitFailed,
    JoinedGroup,
    LeftGroup,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from kgroup.member.heartbeat import HeartbeatMixin
from kgroup.member.leader import (
    CooperativeViolation,
    group_members,
    metadata_snapshot,
    run_assignment,
)
from kgroup.member.requests import (
    COORDINATOR_MOVED,
    FATAL_JOIN,
    HEARTBEAT_PHASES,
    NO_GENERATION,
    PROTOCOL_TYPE,
    RESPONSE_OF,
    TERMINAL,
    CommitPurpose,
    Fatal,
    Generation,
    InFlight,
    JoinFailed,
    Kind,
    OutboundRequest,
)
from kgroup.member.states import Phase, Step
from kgroup.messages import (
    ConsumerAssignment,
    ConsumerSubscription,
    FindCoordinatorResponse,
    HeartbeatResponse,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    Response,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kgroup.model import (
    ErrorCode,
    KgroupError,
    PeerError,
    RebalanceProtocol,
    sorted_partitions,
)
from kgroup.wire.consumer_protocol import decode_assignment, encode_subscription

__all__ = ["ClassicConsumerMember", "ConsumerMember", "OutboundRequest"]


class ClassicConsumerMember(HeartbeatMixin):
    """One consumer in a classic consumer group, driven by its host (see the module docstring)."""

    # --- the application's side -----------------------------------------------------------------------

    def subscribe(self, topics: Sequence[str]) -> None:
        """Change the subscription; a member that joined with another one rejoins at its next poll()."""
        self._check_open("subscribe")
        self._topics = checked_topics(topics)
        self._topic_set = frozenset(self._topics)

    def poll(self, now_ms: int) -> list[OutboundRequest]:
        """The application's ``poll()``: Kafka's ``ConsumerCoordinator.poll``."""
        self._check_open("poll")
        out: list[OutboundRequest] = []
        if self._phase is Phase.FAILED:
            return out
        self._poll_deadline = now_ms + self.config.max_poll_interval_ms
        self._metadata_seen = self._metadata  # maybeUpdateSubscriptionMetadata
        if self._fetch_on_poll:
            self._fetch_on_poll = False  # the OffsetFetch that threw out of the last poll()
            self._fetch_retry_at = now_ms
        if self._join_on_poll:
            self._resume_failed_join(now_ms)
        if self._coordinator is None:
            self._poll_wants_join = self._phase in (Phase.UNJOINED, Phase.STABLE) and self._rejoin_needed
            self._ensure_coordinator(now_ms, out)
            self._drive(now_ms, out)
            return out
        self._check_rejoin_conditions()
        if self._phase in (Phase.UNJOINED, Phase.STABLE) and self._rejoin_needed:
            self._begin_rebalance(now_ms, out)
        elif self._phase is Phase.STABLE:
            self._maybe_auto_commit(now_ms, out)
        self._drive(now_ms, out)
        return out

    def background(self, now_ms: int) -> list[OutboundRequest]:
        """Kafka's heartbeat thread, plus the protocol's retries that are due."""
        out: list[OutboundRequest] = []
        if self._phase in TERMINAL:
            return out
        self._drive(now_ms, out)
        # Several checks can fire at one instant (a session expiry marks the coordinator unknown, the
        # next turn of Kafka's loop looks it up); three turns cover every chain.
        for _ in range(3):
            if self._phase not in HEARTBEAT_PHASES:
                break
            if self._coordinator is None:
                self._ensure_coordinator(now_ms, out)
                break
            if now_ms >= self._session_deadline:
                self._mark_coordinator_unknown(now_ms, out)
                continue
            if now_ms >= self._poll_deadline:
                self._maybe_leave_group(now_ms, "consumer poll timeout has expired.", out)
                break
            if now_ms >= self._next_heartbeat_at:
                self._send_heartbeat(now_ms, out)
            break
        return out

    def next_wakeup_ms(self) -> int | None:
        """The earliest time :meth:`background` has something to do (``None``: nothing until an event).

        Auto-commit is not included: it runs only from the application's :meth:`poll`, as in Kafka.
        """
        phase = self._phase
        if phase is Phase.STABLE and not self._fetch_pending and not self._poll_wants_join:
            # the common case, answered without building a list: a stable member's three timers
            if self._coordinator is None:
                return self._when_sendable(0)
            return min(self._session_deadline, self._poll_deadline, self._next_heartbeat_at)
        if phase in TERMINAL:
            return None
        times: list[int | None] = []
        if self._phase is Phase.PREPARING and self._prepare_retry_at is not None:
            times.append(self._when_sendable(self._prepare_retry_at))
        if self._phase is Phase.PREPARING and self._prepare_commit is not None:
            times.append(self._prepare_deadline)
        if self._phase is Phase.JOINING and self._join_send_at is not None and not self._join_in_flight():
            times.append(self._when_sendable(self._join_send_at))
        if self._fetch_pending and not self._fetch_on_poll and not self._has_in_flight(Kind.FETCH):
            times.append(self._when_sendable(self._fetch_retry_at))
        if self._poll_wants_join and self._coordinator is None:
            times.append(self._when_sendable(0))
        if self._phase in HEARTBEAT_PHASES:
            if self._coordinator is None:
                times.append(self._when_sendable(0))
            else:
                times += [self._session_deadline, self._poll_deadline, self._next_heartbeat_at]
        finite = [t for t in times if t is not None]
        return min(finite) if finite else None

    def close(self, now_ms: int) -> list[OutboundRequest]:
        """Close gracefully: auto-commit, revoke (or lose), LeaveGroup unless static (Kafka's close)."""
        out: list[OutboundRequest] = []
        if self._phase is Phase.CLOSED:
            return out
        if self._phase is Phase.FAILED:
            self._move(Step.CLOSE)
            return out
        stable = self._phase in (Phase.STABLE, Phase.PREPARING) and not self._generation.is_reset
        if self.config.enable_auto_commit and stable:
            self._send_commit(now_ms, self._consumed_offsets(), CommitPurpose.CLOSE, out)
        # onLeavePrepare
        owned = sorted_partitions(self._owned)
        if owned:
            if self._generation.is_reset or self._phase in (Phase.JOINING, Phase.SYNCING):
                self._emit(PartitionsLost(tuple(owned), self._owned_generation))
            else:
                self._commit_on_revoke(now_ms, owned, out)
                self._emit(PartitionsRevoked(tuple(owned), self.generation))
            self._set_assignment(set())
        sent = self._send_leave_group(now_ms, "the consumer is being closed", out)
        self._emit(LeftGroup("the consumer is being closed", sent))
        self._move(Step.CLOSE)
        return out

    # --- responses ------------------------------------------------------------------------------------

    def on_response(self, now_ms: int, correlation_id: int, response: Response) -> list[OutboundRequest]:
        out: list[OutboundRequest] = []
        sent = self._in_flight.pop(correlation_id, None)
        if sent is None:
            return out  # abandoned (coordinator marked unknown) or already failed: Kafka drops it too
        expected = RESPONSE_OF[sent.kind]
        if not isinstance(response, expected):
            raise KgroupError(
                f"correlation id {correlation_id}: got a {type(response).__name__} for a "
                f"{sent.kind.value} request; deliver each response to the request it answers"
            )
        if self._phase in TERMINAL:
            if isinstance(response, OffsetCommitResponse):
                self._record_commit_success(sent, response)
            return out
        try:
            self._dispatch(now_ms, sent, response, out)
        except Fatal as fatal:
            self._fail(fatal.error, fatal.reason)
        return out

    def on_request_failed(self, now_ms: int, correlation_id: int) -> list[OutboundRequest]:
        """A request timed out or its connection dropped (Kafka's ``DisconnectException``)."""
        out: list[OutboundRequest] = []
        sent = self._in_flight.pop(correlation_id, None)
        if sent is None or self._phase in TERMINAL:
            return out
        if sent.kind is not Kind.FIND:
            self._mark_coordinator_unknown(now_ms, out)
        self._on_failure(now_ms, sent, out)
        return out

    # --- internals: driving ---------------------------------------------------------------------------

    def _drive(self, now_ms: int, out: list[OutboundRequest]) -> None:
        """Send whatever the protocol is waiting to (re)send now."""
        # a poll() that found no coordinator keeps looking (Kafka's ensureCoordinatorReady loop)
        needs_coordinator = self._poll_wants_join and self._coordinator is None
        if (
            self._phase is Phase.PREPARING
            and self._prepare_commit is not None
            and now_ms >= self._prepare_deadline
        ):
            # onJoinPrepare's timer (the rebalance timeout) expired with the commit still in flight:
            # Kafka goes on to join (the commit's answer, if it comes, is an ordinary commit's)
            self._finish_prepare(now_ms, out)
        if (
            self._phase is Phase.PREPARING
            and self._prepare_retry_at is not None
            and now_ms >= self._prepare_retry_at
        ):
            if self._coordinator is None and now_ms < self._prepare_deadline:
                needs_coordinator = True
            else:
                self._prepare_retry_at = None
                self._prepare_commit_or_finish(now_ms, out)
        if self._phase is Phase.JOINING and self._join_send_at is not None and now_ms >= self._join_send_at:
            if self._coordinator is None:
                needs_coordinator = True
            else:
                self._send_join(now_ms, out)
        if (
            self._fetch_pending
            and not self._fetch_on_poll
            and not self._has_in_flight(Kind.FETCH)
            and now_ms >= self._fetch_retry_at
        ):
            if self._coordinator is None:
                needs_coordinator = True
            else:
                self._send_fetch(out)
        if needs_coordinator:
            self._ensure_coordinator(now_ms, out)

    def _check_rejoin_conditions(self) -> None:
        """Kafka's ``rejoinNeededOrPending``: metadata changed under the leader, or a new subscription.

        The leader compares its assignment snapshot with the metadata as of the last ``poll()``
        (Kafka refreshes ``metadataSnapshot`` only there), so a change seen while its SyncGroup is in
        flight is acted on at the next ``poll()``."""
        if self._phase is not Phase.STABLE and self._phase is not Phase.UNJOINED:
            return
        seen = self._metadata_seen
        if self._assignment_snapshot is not None and self._snapshot_matches is not seen:
            watched, snap = self._assignment_snapshot
            if metadata_snapshot(seen, watched, self.config.rack_id) != snap:
                self._request_rejoin_if_necessary("cached metadata has changed")
            else:
                self._snapshot_matches = seen
        joined = self._joined_subscription
        if joined is not None and joined is not self._topic_set and joined != self._topic_set:
            self._request_rejoin_if_necessary("subscription has changed")

    # --- internals: the rebalance ---------------------------------------------------------------------

    def _begin_rebalance(self, now_ms: int, out: list[OutboundRequest]) -> None:
        """``onJoinPrepare``: commit (and wait), then revoke or lose, then JoinGroup."""
        was_stable = self._phase is Phase.STABLE and not self._generation.is_reset
        self._poll_wants_join = False
        self._resume_on_sync = None
        self._join_on_poll = False
        self._move(Step.BEGIN_REBALANCE)
        self._prepare_deadline = now_ms + self.config.max_poll_interval_ms
        self._prepare_retry_at = None
        self._prepare_commit = None
        if self.config.enable_auto_commit and was_stable:
            self._prepare_commit_or_finish(now_ms, out)
        else:
            self._finish_prepare(now_ms, out)

    def _prepare_commit_or_finish(self, now_ms: int, out: list[OutboundRequest]) -> None:
        stable = not self._generation.is_reset and self._coordinator is not None
        offsets = self._consumed_offsets()
        if stable and offsets and now_ms < self._prepare_deadline:
            cid = self._send_commit(now_ms, offsets, CommitPurpose.PREPARE, out)
            if cid is not None:
                self._prepare_commit = self._in_flight[cid]
                return
        self._finish_prepare(now_ms, out)

    def _finish_prepare(self, now_ms: int, out: list[OutboundRequest]) -> None:
        # Kafka calls onJoinPrepare again from every poll() while its commit is pending, each time with
        # the *current* generation; the call that goes on decides revoke-or-lose from it. So a reset
        # by the heartbeat thread (or the commit's answer) while the commit was pending means lost.
        gen = self._generation
        owned = list(self._owned_order)
        if gen.is_reset:
            if owned:
                self._emit(PartitionsLost(tuple(owned), self._owned_generation))
                self._set_assignment(set())
        elif self._protocol is RebalanceProtocol.EAGER:
            self._commit_on_revoke(now_ms, owned, out)
            self._emit(PartitionsRevoked(tuple(owned), gen.generation_id))
            self._set_assignment(set())
        else:
            subscribed = set(self._topics)
            revoked = [tp for tp in owned if tp.topic not in subscribed]
            if revoked:
                self._commit_on_revoke(now_ms, revoked, out)
                self._emit(PartitionsRevoked(tuple(revoked), gen.generation_id))
                self._set_assignment(self._owned - set(revoked))
        self._is_leader = False
        self._prepare_commit = None
        self._prepare_retry_at = None
        self._move(Step.PREPARED)
        self._join_send_at = now_ms
        self._drive(now_ms, out)

    def _send_join(self, now_ms: int, out: list[OutboundRequest]) -> None:
        self._join_send_at = None
        self._attempt += 1
        self._joined_subscription = self._topic_set
        topics = _hashset_order(self._topics)  # Kafka's HashSet of topics
        owned = self._owned_order
        last_partitions, last_generation = self._last_assigned
        protocols = tuple(
            JoinGroupProtocol(
                name,
                encode_subscription(
                    ConsumerSubscription(
                        topics=topics,
                        user_data=assignor.subscription_user_data(last_partitions, last_generation),
                        owned_partitions=owned,
                        generation_id=self._generation.generation_id,
                        rack_id=self.config.rack_id,
                    )
                ),
            )
            for name, assignor in self._assignors.items()
        )
        body = JoinGroupRequest(
            group_id=self.config.group_id,
            session_timeout_ms=self.config.session_timeout_ms,
            rebalance_timeout_ms=self.config.max_poll_interval_ms,
            member_id=self._generation.member_id,
            protocols=protocols,
            group_instance_id=self.config.group_instance_id,
            protocol_type=PROTOCOL_TYPE,
            reason=truncate_reason(self._rejoin_reason),
        )
        self._send(out, body, InFlight(Kind.JOIN, self._generation, attempt=self._attempt))

    def _rejoin_now(self, now_ms: int, out: list[OutboundRequest], backoff: bool) -> None:
        """JoinGroup again without a new onJoinPrepare (Kafka's ``continue`` / retry in joinGroupIfNeeded)."""
        self._join_send_at = now_ms + (self.config.retry_backoff_ms if backoff else 0)
        self._drive(now_ms, out)

    def _join_failed(self, failed: JoinFailed) -> None:
        """``joinGroupIfNeeded`` throws a non-retriable failure out of ``poll()`` after asking for a
        rejoin: the application sees it, and the next ``poll()`` sends JoinGroup again (no new
        onJoinPrepare), with the same member id and a reason naming the exception."""
        self._rebalance_failed(failed.exception)
        self._join_send_at = None
        self._join_on_poll = True
        self._throw(failed.error, failed.reason)

    def _resume_failed_join(self, now_ms: int) -> None:
        """The ``poll()`` after a failed join: JoinGroup again (from COMPLETING_REBALANCE too: the leader's
        assignment or the SyncGroup failed there)."""
        self._join_on_poll = False
        if self._phase is Phase.SYNCING:
            self._move(Step.SYNC_RETRY)
        if self._phase is Phase.JOINING:
            self._join_send_at = now_ms

    def _reset_generation(self, reason: str, reset_member_id: bool) -> None:
        """Kafka's ``resetStateAndRejoin``: generation gone, so owned partitions will be lost."""
        member_id = "" if reset_member_id else self._generation.member_id
        self._generation = Generation(NO_GENERATION, member_id, None)
        if self._phase is Phase.SYNCING:
            self._resume_on_sync = self._attempt
        self._move(Step.RESET)
        self._request_rejoin(reason)

    def _on_join_response(
        self, now_ms: int, sent: InFlight, resp: JoinGroupResponse, out: list[OutboundRequest]
    ) -> None:
        if self._phase is not Phase.JOINING or sent.attempt != self._attempt:
            return
        error = resp.error_code
        if error is ErrorCode.NONE:
            if resp.protocol_type is not None and resp.protocol_type != PROTOCOL_TYPE:
                self._join_failed(
                    JoinFailed(
                        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                        f"JoinGroup answered protocol type {resp.protocol_type!r}",
                        exception_name(ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
                    )
                )
                return
            self._generation = Generation(resp.generation_id, resp.member_id, resp.protocol_name)
            self._move(Step.JOINED)
            self._reset_heartbeat_timers(now_ms)
            leader = resp.leader == resp.member_id
            self._emit(JoinedGroup(resp.generation_id, resp.member_id, leader, resp.protocol_name or ""))
            assignments: tuple[SyncGroupAssignment, ...] = ()
            if leader:
                try:
                    assignments = self._on_leader_elected(resp)
                except JoinFailed as failed:
                    self._join_failed(failed)  # still COMPLETING_REBALANCE, as in Kafka
                    return
            body = SyncGroupRequest(
                group_id=self.config.group_id,
                generation_id=resp.generation_id,
                member_id=resp.member_id,
                assignments=assignments,
                group_instance_id=self.config.group_instance_id,
                protocol_type=PROTOCOL_TYPE,
                protocol_name=resp.protocol_name,
            )
            self._send(out, body, InFlight(Kind.SYNC, self._generation, attempt=self._attempt))
        elif error is ErrorCode.MEMBER_ID_REQUIRED:
            self._generation = Generation(NO_GENERATION, resp.member_id, None)
            # (joinGroupIfNeeded keeps this reason: it does not name MemberIdRequiredException)
            self._request_rejoin(f"need to re-join with the given member-id: {resp.member_id}")
            self._move(Step.JOIN_RETRY)
            self._rejoin_now(now_ms, out, backoff=False)
        elif error is ErrorCode.UNKNOWN_MEMBER_ID:
            if self._generation == sent.generation:
                self._reset_generation("encountered UNKNOWN_MEMBER_ID from JOIN_GROUP response", True)
                self._rebalance_failed(exception_name(error))
                self._begin_rebalance(now_ms, out)
            else:
                self._rebalance_failed(exception_name(error))
                self._move(Step.JOIN_RETRY)
                self._rejoin_now(now_ms, out, backoff=False)
        elif error is ErrorCode.REBALANCE_IN_PROGRESS:
            self._rebalance_failed(exception_name(error))
            self._move(Step.JOIN_RETRY)
            self._rejoin_now(now_ms, out, backoff=False)
        elif error in COORDINATOR_MOVED or error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            if error in COORDINATOR_MOVED:
                self._mark_coordinator_unknown(now_ms, out)
            self._rebalance_failed(exception_name(error))
            self._move(Step.JOIN_RETRY)
            self._rejoin_now(now_ms, out, backoff=True)
        elif error is ErrorCode.FENCED_INSTANCE_ID:
            self._fenced()
        elif error in FATAL_JOIN or error is ErrorCode.UNSUPPORTED_VERSION:
            self._join_failed(JoinFailed(error, f"JoinGroup failed: {error.name}", exception_name(error)))
        else:
            self._join_failed(
                JoinFailed(error, f"unexpected error in JoinGroup response: {error.name}", KAFKA_EXCEPTION)
            )

    def _on_leader_elected(self, resp: JoinGroupResponse) -> tuple[SyncGroupAssignment, ...]:
        """Kafka's ``onLeaderElected``; what it throws fails the join (:class:`JoinFailed`)."""
        name = resp.protocol_name or ""
        assignor = self._assignors.get(name)
        if assignor is None:
            raise JoinFailed(
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                f"coordinator selected assignor {name!r}, which this member did not offer",
                "IllegalStateException",
            )
        try:
            members = group_members(resp.members)
        except PeerError as bad:
            # ConsumerProtocol.deserializeSubscription's SchemaException fails the join
            raise JoinFailed(
                ErrorCode.CORRUPT_MESSAGE, f"JoinGroup response: {bad.message}", "SchemaException"
            ) from None
        # updateGroupSubscription: the leader watches every member's topics, with fresh metadata
        watched = self._topic_set.union(*(m.topics for m in members))
        self._metadata_seen = self._metadata
        self._is_leader = True
        if resp.skip_assignment:
            # A returning static leader keeps the current assignment and only watches metadata.
            self._take_snapshot(watched)
            return ()
        try:
            assignments, unsubscribed = run_assignment(assignor, members, self._metadata, self._protocol)
        except CooperativeViolation as violation:
            # validateCooperativeAssignment's IllegalStateException fails the join
            raise JoinFailed(
                ErrorCode.UNKNOWN_SERVER_ERROR, str(violation), "IllegalStateException"
            ) from None
        # maybeUpdateGroupSubscription: topics a custom assignor handed out although nobody subscribes
        # to them are watched too (added before the snapshot is taken)
        self._take_snapshot(watched | unsubscribed)
        return assignments

    def _take_snapshot(self, watched: frozenset[str]) -> None:
        """What the leader assigned from, watched for changes at every poll() (Kafka's
        ``assignmentSnapshot``, taken from ``metadataSnapshot`` just refreshed)."""
        self._assignment_snapshot = (watched, metadata_snapshot(self._metadata, watched, self.config.rack_id))
        self._snapshot_matches = self._metadata

    def _on_sync_response(
        self, now_ms: int, sent: InFlight, resp: SyncGroupResponse, out: list[OutboundRequest]
    ) -> None:
        if self._phase is Phase.UNJOINED and sent.attempt == self._resume_on_sync:
            # Kafka: the heartbeat thread reset the generation before this answer; the SyncGroup fails
            # (a successful answer as ILLEGAL_GENERATION) and the member rejoins at once.
            self._rebalance_failed(_sync_exception(resp))
            self._begin_rebalance(now_ms, out)
            return
        if self._phase is not Phase.SYNCING or sent.attempt != self._attempt:
            return
        error = resp.error_code
        if error is ErrorCode.NONE:
            inconsistent = _inconsistent_protocol(resp, self._generation.protocol)
            if inconsistent is not None:
                self._join_failed(
                    JoinFailed(
                        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                        inconsistent,
                        exception_name(ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
                    )
                )
                return
            try:
                assignment = decode_assignment(resp.assignment)
            except PeerError as bad:
                # Kafka's onJoinComplete throws the SchemaException out of poll() to the application
                # (every later poll() throws it again): the member stops, as for a fatal error
                raise Fatal(ErrorCode.CORRUPT_MESSAGE, f"SyncGroup response: {bad.message}") from None
            self._move(Step.SYNCED)
            self._rejoin_needed = False
            self._rejoin_reason = ""
            self._on_join_complete(now_ms, assignment, out)
        elif error is ErrorCode.REBALANCE_IN_PROGRESS:
            self._rebalance_failed(exception_name(error))
            self._move(Step.SYNC_RETRY)
            self._rejoin_now(now_ms, out, backoff=False)
        elif error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            if self._generation == sent.generation:
                self._reset_generation(
                    f"encountered {error.name} from SYNC_GROUP response", error is ErrorCode.UNKNOWN_MEMBER_ID
                )
                self._rebalance_failed(exception_name(error))
                self._begin_rebalance(now_ms, out)
            else:
                self._rebalance_failed(exception_name(error))
                self._move(Step.SYNC_RETRY)
                self._rejoin_now(now_ms, out, backoff=False)
        elif error in COORDINATOR_MOVED:
            self._mark_coordinator_unknown(now_ms, out)
            self._rebalance_failed(exception_name(error))
            self._move(Step.SYNC_RETRY)
            self._rejoin_now(now_ms, out, backoff=True)
        elif error is ErrorCode.FENCED_INSTANCE_ID:
            self._fenced()
        else:
            # GROUP_AUTHORIZATION_FAILED and unexpected errors: thrown out of poll(), still
            # COMPLETING_REBALANCE (heartbeating); the next poll() joins again
            self._join_failed(JoinFailed(error, f"SyncGroup failed: {error.name}", _sync_exception(resp)))

    def _on_join_complete(
        self, now_ms: int, assignment: ConsumerAssignment, out: list[OutboundRequest]
    ) -> None:
        """Kafka's ``onJoinComplete``: revoke the difference (cooperative), then assign."""
        gen = self._generation
        assignor = self._assignors.get(gen.protocol or "")
        if assignor is None:
            raise Fatal(
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                f"coordinator selected assignor {gen.protocol!r}, which this member did not offer",
            )
        if not self._is_leader:
            self._assignment_snapshot = None
        assigned = set(assignment.partitions)
        subscribed = set(self._topics)
        if any(tp.topic not in subscribed for tp in assigned):
            self._request_rejoin("received assignment does not match the current subscription")
            self._begin_rebalance(now_ms, out)
            return
        owned = set(self._owned)
        if self._protocol is RebalanceProtocol.COOPERATIVE:
            revoked = sorted_partitions(owned - assigned)
            if revoked:
                self._commit_on_revoke(now_ms, revoked, out)
                self._emit(PartitionsRevoked(tuple(revoked), gen.generation_id))
                self._request_rejoin("need to revoke partitions and re-join")
        assignor.on_assignment(assignment.user_data, gen.generation_id)
        self._last_assigned = (tuple(assignment.partitions), gen.generation_id)
        if self.config.enable_auto_commit:
            self._next_auto_commit_at = now_ms + self.config.auto_commit_interval_ms
        self._set_assignment(assigned)
        self._owned_generation = gen.generation_id
        added = sorted_partitions(assigned - owned)
        self._emit(PartitionsAssigned(tuple(added), gen.generation_id))
        self._fetch_pending |= {tp for tp in added if tp not in self._positions}
        self._fetch_retry_at = now_ms
        self._fetch_on_poll = False  # the poll() completing this join fetches (updateFetchPositions)
        self._drive(now_ms, out)
        self._check_rejoin_conditions()
        if self._rejoin_needed:
            self._begin_rebalance(now_ms, out)

    # --- internals: dispatch --------------------------------------------------------------------------

    def _dispatch(self, now_ms: int, sent: InFlight, response: Response, out: list[OutboundRequest]) -> None:
        # (the most frequent answers first)
        if isinstance(response, HeartbeatResponse):
            self._on_heartbeat_response(now_ms, sent, response, out)
        elif isinstance(response, OffsetCommitResponse):
            self._on_commit_response(now_ms, sent, response, out)
        elif isinstance(response, JoinGroupResponse):
            self._on_join_response(now_ms, sent, response, out)
        elif isinstance(response, SyncGroupResponse):
            self._on_sync_response(now_ms, sent, response, out)
        elif isinstance(response, OffsetFetchResponse):
            self._on_fetch_response(now_ms, sent, response, out)
        elif isinstance(response, FindCoordinatorResponse):
            self._on_find_response(now_ms, response)
            if (
                self._coordinator is not None
                and self._poll_wants_join
                and self._rejoin_needed
                and self._phase in (Phase.UNJOINED, Phase.STABLE)
            ):
                self._begin_rebalance(now_ms, out)
            self._drive(now_ms, out)
        # LeaveGroup answers change nothing: leaving is best effort, as in Kafka.

    def _on_find_response(self, now_ms: int, resp: FindCoordinatorResponse) -> None:
        if resp.error_code is ErrorCode.NONE:
            self._coordinator = resp.node_id
            self._session_deadline = now_ms + self.config.session_timeout_ms  # resetSessionTimeout
        else:
            self._find_retry_at = now_ms + self.config.retry_backoff_ms
            if resp.error_code is ErrorCode.GROUP_AUTHORIZATION_FAILED:
                # not retriable: ensureCoordinatorReady throws it out of poll(); the next poll() (or
                # the heartbeat thread, after the backoff) looks the coordinator up again
                self._poll_wants_join = False
                self._throw(resp.error_code, "FindCoordinator failed: GROUP_AUTHORIZATION_FAILED")

    def _on_failure(self, now_ms: int, sent: InFlight, out: list[OutboundRequest]) -> None:
        """A request that will never be answered (disconnect, timeout, coordinator forgotten)."""
        kind = sent.kind
        if kind is Kind.FIND:
            self._find_retry_at = now_ms + self.config.retry_backoff_ms
        elif kind is Kind.JOIN:
            if self._phase is Phase.JOINING and sent.attempt == self._attempt:
                self._rebalance_failed(DISCONNECT)
                self._move(Step.JOIN_RETRY)
                self._join_send_at = now_ms + self.config.retry_backoff_ms
        elif kind is Kind.SYNC:
            if self._phase is Phase.SYNCING and sent.attempt == self._attempt:
                self._rebalance_failed(DISCONNECT)
                self._move(Step.SYNC_RETRY)
                self._join_send_at = now_ms + self.config.retry_backoff_ms
        elif kind is Kind.HEARTBEAT:
            self._next_heartbeat_at = now_ms + self.config.retry_backoff_ms
        elif kind is Kind.COMMIT:
            for tp in sent.offsets:
                if self._commit_sent.get(tp) == sent.offsets[tp]:
                    del self._commit_sent[tp]
            self._emit(CommitFailed(ErrorCode.NETWORK_EXCEPTION, tuple(sorted_partitions(sent.offsets))))
            self._after_commit(now_ms, sent, retriable=True, out=out)
        elif kind is Kind.FETCH:
            self._retry_fetch(now_ms, sent.partitions)


@lru_cache(maxsize=1024)
def _hashset_order(topics: tuple[str, ...]) -> tuple[str, ...]:
    """``topics`` in the order Kafka's ``HashSet`` of them iterates (a group's members send the same
    few subscriptions at every rebalance: each order is worked out once)."""
    return tuple(hashmap_iteration_order(topics))


def _inconsistent_protocol(resp: SyncGroupResponse, protocol: str | None) -> str | None:
    """SyncGroupResponseHandler's protocol checks: what is inconsistent, or ``None``."""
    if resp.protocol_type is not None and resp.protocol_type != PROTOCOL_TYPE:
        return f"SyncGroup answered protocol type {resp.protocol_type!r}"
    if resp.protocol_name is not None and resp.protocol_name != protocol:
        return f"SyncGroup answered protocol {resp.protocol_name!r}, JoinGroup {protocol!r}"
    return None


def _sync_exception(resp: SyncGroupResponse) -> str:
    """The exception a SyncGroup answer fails the join with (``SyncGroupResponseHandler``); a
    successful answer after the generation was reset fails it as ILLEGAL_GENERATION."""
    error = resp.error_code
    if error is ErrorCode.NONE:
        if resp.protocol_type is not None and resp.protocol_type != PROTOCOL_TYPE:
            error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        else:
            error = ErrorCode.ILLEGAL_GENERATION
    if error in SYNC_GROUP_ERRORS:
        return exception_name(error)
    return KAFKA_EXCEPTION


#: the former name of :class:`ClassicConsumerMember`, kept because the README and ``docs/member.md`` named
#: it as public API (deprecated: it did not say which protocol, and read like the coordinator's record of a
#: consumer-protocol member, :class:`kgroup.group.consumer.member.ConsumerGroupMember`)
ConsumerMember = ClassicConsumerMember
