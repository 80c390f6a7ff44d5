"""A share-group member (KIP-932) as a pure state machine: Kafka 4.4's ``ShareMembershipManager`` and
``ShareHeartbeatRequestManager``.

A share member chooses its own member id (a random ``Uuid``, as a share consumer does), joins with
``ShareGroupHeartbeat`` at epoch 0 carrying its subscription, takes the partitions the coordinator's
``simple`` assignor gives it (nothing is revoked in a share group: an assignment is only where the
member fetches from), heartbeats every ``heartbeat_interval_ms`` the coordinator names, and leaves
with epoch -1. ``FENCED_MEMBER_EPOCH`` / ``UNKNOWN_MEMBER_ID`` drop the assignment and rejoin at epoch 0
with the same id; a lost coordinator is found again (FindCoordinator, key type GROUP); the errors Kafka
treats as fatal stop the member and are raised by the host from every later call.

What the host does (:class:`kgroup.client.ShareConsumer`): it sends the :class:`OutboundRequest`\\ s the
calls return, hands back answers (:meth:`ShareMember.on_response`) and failures
(:meth:`ShareMember.on_request_failed`), calls :meth:`ShareMember.background` at
:meth:`ShareMember.next_wakeup_ms`, gives topic names by id (:meth:`ShareMember.update_metadata`;
``metadata_update_requested`` asks for a refresh), and raises what :meth:`ShareMember.take_error`
returns. No I/O and no clock: every call takes ``now_ms``; randomness (the member id, backoff jitter)
comes from an injected ``random.Random``.

Where kgroup's member is simpler than Kafka's: no ``PREPARE_LEAVING`` step (a share consumer has no
rebalance callbacks to run before leaving, so the leave heartbeat goes at once) and no
``max.poll.interval.ms`` timer (the host's ``poll`` drives fetching, not membership).
"""

from __future__ import annotations

