"""A test context in the style of Kafka's ``GroupMetadataManagerTestContext``: a mock clock, a keyed
timer queue fired in deadline order by ``sleep``, and helpers that drive members through the protocol."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from random import Random

from kgroup.group import (
    ClassicGroups,
    CoordinatorConfig,
    CoordinatorResult,
    GroupCoordinator,
    GroupState,
    Record,
    TimerTable,
)
from kgroup.messages import (
    UNKNOWN_MEMBER_ID,
    ConsumerAssignment,
    ConsumerSubscription,
    Envelope,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMember,
    LeaveGroupRequest,
    LeaveGroupResponse,
    Request,
    Response,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kgroup.model import ErrorCode, TopicPartition
from kgroup.wire.consumer_protocol import encode_assignment, encode_subscription

GROUP = "group-id"
TOPIC = "foo"


def protocols(*entries: tuple[str, Sequence[str]]) -> tuple[JoinGroupProtocol, ...]:
    """``protocols(("range", ["foo"]), ("roundrobin", ["foo"]))``"""
    return tuple(
        JoinGroupProtocol(name, encode_subscription(ConsumerSubscription(tuple(topics))))
        for name, topics in entries
    )


DEFAULT_PROTOCOLS = protocols(("range", [TOPIC]))


@dataclass
class Call:
    """A request in flight: ``done`` once the coordinator has answered it."""

    ctx: GroupTestContext
    connection: str
    correlation_id: int

    @property
    def done(self) -> bool:
        return (self.connection, self.correlation_id) in self.ctx.answers

    @property
    def body(self) -> Response:
        key = (self.connection, self.correlation_id)
        assert key in self.ctx.answers, f"request {key} has not been answered"
        return self.ctx.answers[key]

    @property
    def join(self) -> JoinGroupResponse:
        assert isinstance(self.body, JoinGroupResponse)
        return self.body

    @property
    def sync(self) -> SyncGroupResponse:
        assert isinstance(self.body, SyncGroupResponse)
        return self.body


@dataclass
class GroupTestContext:
    config: CoordinatorConfig = field(default_factory=CoordinatorConfig)
    seed: int = 0
    time_ms: int = 0

    def __post_init__(self) -> None:
        self.coordinator = GroupCoordinator(self.config, rng=Random(self.seed))
        self.timers = TimerTable()
        self._correlation = 0
        self.records: list[Record] = []
        self.answers: dict[tuple[str, int], Response] = {}
        self.answer_count: dict[tuple[str, int], int] = {}

    # --- plumbing ---------------------------------------------------------------------------------

    def absorb(self, result: CoordinatorResult) -> None:
        for reply in result.replies:
            key = (reply.connection, reply.correlation_id)
            self.answer_count[key] = self.answer_count.get(key, 0) + 1
            assert self.answer_count[key] == 1, f"request {key} answered twice"
            self.answers[key] = reply.body
        self.timers.apply(result.timers)
        self.records.extend(result.records)
        for task in result.tasks:  # the coordinator's executor, run at once (Kafka's executor.poll())
            self.absorb(self.coordinator.complete(self.time_ms, task, task.run()))

    def send(
        self, body: Request, connection: str = "conn", client_id: str = "consumer", api_version: int = -1
    ) -> Call:
        """Send ``body`` with ``api_version`` (default: the version Kafka 4.0's consumer sends)."""
        self._correlation += 1
        env = Envelope(connection, self._correlation, body, client_id=client_id, api_version=api_version)
        self.absorb(self.coordinator.handle(self.time_ms, env))
        return Call(self, connection, self._correlation)

    def sleep(self, ms: int) -> None:
        """Advance the clock and fire every due timer, earliest first (ties in scheduling order)."""
        self.time_ms += ms
        while (key := self.timers.pop_due(self.time_ms)) is not None:
            self.absorb(self.coordinator.on_timer(self.time_ms, key))

    def sleep_until(self, condition: Callable[[], bool], limit_ms: int = 3_600_000) -> None:
        """Jump from timer deadline to timer deadline until ``condition()`` holds."""
        start = self.time_ms
        while not condition():
            deadline = self.timers.next_deadline()
            assert deadline is not None, "nothing scheduled, and the condition does not hold"
            assert deadline - start <= limit_ms, f"condition not met within {limit_ms} ms"
            self.sleep(max(deadline - self.time_ms, 0))

    def state(self, group_id: str = GROUP) -> GroupState:
        return self.coordinator.kind(ClassicGroups).group(group_id).state

    def generation(self, group_id: str = GROUP) -> int:
        return self.coordinator.kind(ClassicGroups).group(group_id).generation

    def rebuilt(self) -> GroupCoordinator:
        """A fresh coordinator fed every record so far."""
        fresh = GroupCoordinator(self.config, rng=Random(12345))
        for record in self.records:
            fresh.replay(record)
        return fresh

    # --- requests ---------------------------------------------------------------------------------

    def join(
        self,
        member_id: str = UNKNOWN_MEMBER_ID,
        *,
        group_id: str = GROUP,
        instance_id: str | None = None,
        protocols: tuple[JoinGroupProtocol, ...] = DEFAULT_PROTOCOLS,
        session_timeout_ms: int = 10_000,
        rebalance_timeout_ms: int = 5_000,
        connection: str = "conn",
        client_id: str = "consumer",
        protocol_type: str = "consumer",
        api_version: int = -1,
    ) -> Call:
        req = JoinGroupRequest(
            group_id=group_id,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            member_id=member_id,
            protocols=protocols,
            group_instance_id=instance_id,
            protocol_type=protocol_type,
        )
        return self.send(req, connection, client_id, api_version)

    def join_dynamic(self, **kwargs: object) -> Call:
        """A new dynamic member: MEMBER_ID_REQUIRED, then the real join with the id it was given."""
        first = self.join(**kwargs)  # type: ignore[arg-type]
        assert first.join.error_code is ErrorCode.MEMBER_ID_REQUIRED, first.join
        return self.join(first.join.member_id, **kwargs)  # type: ignore[arg-type]

    def join_static(self, instance_id: str, **kwargs: object) -> Call:
        return self.join(instance_id=instance_id, **kwargs)  # type: ignore[arg-type]

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: dict[str, list[TopicPartition]] | None = None,
        *,
        group_id: str = GROUP,
        instance_id: str | None = None,
        connection: str = "conn",
    ) -> Call:
        entries = tuple(
            SyncGroupAssignment(m, encode_assignment(ConsumerAssignment(tuple(parts))))
            for m, parts in (assignments or {}).items()
        )
        req = SyncGroupRequest(group_id, generation, member_id, entries, group_instance_id=instance_id)
        return self.send(req, connection)

    def heartbeat(
        self, member_id: str, generation: int, *, group_id: str = GROUP, instance_id: str | None = None
    ) -> ErrorCode:
        call = self.send(HeartbeatRequest(group_id, generation, member_id, instance_id))
        body = call.body
        assert isinstance(body, HeartbeatResponse)
        return body.error_code

    def leave(self, *members: LeaveGroupMember, group_id: str = GROUP) -> LeaveGroupResponse:
        body = self.send(LeaveGroupRequest(group_id, tuple(members))).body
        assert isinstance(body, LeaveGroupResponse)
        return body

    def join_group_to_stable(
        self, n: int, *, static: bool = False, partitions: int = 6, group_id: str = GROUP, **kwargs: object
    ) -> tuple[list[str], str, int]:
        """n members join (dynamic or static ``instance-i``), wait out the initial delay, the leader
        assigns partitions of ``foo`` round-robin, everyone syncs: (member ids, leader, generation)."""
        calls = []
        for i in range(n):
            if static:
                calls.append(
                    self.join_static(f"instance-{i}", group_id=group_id, connection=f"m{i}", **kwargs)
                )
            else:
                calls.append(self.join_dynamic(group_id=group_id, connection=f"m{i}", **kwargs))
        self.sleep_until(lambda: all(c.done for c in calls))
        responses = [c.join for c in calls]
        assert all(r.error_code is ErrorCode.NONE for r in responses), responses
        member_ids = [r.member_id for r in responses]
        leader = responses[0].leader
        generation = responses[0].generation_id
        leader_response = next(r for r in responses if r.member_id == leader)
        ordered = [m.member_id for m in leader_response.members]
        assignment: dict[str, list[TopicPartition]] = {m: [] for m in ordered}
        for p in range(partitions):
            assignment[ordered[p % len(ordered)]].append(TopicPartition(TOPIC, p))
        syncs = []
        for i, member_id in enumerate(member_ids):
            instance = f"instance-{i}" if static else None
            if member_id == leader:
                syncs.append(
                    self.sync(member_id, generation, assignment, group_id=group_id, instance_id=instance)
                )
            else:
                syncs.append(self.sync(member_id, generation, group_id=group_id, instance_id=instance))
        assert all(s.sync.error_code is ErrorCode.NONE for s in syncs)
        assert self.state(group_id) is GroupState.STABLE
        return member_ids, leader, generation
