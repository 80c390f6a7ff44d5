"""Kafka's ``CurrentAssignmentBuilderTest``, case by case, against :func:`next_assignment`."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kgroup.group.consumer.member import ConsumerGroupMember
from kgroup.group.consumer.reconcile import FencedMemberEpoch, next_assignment
from kgroup.group.metadata import MetadataImage, TopicImage
from kgroup.group.records.consumer import MemberAssignmentState, ResolvedRegularExpression
from kgroup.messages import TopicPartitions
from kgroup.model import TopicId

S = MemberAssignmentState
T1, T2 = TopicId.from_int(0x1111), TopicId.from_int(0x2222)
FOO, BAR = TopicId.from_int(0xF00), TopicId.from_int(0xBA4)
IMAGE = MetadataImage.of([TopicImage(T1, "topic1", 10), TopicImage(T2, "topic2", 10)])
FOO_BAR_IMAGE = MetadataImage.of([TopicImage(FOO, "foo", 10), TopicImage(BAR, "bar", 10)])
BOTH = frozenset({"topic1", "topic2"})

Epochs = dict[TopicId, dict[int, int]]


def at(epoch: int, **topics: tuple[int, ...]) -> Epochs:
    """``toAssignmentWithEpochs(mkAssignment(...), epoch)`` with topics named t1/t2/foo/bar."""
    ids = {"t1": T1, "t2": T2, "foo": FOO, "bar": BAR}
    return {ids[name]: dict.fromkeys(partitions, epoch) for name, partitions in topics.items()}


def merged(*parts: Epochs) -> Epochs:
    """``mkAssignmentWithEpochs``: per topic, partitions at different epochs."""
    result: Epochs = {}
    for part in parts:
        for topic, partitions in part.items():
            result.setdefault(topic, {}).update(partitions)
    return result


def owned(**topics: tuple[int, ...]) -> tuple[TopicPartitions, ...]:
    ids = {"t1": T1, "t2": T2, "foo": FOO, "bar": BAR}
    return tuple(TopicPartitions(ids[name], partitions) for name, partitions in topics.items())


def member(
    state: S,
    epoch: int,
    previous: int,
    assigned: Epochs,
    pending: Epochs | None = None,
    names: frozenset[str] = BOTH,
    regex: str = "",
) -> ConsumerGroupMember:
    return ConsumerGroupMember(
        "member",
        member_epoch=epoch,
        previous_member_epoch=previous,
        state=state,
        subscribed_topic_names=names,
        subscribed_topic_regex=regex,
        assigned_partitions=assigned,
        partitions_pending_revocation=pending or {},
    )


def build(
    current: ConsumerGroupMember,
    target_epoch: int,
    target: dict[TopicId, tuple[int, ...]],
    partition_epoch: Callable[[TopicId, int], int],
    *,
    owned_partitions: tuple[TopicPartitions, ...] | None = None,
    subscription_changed: bool = False,
    image: MetadataImage = IMAGE,
    resolved: dict[str, ResolvedRegularExpression] | None = None,
) -> ConsumerGroupMember:
    return next_assignment(
        current,
        target_epoch=target_epoch,
        target=target,
        image=image,
        resolved_regexes=resolved or {},
        current_partition_epoch=partition_epoch,
        has_subscription_changed=subscription_changed,
        owned=owned_partitions,
    )


def epoch_of(value: int) -> Callable[[TopicId, int], int]:
    return lambda topic, partition: value


def test_stable_to_stable() -> None:
    current = member(S.STABLE, 10, 10, at(5, t1=(1, 2, 3), t2=(4, 5, 6)))
    updated = build(current, 11, {T1: (1, 2, 3), T2: (4, 5, 6)}, epoch_of(10))
    assert updated == member(S.STABLE, 11, 10, at(5, t1=(1, 2, 3), t2=(4, 5, 6)))


def test_stable_to_stable_with_new_partitions() -> None:
    current = member(S.STABLE, 10, 10, at(10, t1=(1, 2, 3), t2=(4, 5, 6)))
    updated = build(current, 11, {T1: (1, 2, 3, 4), T2: (4, 5, 6, 7)}, epoch_of(-1))
    # retained partitions keep their epoch (10), new ones get the target's (11)
    expected = merged(at(10, t1=(1, 2, 3), t2=(4, 5, 6)), at(11, t1=(4,), t2=(7,)))
    assert updated == member(S.STABLE, 11, 10, expected)


def test_stable_to_unrevoked_partitions() -> None:
    current = member(S.STABLE, 10, 10, at(10, t1=(1, 2, 3), t2=(4, 5, 6)))
    updated = build(current, 11, {T1: (2, 3, 4), T2: (5, 6, 7)}, epoch_of(-1))
    assert updated == member(
        S.UNREVOKED_PARTITIONS, 10, 10, at(10, t1=(2, 3), t2=(5, 6)), at(10, t1=(1,), t2=(4,))
    )


def test_stable_to_unreleased_partitions() -> None:
    current = member(S.STABLE, 10, 10, at(10, t1=(1, 2, 3), t2=(4, 5, 6)))
    updated = build(current, 11, {T1: (1, 2, 3, 4), T2: (4, 5, 6, 7)}, epoch_of(10))
    assert updated == member(S.UNRELEASED_PARTITIONS, 11, 10, at(10, t1=(1, 2, 3), t2=(4, 5, 6)))


def test_stable_to_unreleased_partitions_with_owned_partitions_not_having_revoked_partitions() -> None:
    current = member(S.STABLE, 10, 10, at(10, t1=(1, 2, 3), t2=(4, 5, 6)))
    updated = build(
        current,
        11,
        {T1: (1, 2, 3), T2: (4, 5, 7)},
        lambda topic, partition: 10 if topic == T2 else -1,
        owned_partitions=(),
    )
    assert updated == member(S.UNRELEASED_PARTITIONS, 11, 10, at(10, t1=(1, 2, 3), t2=(4, 5)))


def test_unrevoked_partitions_to_stable() -> None:
    current = member(S.UNREVOKED_PARTITIONS, 10, 10, at(10, t1=(2, 3), t2=(5, 6)), at(10, t1=(1,), t2=(4,)))
    updated = build(
        current, 11, {T1: (2, 3), T2: (5, 6)}, epoch_of(-1), owned_partitions=owned(t1=(2, 3), t2=(5, 6))
    )
    assert updated == member(S.STABLE, 11, 10, at(10, t1=(2, 3), t2=(5, 6)))


def test_remains_in_unrevoked_partitions() -> None:
    current = member(S.UNREVOKED_PARTITIONS, 10, 10, at(10, t1=(2, 3), t2=(5, 6)), at(10, t1=(1,), t2=(4,)))
    target = {T1: (3,), T2: (6,)}
    for reported in (None, owned(t1=(1, 2, 3), t2=(5, 6)), owned(t1=(2, 3), t2=(4, 5, 6))):
        assert build(current, 12, target, epoch_of(-1), owned_partitions=reported) == current


def test_unrevoked_partitions_to_unrevoked_partitions() -> None:
    current = member(S.UNREVOKED_PARTITIONS, 10, 10, at(10, t1=(2, 3), t2=(5, 6)), at(10, t1=(1,), t2=(4,)))
    updated = build(
        current, 12, {T1: (3,), T2: (6,)}, epoch_of(-1), owned_partitions=owned(t1=(2, 3), t2=(5, 6))
    )
    assert updated == member(
        S.UNREVOKED_PARTITIONS, 10, 10, at(10, t1=(3,), t2=(6,)), at(10, t1=(2,), t2=(5,))
    )


def test_unrevoked_partitions_to_unreleased_partitions() -> None:
    current = member(S.UNREVOKED_PARTITIONS, 11, 10, at(11, t1=(2, 3), t2=(5, 6)))
    updated = build(
        current,
        11,
        {T1: (2, 3, 4), T2: (5, 6, 7)},
        epoch_of(10),
        owned_partitions=owned(t1=(2, 3), t2=(5, 6)),
    )
    assert updated == member(S.UNRELEASED_PARTITIONS, 11, 11, at(11, t1=(2, 3), t2=(5, 6)))


def test_unrevoked_partitions_to_stable_with_returned_partitions_pending_revocation() -> None:
    # partition 4 of topic1 is pending revocation by the member but back in the target
    current = member(S.UNREVOKED_PARTITIONS, 10, 10, at(10, t1=(2, 3), t2=(5, 6)), at(10, t1=(4,)))

    def partition_epoch(topic: TopicId, partition: int) -> int:
        if topic == T1 and partition in (2, 3, 4):
            return 10
        if topic == T2 and partition in (5, 6):
            return 10
        return -1

    updated = build(
        current,
        12,
        {T1: (2, 3, 4), T2: (5, 6, 7)},
        partition_epoch,
        owned_partitions=owned(t1=(2, 3), t2=(5, 6)),
    )
    expected = merged(at(10, t1=(2, 3), t2=(5, 6)), at(12, t1=(4,), t2=(7,)))
    assert updated == member(S.STABLE, 12, 10, expected)


def test_unreleased_partitions_to_stable() -> None:
    current = member(S.UNRELEASED_PARTITIONS, 11, 11, at(11, t1=(2, 3), t2=(5, 6)))
    updated = build(current, 12, {T1: (2, 3), T2: (5, 6)}, epoch_of(10))
    assert updated == member(S.STABLE, 12, 11, at(11, t1=(2, 3), t2=(5, 6)))


def test_unreleased_partitions_to_stable_with_new_partitions() -> None:
    current = member(S.UNRELEASED_PARTITIONS, 11, 11, at(11, t1=(2, 3), t2=(5, 6)))
    updated = build(current, 11, {T1: (2, 3, 4), T2: (5, 6, 7)}, epoch_of(-1))
    assert updated == member(S.STABLE, 11, 11, at(11, t1=(2, 3, 4), t2=(5, 6, 7)))


def test_unreleased_partitions_to_unreleased_partitions() -> None:
    current = member(S.UNRELEASED_PARTITIONS, 11, 11, at(11, t1=(2, 3), t2=(5, 6)))
    assert build(current, 11, {T1: (2, 3, 4), T2: (5, 6, 7)}, epoch_of(10)) == current


def test_unreleased_partitions_to_unrevoked_partitions() -> None:
    current = member(S.UNRELEASED_PARTITIONS, 11, 11, at(11, t1=(2, 3), t2=(5, 6)))
    updated = build(current, 12, {T1: (3,), T2: (6,)}, epoch_of(10))
    assert updated == member(
        S.UNREVOKED_PARTITIONS, 11, 11, at(11, t1=(3,), t2=(6,)), at(11, t1=(2,), t2=(5,))
    )


def test_unknown_state() -> None:
    current = member(S.UNKNOWN, 11, 11, at(11, t1=(3,), t2=(6,)), at(11, t1=(2,), t2=(5,)))
    target = {T1: (3,), T2: (6,)}
    # an unknown state first forces the member to reset its state on the client side
    with pytest.raises(FencedMemberEpoch, match="unknown state"):
        build(current, 12, target, epoch_of(10))
    with pytest.raises(FencedMemberEpoch):
        build(current, 12, target, epoch_of(10), owned_partitions=owned(t1=(3,)))
    # then it rejoins owning nothing
    updated = build(current, 12, target, epoch_of(11), owned_partitions=())
    assert updated == member(S.STABLE, 12, 11, at(11, t1=(3,), t2=(6,)))


@pytest.mark.parametrize(
    ("epoch", "target_epoch", "expected_epoch", "subscription_changed"),
    [(10, 11, 11, False), (10, 11, 11, True), (10, 10, 10, True)],
)
def test_stable_to_stable_with_assignment_topics_no_longer_in_subscription(
    epoch: int, target_epoch: int, expected_epoch: int, subscription_changed: bool
) -> None:
    current = member(
        S.STABLE, epoch, epoch - 1, at(epoch, t1=(1, 2, 3), t2=(4, 5, 6)), names=frozenset({"topic2"})
    )
    updated = build(
        current,
        target_epoch,
        {T1: (1, 2, 3), T2: (4, 5, 6)},
        epoch_of(-1),
        owned_partitions=owned(t2=(4, 5, 6)),
        subscription_changed=subscription_changed,
    )
    # the previous epoch is updated in every case, even when the member epoch does not move
    assert updated == member(
        S.STABLE, expected_epoch, epoch, at(epoch, t2=(4, 5, 6)), names=frozenset({"topic2"})
    )


@pytest.mark.parametrize(
    ("epoch", "target_epoch", "expected_epoch", "subscription_changed"),
    [(10, 11, 10, False), (10, 11, 10, True), (10, 10, 10, True)],
)
def test_stable_to_unrevoked_partitions_with_assignment_topics_no_longer_in_subscription(
    epoch: int, target_epoch: int, expected_epoch: int, subscription_changed: bool
) -> None:
    current = member(
        S.STABLE, epoch, epoch - 1, at(epoch, t1=(1, 2, 3), t2=(4, 5, 6)), names=frozenset({"topic2"})
    )
    updated = build(
        current,
        target_epoch,
        {T1: (1, 2, 3), T2: (4, 5, 6)},
        epoch_of(-1),
        owned_partitions=owned(t1=(1, 2, 3), t2=(4, 5, 6)),
        subscription_changed=subscription_changed,
    )
    assert updated == member(
        S.UNREVOKED_PARTITIONS,
        expected_epoch,
        epoch,
        at(expected_epoch, t2=(4, 5, 6)),
        at(epoch, t1=(1, 2, 3)),
        names=frozenset({"topic2"}),
    )


def test_remains_in_unrevoked_partitions_with_assignment_topics_no_longer_in_subscription() -> None:
    current = member(
        S.UNREVOKED_PARTITIONS,
        10,
        10,
        at(10, t1=(2, 3), t2=(5, 6)),
        at(10, t1=(1,), t2=(4,)),
        names=frozenset({"topic2"}),
    )
    updated = build(
        current,
        12,
        {T1: (1, 3, 4), T2: (6, 7)},
        epoch_of(-1),
        owned_partitions=owned(t1=(1, 2, 3), t2=(4, 5, 6)),
        subscription_changed=True,
    )
    assert updated == member(
        S.UNREVOKED_PARTITIONS,
        10,
        10,
        at(10, t2=(5, 6)),
        at(10, t1=(1, 2, 3), t2=(4,)),
        names=frozenset({"topic2"}),
    )


def _regex_member(names: frozenset[str]) -> ConsumerGroupMember:
    return member(S.STABLE, 10, 10, at(10, foo=(1, 2, 3), bar=(4, 5, 6)), names=names, regex="bar*")


def _regex_build(
    current: ConsumerGroupMember, resolved: dict[str, ResolvedRegularExpression]
) -> ConsumerGroupMember:
    return build(
        current,
        10,
        {FOO: (1, 2, 3), BAR: (4, 5, 6)},
        epoch_of(-1),
        owned_partitions=owned(foo=(1, 2, 3), bar=(4, 5, 6)),
        subscription_changed=True,
        image=FOO_BAR_IMAGE,
        resolved=resolved,
    )


def test_subscribed_topic_name_and_unresolved_regular_expression() -> None:
    current = _regex_member(frozenset({"foo"}))
    updated = _regex_build(current, {})
    assert updated == member(
        S.UNREVOKED_PARTITIONS,
        10,
        10,
        at(10, foo=(1, 2, 3)),
        at(10, bar=(4, 5, 6)),
        names=frozenset({"foo"}),
        regex="bar*",
    )


def test_unresolved_regular_expression() -> None:
    current = _regex_member(frozenset())
    updated = _regex_build(current, {})
    assert updated == member(
        S.UNREVOKED_PARTITIONS,
        10,
        10,
        {},
        at(10, foo=(1, 2, 3), bar=(4, 5, 6)),
        names=frozenset(),
        regex="bar*",
    )


def test_subscribed_topic_name_and_resolved_regular_expression() -> None:
    current = _regex_member(frozenset({"foo"}))
    updated = _regex_build(current, {"bar*": ResolvedRegularExpression(frozenset({"bar"}), 12345, 0)})
    assert updated == current
