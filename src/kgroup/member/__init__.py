"""The consumer member as a pure state machine (Kafka's client side): :class:`ClassicConsumerMember` in a
classic group, :class:`ConsumerProtocolMember` in a consumer group (KIP-848, ``group.protocol=consumer``).

See ``docs/member.md`` and ``docs/consumer-protocol-member.md``. Nothing here reads a clock or opens a
socket: the host passes ``now_ms`` in, sends the returned requests, and delivers the answers back.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kgroup.member.config import MemberConfig, choose_protocol
    from kgroup.member.consumer import ClassicConsumerMember, ConsumerMember, OutboundRequest
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

# loaded on first use: a module that needs only ``kgroup.member.errors`` (the Spark sink's tasks)
# does not import the members, the assignors and numba with it
_EXPORTS = {
    "MemberConfig": "kgroup.member.config",
    "choose_protocol": "kgroup.member.config",
    "ClassicConsumerMember": "kgroup.member.consumer",
    "ConsumerMember": "kgroup.member.consumer",  # deprecated: ClassicConsumerMember's former name
    "OutboundRequest": "kgroup.member.consumer",
    "ConsumerProtocolMember": "kgroup.member.consumer_protocol",
    "ConsumerProtocolConfig": "kgroup.member.consumer_protocol_config",
    "ConsumerMemberState": "kgroup.member.consumer_protocol_states",
    "CommitFailed": "kgroup.member.events",
    "FatalError": "kgroup.member.events",
    "Fenced": "kgroup.member.events",
    "JoinedGroup": "kgroup.member.events",
    "LeftGroup": "kgroup.member.events",
    "MemberEvent": "kgroup.member.events",
    "OffsetsCommitted": "kgroup.member.events",
    "OffsetsFetched": "kgroup.member.events",
    "PartitionsAssigned": "kgroup.member.events",
    "PartitionsLost": "kgroup.member.events",
    "PartitionsRevoked": "kgroup.member.events",
    "RejoinRequested": "kgroup.member.events",
    "TRANSITIONS": "kgroup.member.states",
    "MemberState": "kgroup.member.states",
    "Phase": "kgroup.member.states",
    "Step": "kgroup.member.states",
    "transition_diagram": "kgroup.member.states",
}

__all__ = [
    "TRANSITIONS",
    "ClassicConsumerMember",
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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kgroup.member' has no attribute {name!r}")
    return getattr(import_module(module), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
