"""ShareGroupDescribe hands a member's description again while the member and the metadata image are
the objects it was built from (``admin.DescribedMembers``): every answer equals the one built
directly, as before the cache."""

from __future__ import annotations

from kgroup.group.admin import described_topics
from kgroup.group.metadata import MetadataImage, TopicImage
from kgroup.group.share.kind import ShareGroups
from kgroup.messages import LEAVE_GROUP_MEMBER_EPOCH, DescribedShareGroup, DescribedShareMember

from .test_share_heartbeat import EVENTS, ORDERS, Share


def _described(s: Share) -> DescribedShareGroup:
    (described,) = s.describe("g").groups
    group = s.coordinator.kind(ShareGroups).ctx.groups["g"]
    image = s.coordinator.metadata
    direct = tuple(
        DescribedShareMember(
            member_id=m.member_id,
            rack_id=m.rack_id,
            member_epoch=m.member_epoch,
            client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topic_names=m.subscribed_topic_names,
            assignment=described_topics(dict(m.assigned_partitions), image),
        )
        for m in (group.members[i] for i in group.member_ids_in_kafka_order())
    )
    assert described.members == direct
    return described


def test_a_changing_share_group_is_described_as_building_it_directly_would() -> None:
    s = Share()
    s.heartbeat(0, "m1", 0, ("orders", "events"))
    first = _described(s)
    assert all(a is b for a, b in zip(_described(s).members, first.members, strict=True))
    s.heartbeat(2000, "m1", 2)
    s.heartbeat(2000, "m2", 0, ("events",))
    assigned = _described(s)
    assert {m.member_id: m for m in assigned.members}["m1"].assignment != first.members[0].assignment
    for now in (4000, 6000):
        s.heartbeat(now, "m1", s.coordinator.kind(ShareGroups).ctx.groups["g"].members["m1"].member_epoch)
        s.heartbeat(now, "m2", s.coordinator.kind(ShareGroups).ctx.groups["g"].members["m2"].member_epoch)
        _described(s)
    # a topic renamed under the same id: the name is the image's
    s.coordinator.set_metadata(
        MetadataImage.of([TopicImage(ORDERS, "orders", 3), TopicImage(EVENTS, "events-renamed", 2)], 2)
    )
    renamed = _described(s)
    names = {tp.topic_name for m in renamed.members for tp in m.assignment}
    assert "events" not in names
    s.heartbeat(8000, "m2", LEAVE_GROUP_MEMBER_EPOCH)
    assert [m.member_id for m in _described(s).members] == ["m1"]
