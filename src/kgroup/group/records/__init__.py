"""Records: every change to the coordinator's state, in the order it happened.

:meth:`GroupCoordinator.replay` is the only code that changes state, and it does so only by applying
these records; the handlers decide, emit records, and read the state the records produced. So a
coordinator rebuilt by replaying a log equals the one that wrote it — including the transient parts of
a rebalance (parked requests, pending members, armed timers).

Kafka persists less: one ``GroupMetadata`` record per completed rebalance plus ``OffsetCommit``
records; its in-flight rebalance state lives only in memory. kgroup's log is a finer-grained superset
(documented in ``docs/coordinator.md``).
"""

from __future__ import annotations

from kgroup.group.records.consumer import ConsumerGroupRecord
from kgroup.group.records.share import ShareGroupRecord
from kgroup.group.states import GroupState
from kgroup.group.timers import TimerKey
from kgroup.messages import JoinGroupProtocol
from kgroup.model import TopicPartition
from kgroup.valuetypes import value_type

__all__ = [
    "ClassicGroupMember",
    "GenerationStarted",
    "GroupCreated",
    "GroupDeleted",
    "GroupLeaderChanged",
    "GroupProtocolTypeChanged",
    "GroupRecord",
    "GroupRestored",
    "GroupStateChanged",
    "InitialDelayUpdated",
    "MemberRemoved",
    "MemberUpserted",
    "OffsetAndMetadata",
    "OffsetCommitted",
    "Parked",
    "PendingMemberAdded",
    "PendingMemberRemoved",
    "PendingSyncMemberRemoved",
    "PendingSyncMembersSet",
    "Record",
    "StaticMemberReplaced",
    "TimerArmed",
    "TimerDisarmed",
    "TxnOffsetCommitted",
    "TxnOffsetsEnded",
]


@value_type
class Parked:
    """A JoinGroup or SyncGroup waiting for its answer: where to send it when it comes."""

    connection: str
    correlation_id: int