import enum
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kgroup.member.core import checked_topics
from kgroup.member.heartbeat_member import HEARTBEAT_FATAL_ERRORS, HeartbeatMemberBase
from kgroup.member.requests import OutboundRequest
from kgroup.messages import (
    SHARE_LEAVE_GROUP_MEMBER_EPOCH,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    Response,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from kgroup.model import ErrorCode, KgroupError, TopicId, TopicPartition

__all__ = [
    "SHARE_PROTOCOL_NOT_SUPPORTED",
    "ShareMember",
    "ShareMemberConfig",
    "ShareMemberError",
    "ShareMemberState",
]

#: Kafka's ``ShareHeartbeatRequestManager.SHARE_PROTOCOL_NOT_SUPPORTED_MSG``
SHARE_PROTOCOL_NOT_SUPPORTED = (
    "The cluster does not support the share group protocol. To use share groups, the cluster must have "
    "the share group protocol enabled."
)
_JOIN_EPOCH = 0


class ShareMemberState(enum.Enum):
    """Kafka's ``MemberState`` as a share member uses it."""

    UNSUBSCRIBED = "unsubscribed"  # not subscribed, or left
    JOINING = "joining"  # heartbeating at epoch 0 until an epoch comes back
    RECONCILING = "reconciling"  # an assignment arrived whose topic names are not all known yet
    ACKNOWLEDGING = "acknowledging"  # reconciled: the next heartbeat goes at once
    STABLE = "stable"
    FENCED = "fenced"  # passing through: the assignment is dropped and the member rejoins
    LEAVING = "leaving"  # the next heartbeat carries epoch -1
    FATAL = "fatal"


S = ShareMemberState
_IN_GROUP = frozenset({S.JOINING, S.RECONCILING, S.ACKNOWLEDGING, S.STABLE})


@dataclass(frozen=True, slots=True)
class ShareMemberConfig:
    """``group.id``, ``client.rack``, ``retry.backoff.ms`` and ``retry.backoff.max.ms`` of a share
    consumer (Kafka's defaults)."""

    group_id: str
    rack_id: str | None = None
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1000

    def __post_init__(self) -> None:
        if not isinstance(self.group_id, str) or not self.group_id.strip():
            raise KgroupError("group_id: empty; give the share group's id (Kafka's group.id)")
        if self.retry_backoff_ms < 0 or self.retry_backoff_max_ms < self.retry_backoff_ms:
            raise KgroupError(
                "retry_backoff_ms / retry_backoff_max_ms: give 0 <= retry_backoff_ms <= retry_backoff_max_ms"
            )


@dataclass(frozen=True, slots=True)
class ShareMemberError:
    """An error for the host to raise: ``fatal`` ones stop the member (raised from every later call)."""

    error: ErrorCode
    message: str
    fatal: bool


class ShareMember(HeartbeatMemberBase):
    """One share consumer's membership (see the module docstring)."""

    def __init__(
        self, config: ShareMemberConfig, *, rng: random.Random, member_id: str | None = None
    ) -> None:
        self.config = config
        self._init_heartbeating(config.retry_backoff_ms, config.retry_backoff_max_ms, rng, member_id)
        self._epoch = _JOIN_EPOCH
        self._state = S.UNSUBSCRIBED
        self._topics: tuple[str, ...] = ()
        self._subscription_changed = False
        self._sent_rack: str | None = None
        self._sent_rack_known = False
        self._sent_topics: tuple[str, ...] | None = None
        self._find_in_flight: int | None = None
        self._heartbeat_in_flight: int | None = None
        self._leave_in_flight: int | None = None
        self._next_cid = 0
        self._target: dict[TopicId, tuple[int, ...]] | None = None
        self._assignment: frozenset[TopicPartition] = frozenset()
        self._topic_names: dict[TopicId, str] = {}
        self._metadata_requested = False
        self._errors: list[ShareMemberError] = []
        self._fatal: ShareMemberError | None = None
        self._left = False
        self._closed = False
        self._now = 0

    # --- views ---------------------------------------------------------------------------------------

    @property
    def state(self) -> ShareMemberState:
        return self._state

    @property
    def coordinator(self) -> int | None:
        return self._coordinator

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions to fetch from (the coordinator's last assignment whose names are known)."""
        return self._assignment

    def assigned_ids(self) -> dict[TopicId, tuple[int, ...]]:
        """The coordinator's last assignment by topic id (resolved or not)."""
        return dict(self._target or {})

    @property
    def metadata_update_requested(self) -> bool:
        """An assigned topic id has no name yet: the host should refresh metadata."""
        return self._metadata_requested

    @property
    def left(self) -> bool:
        """The leave heartbeat was answered (or could not be sent): the member is out of the group."""
        return self._left

    @property
    def fatal_error(self) -> ShareMemberError | None:
        return self._fatal

    def take_error(self) -> ShareMemberError | None:
        """The next error to raise to the application (a fatal one stays in :attr:`fatal_error`)."""
        return self._errors.pop(0) if self._errors else None

    # --- the application's side ----------------------------------------------------------------------

    def subscribe(self, topics: Sequence[str]) -> None:
        """``subscribe(topics)``: joins at the next :meth:`poll`, or sends the new subscription with the
        next heartbeat when already in the group."""
        self._check_open("subscribe")
        self._topics = checked_topics(topics)
        self._subscription_changed = True

    def update_metadata(self, topic_names: Mapping[TopicId, str]) -> None:
        """The cluster's topic names by id (from a Metadata answer)."""
        self._topic_names = dict(topic_names)
        self._metadata_requested = False
        self._reconcile()

    def poll(self, now_ms: int) -> list[OutboundRequest]:
        """The application's ``poll()``: a subscription made while out of the group joins now."""
        self._check_open("poll")
        self._now = now_ms
        out: list[OutboundRequest] = []
        if self._subscription_changed:
            self._subscription_changed = False
            if self._state is S.UNSUBSCRIBED and self._topics:
                self._transition_to_joining()
        self._drive(now_ms, out)
        return out

    def next_wakeup_ms(self) -> int | None:
        """The earliest time :meth:`background` has something to do (``None``: nothing until an event)."""
        if self._closed or self._state in (S.FATAL, S.UNSUBSCRIBED):
            return None
        now = self._now
        if self._coordinator is None:
            return None if self._find_in_flight is not None else max(now, self._find_retry_at)
        if self._heartbeat_in_flight is not None:
            return None
        if self._heartbeat_now():
            return now
        return self._hb.next_send_ms(now)

    def close(self, now_ms: int) -> list[OutboundRequest]:
        """``close()``: leave the group (a heartbeat with epoch -1, when a coordinator is known)."""
        self._now = now_ms
        out: list[OutboundRequest] = []
        if self._closed:
            return out
        if self._state in _IN_GROUP:
            self._transition_to_leaving()
            if self._coordinator is not None:
                self._send_heartbeat(now_ms, out, leave=True)
            else:
                self._complete_leave()
        else:
            self._left = True
        self._closed = True
        return out

    # --- answers -------------------------------------------------------------------------------------

    def on_response(self, now_ms: int, correlation_id: int, response: Response) -> list[OutboundRequest]:
        self._now = now_ms
        out: list[OutboundRequest] = []
        if correlation_id == self._find_in_flight:
            if not isinstance(response, FindCoordinatorResponse):
                raise KgroupError(f"correlation id {correlation_id}: a FindCoordinator answer was expected")
            self._find_in_flight = None
            self._on_find(now_ms, response)
        elif correlation_id in (self._heartbeat_in_flight, self._leave_in_flight):
            if not isinstance(response, ShareGroupHeartbeatResponse):
                raise KgroupError(
                    f"correlation id {correlation_id}: a ShareGroupHeartbeat answer was expected"
                )
            if correlation_id == self._leave_in_flight:
                self._leave_in_flight = None
                self._complete_leave()
            else:
                self._heartbeat_in_flight = None
                self._on_heartbeat(now_ms, response)
        else:
            return out
        return self._drive_unless_closed(now_ms, out)

    def on_request_failed(self, now_ms: int, correlation_id: int) -> list[OutboundRequest]:
        """A request timed out or its connection dropped (retriable)."""
        self._now = now_ms
        out: list[OutboundRequest] = []
        if correlation_id == self._find_in_flight:
            self._find_in_flight = None
            self._find_failed(now_ms)
        elif correlation_id == self._heartbeat_in_flight:
            self._heartbeat_in_flight = None
            self._hb.on_failure(now_ms)
            self._reset_sent()
            self._coordinator = None
        elif correlation_id == self._leave_in_flight:
            self._leave_in_flight = None
            self._complete_leave()
        else:
            return out
        return self._drive_unless_closed(now_ms, out)

    def on_unsupported(self, now_ms: int) -> None:
        """The broker speaks no ShareGroupHeartbeat version (Kafka's ``UnsupportedVersionException``)."""
        self._now = now_ms
        self._fail(ErrorCode.UNSUPPORTED_VERSION, SHARE_PROTOCOL_NOT_SUPPORTED)

    # --- internals -----------------------------------------------------------------------------------

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise KgroupError(f"{what}: the share member is closed")

    def _cid(self) -> int:
        self._next_cid += 1
        return self._next_cid

    def _heartbeat_now(self) -> bool:
        return self._state in (S.JOINING, S.ACKNOWLEDGING, S.LEAVING)

    def _drive(self, now_ms: int, out: list[OutboundRequest]) -> None:
        if self._state in (S.FATAL, S.UNSUBSCRIBED):
            return
        if self._coordinator is None:
            if self._find_in_flight is None and now_ms >= self._find_retry_at:
                cid = self._cid()
                self._find_in_flight = cid
                out.append(OutboundRequest(cid, FindCoordinatorRequest(key=self.config.group_id, key_type=0)))
            return
        if self._heartbeat_in_flight is not None:
            return
        # AbstractHeartbeatRequestManager.poll: JOINING and ACKNOWLEDGING heartbeat at once, whatever
        # the interval or the backoff
        if self._heartbeat_now() or self._hb.can_send(now_ms):
            self._send_heartbeat(now_ms, out, leave=False)

    def _send_heartbeat(self, now_ms: int, out: list[OutboundRequest], *, leave: bool) -> None:
        """``HeartbeatState.buildRequestData``: the rack once, the subscription when joining or changed."""
        assert self._coordinator is not None
        rack: str | None = None
        if not self._sent_rack_known:
            rack = self._sent_rack = self.config.rack_id
            self._sent_rack_known = True
        topics: tuple[str, ...] | None = None
        ordered = tuple(sorted(self._topics))
        if not leave and (self._state is S.JOINING or ordered != self._sent_topics):
            topics = self._topics
            self._sent_topics = ordered
        body = ShareGroupHeartbeatRequest(
            group_id=self.config.group_id,
            member_id=self._member_id,
            member_epoch=SHARE_LEAVE_GROUP_MEMBER_EPOCH if leave else self._epoch,
            rack_id=rack,
            subscribed_topic_names=topics,
        )
        cid = self._cid()
        out.append(OutboundRequest(cid, body, self._coordinator))
        if leave:
            self._leave_in_flight = cid
            return
        self._heartbeat_in_flight = cid
        self._hb.on_send(now_ms)
        if self._state is S.ACKNOWLEDGING:  # onHeartbeatRequestGenerated
            self._state = S.STABLE

    def _reset_sent(self) -> None:
        self._sent_rack_known = False
        self._sent_rack = None
        self._sent_topics = None

    def _on_find(self, now_ms: int, response: FindCoordinatorResponse) -> None:
        if not self._on_find_answer(now_ms, response) and (
            response.error_code is ErrorCode.GROUP_AUTHORIZATION_FAILED
        ):
            self._fail(response.error_code, f"Not authorized to access group: {self.config.group_id}")

    def _on_heartbeat(self, now_ms: int, response: ShareGroupHeartbeatResponse) -> None:
        error = response.error_code
        if error is ErrorCode.NONE:
            self._hb.on_success(now_ms, response.heartbeat_interval_ms)
            self._on_heartbeat_success(response)
            return
        self._reset_sent()
        self._hb.on_failure(now_ms)
        message = response.error_message or error.name
        if error in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
            self._coordinator = None
            self._hb.reset()
        elif error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            pass  # backoff, then retry
        elif error in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            self._transition_to_fenced()
            self._hb.reset()
        elif error is ErrorCode.TOPIC_AUTHORIZATION_FAILED:
            self._errors.append(ShareMemberError(error, f"ShareGroupHeartbeat failed: {message}", False))
        elif error is ErrorCode.UNSUPPORTED_VERSION:
            self._fail(error, SHARE_PROTOCOL_NOT_SUPPORTED)
        elif error in HEARTBEAT_FATAL_ERRORS:
            self._fail(error, f"ShareGroupHeartbeat failed: {message}")
        else:
            self._fail(error, f"ShareGroupHeartbeat failed with an unexpected error: {message}")

    def _on_heartbeat_success(self, response: ShareGroupHeartbeatResponse) -> None:
        if self._state not in _IN_GROUP:
            return
        self._epoch = response.member_epoch
        assignment = response.assignment
        if assignment is None:
            if self._state is not S.JOINING:
                return
            # joined without an assignment yet (Kafka's coordinator sends one, maybe empty): nothing
            # to fetch from until a later answer brings it; the heartbeats go at the interval
            assignment = ()
        merged: dict[TopicId, set[int]] = {}
        for topic in assignment:
            merged.setdefault(topic.topic_id, set()).update(topic.partitions)
        target = {tid: tuple(sorted(parts)) for tid, parts in sorted(merged.items())}
        if target == self._target and self._state is S.STABLE:
            return  # the same assignment again: nothing to reconcile (Kafka's LocalAssignment)
        self._target = target
        self._state = S.RECONCILING
        self._reconcile()

    def _reconcile(self) -> None:
        """Resolve the target's topic ids to names; once all are known the assignment is the member's
        and the next heartbeat goes at once (ACKNOWLEDGING)."""
        if self._state is not S.RECONCILING or self._target is None:
            return
        resolved: set[TopicPartition] = set()
        for topic_id, parts in self._target.items():
            name = self._topic_names.get(topic_id)
            if name is None:
                self._metadata_requested = True
                continue
            resolved.update(TopicPartition(name, p) for p in parts)
        if self._metadata_requested and len(resolved) < sum(len(p) for p in self._target.values()):
            # what is known is fetched from now; the rest waits for the metadata refresh
            self._assignment = frozenset(resolved)
            return
        self._assignment = frozenset(resolved)
        self._state = S.ACKNOWLEDGING

    def _transition_to_joining(self) -> None:
        self._epoch = _JOIN_EPOCH
        self._state = S.JOINING
        self._target = None
        self._left = False
        self._reset_sent()

    def _transition_to_fenced(self) -> None:
        """FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: drop the assignment, rejoin with the same id."""
        if self._state is S.LEAVING:
            self._complete_leave()
            return
        if self._state not in _IN_GROUP:
            return
        self._state = S.FENCED
        self._assignment = frozenset()
        self._transition_to_joining()

    def _transition_to_leaving(self) -> None:
        self._state = S.LEAVING
        self._epoch = SHARE_LEAVE_GROUP_MEMBER_EPOCH
        self._assignment = frozenset()
        self._target = None

    def _complete_leave(self) -> None:
        self._left = True
        if self._state is S.LEAVING:
            self._state = S.UNSUBSCRIBED

    def _fail(self, error: ErrorCode, message: str) -> None:
        """``handleFatalFailure``: the member stops; the host raises it from every later call."""
        failure = ShareMemberError(error, message, True)
        self._fatal = failure
        self._errors.append(failure)
        self._state = S.FATAL
        self._assignment = frozenset()
        self._target = None
