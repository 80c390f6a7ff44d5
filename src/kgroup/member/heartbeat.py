"""The consumer member's heartbeat-thread side: heartbeats, the poll-timeout LeaveGroup, and the
errors after which the member stops.

Kafka's ``AbstractCoordinator.HeartbeatThread`` and ``HeartbeatResponseHandler``, ``maybeLeaveGroup``;
:class:`HeartbeatMixin` sits between the offset half (:mod:`kgroup.member.offsets`) and the rebalance
(:class:`~kgroup.member.ClassicConsumerMember`).
"""

from __future__ import annotations

from kgroup.member.errors import truncate_reason
from kgroup.member.events import Fenced, LeftGroup, PartitionsLost
from kgroup.member.offsets import OffsetsMixin
from kgroup.member.requests import COORDINATOR_MOVED, Generation, InFlight, Kind, OutboundRequest
from kgroup.member.states import Phase, Step
from kgroup.messages import HeartbeatRequest, HeartbeatResponse, LeaveGroupMember, LeaveGroupRequest
from kgroup.model import ErrorCode, KgroupError, sorted_partitions

__all__ = ["HeartbeatMixin"]


class HeartbeatMixin(OffsetsMixin):
    """Heartbeats and their answers, leaving on ``max.poll.interval.ms``, and failing for good."""

    def _reset_heartbeat_timers(self, now_ms: int) -> None:
        """Kafka's ``heartbeat.resetTimeouts()`` when the heartbeat thread is enabled."""
        self._session_deadline = now_ms + self.config.session_timeout_ms
        self._poll_deadline = now_ms + self.config.max_poll_interval_ms
        self._next_heartbeat_at = now_ms + self.config.heartbeat_interval_ms

    # --- steady heartbeats, for a host that carries them out in closed form (kgroup.sim.coasting) ----

    def heartbeat_alone_due(self, now_ms: int) -> bool:
        """Whether :meth:`background` at ``now_ms`` would send a heartbeat and do nothing else, in a
        steady member: STABLE with no rejoin asked for, the coordinator known, no OffsetFetch
        pending, the session and the poll timer still running (what is in flight is not looked at:
        a steady member can only have heartbeats and OffsetCommits in flight)."""
        return (
            self._phase is Phase.STABLE
            and not self._rejoin_needed
            and not self._error_pending
            and self._coordinator is not None
            and not self._fetch_pending
            and not self._poll_wants_join
            and self._next_heartbeat_at <= now_ms < min(self._session_deadline, self._poll_deadline)
        )

    def heartbeats_carried_out(self, rounds: int, last_sent_ms: int, last_answered_ms: int) -> None:
        """``rounds`` steady heartbeats — each sent as :meth:`background` sends it while
        :meth:`heartbeat_alone_due`, each answered with no error — the last sent at ``last_sent_ms``
        and answered at ``last_answered_ms``, carried out by the host in closed form: the member is
        left as if it had sent each (:meth:`_send_heartbeat`: a correlation id, the next heartbeat
        an interval after) and been answered (:meth:`_on_heartbeat_response`: the session renewed)."""
        if rounds < 1 or last_answered_ms < last_sent_ms:
            raise KgroupError(
                f"rounds/last_answered_ms: {rounds} rounds answered at {last_answered_ms} ms for one sent at "
                f"{last_sent_ms} ms; give at least one round, answered no earlier than it was sent"
            )
        self._next_correlation += rounds
        self._next_heartbeat_at = last_sent_ms + self.config.heartbeat_interval_ms
        self._session_deadline = last_answered_ms + self.config.session_timeout_ms

    @property
    def session_deadline_ms(self) -> int:
        """When the member gives its coordinator up unless a heartbeat is answered before."""
        return self._session_deadline

    @property
    def poll_deadline_ms(self) -> int:
        """When ``max.poll.interval.ms`` runs out unless the application polls before."""
        return self._poll_deadline

    @property
    def next_correlation_id(self) -> int:
        """The correlation id of the next request this member sends."""
        return self._next_correlation

    def heartbeat_request(self) -> HeartbeatRequest:
        """The Heartbeat the member sends now (its group, generation, member and instance id)."""
        return HeartbeatRequest(
            group_id=self.config.group_id,
            generation_id=self._generation.generation_id,
            member_id=self._generation.member_id,
            group_instance_id=self.config.group_instance_id,
        )

    def _send_heartbeat(self, now_ms: int, out: list[OutboundRequest]) -> None:
        self._next_heartbeat_at = now_ms + self.config.heartbeat_interval_ms
        self._send(out, self.heartbeat_request(), InFlight(Kind.HEARTBEAT, self._generation))

    def _on_heartbeat_response(
        self, now_ms: int, sent: InFlight, resp: HeartbeatResponse, out: list[OutboundRequest]
    ) -> None:
        error = resp.error_code
        if error is ErrorCode.NONE:
            self._session_deadline = now_ms + self.config.session_timeout_ms
        elif error in COORDINATOR_MOVED:
            self._mark_coordinator_unknown(now_ms, out)
            self._next_heartbeat_at = now_ms + self.config.retry_backoff_ms
        elif error is ErrorCode.REBALANCE_IN_PROGRESS:
            # Still a live session: the coordinator keeps the member through the rebalance.
            self._session_deadline = now_ms + self.config.session_timeout_ms
            if self._phase in (Phase.STABLE, Phase.PREPARING):
                self._request_rejoin("group is already rebalancing")
        elif error in (
            ErrorCode.ILLEGAL_GENERATION,
            ErrorCode.UNKNOWN_MEMBER_ID,
            ErrorCode.FENCED_INSTANCE_ID,
        ):
            if self._generation != sent.generation:
                # a stale heartbeat's answer: Kafka ignores the error but completes the heartbeat, so
                # the heartbeat thread's listener restarts the session timer (receiveHeartbeat)
                self._session_deadline = now_ms + self.config.session_timeout_ms
                return
            if error is ErrorCode.FENCED_INSTANCE_ID:
                self._fenced()
                return
            self._next_heartbeat_at = now_ms + self.config.retry_backoff_ms
            if self._phase is not Phase.UNJOINED:
                self._reset_generation(
                    f"encountered {error.name} from HEARTBEAT response", error is ErrorCode.UNKNOWN_MEMBER_ID
                )
        else:
            # GROUP_AUTHORIZATION_FAILED and unexpected errors only fail the heartbeat: the heartbeat
            # thread's listener backs off (failHeartbeat) and heartbeats again; nothing is thrown
            self._next_heartbeat_at = now_ms + self.config.retry_backoff_ms

    def _maybe_leave_group(self, now_ms: int, reason: str, out: list[OutboundRequest]) -> None:
        """Kafka's ``maybeLeaveGroup``: LeaveGroup for dynamic members, and reset either way."""
        sent = self._send_leave_group(now_ms, reason, out)
        self._generation = Generation()
        self._move(Step.LEFT)
        self._request_rejoin("consumer pro-actively leaving the group")  # resetGenerationOnLeaveGroup
        self._emit(LeftGroup(reason, sent))

    def _send_leave_group(self, now_ms: int, reason: str, out: list[OutboundRequest]) -> bool:
        dynamic = self.config.group_instance_id is None
        if (
            dynamic
            and self._coordinator is not None
            and self._phase is not Phase.UNJOINED
            and self._generation.member_id
        ):
            body = LeaveGroupRequest(
                self.config.group_id,
                (LeaveGroupMember(self._generation.member_id, reason=truncate_reason(reason)),),
            )
            self._send(out, body, InFlight(Kind.LEAVE, self._generation))
            return True
        return False

    def _fenced(self) -> None:
        self._emit(Fenced(self.generation, self.member_id, self.config.group_instance_id))
        self._fail(
            ErrorCode.FENCED_INSTANCE_ID, "group.instance.id was fenced by another instance", event=False
        )

    def _fail(self, error: ErrorCode, reason: str, *, event: bool = True) -> None:
        owned = sorted_partitions(self._owned)
        if owned:
            self._emit(PartitionsLost(tuple(owned), self._owned_generation))
            self._set_assignment(set())
        if event:
            self._throw(error, reason)
        self._move(Step.FATAL)
