"""ConsumerGroupDescribe hands a member's description again while the member, its target assignment and
the metadata image are the objects it was built from (``admin.DescribedMembers``): over a group that
changes between describes, every answer equals the one built directly, as the coordinator built it
before the cache (:func:`_direct_member`, kept here as it was)."""

from __future__ import annotations

import dataclasses

from kgroup.group import CoordinatorConfig
from kgroup.group.admin import described_topics
from kgroup.group.consumer.member import ConsumerGroupMember
from kgroup.group.metadata import MetadataImage, TopicImage
from kgroup.group.records.consumer import (
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    MemberAssignmentState,
)
from kgroup.javacompat import hash_set_order, java_string_hash
from kgroup.messages import (
    LEAVE_GROUP_MEMBER_EPOCH,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedConsumerGroup,
    DescribedConsumerMember,
    TopicPartitions,
)
from kgroup.model import ErrorCode, TopicId

from .context import GROUP, ConsumerTestContext, image

FOO = TopicId.from_int(0xF00F00)
BAR = TopicId.from_int(0xBA4BA4)
M1, M2, M3 = "member-one", "member-two", "member-three"


def _direct_member(
    member: ConsumerGroupMember, target: dict[TopicId, tuple[int, ...]], metadata: MetadataImage
) -> DescribedConsumerMember:
    """``requests._describe_member`` before the cache, word for word."""
    owned: dict[TopicId, frozenset[int]] = {}
    for source in (member.assigned_partitions, member.partitions_pending_revocation):
        for topic, partitions in source.items():
            owned[topic] = owned.get(topic, frozenset()) | frozenset(partitions)
    target_sets = {t: frozenset(p) for t, p in target.items()}
    return DescribedConsumerMember(
        member_id=member.member_id,
        instance_id=member.instance_id,
        rack_id=member.rack_id,
        member_epoch=member.member_epoch,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=hash_set_order(java_string_hash, sorted(member.subscribed_topic_names)),
        subscribed_topic_regex=member.subscribed_topic_regex,
        assignment=described_topics(owned, metadata),
        target_assignment=described_topics(target_sets, metadata),
        member_type=0 if member.uses_classic_protocol else 1,
    )


def _described(ctx: ConsumerTestContext) -> DescribedConsumerGroup:
    """The group described, checked against the direct description of every member."""
    response = ctx.send(ConsumerGroupDescribeRequest((GROUP,))).response
    assert isinstance(response, ConsumerGroupDescribeResponse)
    (described,) = response.groups
    group = ctx.group()
    direct = tuple(
        _direct_member(m, dict(group.target_of(m.member_id)), ctx.metadata) for m in group.members.values()
    )
    assert described.members == direct
    return described


def _join(ctx: ConsumerTestContext, member_id: str, *names: str) -> None:
    response = ctx.heartbeat(
        member_id=member_id,
        member_epoch=0,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=names,
        topic_partitions=(),
    ).heartbeat
    assert response.error_code == ErrorCode.NONE, response


def _acknowledge(ctx: ConsumerTestContext, member_id: str) -> None:
    """A heartbeat owning what the member was given: its reconciliation moves on."""
    m = ctx.member(member_id)
    owned = tuple(TopicPartitions(t, tuple(sorted(p))) for t, p in m.assigned_partitions.items())
    response = ctx.heartbeat(
        member_id=member_id, member_epoch=m.member_epoch, topic_partitions=owned
    ).heartbeat
    assert response.error_code == ErrorCode.NONE, response


