"""``OffsetMetadataManagerTest``'s consumer-group cases: OffsetCommit and OffsetFetch with member
epochs, and the assignment epoch each partition was given at (``ConsumerGroup.validateOffsetCommit``,
``validateOffsetFetch``)."""

from __future__ import annotations

import dataclasses

import pytest

from kgroup.group import CoordinatorConfig
from kgroup.group.records import OffsetAndMetadata, OffsetCommitted
from kgroup.messages import (
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from kgroup.model import ErrorCode, TopicId, TopicPartition

from .context import ConsumerTestContext, current, image, member, subscription

GROUP = "foo"
BAR = TopicId.from_int(0xBA4BA4)
BAR_0 = TopicPartition("bar", 0)


def _group_with_member(
    ctx: ConsumerTestContext, epoch: int = 10, assigned: dict[TopicId, dict[int, int]] | None = None
) -> None:
    """``getOrMaybeCreatePersistedConsumerGroup("foo")`` and ``updateMember(Builder("member")...)``."""
    ctx.build_group(GROUP, 1)
    m = member("member", epoch=epoch, previous=epoch, assigned=assigned)
    ctx.replay(
        dataclasses.replace(subscription(m), group_id=GROUP), dataclasses.replace(current(m), group_id=GROUP)
    )


def _commit(
    ctx: ConsumerTestContext,
    epoch: int,
    *partitions: OffsetCommitPartition,
    member_id: str = "member",
    version: int = 9,
) -> tuple[OffsetCommitResponse, list[object]]:
    result = ctx.send(OffsetCommitRequest(GROUP, epoch, member_id, partitions), version)
    assert isinstance(result.response, OffsetCommitResponse)
    return result.response, result.records  # type: ignore[return-value]


def test_consumer_group_offset_commit_with_unknown_member_id() -> None:
    """testConsumerGroupOffsetCommitWithUnknownMemberId"""
    ctx = ConsumerTestContext()
    ctx.build_group(GROUP, 1)
    response, records = _commit(ctx, 10, OffsetCommitPartition(BAR_0, 100))
    assert response.results == ((BAR_0, ErrorCode.UNKNOWN_MEMBER_ID),)
    assert records == []


@pytest.mark.parametrize("epoch", [9, 11])
def test_consumer_group_offset_commit_with_stale_member_epoch(epoch: int) -> None:
    """testConsumerGroupOffsetCommitWithStaleMemberEpoch: older (no partition assigned at it) and newer."""
    ctx = ConsumerTestContext()
    _group_with_member(ctx)
    response, records = _commit(ctx, epoch, OffsetCommitPartition(BAR_0, 100))
    assert response.results == ((BAR_0, ErrorCode.STALE_MEMBER_EPOCH),)
    assert records == []


def test_consumer_group_offset_commit_with_zero_topic_id() -> None:
    """testConsumerGroupOffsetCommitWithZeroTopicId: a topic the metadata cannot name is not assigned."""
    ctx = ConsumerTestContext()
    _group_with_member(ctx, assigned={TopicId.from_int(0x1234): {0: 5}})
    response, _ = _commit(ctx, 7, OffsetCommitPartition(BAR_0, 100))
    assert response.results == ((BAR_0, ErrorCode.STALE_MEMBER_EPOCH),)


def test_consumer_group_offset_commit_resolves_topic_id() -> None:
    """testConsumerGroupOffsetCommitResolvesTopicId: an older epoch may commit a partition it was
    assigned at or before that epoch."""
    ctx = ConsumerTestContext(image((BAR, "bar", 3)))
    _group_with_member(ctx, assigned={BAR: {0: 5}})
    response, records = _commit(ctx, 3, OffsetCommitPartition(BAR_0, 100))
    assert response.results == ((BAR_0, ErrorCode.STALE_MEMBER_EPOCH),)
    assert records == []
    for _ in range(2):
        response, records = _commit(ctx, 5, OffsetCommitPartition(BAR_0, 100))
        assert response.results == ((BAR_0, ErrorCode.NONE),)
        assert records == [OffsetCommitted(GROUP, BAR_0, OffsetAndMetadata(100, -1, "", ctx.time_ms))]


def test_consumer_group_offset_commit_from_admin_client() -> None:
    """testConsumerGroupOffsetCommitFromAdminClient: no member, no epoch, an empty group: accepted."""
    ctx = ConsumerTestContext()
    ctx.build_group(GROUP, 1)
    response, records = _commit(ctx, -1, OffsetCommitPartition(BAR_0, 100), member_id="")
    assert response.results == ((BAR_0, ErrorCode.NONE),)
    assert records == [OffsetCommitted(GROUP, BAR_0, OffsetAndMetadata(100, -1, "", ctx.time_ms))]


def test_consumer_group_offset_commit() -> None:
    """testConsumerGroupOffsetCommit: the member's current epoch commits anything."""
    ctx = ConsumerTestContext()
    _group_with_member(ctx)
    response, records = _commit(ctx, 10, OffsetCommitPartition(BAR_0, 100, "metadata", 10))
    assert response.results == ((BAR_0, ErrorCode.NONE),)
    assert records == [OffsetCommitted(GROUP, BAR_0, OffsetAndMetadata(100, 10, "metadata", ctx.time_ms))]
    assert ctx.coordinator.committed_offsets(GROUP)[BAR_0].offset == 100


def test_consumer_group_offset_commit_before_version_9_is_refused() -> None:
    """``validateOffsetCommit``: consumer-protocol members must commit with OffsetCommit v9+."""
    ctx = ConsumerTestContext()
    _group_with_member(ctx)
    response, records = _commit(ctx, 10, OffsetCommitPartition(BAR_0, 100), version=8)
    assert response.results == ((BAR_0, ErrorCode.UNSUPPORTED_VERSION),)
    assert records == []


def test_consumer_group_offset_commit_with_offset_metadata_too_large() -> None:
    """testConsumerGroupOffsetCommitWithOffsetMetadataTooLarge"""
    config = dataclasses.replace(CoordinatorConfig(), offset_metadata_max_bytes=5)
    ctx = ConsumerTestContext(config=config)
    _group_with_member(ctx)
    bar_1 = TopicPartition("bar", 1)
    response, records = _commit(
        ctx,
        10,
        OffsetCommitPartition(BAR_0, 100, "toolarge", 10),
        OffsetCommitPartition(bar_1, 100, "small", 10),
    )
    assert response.results == ((BAR_0, ErrorCode.OFFSET_METADATA_TOO_LARGE), (bar_1, ErrorCode.NONE))
    assert records == [OffsetCommitted(GROUP, bar_1, OffsetAndMetadata(100, 10, "small", ctx.time_ms))]


def test_consumer_group_offset_metadata_is_measured_in_java_chars() -> None:
    """``isMetadataInvalid`` is ``metadata.length() > offset.metadata.max.bytes``, the same for
    every group kind: Java's UTF-16 code units, not UTF-8 bytes. Five accented letters (ten UTF-8
    bytes) fit in 5; three emoji (six code units, twelve bytes) do not."""
    config = dataclasses.replace(CoordinatorConfig(), offset_metadata_max_bytes=5)
    ctx = ConsumerTestContext(config=config)
    _group_with_member(ctx)
    bar_1 = TopicPartition("bar", 1)
    response, records = _commit(
        ctx,
        10,
        OffsetCommitPartition(BAR_0, 100, "\u00e9" * 5, 10),
        OffsetCommitPartition(bar_1, 100, "\U0001f600" * 3, 10),
    )
    assert response.results == ((BAR_0, ErrorCode.NONE), (bar_1, ErrorCode.OFFSET_METADATA_TOO_LARGE))
    assert records == [OffsetCommitted(GROUP, BAR_0, OffsetAndMetadata(100, 10, "\u00e9" * 5, ctx.time_ms))]


def _fetch(
    ctx: ConsumerTestContext, member_id: str | None, epoch: int, everything: bool
) -> OffsetFetchResponse:
    partitions = None if everything else (TopicPartition("foo", 0),)
    result = ctx.send(OffsetFetchRequest(GROUP, partitions, member_id, epoch), 9)
    assert isinstance(result.response, OffsetFetchResponse)
    return result.response


def _commit_foo(ctx: ConsumerTestContext) -> None:
    ctx.replay(
        OffsetCommitted(GROUP, TopicPartition("foo", 0), OffsetAndMetadata(100, 1, "metadata", ctx.time_ms))
    )


@pytest.mark.parametrize("everything", [False, True])
def test_consumer_group_offset_fetch_with_member_id_and_epoch(everything: bool) -> None:
    """testConsumerGroupOffsetFetchWithMemberIdAndEpoch"""
    ctx = ConsumerTestContext()
    _group_with_member(ctx, epoch=0)
    _commit_foo(ctx)
    response = _fetch(ctx, "member", 0, everything)
    assert response == OffsetFetchResponse(
        ErrorCode.NONE, (OffsetFetchPartition(TopicPartition("foo", 0), 100, "metadata", ErrorCode.NONE, 1),)
    )


@pytest.mark.parametrize("everything", [False, True])
def test_consumer_group_offset_fetch_from_admin_client(everything: bool) -> None:
    """testConsumerGroupOffsetFetchFromAdminClient: no member id, no epoch."""
    ctx = ConsumerTestContext()
    _group_with_member(ctx, epoch=0)
    _commit_foo(ctx)
    response = _fetch(ctx, None, -1, everything)
    assert response.error_code is ErrorCode.NONE
    assert [p.committed_offset for p in response.partitions] == [100]


@pytest.mark.parametrize("everything", [False, True])
@pytest.mark.parametrize("member_id", ["", "member"])
def test_consumer_group_offset_fetch_with_unknown_member_id(member_id: str, everything: bool) -> None:
    """testConsumerGroupOffsetFetchWithUnknownMemberId"""
    ctx = ConsumerTestContext()
    ctx.build_group(GROUP, 1)
    assert _fetch(ctx, member_id, 0, everything) == OffsetFetchResponse(ErrorCode.UNKNOWN_MEMBER_ID)


@pytest.mark.parametrize("everything", [False, True])
def test_consumer_group_offset_fetch_with_stale_member_epoch(everything: bool) -> None:
    """testConsumerGroupOffsetFetchWithStaleMemberEpoch"""
    ctx = ConsumerTestContext()
    _group_with_member(ctx, epoch=0)
    assert _fetch(ctx, "member", 10, everything) == OffsetFetchResponse(ErrorCode.STALE_MEMBER_EPOCH)
