"""The consumer member of a classic consumer group, as a pure state machine (Kafka 4.0 client side).

See ``docs/member.md``. Nothing here reads a clock or opens a socket: the host passes ``now_ms`` in,
sends the returned requests, and delivers the answers back.
"""

from kgroup.member.config import MemberConfig, choose_protocol
from kgroup.member.consumer import ConsumerMember, OutboundRequest
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
