"""The consumer-protocol member (KIP-848, ``group.protocol=consumer``) as a pure state machine.

Kafka 4.x's client ``ConsumerMembershipManager`` / ``AbstractMembershipManager`` (states, epochs,
reconciliation, fencing, leaving) and ``ConsumerHeartbeatRequestManager`` (when a heartbeat goes,
what it carries, how each error is handled). The coordinator computes the assignment; the member
resolves topic ids to names through metadata, revokes what it lost first (``onPartitionsRevoked``
as a :class:`~kgroup.member.PartitionsRevoked` event), then takes what it gained, and acknowledges
the reconciled assignment with its next heartbeat, sent at once.

The host drives it as it drives the classic :class:`~kgroup.member.ClassicConsumerMember`:

* :meth:`ConsumerProtocolMember.poll` is the application's ``poll()`` (it resets the
  ``max.poll.interval.ms`` timer, joins after a subscription, rejoins a stale member, and runs the
  reconciliations that may revoke or commit);
* :meth:`~ConsumerProtocolMember.background` at :meth:`~ConsumerProtocolMember.next_wakeup_ms` is
  Kafka's network thread (heartbeats, the poll-timeout leave, retries, auto-commit);
* :meth:`~ConsumerProtocolMember.on_response` / :meth:`~ConsumerProtocolMember.on_request_failed`
  deliver answers; :meth:`~ConsumerProtocolMember.update_metadata` gives topic ids' names (the host
  refreshes metadata when :attr:`~ConsumerProtocolMember.metadata_update_requested` is set).

Rebalance callbacks are events that complete at once (Kafka waits for the application thread to run
them; a host that needs to act before the member goes on drains events after every call).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from kgroup.member.consumer_protocol_config import ConsumerProtocolConfig
from kgroup.member.consumer_protocol_heartbeat import NO_ASSIGNMENT, LocalAssignment, SentFields
from kgroup.member.consumer_protocol_offsets import CommitPurpose, ConsumerProtocolCore, Sent, SentKind
from kgroup.member.consumer_protocol_states import ConsumerMemberState, next_consumer_state
from kgroup.member.core import checked_topics
from kgroup.member.events import LeftGroup, PartitionsAssigned, PartitionsLost, PartitionsRevoked
from kgroup.member.heartbeat_member import HEARTBEAT_FATAL_ERRORS
from kgroup.member.requests import OutboundRequest
from kgroup.messages import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    FindCoordinatorResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    Response,
    TopicPartitions,
)
from kgroup.model import ErrorCode, KgroupError, TopicId, TopicPartition, sorted_partitions

__all__ = ["CONSUMER_PROTOCOL_NOT_SUPPORTED", "ConsumerProtocolMember"]

S = ConsumerMemberState

#: Kafka's ``CONSUMER_PROTOCOL_NOT_SUPPORTED_MSG``, in kgroup's setting name
CONSUMER_PROTOCOL_NOT_SUPPORTED = (
    "the cluster does not support the consumer group protocol (ConsumerGroupHeartbeat); set "
    "group_protocol='classic' until the cluster is upgraded"
)
_FATAL_ERRORS = HEARTBEAT_FATAL_ERRORS | {ErrorCode.FENCED_INSTANCE_ID}
_RESPONSE_OF = {
    SentKind.FIND: FindCoordinatorResponse,
    SentKind.HEARTBEAT: ConsumerGroupHeartbeatResponse,
    SentKind.LEAVE_HEARTBEAT: ConsumerGroupHeartbeatResponse,
    SentKind.COMMIT: OffsetCommitResponse,
    SentKind.FETCH: OffsetFetchResponse,
}

_Partitions = tuple[tuple[TopicId, tuple[int, ...]], ...]


class _Reconciliation:
    """A reconciliation started and not finished (waiting for its commit)."""

    __slots__ = ("added", "assigned", "rejoined", "resolved", "revoked")

    def __init__(
        self,
        resolved: LocalAssignment,
        assigned: frozenset[TopicPartition],
        added: frozenset[TopicPartition],
        revoked: frozenset[TopicPartition],
    ) -> None:
        self.resolved = resolved
        self.assigned = assigned
        self.added = added
        self.revoked = revoked
        self.rejoined = False


class ConsumerProtocolMember(ConsumerProtocolCore):
    """One consumer in a KIP-848 consumer group, driven by its host (see the module docstring).

    ``rng`` draws the member id (unless ``member_id`` is given) and the backoff jitter.
    """

    def __init__(
        self, config: ConsumerProtocolConfig, *, rng: random.Random, member_id: str | None = None
    ) -> None:
        super().__init__(config, rng=rng, member_id=member_id)
        self._topics: tuple[str, ...] = ()
        self._pattern: str | None = None
        self._subscription_updated = False
        self._sent = SentFields()
        self._current = NO_ASSIGNMENT
        self._target = NO_ASSIGNMENT
        self._names_cache: dict[TopicId, str] = {}
        self._topic_names: dict[TopicId, str] = {}
        self._metadata_requested = False
        self._reconciliation: _Reconciliation | None = None
        self._poll_deadline: int | None = None
        self._poll_timer_expired = False
        self._leave_in_progress = False
        self._leave_reason = ""
        self._now = 0

    # --- read-only views -----------------------------------------------------------------------------

    @property
    def subscribed_pattern(self) -> str | None:
        """The RE2J regex the coordinator resolves (``subscribed_topic_regex``), if subscribed by one."""
        return self._pattern

    def target_assignment(self) -> dict[TopicId, tuple[int, ...]]:
        """The last assignment the coordinator sent (by topic id), reconciled or not."""
        return dict(self._target.partitions)

    def current_assignment(self) -> dict[TopicId, tuple[int, ...]]:
        """The assignment reconciled (and acknowledged, or about to be)."""
        return dict(self._current.partitions)

    def pending_revocation(self) -> frozenset[TopicPartition]:
        """The owned partitions a reconciliation in progress will revoke once its commit completes:
        fetching from them is paused meanwhile (Kafka's ``markPendingRevocationToPauseFetching``)."""
        job = self._reconciliation
        if job is None or not job.revoked:
            return frozenset()
        return job.revoked & self._owned

    @property
    def metadata_update_requested(self) -> bool:
        """An assigned topic id has no name yet: the host should refresh metadata (Kafka's
        ``metadata.requestUpdate``); cleared by :meth:`update_metadata`."""
        return self._metadata_requested

    # --- the application's side ---------------------------------------------------------------------

    def subscribe(self, topics: Sequence[str]) -> None:
        """Subscribe to topic names (``onSubscriptionUpdated``): joins at the next :meth:`poll`, or
        sends the new subscription with the next heartbeat if already in the group."""
        self._check_open("subscribe")
        self._topics = checked_topics(topics)
        self._pattern = None
        self._subscription_updated = True

    def subscribe_pattern(self, regex: str) -> None:
        """Subscribe to a regular expression the coordinator resolves (Kafka's ``SubscriptionPattern``,
        RE2J syntax, sent as ``subscribed_topic_regex``); an invalid one fails the member at the first
        heartbeat (INVALID_REGULAR_EXPRESSION), as in Kafka."""
        self._check_open("subscribe_pattern")
        if not isinstance(regex, str) or not regex:
            raise KgroupError("pattern: empty; give a regular expression such as 'orders-.*'")
        self._topics = ()
        self._pattern = regex
        self._subscription_updated = True

    def update_metadata(self, topic_names: Mapping[TopicId, str]) -> None:
        """The cluster's topic ids and their names (from a Metadata answer)."""
        self._topic_names = dict(topic_names)
        self._metadata_requested = False

    def poll(self, now_ms: int) -> list[OutboundRequest]:
        """The application's ``poll()``."""
        self._check_open("poll")
        self._now = now_ms
        out: list[OutboundRequest] = []
        if self._state is S.FATAL:
            return out
        # resetPollTimer: a stale member rejoins once the application polls again
        if self._poll_deadline is not None and now_ms >= self._poll_deadline:
            self._poll_timer_expired = False
            if self._state is S.STALE:
                self._transition_to_joining()
        self._poll_deadline = now_ms + self.config.max_poll_interval_ms
        # onConsumerPoll: a subscription made while out of the group joins now
        if self._subscription_updated:
            self._subscription_updated = False
            if self._state is S.UNSUBSCRIBED:
                self._transition_to_joining()
        if self._fetch_on_poll:
            self._fetch_on_poll = False
            self._fetch_retry_at = now_ms
        self._maybe_reconcile(now_ms, True, out)
        self._drive(now_ms, out)
        return out

    def next_wakeup_ms(self) -> int | None:
        """The earliest time :meth:`background` has something to do (``None``: nothing until an event)."""
        if self._closed or self._state is S.FATAL:
            return None
        now = self._now
        times: list[int] = []
        if self._coordinator is None:
            if self._needs_coordinator() and not self._has_in_flight(SentKind.FIND):
                times.append(max(now, self._find_retry_at))
        elif not self._skip_heartbeat():
            if self._poll_deadline is not None and not self._is_leaving():
                times.append(self._poll_deadline)
            if self._state is S.LEAVING or (self._heartbeat_now() and not self._hb.in_flight):
                times.append(now)
            elif not self._hb.in_flight:
                times.append(self._hb.next_send_ms(now))
        if self._coordinator is not None:
            if self._fetch_pending and not self._fetch_on_poll and not self._has_in_flight(SentKind.FETCH):
                times.append(self._fetch_retry_at)
            if self.config.enable_auto_commit and self._next_auto_commit_at is not None and self._epoch > 0:
                times.append(self._next_auto_commit_at)
        if self._reconcile_commit_retry_at is not None:
            times.append(self._reconcile_commit_retry_at)
        return min(times) if times else None

    def unsubscribe(self, now_ms: int) -> list[OutboundRequest]:
        """``unsubscribe()``: release the assignment (revoke, or lose if fenced) and leave the group."""
        self._check_open("unsubscribe")
        self._now = now_ms
        out: list[OutboundRequest] = []
        self._leave_group("the consumer unsubscribed")
        self._drive(now_ms, out)
        return out

    def close(self, now_ms: int) -> list[OutboundRequest]:
        """``close()``: auto-commit, release the assignment, and leave (epoch -1, or -2 when static)."""
        out: list[OutboundRequest] = []
        if self._closed:
            return out
        self._now = now_ms
        if self._state is not S.FATAL:
            if self.config.enable_auto_commit:
                self._send_commit(self._consumed_offsets(), CommitPurpose.CLOSE, out)
            self._leave_group("the consumer is being closed")
            self._heartbeat_poll(now_ms, out)  # the leave heartbeat, if a coordinator is known
        self._closed = True
        return out

    # --- responses ------------------------------------------------------------------------------------

    def on_response(self, now_ms: int, correlation_id: int, response: Response) -> list[OutboundRequest]:
        self._now = now_ms
        out: list[OutboundRequest] = []
        sent = self._in_flight.pop(correlation_id, None)
        if sent is None:
            return out
        expected = _RESPONSE_OF[sent.kind]
        if not isinstance(response, expected):
            raise KgroupError(
                f"correlation id {correlation_id}: got a {type(response).__name__} for a "
                f"{sent.kind.value} request; deliver each response to the request it answers"
            )
        if isinstance(response, ConsumerGroupHeartbeatResponse):
            if sent.kind is SentKind.HEARTBEAT and not self._closed:
                self._on_heartbeat_response(now_ms, response, out)
        elif isinstance(response, OffsetCommitResponse):
            self._on_commit_response(now_ms, correlation_id, sent, response, out)
        elif isinstance(response, OffsetFetchResponse):
            self._on_fetch_response(now_ms, sent, response, out)
        elif isinstance(response, FindCoordinatorResponse):
            self._on_find_response(now_ms, response)
        return self._drive_unless_closed(now_ms, out)

    def on_request_failed(self, now_ms: int, correlation_id: int) -> list[OutboundRequest]:
        """A request timed out or its connection dropped (a retriable ``DisconnectException``)."""
        self._now = now_ms
        out: list[OutboundRequest] = []
        sent = self._in_flight.pop(correlation_id, None)
        if sent is None:
            return out
        if sent.kind is not SentKind.FIND:
            self._mark_coordinator_unknown(now_ms, out)
        self._on_failure(now_ms, correlation_id, sent, out)
        return self._drive_unless_closed(now_ms, out)

    def on_unsupported(self, now_ms: int, message: str = CONSUMER_PROTOCOL_NOT_SUPPORTED) -> None:
        """The host found no ConsumerGroupHeartbeat version the broker speaks (Kafka's client fails
        building the request: ``UnsupportedVersionException``, fatal)."""
        self._now = now_ms
        self._fatal(ErrorCode.UNSUPPORTED_VERSION, message)

    # --- internals: driving ---------------------------------------------------------------------------

    def _needs_coordinator(self) -> bool:
        return (
            self._state not in (S.UNSUBSCRIBED, S.FATAL, S.STALE) or bool(self._fetch_pending)
        ) and not self._closed

    def _drive(self, now_ms: int, out: list[OutboundRequest]) -> None:
        self._ensure_coordinator(now_ms, out)
        self._heartbeat_poll(now_ms, out)
        self._drive_reconcile_commit(now_ms, out)
        self._maybe_reconcile(now_ms, False, out)  # the membership manager's poll
        if self._coordinator is not None and self._state.in_group:
            self._maybe_auto_commit(now_ms, out)
        self._drive_fetch(now_ms, out)

    def _skip_heartbeat(self) -> bool:
        return self._state in (S.UNSUBSCRIBED, S.FATAL, S.STALE, S.FENCED)

    def _heartbeat_now(self) -> bool:
        return self._state in (S.ACKNOWLEDGING, S.LEAVING, S.JOINING)

    def _is_leaving(self) -> bool:
        return self._state in (S.PREPARE_LEAVING, S.LEAVING)

    def _heartbeat_poll(self, now_ms: int, out: list[OutboundRequest]) -> None:
        """``AbstractHeartbeatRequestManager.poll``."""
        if self._coordinator is None or self._skip_heartbeat():
            self._on_heartbeat_skipped()
            return
        if self._poll_deadline is not None and now_ms >= self._poll_deadline and not self._is_leaving():
            # max.poll.interval.ms expired: leave at once (answer ignored), lose the partitions,
            # and stay STALE until the application polls again
            self._transition_to_sending_leave(due_to_poll_timer=True)
            self._send_heartbeat(now_ms, out, ignore_response=True)
            self._hb.reset()
            self._sent.reset()
            return
        now = self._state is S.LEAVING or (self._heartbeat_now() and not self._hb.in_flight)
        if now or self._hb.can_send(now_ms):
            self._send_heartbeat(now_ms, out, ignore_response=False)

    def _send_heartbeat(self, now_ms: int, out: list[OutboundRequest], *, ignore_response: bool) -> None:
        body = self._build_heartbeat()
        kind = SentKind.LEAVE_HEARTBEAT if ignore_response else SentKind.HEARTBEAT
        self._send(out, body, Sent(kind))
        self._hb.on_send(now_ms)
        self._on_heartbeat_generated()

    def _build_heartbeat(self) -> ConsumerGroupHeartbeatRequest:
        """``HeartbeatState.buildRequestData``: every field when joining, else only what changed."""
        sent = self._sent
        full = self._state is S.JOINING
        config = self.config
        rebalance_timeout = -1
        if full or sent.rebalance_timeout_ms != config.max_poll_interval_ms:
            rebalance_timeout = sent.rebalance_timeout_ms = config.max_poll_interval_ms
        names: tuple[str, ...] | None = None
        sorted_names = tuple(sorted(self._topics))
        if full or sorted_names != sent.topic_names:
            names = self._topics
            sent.topic_names = sorted_names
        regex: str | None = None
        if (full and self._pattern is not None) or self._pattern != sent.pattern:
            regex = self._pattern if self._pattern is not None else ""  # "" removes a pattern
            sent.pattern = self._pattern
        assignor: str | None = None
        if config.remote_assignor is not None and (full or config.remote_assignor != sent.server_assignor):
            assignor = sent.server_assignor = config.remote_assignor
        owned: tuple[TopicPartitions, ...] | None = None
        if full or self._current != sent.assignment:
            owned = tuple(TopicPartitions(tid, parts) for tid, parts in self._current.partitions)
            sent.assignment = self._current
        return ConsumerGroupHeartbeatRequest(
            group_id=config.group_id,
            member_id=self._member_id,
            member_epoch=self._epoch,
            instance_id=config.group_instance_id,
            rack_id=config.rack_id if full else None,
            rebalance_timeout_ms=rebalance_timeout,
            subscribed_topic_names=names,
            subscribed_topic_regex=regex,
            server_assignor=assignor,
            topic_partitions=owned,
        )

    def _on_heartbeat_generated(self) -> None:
        """``onHeartbeatRequestGenerated``: ACKNOWLEDGING and LEAVING end once their heartbeat is out."""
        if self._state is S.ACKNOWLEDGING:
            self._move(S.STABLE if self._target == self._current else S.RECONCILING)
        elif self._state is S.LEAVING:
            if self._poll_timer_expired:
                self._transition_to_stale()
            else:
                self._move(S.UNSUBSCRIBED)

    def _on_heartbeat_skipped(self) -> None:
        """``onHeartbeatRequestSkipped``: a leave that cannot be sent (no coordinator) is done anyway."""
        if self._state is S.LEAVING:
            self._move(S.UNSUBSCRIBED)
            self._complete_leave()

    # --- internals: heartbeat answers -----------------------------------------------------------------

    def _on_heartbeat_response(
        self, now_ms: int, resp: ConsumerGroupHeartbeatResponse, out: list[OutboundRequest]
    ) -> None:
        error = resp.error_code
        if error is ErrorCode.NONE:
            self._hb.on_success(now_ms, resp.heartbeat_interval_ms)
            self._on_heartbeat_success(resp)
            return
        self._sent.reset()
        self._hb.on_failure(now_ms)
        message = resp.error_message or error.name
        if error in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
            self._mark_coordinator_unknown(now_ms, out)
            self._hb.reset()  # the next heartbeat goes as soon as the coordinator is found
        elif error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            pass  # backoff and retry
        elif error is ErrorCode.TOPIC_AUTHORIZATION_FAILED:
            self._throw(error, f"ConsumerGroupHeartbeat failed: {message}")  # the member stays
        elif error in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            self._transition_to_fenced()
            self._hb.reset()  # rejoin at once
        elif error is ErrorCode.INVALID_REGULAR_EXPRESSION:
            self._fatal(error, f"invalid RE2J pattern given to subscribe_pattern: {message}")
        elif error is ErrorCode.GROUP_ID_NOT_FOUND and self._state is S.UNSUBSCRIBED:
            self._on_heartbeat_skipped()
            self._complete_leave()
        elif error is ErrorCode.UNSUPPORTED_VERSION:
            self._fatal(error, CONSUMER_PROTOCOL_NOT_SUPPORTED)
        elif error in _FATAL_ERRORS:
            self._fatal(error, f"ConsumerGroupHeartbeat failed: {message}")
        else:
            self._fatal(error, f"ConsumerGroupHeartbeat failed with an unexpected error: {message}")
        if self._state is S.UNSUBSCRIBED:  # onHeartbeatFailure: a leave's answer completes it
            self._complete_leave()

    def _on_heartbeat_success(self, resp: ConsumerGroupHeartbeatResponse) -> None:
        """``ConsumerMembershipManager.onHeartbeatSuccess``."""
        state = self._state
        if state is S.LEAVING:
            return
        if state is S.UNSUBSCRIBED and resp.member_epoch < 0 and self._complete_leave():
            return
        if not state.in_group:
            return
        if resp.member_epoch < 0:
            self._complete_leave()
            return
        self._epoch = resp.member_epoch
        if resp.assignment is None or not state.can_handle_new_assignment:
            return
        merged: dict[TopicId, set[int]] = {}
        for topic in resp.assignment:
            merged.setdefault(topic.topic_id, set()).update(topic.partitions)
        partitions: _Partitions = tuple(sorted((tid, tuple(sorted(ps))) for tid, ps in merged.items()))
        updated = self._target.update_with(partitions)
        if updated is not None:
            self._target = updated
        if self._target != self._current:
            self._move(S.RECONCILING)
        elif self._state in (S.RECONCILING, S.JOINING):
            self._move(S.STABLE)

    def _on_failure(self, now_ms: int, cid: int, sent: Sent, out: list[OutboundRequest]) -> None:
        kind = sent.kind
        if kind is SentKind.FIND:
            self._find_failed(now_ms)
        elif kind is SentKind.HEARTBEAT:
            self._hb.on_failure(now_ms)
            self._sent.reset()
            if self._state is S.UNSUBSCRIBED:
                self._complete_leave()
        elif kind is SentKind.COMMIT:
            self._commit_failed(now_ms, cid, sent, ErrorCode.NETWORK_EXCEPTION, out)
        elif kind is SentKind.FETCH:
            self._retry_fetch(now_ms, sent.partitions)

    # --- internals: membership transitions ------------------------------------------------------------

    def _move(self, target: ConsumerMemberState) -> None:
        self._state = next_consumer_state(self._state, target)

    def _complete_leave(self) -> bool:
        if not self._leave_in_progress:
            return False
        self._leave_in_progress = False
        return True

    def _transition_to_joining(self) -> None:
        if self._state is S.FATAL:
            return
        if self._reconciliation is not None:
            self._reconciliation.rejoined = True
        self._epoch = JOIN_GROUP_MEMBER_EPOCH
        self._move(S.JOINING)
        self._target = NO_ASSIGNMENT
        self._names_cache.clear()

    def _release_lost(self) -> None:
        """``signalPartitionsLost`` then ``clearAssignment``."""
        owned = sorted_partitions(self._owned)
        if owned:
            self._emit(PartitionsLost(tuple(owned), self._epoch))
        self._clear_assignment()

    def _clear_assignment(self) -> None:
        self._set_owned(frozenset())
        self._current = NO_ASSIGNMENT
        self._target = NO_ASSIGNMENT
        self._names_cache.clear()

    def _transition_to_fenced(self) -> None:
        if self._state is S.PREPARE_LEAVING:
            self._transition_to_sending_leave(due_to_poll_timer=False)
            self._move(S.UNSUBSCRIBED)
            self._complete_leave()
            return
        if self._state is S.LEAVING:
            self._move(S.UNSUBSCRIBED)
            self._complete_leave()
            return
        if self._state is S.UNSUBSCRIBED:
            return
        self._move(S.FENCED)
        self._epoch = JOIN_GROUP_MEMBER_EPOCH
        self._release_lost()
        if self._state is S.FENCED:
            self._transition_to_joining()

    def _fatal(self, error: ErrorCode, reason: str) -> None:
        """``handleFatalFailure``: the error is thrown from ``poll()``, the member goes FATAL."""
        self._throw(error, reason)
        if self._state is S.FATAL:
            return
        previous = self._state
        self._move(S.FATAL)
        if previous is S.UNSUBSCRIBED and self._complete_leave():
            return
        if previous in (S.LEAVING, S.PREPARE_LEAVING):
            self._complete_leave()
            return
        self._release_lost()

    def _leave_group(self, reason: str) -> None:
        """``leaveGroup(runCallbacks=true)``: revoke (or lose, without an epoch), then LEAVING."""
        if not self._state.in_group:
            if self._state is S.FENCED:
                self._clear_assignment()
                self._move(S.UNSUBSCRIBED)
            self._topics = ()
            self._pattern = None
            self._emit(LeftGroup(reason, leave_group_sent=False))
            return
        if self._is_leaving():
            return
        self._move(S.PREPARE_LEAVING)
        self._leave_in_progress = True
        self._leave_reason = reason
        owned = sorted_partitions(self._owned)
        if owned:
            if self._epoch > 0:
                self._emit(PartitionsRevoked(tuple(owned), self._epoch))
            else:
                self._emit(PartitionsLost(tuple(owned), self._epoch))
        self._topics = ()
        self._pattern = None
        self._clear_assignment()
        sent_before = self._coordinator is not None
        self._transition_to_sending_leave(due_to_poll_timer=False)
        self._emit(LeftGroup(reason, leave_group_sent=sent_before))

    def _leave_epoch(self) -> int:
        if self.config.group_instance_id is not None:
            return LEAVE_GROUP_STATIC_MEMBER_EPOCH
        return LEAVE_GROUP_MEMBER_EPOCH

    def _transition_to_sending_leave(self, *, due_to_poll_timer: bool) -> None:
        if self._state in (S.FATAL, S.UNSUBSCRIBED):
            return
        if due_to_poll_timer:
            self._poll_timer_expired = True
            self._move(S.PREPARE_LEAVING)
        self._epoch = self._leave_epoch()
        self._current = NO_ASSIGNMENT
        self._move(S.LEAVING)

    def _transition_to_stale(self) -> None:
        self._move(S.STALE)
        owned = sorted_partitions(self._owned)
        if owned:
            self._emit(PartitionsLost(tuple(owned), self._epoch))
        self._clear_assignment()
        self._emit(LeftGroup("consumer poll timeout has expired.", leave_group_sent=True))

    # --- internals: reconciliation --------------------------------------------------------------------

    def _resolve(self) -> tuple[LocalAssignment, frozenset[TopicPartition]]:
        """The part of the target whose topic names are known (metadata, or topics still assigned);
        a metadata refresh is requested for the rest, which waits."""
        resolved: list[tuple[TopicId, tuple[int, ...]]] = []
        partitions: set[TopicPartition] = set()
        unresolved = False
        for topic_id, parts in self._target.partitions:
            name = self._topic_names.get(topic_id)
            if name is not None:
                self._names_cache[topic_id] = name
            else:
                name = self._names_cache.get(topic_id)
            if name is None:
                unresolved = True
                continue
            resolved.append((topic_id, parts))
            partitions.update(TopicPartition(name, p) for p in parts)
        if unresolved:
            self._metadata_requested = True
        return LocalAssignment(self._target.local_epoch, tuple(resolved)), frozenset(partitions)

    def _maybe_reconcile(self, now_ms: int, can_commit: bool, out: list[OutboundRequest]) -> None:
        """``maybeReconcile``: revocations and auto-commits only from the application's poll()."""
        if (
            self._state is not S.RECONCILING
            or self._target == self._current
            or self._reconciliation is not None
        ):
            return
        resolved, assigned = self._resolve()
        if not self._current.is_none and resolved.partitions == self._current.partitions:
            # only unresolved topics differ: acknowledge the resolved part again (new local epoch)
            self._current = resolved
            self._move(S.ACKNOWLEDGING)
            return
        added = assigned - self._owned
        revoked = self._owned - assigned
        if not can_commit and (self.config.enable_auto_commit or revoked):
            return
        self._reconciliation = _Reconciliation(resolved, assigned, added, revoked)
        if not self._start_reconcile_commit(now_ms, out):
            self._reconcile_commit_done(now_ms, out)

    def _reconcile_commit_done(self, now_ms: int, out: list[OutboundRequest]) -> None:
        """The pre-reconciliation commit finished (or was not needed): revoke, then assign."""
        self._reconcile_commit = None
        self._reconcile_commit_retry_at = None
        job = self._reconciliation
        if job is None:
            return
        if self._aborted(job):
            return
        revoked = sorted_partitions(job.revoked & self._owned)
        if revoked:
            self._emit(PartitionsRevoked(tuple(revoked), self._epoch))
            self._set_owned(self._owned - frozenset(revoked))
        if self._aborted(job):
            return
        self._set_owned(job.assigned)
        self._emit(PartitionsAssigned(tuple(sorted_partitions(job.added)), self._epoch))
        names = {tp.topic for tp in job.assigned}
        self._names_cache = {tid: name for tid, name in self._names_cache.items() if name in names}
        self._fetch_pending |= {tp for tp in job.added if tp not in self._positions}
        self._fetch_retry_at = now_ms
        self._current = job.resolved
        if self.config.enable_auto_commit:
            self._next_auto_commit_at = now_ms + self.config.auto_commit_interval_ms
        self._move(S.ACKNOWLEDGING)
        self._reconciliation = None

    def _aborted(self, job: _Reconciliation) -> bool:
        """``maybeAbortReconciliation``: the member left RECONCILING or rejoined meanwhile."""
        if self._state is not S.RECONCILING or job.rejoined:
            self._reconciliation = None
            return True
        return False
