"""A replay property for the consumer-group coordinator: random joins, heartbeats (acknowledging or
not), subscription changes (names and regexes), leaves (for good and, for static members, for now),
topic changes and time passing (firing session, rebalance and regex timers). After every step the
invariants hold; after the run a coordinator rebuilt from every record written, and one rebuilt from
``checkpoint()``, are the same as the original (``snapshot()``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from random import Random

from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.group import ConsumerGroups, GroupCoordinator
from kgroup.group.consumer.group import ConsumerGroupData
from kgroup.group.consumer.reconcile import subscribed_topic_names
from kgroup.group.metadata import MetadataImage
from kgroup.group.records.consumer import MemberAssignmentState
from kgroup.messages import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from kgroup.model import ErrorCode, TopicId

from .context import GROUP, ConsumerTestContext, image

TOPICS = [(TopicId.from_int(0x100 + i), name) for i, name in enumerate(["foo", "bar", "baz", "qux"])]
#: six clients: four dynamic, two static (sharing nothing)
INSTANCES: list[str | None] = [None, None, None, None, "s0", "s1"]
SUBSCRIPTIONS: list[tuple[tuple[str, ...] | None, str | None]] = [
    (("foo",), None),
    (("foo", "bar"), None),
    (("bar", "baz"), None),
    (None, "ba.*"),
    (None, "f.*|q.*"),
    (("qux",), "b.*"),
]


@dataclass
class Client:
    """What a consumer remembers: its id, epoch and owned partitions (it revokes at once whatever a
    response no longer gives it)."""

    member_id: str
    instance_id: str | None
    epoch: int = 0
    joined: bool = False
    owned: tuple[TopicPartitions, ...] = ()
    subscription: int = 0

    def reset(self) -> None:
        self.epoch, self.joined, self.owned = 0, False, ()


@dataclass
class Run:
    ctx: ConsumerTestContext
    clients: list[Client]
    partitions: dict[str, int] = field(default_factory=lambda: {"foo": 4, "bar": 3, "baz": 2, "qux": 0})
    version: int = 1

    def set_image(self) -> None:
        self.version += 1
        topics = [(tid, name, n) for tid, name in TOPICS if (n := self.partitions[name]) > 0]
        self.ctx.set_metadata(image(*topics, version=self.version))


Op = tuple[str, int, int]
OPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "join",
                "heartbeat",
                "heartbeat",
                "heartbeat",
                "partial",
                "subscribe",
                "leave",
                "leave_static",
                "sleep",
                "topics",
            ]
        ),
        st.integers(0, len(INSTANCES) - 1),
        st.integers(0, 60),
    ),
    min_size=10,
    max_size=50,
)


def _apply(run: Run, op: Op) -> set[str]:
    """Do one step; answer the member ids it may legitimately move backwards (left or rejoined)."""
    kind, index, arg = op
    ctx = run.ctx
    client = run.clients[index]
    moved: set[str] = set()
    if kind == "sleep":
        ctx.sleep(arg * 1000)
        return moved
    if kind == "topics":
        name = TOPICS[arg % len(TOPICS)][1]
        run.partitions[name] = min(run.partitions[name] + 1 + arg % 2, 6)  # topics are created and grown
        run.set_image()
        return moved
    names, regex = SUBSCRIPTIONS[client.subscription]
    if kind == "subscribe":
        client.subscription = arg % len(SUBSCRIPTIONS)
        names, regex = SUBSCRIPTIONS[client.subscription]
        if not client.joined:
            return moved
        names = names if names is not None else ()
        regex = regex if regex is not None else ""
        response = ctx.heartbeat(
            member_id=client.member_id,
            instance_id=client.instance_id,
            member_epoch=client.epoch,
            subscribed_topic_names=names,
            subscribed_topic_regex=regex,
            topic_partitions=client.owned,
        ).response
    elif kind == "join" or not client.joined:
        moved.add(client.member_id)
        client.reset()
        response = ctx.heartbeat(
            member_id=client.member_id,
            instance_id=client.instance_id,
            member_epoch=0,
            rebalance_timeout_ms=20_000,
            subscribed_topic_names=names,
            subscribed_topic_regex=regex,
            server_assignor=("uniform", "range")[arg % 2] if arg % 3 == 0 else None,
            topic_partitions=(),
        ).response
    elif kind in ("leave", "leave_static"):
        epoch = (
            LEAVE_GROUP_STATIC_MEMBER_EPOCH
            if kind == "leave_static" and client.instance_id
            else LEAVE_GROUP_MEMBER_EPOCH
        )
        moved.add(client.member_id)
        ctx.heartbeat(member_id=client.member_id, instance_id=client.instance_id, member_epoch=epoch)
        client.reset()
        if client.instance_id is not None:
            # a static member comes back under a new member id
            client.member_id = f"{client.instance_id}-{arg}-{ctx.time_ms}"
        return moved
    else:
        response = ctx.heartbeat(
            member_id=client.member_id,
            instance_id=client.instance_id,
            member_epoch=client.epoch,
            topic_partitions=client.owned if kind == "heartbeat" else None,
        ).response
    assert isinstance(response, ConsumerGroupHeartbeatResponse), response
    if response.error_code is ErrorCode.NONE:
        client.joined = True
        client.epoch = response.member_epoch
        if response.assignment is not None:
            client.owned = response.assignment
    else:
        assert response.error_code in (
            ErrorCode.FENCED_MEMBER_EPOCH,
            ErrorCode.UNKNOWN_MEMBER_ID,
            ErrorCode.UNRELEASED_INSTANCE_ID,
            ErrorCode.GROUP_ID_NOT_FOUND,
        ), response
        moved.add(client.member_id)
        client.reset()
    return moved


def _check_invariants(group: ConsumerGroupData, metadata: MetadataImage) -> None:
    owners: dict[tuple[TopicId, int], str] = {}
    for member in group.members.values():
        for source in (member.assigned_partitions, member.partitions_pending_revocation):
            for topic, partitions in source.items():
                for partition in partitions:
                    key = (topic, partition)
                    # no partition is held by two members at the same time
                    assert key not in owners, f"{key} held by {owners[key]} and {member.member_id}"
                    owners[key] = member.member_id
                    # the partition epochs index says who holds it, at which epoch
                    assert group.partition_epochs[topic][partition] == member.member_epoch
    indexed = {(t, p) for t, parts in group.partition_epochs.items() for p in parts}
    assert indexed == set(owners)
    if group.group_epoch != group.assignment_epoch:
        return  # Assigning: the target is stale (a subscription changed, a regex was just resolved)
    for member in group.members.values():
        if member.state is MemberAssignmentState.STABLE and member.member_epoch == group.assignment_epoch:
            # a reconciled member owns exactly its target (of the topics it subscribes to)
            assert not member.partitions_pending_revocation
            subscribed = {
                topic.topic_id
                for name in subscribed_topic_names(member, group.resolved_regexes)
                if (topic := metadata.topic(name)) is not None
            }
            target = {
                (t, p)
                for t, parts in group.target_of(member.member_id).items()
                if t in subscribed
                for p in parts
            }
            held = {(t, p) for t, parts in member.assigned_partitions.items() for p in parts}
            assert held == target, (member, group.target_of(member.member_id))


@settings(max_examples=80, deadline=None)
@given(ops=OPS, seed=st.integers(0, 3))
def test_replay_and_checkpoint_rebuild_the_same_coordinator(ops: list[Op], seed: int) -> None:
    ctx = ConsumerTestContext(seed=seed)
    clients = [
        Client(f"member-{i}" if instance is None else f"{instance}-first", instance)
        for i, instance in enumerate(INSTANCES)
    ]
    run = Run(ctx, clients)
    run.set_image()
    epochs: dict[str, int] = {}
    for op in ops:
        moved = _apply(run, op)
        # clients heartbeat every few hundred ms: the assignment interval passes now and then
        ctx.sleep(400)
        groups = ctx.coordinator.kind(ConsumerGroups).ctx.groups
        group = groups.get(GROUP)
        if group is None:
            continue
        _check_invariants(group, ctx.metadata)
        for member_id, member in group.members.items():
            before = epochs.get(member_id)
            if before is not None and member_id not in moved and member.member_epoch >= 0:
                assert member.member_epoch >= before, (op, member_id, before, member.member_epoch)
        epochs = {m: member.member_epoch for m, member in group.members.items()}
    snapshot = ctx.coordinator.snapshot()
    assert ctx.rebuilt().snapshot() == snapshot
    from_checkpoint = GroupCoordinator(ctx.config, rng=Random(99))
    for record in ctx.coordinator.checkpoint():
        from_checkpoint.replay(record)
    assert from_checkpoint.snapshot() == snapshot
