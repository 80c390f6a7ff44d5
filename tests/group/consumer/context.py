"""A consumer-group test context in the style of Kafka's ``GroupMetadataManagerTestContext``: a mock
clock starting at 1000 ms (Kafka's ``MockTime(0, 1000, 1000)``), a keyed timer queue fired by
``sleep``, a mock server assignor answering what the test prepared (``MockPartitionAssignor``), and a
``ConsumerGroupBuilder`` that replays records."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from random import Random

from kgroup.group import (
    ConsumerGroups,
    CoordinatorConfig,
    CoordinatorResult,
    GroupCoordinator,
    Record,
    TimerArmed,
    TimerDisarmed,
    TimerTable,
)
from kgroup.group.assignors.api import GroupAssignment, GroupSpec, ServerAssignor, SubscribedTopicDescriber
from kgroup.group.consumer.group import ConsumerGroupData
from kgroup.group.consumer.member import ConsumerGroupMember
from kgroup.group.consumer.timers import RebalanceTimer, RegexTimer, SessionTimer
from kgroup.group.metadata import MetadataImage, TopicImage
from kgroup.group.records.consumer import (
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupRegularExpression,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    MemberAssignmentState,
    ResolvedRegularExpression,
    TargetAssignmentMetadataValue,
)
from kgroup.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    Envelope,
    Request,
    Response,
    TopicPartitions,
)
from kgroup.model import TopicId

__all__ = [
    "CLIENT_HOST",
    "CLIENT_ID",
    "ConsumerTestContext",
    "Current",
    "Epoch",
    "MockAssignor",
    "Result",
    "Subscription",
    "Target",
    "TargetMetadata",
    "as_sets",
    "assert_records",
    "assert_unordered_records",
    "assignment",
    "current",
    "epochs",
    "image",
    "member",
    "normalized",
    "owned",
    "subscription",
    "target",
    "target_metadata",
]

#: Kafka's ``DEFAULT_CLIENT_ID`` and ``DEFAULT_CLIENT_ADDRESS.toString()``
CLIENT_ID = "client"
CLIENT_HOST = "localhost/127.0.0.1"
GROUP = "fooup"

S = MemberAssignmentState


def image(*topics: tuple[TopicId, str, int], version: int = 1, racks: bool = False) -> MetadataImage:
    """``MetadataImageBuilder().addTopic(...)``; ``racks``: ``addRacks()`` (partition p on racks
    ``rack{p % 4}`` and ``rack{(p + 1) % 4}``)."""
    return MetadataImage.of(
        [
            TopicImage(
                topic_id,
                name,
                n,
                tuple((f"rack{p % 4}", f"rack{(p + 1) % 4}") for p in range(n)) if racks else (),
            )
            for topic_id, name, n in topics
        ],
        version,
    )


def assignment(*topics: tuple[TopicId, Iterable[int]]) -> dict[TopicId, tuple[int, ...]]:
    """``mkAssignment(mkTopicAssignment(id, p...), ...)``."""
    return {topic: tuple(partitions) for topic, partitions in topics}


def epochs(epoch: int, *topics: tuple[TopicId, Iterable[int]]) -> dict[TopicId, dict[int, int]]:
    """``toAssignmentWithEpochs(mkAssignment(...), epoch)``."""
    return {topic: dict.fromkeys(partitions, epoch) for topic, partitions in topics}


def normalized(record: Record) -> object:
    """A record compared as Kafka's ``assertRecordsEquals`` compares them: partition collections as sets."""
    if isinstance(record, ConsumerGroupTargetAssignmentMember) and record.value is not None:
        return (type(record), record.group_id, record.member_id, _sets(record.value))
    return record


def _sets(value: Mapping[TopicId, Iterable[int]]) -> dict[TopicId, frozenset[int]]:
    return {topic: frozenset(partitions) for topic, partitions in value.items()}


class MockAssignor(ServerAssignor):
    """``MockPartitionAssignor``: answers the assignment the test prepared, whatever the spec."""

    def __init__(self, name: str = "range") -> None:
        self.name = name
        self.prepared: dict[str, dict[TopicId, tuple[int, ...]]] = {}
        self.specs: list[GroupSpec] = []

    def prepare(self, members: Mapping[str, Mapping[TopicId, Iterable[int]]]) -> None:
        self.prepared = {m: {t: tuple(p) for t, p in a.items()} for m, a in members.items()}

    def assign(self, group: GroupSpec, topics: SubscribedTopicDescriber) -> GroupAssignment:
        self.specs.append(group)
        return {m: dict(a) for m, a in self.prepared.items()}


@dataclass
class Result:
    """One call's answer, its consumer-group records (timer records filtered out, as Kafka's
    ``CoordinatorResult.records`` has none) and its raw result."""

    response: Response | None
    records: list[Record]
    raw: CoordinatorResult

    @property
    def heartbeat(self) -> ConsumerGroupHeartbeatResponse:
        assert isinstance(self.response, ConsumerGroupHeartbeatResponse), self.response
        return self.response

    def normalized_records(self) -> list[object]:
        return [normalized(r) for r in self.records]


