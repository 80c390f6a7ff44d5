"""Hypothesis strategies for the consumer group's (KIP-848) and share group's (KIP-932) coordinator
records, shared by the record codec's tests."""

from __future__ import annotations

from hypothesis import strategies as st

from kgroup.group.records import consumer as cg
from kgroup.group.records import share as sg
from kgroup.messages import JoinGroupProtocol
from kgroup.model import TopicId

_text = st.text(max_size=12)
_ids = st.text(alphabet="abc-0123456789", min_size=1, max_size=10)
_i32 = st.integers(-(2**31), 2**31 - 1)
_i64 = st.integers(-(2**63), 2**63 - 1)
_topic_ids = st.builds(TopicId.from_int, st.integers(0, 2**128 - 1))
_partitions = st.lists(st.integers(0, 2**31 - 1), max_size=5, unique=True).map(tuple)
_epochs = st.dictionaries(
    _topic_ids, st.dictionaries(st.integers(0, 2**31 - 1), _i32, max_size=5), max_size=3
)
_classic = st.none() | st.builds(
    cg.ClassicMemberMetadata,
    _i32,
    st.lists(st.builds(JoinGroupProtocol, _text, st.binary(max_size=20)), max_size=3).map(tuple),
)

CONSUMER_GROUP_RECORDS: dict[type, st.SearchStrategy[cg.ConsumerGroupRecord]] = {
    cg.ConsumerGroupMetadata: st.builds(cg.ConsumerGroupMetadata, _ids, st.none() | st.tuples(_i32, _i64)),
    cg.ConsumerGroupMemberMetadata: st.builds(
        cg.ConsumerGroupMemberMetadata,
        _ids,
        _ids,
        st.none()
        | st.builds(
            cg.MemberMetadataValue,
            instance_id=st.none() | _ids,
            rack_id=st.none() | _text,
            client_id=_text,
            client_host=_text,
            subscribed_topic_names=st.lists(_ids, max_size=4).map(tuple),
            subscribed_topic_regex=st.none() | _text,
            rebalance_timeout_ms=_i32,
            server_assignor=st.none() | _text,
            classic_member_metadata=_classic,
        ),
    ),
    cg.ConsumerGroupTargetAssignmentMetadata: st.builds(
        cg.ConsumerGroupTargetAssignmentMetadata,
        _ids,
        st.none() | st.builds(cg.TargetAssignmentMetadataValue, _i32, _i64),
    ),
    cg.ConsumerGroupTargetAssignmentMember: st.builds(
        cg.ConsumerGroupTargetAssignmentMember,
        _ids,
        _ids,
        st.none() | st.dictionaries(_topic_ids, _partitions, max_size=3),
    ),
    cg.ConsumerGroupCurrentMemberAssignment: st.builds(
        cg.ConsumerGroupCurrentMemberAssignment,
        _ids,
        _ids,
        st.none()
        | st.builds(
            cg.CurrentAssignmentValue,
            _i32,
            _i32,
            st.sampled_from(list(cg.MemberAssignmentState)),
            _epochs,
            _epochs,
        ),
    ),
    cg.ConsumerGroupRegularExpression: st.builds(
        cg.ConsumerGroupRegularExpression,
        _ids,
        _text,
        st.none() | st.builds(cg.ResolvedRegularExpression, st.frozensets(_text, max_size=4), _i64, _i64),
    ),
}
CONSUMER_GROUP_RECORD = st.one_of(*CONSUMER_GROUP_RECORDS.values())

_share_infos = st.lists(st.builds(sg.SharePartitionsInfo, _topic_ids, _text, _partitions), max_size=3).map(
    tuple
)
SHARE_GROUP_RECORDS: dict[type, st.SearchStrategy[sg.ShareGroupRecord]] = {
    sg.ShareGroupMetadata: st.builds(sg.ShareGroupMetadata, _ids, st.none() | st.tuples(_i32, _i64)),
    sg.ShareGroupMemberMetadata: st.builds(
        sg.ShareGroupMemberMetadata,
        _ids,
        _ids,
        st.none()
        | st.builds(
            sg.ShareMemberMetadataValue,
            st.none() | _text,
            _text,
            _text,
            st.lists(_ids, max_size=4).map(tuple),
        ),
    ),
    sg.ShareGroupTargetAssignmentMetadata: st.builds(
        sg.ShareGroupTargetAssignmentMetadata,
        _ids,
        st.none() | st.builds(cg.TargetAssignmentMetadataValue, _i32, _i64),
    ),
    sg.ShareGroupTargetAssignmentMember: st.builds(
        sg.ShareGroupTargetAssignmentMember,
        _ids,
        _ids,
        st.none() | st.dictionaries(_topic_ids, _partitions, max_size=3),
    ),
    sg.ShareGroupCurrentMemberAssignment: st.builds(
        sg.ShareGroupCurrentMemberAssignment,
        _ids,
        _ids,
        st.none()
        | st.builds(
            sg.ShareCurrentAssignmentValue,
            _i32,
            _i32,
            st.integers(-128, 127),
            st.dictionaries(_topic_ids, _partitions, max_size=3),
        ),
    ),
    sg.ShareGroupStatePartitionMetadata: st.builds(
        sg.ShareGroupStatePartitionMetadata,
        _ids,
        st.none()
        | st.builds(
            sg.ShareStatePartitionValue,
            _share_infos,
            _share_infos,
            st.lists(st.tuples(_topic_ids, _text), max_size=2).map(tuple),
        ),
    ),
}
