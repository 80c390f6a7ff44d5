"""The admin answers around consumer groups: ListGroups' type filter (v5+) when the coordinator has no
consumer group (Kafka lists a group only if its type is asked for, ``GroupMetadataManager.listGroups``),
and ConsumerGroupDescribe of a group that does not exist or is classic (Kafka's messages)."""

from __future__ import annotations

from group.context import GROUP, GroupTestContext
from kgroup.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kgroup.model import ErrorCode


def _listed(ctx: GroupTestContext, types: tuple[str, ...]) -> list[tuple[str, str]]:
    answer = ctx.send(ListGroupsRequest((), types)).body
    assert isinstance(answer, ListGroupsResponse)
    return [(g.group_id, g.group_type) for g in answer.groups]


def test_a_classic_group_is_listed_only_when_classic_groups_are_asked_for() -> None:
    ctx = GroupTestContext()
    ctx.join_group_to_stable(1)
    assert _listed(ctx, ()) == [(GROUP, "classic")]
    assert _listed(ctx, ("Classic",)) == [(GROUP, "classic")]
    assert _listed(ctx, ("consumer",)) == []
    assert _listed(ctx, ("share",)) == []


def test_describing_a_missing_or_classic_group_as_a_consumer_group() -> None:
    ctx = GroupTestContext()
    ctx.join_group_to_stable(1)
    answer = ctx.send(ConsumerGroupDescribeRequest(("nobody", GROUP))).body
    assert isinstance(answer, ConsumerGroupDescribeResponse)
    assert [(g.error_code, g.group_id, g.error_message) for g in answer.groups] == [
        (ErrorCode.GROUP_ID_NOT_FOUND, "nobody", "Group nobody not found."),
        (ErrorCode.GROUP_ID_NOT_FOUND, GROUP, f"Group {GROUP} is not a consumer group."),
    ]