@dataclass
class ConsumerTestContext:
    metadata: MetadataImage = field(default_factory=MetadataImage)
    config: CoordinatorConfig = field(default_factory=CoordinatorConfig)
    assignors: tuple[ServerAssignor, ...] = ()
    seed: int = 0
    time_ms: int = 1000

    def __post_init__(self) -> None:
        if self.assignors:
            names = tuple(a.name for a in self.assignors)
            self.config = dataclasses.replace(self.config, consumer_assignors=names)
        self.coordinator = GroupCoordinator(self.config, rng=Random(self.seed))
        for assignor in self.assignors:
            # the coordinator's assignors by name, as Kafka's config holds assignor instances
            self.coordinator.kind(ConsumerGroups).ctx.assignors[assignor.name] = assignor
        self.coordinator.set_metadata(self.metadata)
        self.timers = TimerTable()
        self.records: list[Record] = []
        self._correlation = 0

    # --- plumbing -----------------------------------------------------------------------------------

    def absorb(self, result: CoordinatorResult) -> Result:
        self.timers.apply(result.timers)
        self.records.extend(result.records)
        response = result.replies[0].body if result.replies else None
        records = list(result.records)
        for task in result.tasks:  # the coordinator's executor, run at once (Kafka's executor.poll())
            done = self.coordinator.complete(self.time_ms, task, task.run())
            self.timers.apply(done.timers)
            self.records.extend(done.records)
            records.extend(done.records)
        kept = [r for r in records if not isinstance(r, TimerArmed | TimerDisarmed)]
        return Result(response, kept, result)

    def send(self, body: Request, api_version: int = -1) -> Result:
        self._correlation += 1
        env = Envelope(
            "conn",
            self._correlation,
            body,
            client_id=CLIENT_ID,
            client_host=CLIENT_HOST,
            api_version=api_version,
        )
        return self.absorb(self.coordinator.handle(self.time_ms, env))

    def heartbeat(self, api_version: int = 1, /, **fields: object) -> Result:
        fields.setdefault("group_id", GROUP)
        return self.send(ConsumerGroupHeartbeatRequest(**fields), api_version)  # type: ignore[arg-type]

    def replay(self, *records: Record) -> None:
        for record in records:
            self.coordinator.replay(record)
            self.records.append(record)

    def set_metadata(self, metadata: MetadataImage) -> None:
        self.metadata = metadata
        self.coordinator.set_metadata(metadata)

    def sleep(self, ms: int) -> list[tuple[tuple[str, ...], Result]]:
        """Advance the clock and fire every due timer: (key, what it did) for each, in order."""
        self.time_ms += ms
        fired = []
        while (key := self.timers.pop_due(self.time_ms)) is not None:
            fired.append((key, self.absorb(self.coordinator.on_timer(self.time_ms, key))))
        return fired

    def resolve_regexes(self, group_id: str = GROUP) -> Result:
        """Run the group's regex resolution now (Kafka's executor task, ``executor.poll()``)."""
        key = RegexTimer(group_id)
        assert self.deadline(key) == self.time_ms, f"no regex resolution due for {group_id}"
        self.timers.cancel(key)
        return self.absorb(self.coordinator.on_timer(self.time_ms, key))

    # --- reading --------------------------------------------------------------------------------------

    def group(self, group_id: str = GROUP) -> ConsumerGroupData:
        return self.coordinator.kind(ConsumerGroups).ctx.groups[group_id]

    def member(self, member_id: str, group_id: str = GROUP) -> ConsumerGroupMember:
        return self.group(group_id).members[member_id]

    def deadline(self, key: tuple[str, ...]) -> int | None:
        for timer in self.coordinator.armed_timers():
            if timer.key == key:
                return timer.deadline_ms
        return None

    def session_deadline(self, member_id: str, group_id: str = GROUP) -> int | None:
        return self.deadline(SessionTimer(group_id, member_id))

    def rebalance_deadline(self, member_id: str, epoch: int, group_id: str = GROUP) -> int | None:
        return self.deadline(RebalanceTimer(group_id, member_id, epoch))

    def rebalance_timers(self, member_id: str, group_id: str = GROUP) -> list[tuple[str, ...]]:
        return [
            t.key
            for t in self.coordinator.armed_timers()
            if isinstance(t.key, RebalanceTimer)
            and (t.key.group_id, t.key.member_id) == (group_id, member_id)
        ]

    def hash_of(self, *names: str) -> int:
        """``computeGroupHash`` of the named topics (kgroup's hash; only its changes matter)."""
        return self.metadata.group_hash(names)

    # --- ConsumerGroupBuilder -------------------------------------------------------------------------

    def build_group(
        self,
        group_id: str,
        group_epoch: int,
        members: Iterable[ConsumerGroupMember] = (),
        *,
        targets: Mapping[str, Mapping[TopicId, Iterable[int]]] | None = None,
        assignment_epoch: int = 1,
        assignment_timestamp_ms: int = 0,
        metadata_hash: int = 0,
        regexes: Mapping[str, ResolvedRegularExpression] | None = None,
    ) -> None:
        """``ConsumerGroupBuilder.build()`` replayed: subscriptions, regexes, the epoch, targets, the
        target's metadata, current assignments."""
        members = list(members)
        records: list[Record] = [
            ConsumerGroupMemberMetadata(group_id, m.member_id, m.metadata_value()) for m in members
        ]
        for regex, resolved in (regexes or {}).items():
            records.append(ConsumerGroupRegularExpression(group_id, regex, resolved))
        records.append(ConsumerGroupMetadata(group_id, (group_epoch, metadata_hash)))
        for member_id, target in (targets or {}).items():
            records.append(
                ConsumerGroupTargetAssignmentMember(
                    group_id, member_id, {t: tuple(p) for t, p in target.items()}
                )
            )
        records.append(
            ConsumerGroupTargetAssignmentMetadata(
                group_id, TargetAssignmentMetadataValue(assignment_epoch, assignment_timestamp_ms)
            )
        )
        records.extend(
            ConsumerGroupCurrentMemberAssignment(group_id, m.member_id, m.assignment_value()) for m in members
        )
        self.replay(*records)

    def rebuilt(self) -> GroupCoordinator:
        """A fresh coordinator fed every record so far."""
        fresh = GroupCoordinator(self.config, rng=Random(12345))
        for record in self.records:
            fresh.replay(record)
        return fresh