def test_a_changing_group_is_described_as_building_it_directly_would() -> None:
    config = CoordinatorConfig(consumer_assignment_interval_ms=0)  # every epoch assigned
    ctx = ConsumerTestContext(image((FOO, "foo", 6), (BAR, "bar", 3)), config)
    _join(ctx, M1, "foo")
    first = _described(ctx)
    again = _described(ctx)  # nothing changed: the very descriptions are handed again
    assert all(a is b for a, b in zip(again.members, first.members, strict=True))

    _join(ctx, M2, "foo", "bar")  # M1's target shrinks; M2 is new
    second = _described(ctx)
    assert second.members[0].target_assignment != first.members[0].target_assignment
    for _ in range(3):  # both reconcile: partitions move from pending revocation to assigned
        _acknowledge(ctx, M1)
        _described(ctx)
        _acknowledge(ctx, M2)
        _described(ctx)
    reconciled = _described(ctx)
    assert [m.member_epoch for m in reconciled.members] == [ctx.group().assignment_epoch] * 2

    # a metadata rewrite (the client id of another connection): the member is replaced, its
    # partitions' maps and its target are not
    m1 = ctx.member(M1)
    value = dataclasses.replace(m1.metadata_value(), client_id="another-client", client_host="/10.0.0.9")
    ctx.replay(ConsumerGroupMemberMetadata(GROUP, M1, value))
    rewritten = _described(ctx)
    assert (rewritten.members[0].client_id, rewritten.members[0].client_host) == (
        "another-client",
        "/10.0.0.9",
    )
    assert rewritten.members[0].assignment is reconciled.members[0].assignment  # reused, still equal

    # a subscription change: names, target and (after reconciling) assignment change
    ctx.heartbeat(member_id=M2, member_epoch=ctx.member(M2).member_epoch, subscribed_topic_names=("bar",))
    resubscribed = _described(ctx)
    assert resubscribed.members[1].subscribed_topic_names == ("bar",)
    _acknowledge(ctx, M1)
    _acknowledge(ctx, M2)
    _described(ctx)

    # the topics change under the same ids: a name the description reads from the image
    renamed = MetadataImage.of([TopicImage(FOO, "foo", 6), TopicImage(BAR, "bar-renamed", 3)], 2)
    ctx.set_metadata(renamed)
    after_rename = _described(ctx)
    names = {tp.topic_name for m in after_rename.members for tp in m.assignment}
    assert "bar" not in names
    ctx.set_metadata(MetadataImage.of([TopicImage(FOO, "foo", 8), TopicImage(BAR, "bar", 3)], 3))
    _described(ctx)
    for member_id in (M1, M2):
        _acknowledge(ctx, member_id)
        _described(ctx)
    ctx.set_metadata(MetadataImage.of([TopicImage(FOO, "foo", 8)], 4))  # bar deleted
    without_bar = _described(ctx)
    assert all(tp.topic_id != BAR for m in without_bar.members for tp in m.target_assignment)

    # members come and go
    _join(ctx, M3, "foo")
    _described(ctx)
    ctx.heartbeat(member_id=M1, member_epoch=LEAVE_GROUP_MEMBER_EPOCH)
    left = _described(ctx)
    assert [m.member_id for m in left.members] == [M2, M3]
    assert set(ctx.group().described_members.member_ids()) == {M2, M3}  # M1 forgotten
    for member_id in (M2, M3):
        _acknowledge(ctx, member_id)
        _described(ctx)
    _join(ctx, M1, "foo", "bar")  # rejoins with the same id: a new member, described anew
    rejoined = _described(ctx)
    assert M1 in [m.member_id for m in rejoined.members]


def test_a_member_revoking_more_with_the_same_assigned_map_is_described_anew() -> None:
    """The parts of a description are reused only from the objects they were built from: here the
    assigned partitions' map is the same object and only the partitions pending revocation changed."""
    ctx = ConsumerTestContext(image((FOO, "foo", 6), (BAR, "bar", 3)), CoordinatorConfig())
    _join(ctx, M1, "foo")
    ctx.sleep(1000)  # the assignment interval
    for _ in range(2):
        _acknowledge(ctx, M1)
    before = _described(ctx)
    m1 = ctx.member(M1)
    assert m1.assigned_partitions and not m1.partitions_pending_revocation
    value = dataclasses.replace(
        m1.assignment_value(),
        state=MemberAssignmentState.UNREVOKED_PARTITIONS,
        partitions_pending_revocation={BAR: {0: m1.member_epoch}},
    )
    assert value.assigned_partitions is m1.assigned_partitions
    ctx.replay(ConsumerGroupCurrentMemberAssignment(GROUP, M1, value))
    after = _described(ctx)
    assert after.members[0].assignment != before.members[0].assignment
    assert {tp.topic_id for tp in after.members[0].assignment} == {FOO, BAR}
    # and the other way: fewer assigned partitions, the very map of pending ones
    fewer = {topic: dict(list(epochs.items())[:1]) for topic, epochs in value.assigned_partitions.items()}
    ctx.replay(
        ConsumerGroupCurrentMemberAssignment(GROUP, M1, dataclasses.replace(value, assigned_partitions=fewer))
    )
    assert ctx.member(M1).partitions_pending_revocation is value.partitions_pending_revocation
    assert _described(ctx).members[0].assignment != after.members[0].assignment
