"""Hypothesis stateful test: random clients join (dynamic and static, including a duplicate static
instance; each syncs as soon as its join completes), heartbeat (sometimes with a stale generation),
commit, leave and crash while time jumps and the coordinator is now and then rebuilt from its
records; after every step the invariants below must hold."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from group.context import GROUP, TOPIC, Call, GroupTestContext
from kgroup.group import ALLOWED_PREVIOUS_STATES, ClassicGroups, GroupState, GroupStateChanged
from kgroup.messages import (
    UNKNOWN_MEMBER_ID,
    JoinGroupResponse,
    LeaveGroupMember,
    OffsetCommitPartition,
    OffsetCommitRequest,
    SyncGroupResponse,
)
from kgroup.model import ErrorCode, TopicPartition
from kgroup.wire.consumer_protocol import decode_assignment

PARTITIONS = [TopicPartition(TOPIC, p) for p in range(5)]
# three dynamic clients, and static clients where two processes share instance "s0" (fencing)
INSTANCES: list[str | None] = [None, None, None, "s0", "s0", "s1"]
SESSION_MS = 6000
REBALANCE_MS = 5000


@dataclass
class Client:
    connection: str
    instance: str | None
    member_id: str = UNKNOWN_MEMBER_ID
    generation: int = -1
    join_call: Call | None = None
    sync_call: Call | None = None
    leader_members: tuple[str, ...] = ()
    is_leader: bool = False

    def reset(self) -> None:
        self.member_id = UNKNOWN_MEMBER_ID
        self.generation = -1
        self.join_call = self.sync_call = None
        self.leader_members = ()
        self.is_leader = False


class CoordinatorMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.ctx = GroupTestContext(seed=4242)
        self.clients = [Client(f"c{i}", inst) for i, inst in enumerate(INSTANCES)]
        self.last_generation = 0
        self.last_state: GroupState | None = None
        self.checked_records = 0

    # --- client bookkeeping -----------------------------------------------------------------------

    def _absorb_answers(self) -> None:
        """Act on answers like a real client: sync right after a successful join (the leader with a
        round-robin assignment of the members it was given), forget ids the group fenced or lost."""
        progress = True
        while progress:
            progress = False
            for c in self.clients:
                progress |= self._absorb_client(c)

    def _absorb_client(self, c: Client) -> bool:
        acted = False
        if c.join_call is not None and c.join_call.done:
            body = c.join_call.body
            assert isinstance(body, JoinGroupResponse)
            c.join_call = None
            if body.error_code is ErrorCode.NONE:
                c.member_id, c.generation = body.member_id, body.generation_id
                c.is_leader = body.leader == body.member_id
                c.leader_members = tuple(m.member_id for m in body.members)
                self._send_sync(c)
                acted = True
            elif body.error_code is not ErrorCode.MEMBER_ID_REQUIRED:
                c.reset()
        if c.sync_call is not None and c.sync_call.done:
            body = c.sync_call.body
            assert isinstance(body, SyncGroupResponse)
            c.sync_call = None
            if body.error_code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
                c.reset()
        return acted

    def _send_sync(self, c: Client) -> None:
        assignment = None
        if c.is_leader and c.leader_members:
            # a round-robin assignor stub over the members the leader was given
            assignment = {m: [] for m in c.leader_members}
            for n, tp in enumerate(PARTITIONS):
                assignment[c.leader_members[n % len(c.leader_members)]].append(tp)
        c.sync_call = self.ctx.sync(
            c.member_id, c.generation, assignment, instance_id=c.instance, connection=c.connection
        )

    def _join(self, c: Client) -> None:
        c.join_call = self.ctx.join(
            c.member_id,
            instance_id=c.instance,
            connection=c.connection,
            session_timeout_ms=SESSION_MS,
            rebalance_timeout_ms=REBALANCE_MS,
        )
        self._absorb_answers()

    # --- rules ----------------------------------------------------------------------------------

    @rule(i=st.integers(0, len(INSTANCES) - 1))
    def join(self, i: int) -> None:
        c = self.clients[i]
        if c.join_call is not None or c.sync_call is not None:
            return
        self._join(c)
        call = c.join_call
        if call is not None and call.done and call.join.error_code is ErrorCode.MEMBER_ID_REQUIRED:
            c.member_id = call.join.member_id
            c.join_call = None
            self._join(c)

    @rule(i=st.integers(0, len(INSTANCES) - 1), stale=st.booleans())
    def heartbeat(self, i: int, stale: bool) -> None:
        c = self.clients[i]
        if c.member_id == UNKNOWN_MEMBER_ID or c.join_call is not None:
            return
        error = self.ctx.heartbeat(c.member_id, c.generation - int(stale), instance_id=c.instance)
        if error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            c.reset()
        elif error is ErrorCode.ILLEGAL_GENERATION and not stale:
            c.generation = -1
        self._absorb_answers()

    @rule(i=st.integers(0, len(INSTANCES) - 1), stale=st.booleans())
    def commit(self, i: int, stale: bool) -> None:
        c = self.clients[i]
        offsets = (OffsetCommitPartition(PARTITIONS[i % len(PARTITIONS)], 100 + i),)
        request = OffsetCommitRequest(GROUP, c.generation - int(stale), c.member_id, offsets, c.instance)
        self.ctx.send(request, connection=c.connection)
        self._absorb_answers()

    @rule(i=st.integers(0, len(INSTANCES) - 1))
    def leave(self, i: int) -> None:
        c = self.clients[i]
        if c.member_id == UNKNOWN_MEMBER_ID or c.join_call is not None or c.sync_call is not None:
            return
        self.ctx.leave(LeaveGroupMember(c.member_id, c.instance))
        c.reset()
        self._absorb_answers()

    @rule(i=st.integers(0, len(INSTANCES) - 1))
    def crash(self, i: int) -> None:
        """The process dies: it stops heartbeating and forgets its id (a restart joins afresh)."""
        c = self.clients[i]
        if c.join_call is None and c.sync_call is None:
            c.reset()

    @rule()
    def rebuild_from_records(self) -> None:
        """Swap the coordinator for one rebuilt from the record log (as after a broker restart that
        kept its log): the run goes on against the rebuilt one, with the host's timers as they were."""
        rebuilt = self.ctx.rebuilt()
        assert {t.key: t.deadline_ms for t in rebuilt.armed_timers()} == {
            k: d for k, d in self.ctx.timers.armed().items()
        }
        self.ctx.coordinator = rebuilt

    @rule(ms=st.sampled_from([1, 500, 2999, 3000, 4999, 5000, 6000, 12_000]))
    def sleep(self, ms: int) -> None:
        self.ctx.sleep(ms)
        self._absorb_answers()

    # --- invariants -------------------------------------------------------------------------------

    @invariant()
    def transitions_follow_the_table(self) -> None:
        for record in self.ctx.records[self.checked_records :]:
            if isinstance(record, GroupStateChanged):
                previous = self.last_state or GroupState.EMPTY
                assert previous in ALLOWED_PREVIOUS_STATES[record.state], (previous, record.state)
                self.last_state = record.state
        self.checked_records = len(self.ctx.records)
        if self.ctx.coordinator.has_group(GROUP):
            assert self.ctx.state() is (self.last_state or GroupState.EMPTY)

    @invariant()
    def generations_only_rise(self) -> None:
        if self.ctx.coordinator.has_group(GROUP):
            generation = self.ctx.generation()
            assert generation >= self.last_generation
            self.last_generation = generation

    @invariant()
    def no_partition_has_two_owners(self) -> None:
        if not self.ctx.coordinator.has_group(GROUP):
            return
        owned = [
            tp
            for raw in self.ctx.coordinator.kind(ClassicGroups).group(GROUP).assignments.values()
            for tp in decode_assignment(raw).partitions
        ]
        assert len(owned) == len(set(owned)), owned

    @invariant()
    def stable_assignment_covers_every_partition(self) -> None:
        if self.ctx.coordinator.has_group(GROUP) and self.ctx.state() is GroupState.STABLE:
            owned = {
                tp
                for raw in self.ctx.coordinator.kind(ClassicGroups).group(GROUP).assignments.values()
                for tp in decode_assignment(raw).partitions
            }
            assert owned == set(PARTITIONS)

    @invariant()
    def replay_rebuilds_the_same_state(self) -> None:
        assert self.ctx.rebuilt().snapshot() == self.ctx.coordinator.snapshot()


CoordinatorMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
TestCoordinatorMachine = CoordinatorMachine.TestCase
