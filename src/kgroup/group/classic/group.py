"""One classic group's state (Kafka's ``ClassicGroup``) and the read-only views given out.

Only :meth:`GroupData.apply` (called by the coordinator's ``replay``) changes a group; everything else
here reads. Members are kept in a dict plus a :class:`JavaHashOrder`, because Kafka iterates its
``HashMap`` of members whenever it picks a leader, counts votes, answers the leader's JoinGroup or
propagates an assignment, and those orders are observable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kgroup.group import records
from kgroup.group.javamap import JavaHashOrder
from kgroup.group.states import GroupState, check_transition
from kgroup.javacompat import hashmap_iteration_order
from kgroup.messages import JoinGroupMember, JoinGroupProtocol, JoinGroupResponse
from kgroup.model import ErrorCode, TopicPartition

__all__ = ["GroupData", "GroupSnapshot", "GroupView"]


@dataclass(frozen=True, slots=True)
class GroupView:
    """A read-only picture of one group, members in Kafka's iteration order."""

    group_id: str
    state: GroupState
    generation: int
    protocol_type: str | None
    protocol: str | None
    leader: str | None
    members: tuple[records.ClassicGroupMember, ...]
    pending_members: frozenset[str]
    pending_sync_members: frozenset[str]
    offsets: tuple[tuple[TopicPartition, records.OffsetAndMetadata], ...]

    @property
    def member_ids(self) -> tuple[str, ...]:
        return tuple(m.member_id for m in self.members)

    @property
    def assignments(self) -> dict[str, bytes]:
        """member id -> the assignment bytes of the last completed SyncGroup (opaque to the coordinator;
        a consumer group's decode with :func:`kgroup.wire.consumer_protocol.decode_assignment`)."""
        return {m.member_id: m.assignment for m in self.members}

    def member(self, member_id: str) -> records.ClassicGroupMember:
        for m in self.members:
            if m.member_id == member_id:
                return m
        raise KeyError(member_id)

    def static_member_id(self, group_instance_id: str) -> str | None:
        for m in self.members:
            if m.group_instance_id == group_instance_id:
                return m.member_id
        return None


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """Everything a group holds, as a comparable value."""

    view: GroupView
    previous_state: GroupState
    state_timestamp_ms: int
    member_order: tuple[int, tuple[str, ...]]
    protocol_counts: tuple[tuple[str, int], ...]
    awaiting_join_count: int
    new_member_added: bool
    initial_delay: tuple[int, int] | None


