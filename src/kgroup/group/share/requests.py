"""ShareGroupDescribe, ListGroups' entry and DeleteGroups of share groups; sessions on load."""

from __future__ import annotations

from collections.abc import Mapping

from kgroup.group.admin import described_groups, described_topics
from kgroup.group.metadata import MetadataImage
from kgroup.group.share.group import ShareGroupData, ShareGroupState, ShareMember
from kgroup.group.share.heartbeat import ShareContext
from kgroup.group.share.timers import ShareSessionTimer
from kgroup.group.txn import Txn
from kgroup.messages import (
    DescribedShareGroup,
    DescribedShareMember,
    Envelope,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
)
from kgroup.model import ErrorCode

__all__ = [
    "SHARE_ASSIGNOR_NAME",
    "delete_share_group",
    "handle_share_describe",
    "restart_sessions",
]

#: ``group.share.assignors``' only entry in Kafka 4.4 (``SimpleAssignor.name()``)
SHARE_ASSIGNOR_NAME = "simple"
#: ``ShareGroup.PROTOCOL_TYPE``
SHARE_PROTOCOL_TYPE = "share"


def _describe_member(
    member: ShareMember, _extra: None, image: MetadataImage, _previous: object = None
) -> DescribedShareMember:
    return DescribedShareMember(
        member_id=member.member_id,
        rack_id=member.rack_id,
        member_epoch=member.member_epoch,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=member.subscribed_topic_names,
        assignment=described_topics(dict(member.assigned_partitions), image),
    )


_NO_EXTRAS: Mapping[str, None] = {}


def handle_share_describe(txn: Txn, env: Envelope, req: ShareGroupDescribeRequest, ctx: ShareContext) -> None:
    """``shareGroupDescribe``: each group, or GROUP_ID_NOT_FOUND as ``shareGroup(id)`` words it; a
    member described before is handed again while it and the metadata image are the same objects."""
    described = described_groups(
        req.group_ids,
        ctx.groups,
        kind="share",
        owned_elsewhere=ctx.owned_elsewhere,
        described_type=DescribedShareGroup,
        assignor=lambda group: SHARE_ASSIGNOR_NAME,
        members=lambda group: group.described_members.describe(
            group.members, group.member_ids_in_kafka_order(), _NO_EXTRAS, ctx.image, _describe_member
        ),
    )
    txn.reply(env.connection, env.correlation_id, ShareGroupDescribeResponse(described))


def delete_share_group(txn: Txn, group: ShareGroupData) -> ErrorCode:
    """DeleteGroups of a share group: only an Empty one (``validateDeleteGroup``: NON_EMPTY_GROUP
    otherwise); the tombstones of its records (``createGroupTombstoneRecords``)."""
    if group.state is not ShareGroupState.EMPTY:
        return ErrorCode.NON_EMPTY_GROUP
    group_id = group.group_id
    txn.cancel_group_timers(group_id)
    for record in group.tombstone_records():
        txn.emit(record)
    return ErrorCode.NONE


def restart_sessions(txn: Txn, group: ShareGroupData) -> None:
    """``onLoaded``: every member's session starts again from now."""
    for member_id in group.members:
        txn.schedule(ShareSessionTimer(group.group_id, member_id), txn.config.share_session_timeout_ms)