@value_type
class ClassicGroupMember:
    """One member of a classic group (Kafka's ``ClassicGroupMember``)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[JoinGroupProtocol, ...]
    assignment: bytes = b""  # the leader's bytes for this member (opaque to the coordinator)
    awaiting_join: Parked | None = None
    awaiting_sync: Parked | None = None
    #: joined in the current rebalance and not yet answered: its session timer is the long
    #: new-member join timeout and it may expire even while waiting
    is_new: bool = False

    def metadata(self, protocol_name: str) -> bytes:
        """The metadata bytes the member sent for ``protocol_name`` (its first protocol of that name)."""
        for protocol in self.protocols:
            if protocol.name == protocol_name:
                return protocol.metadata
        raise AssertionError(f"member {self.member_id} does not support protocol {protocol_name!r}")

    def vote(self, candidates: frozenset[str]) -> str:
        """Its most preferred protocol among ``candidates`` (``ClassicGroupMember.vote``)."""
        for protocol in self.protocols:
            if protocol.name in candidates:
                return protocol.name
        raise AssertionError(f"member {self.member_id} supports none of {sorted(candidates)}")


@value_type
class OffsetAndMetadata:
    """A committed offset (Kafka's ``OffsetAndMetadata``)."""

    offset: int
    leader_epoch: int
    metadata: str | None
    commit_timestamp_ms: int


# --- group records ---------------------------------------------------------------------------------


@value_type
class GroupCreated:
    group_id: str
    timestamp_ms: int


@value_type
class GroupStateChanged:
    group_id: str
    state: GroupState
    timestamp_ms: int


@value_type
class GenerationStarted:
    """``initNextGeneration``: the new generation id and the protocol chosen for it (None when Empty)."""

    group_id: str
    generation: int
    protocol_name: str | None


@value_type
class GroupLeaderChanged:
    group_id: str
    leader: str | None


@value_type
class GroupProtocolTypeChanged:
    group_id: str
    protocol_type: str | None


@value_type
class MemberUpserted:
    """Put a member (a new id is appended to Java's map order; a known id keeps its place)."""

    group_id: str
    member: ClassicGroupMember


@value_type
class MemberRemoved:
    group_id: str
    member_id: str


@value_type
class StaticMemberReplaced:
    """A static member's new id takes the old one's place (``replaceStaticMember``): the old id leaves
    the map and the new one is put at its bucket's tail. Unlike a removal, the pending-join and
    pending-sync sets are not touched (Kafka leaves the old id in them)."""

    group_id: str
    old_member_id: str
    member: ClassicGroupMember


@value_type
class PendingMemberAdded:
    """A member id handed out with MEMBER_ID_REQUIRED, not yet joined (KIP-394)."""

    group_id: str
    member_id: str


@value_type
class PendingMemberRemoved:
    group_id: str
    member_id: str


@value_type
class PendingSyncMembersSet:
    """The members of the current generation that have not sent SyncGroup yet."""

    group_id: str
    member_ids: tuple[str, ...]


@value_type
class PendingSyncMemberRemoved:
    """One member of the current generation sent its SyncGroup."""

    group_id: str
    member_id: str


@value_type
class InitialDelayUpdated:
    """The initial-rebalance delay's progress: whether a member joined since the delay was armed, and the
    (delay, remaining) pair the armed join timer carries (None when the join timer is a plain one)."""

    group_id: str
    new_member_added: bool
    delay_ms: int | None
    remaining_ms: int | None


@value_type
class OffsetCommitted:
    group_id: str
    partition: TopicPartition
    value: OffsetAndMetadata


@value_type
class TxnOffsetCommitted:
    """An offset committed inside producer ``producer_id``'s transaction (TxnOffsetCommit): pending
    until the transaction ends (:class:`TxnOffsetsEnded`), never read by OffsetFetch before."""

    group_id: str
    producer_id: int
    producer_epoch: int
    partition: TopicPartition
    value: OffsetAndMetadata


@value_type
class TxnOffsetsEnded:
    """Producer ``producer_id``'s transaction ended (its marker reached the group's ``__consumer_offsets``
    partition): its pending offsets of the group are committed (``committed``) or dropped."""

    group_id: str
    producer_id: int
    committed: bool


@value_type
class GroupDeleted:
    """Tombstone: the group and its offsets are gone."""

    group_id: str


@value_type
class GroupRestored:
    """A whole group, as a checkpoint of the coordinator's log writes it (never a handler).

    Replaying it makes the group exactly what it was — the Java map order of its members included
    (``members`` in insertion order, ``member_capacity`` the map's table size) — so that the records
    after the checkpoint replay onto it as they did onto the original. Its offsets follow as
    :class:`OffsetCommitted` records, the coordinator's armed timers as :class:`TimerArmed`.
    """

    group_id: str
    state: GroupState
    previous_state: GroupState
    state_timestamp_ms: int
    generation: int
    protocol_type: str | None
    protocol_name: str | None
    leader: str | None
    members: tuple[ClassicGroupMember, ...]
    member_capacity: int
    pending_join: tuple[str, ...]
    pending_sync: tuple[str, ...]
    new_member_added: bool
    initial_delay: tuple[int, int] | None


# --- timers ----------------------------------------------------------------------------------------


@value_type
class TimerArmed:
    key: TimerKey
    deadline_ms: int

    @property
    def group_id(self) -> str:
        """Its timer's group (every record names the group it changes)."""
        return self.key.group_id


@value_type
class TimerDisarmed:
    key: TimerKey

    @property
    def group_id(self) -> str:
        """Its timer's group (every record names the group it changes)."""
        return self.key.group_id


#: records that change one existing group's state (``ClassicGroup.apply``)
GroupRecord = (
    GroupStateChanged
    | GenerationStarted
    | GroupLeaderChanged
    | GroupProtocolTypeChanged
    | MemberUpserted
    | MemberRemoved
    | StaticMemberReplaced
    | PendingMemberAdded
    | PendingMemberRemoved
    | PendingSyncMembersSet
    | PendingSyncMemberRemoved
    | InitialDelayUpdated
    | OffsetCommitted
)
#: every record the coordinator writes (GroupRestored only in a checkpoint of its log); consumer groups
#: (KIP-848) write Kafka's own record types
Record = (
    GroupCreated
    | GroupRecord
    | GroupDeleted
    | TimerArmed
    | TimerDisarmed
    | GroupRestored
    | ConsumerGroupRecord
    | ShareGroupRecord
    | TxnOffsetCommitted
    | TxnOffsetsEnded
)