@dataclass(slots=True)
class GroupData:
    """The mutable state of one group; change it only through :meth:`apply`."""

    group_id: str
    state_timestamp_ms: int
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState = GroupState.DEAD
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str | None = None
    members: dict[str, records.ClassicGroupMember] = field(default_factory=dict)
    order: JavaHashOrder = field(default_factory=JavaHashOrder)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    pending_join: set[str] = field(default_factory=set)
    pending_sync: set[str] = field(default_factory=set)
    new_member_added: bool = False
    initial_delay: tuple[int, int] | None = None  # (delay, remaining) of an armed initial-delay join timer
    offsets: dict[TopicPartition, records.OffsetAndMetadata] = field(default_factory=dict)
    # derived from the members, kept up to date by apply (Kafka's supportedProtocols and
    # numMembersAwaitingJoinResponse): protocol name -> members listing it; members parked in JoinGroup
    protocol_counts: dict[str, int] = field(default_factory=dict)
    awaiting_join_count: int = 0

    def _count(self, member: records.ClassicGroupMember, sign: int) -> None:
        for protocol in member.protocols:
            n = self.protocol_counts.get(protocol.name, 0) + sign
            if n:
                self.protocol_counts[protocol.name] = n
            else:
                del self.protocol_counts[protocol.name]
        if member.awaiting_join is not None:
            self.awaiting_join_count += sign

    # --- replay ---------------------------------------------------------------------------------

    def apply_commits(self, commits: list[records.OffsetCommitted]) -> None:
        """:meth:`apply` for each of ``commits``, in order (what an offset commit changes; one
        call for a whole OffsetCommit request)."""
        offsets = self.offsets
        for record in commits:
            offsets[record.partition] = record.value

    def apply(self, record: records.GroupRecord) -> None:
        # by far the most frequent record: one per committed offset
        if type(record) is records.OffsetCommitted:
            self.offsets[record.partition] = record.value
        elif isinstance(record, records.GroupStateChanged):
            check_transition(self.state, record.state)
            self.previous_state = self.state
            self.state = record.state
            self.state_timestamp_ms = record.timestamp_ms
        elif isinstance(record, records.GenerationStarted):
            self.generation = record.generation
            self.protocol_name = record.protocol_name
        elif isinstance(record, records.GroupLeaderChanged):
            self.leader = record.leader
        elif isinstance(record, records.GroupProtocolTypeChanged):
            self.protocol_type = record.protocol_type
        elif isinstance(record, records.MemberUpserted):
            member = record.member
            old = self.members.get(member.member_id)
            if old is not None:
                self._count(old, -1)
                if old.group_instance_id is not None:
                    self.static_members.pop(old.group_instance_id, None)
            self._count(member, +1)
            self.members[member.member_id] = member
            self.order.put(member.member_id)
            if member.group_instance_id is not None:
                self.static_members[member.group_instance_id] = member.member_id
            self.pending_join.discard(member.member_id)
        elif isinstance(record, records.MemberRemoved):
            removed = self.members.pop(record.member_id, None)
            if removed is not None:
                self._count(removed, -1)
            self.order.remove(record.member_id)
            instance = None if removed is None else removed.group_instance_id
            if instance is not None and self.static_members.get(instance) == record.member_id:
                del self.static_members[instance]
            self.pending_join.discard(record.member_id)
            self.pending_sync.discard(record.member_id)
        elif isinstance(record, records.StaticMemberReplaced):
            old = self.members.pop(record.old_member_id)
            self._count(old, -1)
            self.order.remove(record.old_member_id)
            new = record.member
            self.members[new.member_id] = new
            self._count(new, +1)
            self.order.put(new.member_id)
            if new.group_instance_id is not None:
                self.static_members[new.group_instance_id] = new.member_id
        elif isinstance(record, records.PendingMemberAdded):
            self.pending_join.add(record.member_id)
        elif isinstance(record, records.PendingMemberRemoved):
            self.pending_join.discard(record.member_id)
        elif isinstance(record, records.PendingSyncMembersSet):
            self.pending_sync = set(record.member_ids)
        elif isinstance(record, records.PendingSyncMemberRemoved):
            self.pending_sync.discard(record.member_id)
        elif isinstance(record, records.InitialDelayUpdated):
            self.new_member_added = record.new_member_added
            if record.delay_ms is None or record.remaining_ms is None:
                self.initial_delay = None
            else:
                self.initial_delay = (record.delay_ms, record.remaining_ms)
        elif isinstance(record, records.OffsetCommitted):
            self.offsets[record.partition] = record.value
        else:  # pragma: no cover - the union is exhaustive
            raise AssertionError(f"unknown group record {record!r}")

    # --- reads (Kafka's ClassicGroup queries) --------------------------------------------------------

    def in_state(self, *states: GroupState) -> bool:
        return self.state in states

    def all_members(self) -> list[records.ClassicGroupMember]:
        """Members in Java ``HashMap`` iteration order."""
        return [self.members[m] for m in self.order.order()]

    def member(self, member_id: str) -> records.ClassicGroupMember:
        return self.members[member_id]

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader is not None and self.leader == member_id

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_join

    def num_awaiting_join(self) -> int:
        return self.awaiting_join_count

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join() and not self.pending_join

    def rebalance_timeout_ms(self) -> int:
        """The largest rebalance timeout of the members (0 without members)."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def supports_protocols(self, protocol_type: str, protocols: tuple[JoinGroupProtocol, ...]) -> bool:
        """Whether a member with these protocols may join (``ClassicGroup.supportsProtocols``).

        An Empty group takes any non-empty type and list; otherwise the type must match and one of
        the protocols must be supported by every current member (a rejoining member counts itself).
        """
        names = {p.name for p in protocols}
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        counts = self.protocol_counts
        return self.protocol_type == protocol_type and any(
            counts.get(name, 0) == len(self.members) for name in names
        )

    def select_protocol(self) -> str:
        """The protocol every member supports with the most votes; ties go to the first in Java's
        ``HashMap<String, Integer>`` order of the votes (``Stream.max`` keeps the first maximum)."""
        if not self.members:
            raise AssertionError(f"cannot select a protocol for empty group {self.group_id}")
        counts = self.protocol_counts
        candidates = frozenset(name for name, n in counts.items() if n == len(self.members))
        votes: dict[str, int] = {}
        for member in self.all_members():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        best: str | None = None
        for name in hashmap_iteration_order(votes):
            if best is None or votes[name] > votes[best]:
                best = name
        assert best is not None
        return best

    def validate_member(self, member_id: str, group_instance_id: str | None) -> ErrorCode | None:
        """``ClassicGroup.validateMember``: FENCED_INSTANCE_ID / UNKNOWN_MEMBER_ID or None if valid."""
        if group_instance_id is not None:
            existing = self.static_members.get(group_instance_id)
            if existing is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if existing != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    def validate_generation(
        self, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> ErrorCode | None:
        """What SyncGroup and Heartbeat check first, in Kafka's order: a Dead group answers
        COORDINATOR_NOT_AVAILABLE, then :meth:`validate_member`, then ILLEGAL_GENERATION."""
        if self.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = self.validate_member(member_id, group_instance_id)
        if error is not None:
            return error
        if generation_id != self.generation:
            return ErrorCode.ILLEGAL_GENERATION
        return None

    def join_response_members(self) -> tuple[JoinGroupMember, ...]:
        """The member list the leader gets (``currentClassicGroupMembers``), in HashMap order."""
        if self.state in (GroupState.DEAD, GroupState.PREPARING_REBALANCE) or self.protocol_name is None:
            raise AssertionError(f"group {self.group_id} has no member metadata to give in {self.state}")
        protocol = self.protocol_name
        return tuple(
            JoinGroupMember(m.member_id, m.metadata(protocol), m.group_instance_id)
            for m in self.all_members()
        )

    def join_response(
        self, member_id: str, *, with_members: bool = True, skip_assignment: bool = False
    ) -> JoinGroupResponse:
        """JoinGroup's answer of the current generation to ``member_id``: the member list goes to the
        leader only (``with_members``), and a returning leader may be told to ``skip_assignment``."""
        return JoinGroupResponse(
            error_code=ErrorCode.NONE,
            generation_id=self.generation,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name,
            leader=self.leader or "",
            skip_assignment=skip_assignment,
            member_id=member_id,
            members=self.join_response_members() if with_members and self.is_leader(member_id) else (),
        )

    # --- views ------------------------------------------------------------------------------------

    def view(self) -> GroupView:
        return GroupView(
            group_id=self.group_id,
            state=self.state,
            generation=self.generation,
            protocol_type=self.protocol_type,
            protocol=self.protocol_name,
            leader=self.leader,
            members=tuple(self.all_members()),
            pending_members=frozenset(self.pending_join),
            pending_sync_members=frozenset(self.pending_sync),
            offsets=tuple(sorted(self.offsets.items(), key=lambda kv: kv[0].java_key())),
        )

    # --- checkpoints ------------------------------------------------------------------------------

    def restored_record(self) -> records.GroupRestored:
        """This group as one record (its offsets are not in it: they are records of their own)."""
        return records.GroupRestored(
            group_id=self.group_id,
            state=self.state,
            previous_state=self.previous_state,
            state_timestamp_ms=self.state_timestamp_ms,
            generation=self.generation,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name,
            leader=self.leader,
            members=tuple(self.members[m] for m in self.order.insertion_order()),
            member_capacity=self.order.capacity,
            pending_join=tuple(sorted(self.pending_join)),
            pending_sync=tuple(sorted(self.pending_sync)),
            new_member_added=self.new_member_added,
            initial_delay=self.initial_delay,
        )

    @classmethod
    def from_restored(cls, record: records.GroupRestored) -> GroupData:
        group = cls(
            group_id=record.group_id,
            state_timestamp_ms=record.state_timestamp_ms,
            state=record.state,
            previous_state=record.previous_state,
            generation=record.generation,
            protocol_type=record.protocol_type,
            protocol_name=record.protocol_name,
            leader=record.leader,
            order=JavaHashOrder.restored(record.member_capacity, tuple(m.member_id for m in record.members)),
            pending_join=set(record.pending_join),
            pending_sync=set(record.pending_sync),
            new_member_added=record.new_member_added,
            initial_delay=record.initial_delay,
        )
        for member in record.members:
            group.members[member.member_id] = member
            group._count(member, +1)
            if member.group_instance_id is not None:
                group.static_members[member.group_instance_id] = member.member_id
        return group

    def snapshot(self) -> GroupSnapshot:
        return GroupSnapshot(
            view=self.view(),
            previous_state=self.previous_state,
            state_timestamp_ms=self.state_timestamp_ms,
            member_order=self.order.state(),
            protocol_counts=tuple(sorted(self.protocol_counts.items())),
            awaiting_join_count=self.awaiting_join_count,
            new_member_added=self.new_member_added,
            initial_delay=self.initial_delay,
        )
