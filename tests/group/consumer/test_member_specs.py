"""The member specs a target assignment hands the assignor (``steps.member_specs``): the spec built
for the last assignment is handed again while the member, its target and the metadata image are the
very same objects, and built anew otherwise — always equal to what building it now would give."""

from __future__ import annotations

import dataclasses

from kgroup.group import ConsumerGroups, CoordinatorConfig
from kgroup.group.assignors import GroupSpec
from kgroup.group.consumer.steps import member_spec
from kgroup.messages import LEAVE_GROUP_MEMBER_EPOCH
from kgroup.model import TopicId

from .context import ConsumerTestContext, MockAssignor, image

FOO = TopicId.from_int(0xF00F00)
BAR = TopicId.from_int(0xBA4BA4)
M1, M2, M3 = "member-one", "member-two", "member-three"


def _ctx() -> tuple[ConsumerTestContext, MockAssignor]:
    assignor = MockAssignor("range")
    assignor.prepare({})
    config = CoordinatorConfig(consumer_assignment_interval_ms=0)  # every epoch assigned
    return ConsumerTestContext(image((FOO, "foo", 6), (BAR, "bar", 3)), config, (assignor,)), assignor


def _join(ctx: ConsumerTestContext, member_id: str, *names: str, regex: str | None = None) -> None:
    ctx.heartbeat(
        member_id=member_id,
        member_epoch=0,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=names if regex is None else None,
        subscribed_topic_regex=regex,
        topic_partitions=(),
    )


def _fresh(ctx: ConsumerTestContext, spec: GroupSpec) -> None:
    """Every spec handed equals the one building it now gives (after an assignment that changed no
    target)."""
    group = ctx.group()
    consumer = ctx.coordinator.kind(ConsumerGroups).ctx
    for member_id, handed in spec.members.items():
        built = member_spec(group.members[member_id], group.target_of(member_id), consumer, group)
        assert dataclasses.astuple(handed) == dataclasses.astuple(built), member_id


def test_an_unchanged_member_s_spec_is_handed_again_and_a_changed_one_is_built() -> None:
    ctx, assignor = _ctx()
    _join(ctx, M1, "foo")
    _join(ctx, M2, "foo", "bar")
    first = assignor.specs[-1]
    _fresh(ctx, first)
    _join(ctx, M3, "bar")  # one member more: M1 is the same member with the same target
    second = assignor.specs[-1]
    _fresh(ctx, second)
    assert second.members[M1] is first.members[M1]
    # M2 joined in the last assignment: its member is the one its records replayed since, a new object
    assert second.members[M2] is not first.members[M2]
    assert set(ctx.group().member_specs) == {M1, M2, M3}
    # the assignor gives M1 a target, at M2's subscription change (a new epoch, a new assignment)
    assignor.prepare({M1: {FOO: (0, 1, 2)}, M2: {}, M3: {}})
    ctx.heartbeat(member_id=M2, member_epoch=ctx.member(M2).member_epoch, subscribed_topic_names=("bar",))
    third = assignor.specs[-1]  # (built before this assignment changed M1's target)
    assert third.members[M1] is second.members[M1]
    assert third.members[M2] is not second.members[M2]  # the member changed its subscription
    _join(ctx, "member-four", "foo")
    fourth = assignor.specs[-1]
    _fresh(ctx, fourth)
    assert fourth.members[M1] is not third.members[M1]  # its target changed
    assert dict(fourth.members[M1].assignment) == {FOO: (0, 1, 2)}
    assert fourth.members[M3] is third.members[M3]


def test_a_member_gone_is_forgotten_and_a_new_image_rebuilds_every_spec() -> None:
    ctx, assignor = _ctx()
    _join(ctx, M1, "foo")
    _join(ctx, M2, "foo", "bar")
    _join(ctx, M3, "foo")
    ctx.heartbeat(
        member_id=M2,
        member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
        subscribed_topic_names=("foo", "bar"),
        topic_partitions=(),
    )
    _join(ctx, "member-four", "foo")  # the next assignment: M2 is no longer handed, nor kept
    assert set(ctx.group().member_specs) == {M1, M3, "member-four"}
    before = assignor.specs[-1]
    ctx.set_metadata(image((FOO, "foo", 8), (BAR, "bar", 3)))  # foo grows: a new image
    _join(ctx, "member-five", "foo")
    after = assignor.specs[-1]
    assert after.members[M1] is not before.members[M1]
    assert after.members[M3] is not before.members[M3]
    _fresh(ctx, after)


def test_a_member_subscribed_by_regex_is_built_every_time() -> None:
    """A regex's resolution changes on its own (a topic created): such a member is never kept."""
    ctx, assignor = _ctx()
    _join(ctx, M1, "foo")
    _join(ctx, M2, regex="ba.*")
    _join(ctx, M3, "foo")
    _join(ctx, "member-four", "foo")
    before = assignor.specs[-1]
    _join(ctx, "member-five", "foo")
    after = assignor.specs[-1]
    assert M2 in after.members and M2 not in ctx.group().member_specs
    assert after.members[M2] is not before.members[M2]
    assert after.members[M1] is before.members[M1]
    _fresh(ctx, after)