def member(
    member_id: str,
    *,
    state: MemberAssignmentState = S.STABLE,
    epoch: int,
    previous: int,
    names: Iterable[str] = (),
    regex: str | None = "",
    instance_id: str | None = None,
    rack_id: str | None = None,
    rebalance_timeout_ms: int = 5000,
    assignor: str | None = "range",
    assigned: Mapping[TopicId, Mapping[int, int]] | None = None,
    pending: Mapping[TopicId, Mapping[int, int]] | None = None,
) -> ConsumerGroupMember:
    """``new ConsumerGroupMember.Builder(id)...build()`` with the test context's client id and host."""
    return ConsumerGroupMember(
        member_id,
        member_epoch=epoch,
        previous_member_epoch=previous,
        state=state,
        instance_id=instance_id,
        rack_id=rack_id,
        rebalance_timeout_ms=rebalance_timeout_ms,
        client_id=CLIENT_ID,
        client_host=CLIENT_HOST,
        subscribed_topic_names=frozenset(names),
        subscribed_topic_regex=regex,
        server_assignor=assignor,
        assigned_partitions=dict(assigned or {}),
        partitions_pending_revocation=dict(pending or {}),
    )


def owned(*topics: tuple[TopicId, Iterable[int]]) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(t, tuple(p)) for t, p in topics)


def as_sets(partitions: Iterable[TopicPartitions] | None) -> dict[TopicId, frozenset[int]] | None:
    return None if partitions is None else {t.topic_id: frozenset(t.partitions) for t in partitions}


def target(member_id: str, value: Mapping[TopicId, Iterable[int]]) -> Target:
    return Target(GROUP, member_id, {t: tuple(p) for t, p in value.items()})


def subscription(m: ConsumerGroupMember) -> Subscription:
    return Subscription(GROUP, m.member_id, m.metadata_value())


def current(m: ConsumerGroupMember) -> Current:
    return Current(GROUP, m.member_id, m.assignment_value())


def target_metadata(epoch: int, timestamp_ms: int) -> TargetMetadata:
    return TargetMetadata(GROUP, TargetAssignmentMetadataValue(epoch, timestamp_ms))


def assert_records(expected: list[object], result: Result) -> None:
    """``assertRecordsEquals``: the same records in the same order."""
    assert result.normalized_records() == [normalized(r) for r in expected]  # type: ignore[arg-type]


def assert_unordered_records(expected: list[list[object]], result: Result) -> None:
    """``assertUnorderedRecordsEquals``: groups in order, each group's records in any order."""
    actual = result.normalized_records()
    position = 0
    for group in expected:
        chunk = actual[position : position + len(group)]
        wanted = [normalized(r) for r in group]  # type: ignore[arg-type]
        assert len(chunk) == len(wanted), (chunk, wanted)
        for record in wanted:
            assert record in chunk, (record, chunk)
        position += len(group)
    assert position == len(actual), actual[position:]


Current = ConsumerGroupCurrentMemberAssignment
Subscription = ConsumerGroupMemberMetadata
Epoch = ConsumerGroupMetadata
Target = ConsumerGroupTargetAssignmentMember
TargetMetadata = ConsumerGroupTargetAssignmentMetadata
