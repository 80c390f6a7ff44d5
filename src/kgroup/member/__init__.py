"""The consumer member as a pure state machine (Kafka's client side): :class:`ConsumerMember` in a
classic group, :class:`ConsumerProtocolMember` in a consumer group (KIP-848, ``group.protocol=consumer``).

See ``docs/member.md`` and ``docs/consumer-protocol-member.md``. Nothing here reads a clock or opens a
socket: the host passes ``now_ms`` in, sends the returned requests, and delivers the answers back.
"""

from kgroup.member.config import MemberConfig, choose_protocol
from kgroup.member.consumer import ConsumerMember, OutboundRequest
from kgroup.member.consumer_protocol import ConsumerProtocolMember
from kgroup.member.consumer_protocol_config import ConsumerProtocolConfig
from kgroup.member.consumer_protocol_states import ConsumerMemberState
from kgroup.member.events import (
    CommitFailed,
    FatalError,
    Fenced,
    JoinedGroup,
    LeftGroup,
    MemberEvent,
    OffsetsCommitted,
    OffsetsFetched,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    RejoinRequested,
)
from kgroup.member.states import TRANSITIONS, MemberState, Phase, Step, transition_diagram

__all__ = [
    "TRANSITIONS",
    "CommitFailed",
    "ConsumerMember",
    "ConsumerMemberState",
    "ConsumerProtocolConfig",
    "ConsumerProtocolMember",
    "FatalError",
    "Fenced",
    "JoinedGroup",
    "LeftGroup",
    "MemberConfig",
    "MemberEvent",
    "MemberState",
    "OffsetsCommitted",
    "OffsetsFetched",
    "OutboundRequest",
    "PartitionsAssigned",
    "PartitionsLost",
    "PartitionsRevoked",
    "Phase",
    "RejoinRequested",
    "Step",
    "choose_protocol",
    "transition_diagram",
]
