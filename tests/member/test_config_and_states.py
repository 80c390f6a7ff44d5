"""MemberConfig validation, the protocol choice, and the transition table."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgroup.member import (
    TRANSITIONS,
    MemberConfig,
    MemberState,
    Phase,
    Step,
    choose_protocol,
    transition_diagram,
)
from kgroup.member.states import next_phase
from kgroup.model import KgroupError, RebalanceProtocol

from .helpers import FixedAssignor

EAGER, COOP = RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE


def test_defaults_are_kafkas() -> None:
    cfg = MemberConfig("g")
    assert (cfg.session_timeout_ms, cfg.heartbeat_interval_ms, cfg.max_poll_interval_ms) == (
        45000,
        3000,
        300000,
    )
    assert cfg.assignors == ("range", "cooperative-sticky")
    assert cfg.enable_auto_commit and cfg.auto_commit_interval_ms == 5000


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"group_id": ""}, "group_id"),
        ({"group_id": "g", "group_instance_id": ""}, "group_instance_id"),
        ({"group_id": "g", "session_timeout_ms": 0}, "session_timeout_ms"),
        ({"group_id": "g", "heartbeat_interval_ms": 45000}, "heartbeat_interval_ms"),
        ({"group_id": "g", "retry_backoff_ms": -1}, "retry_backoff_ms"),
        ({"group_id": "g", "assignors": ()}, "assignors"),
        ({"group_id": "g", "assignors": ("range", "range")}, "assignors"),
    ],
)
def test_bad_config_names_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(KgroupError) as err:
        MemberConfig(**kwargs)  # type: ignore[arg-type]
    assert err.value.message.startswith(field)
    assert "\n" not in err.value.message


def test_protocol_is_the_highest_one_every_assignor_supports() -> None:
    eager = FixedAssignor("range", protocols=(EAGER,))
    coop = FixedAssignor("cooperative-sticky", protocols=(EAGER, COOP))
    assert choose_protocol([eager, coop]) is EAGER  # Kafka's default list is EAGER
    assert choose_protocol([coop]) is COOP
    with pytest.raises(KgroupError, match="no rebalance protocol in common"):
        choose_protocol([eager, FixedAssignor("coop-only", protocols=(COOP,))])


def test_real_assignors_give_kafkas_protocols() -> None:
    from kgroup.member import ConsumerMember

    assert ConsumerMember(MemberConfig("g"), ["t"]).protocol is EAGER
    assert ConsumerMember(MemberConfig("g", assignors=("cooperative-sticky",)), ["t"]).protocol is COOP
    assert (
        ConsumerMember(MemberConfig("g", assignors=("cooperative-sticky", "range")), ["t"]).protocol is EAGER
    )


def test_every_phase_maps_to_a_state() -> None:
    assert {p.state for p in Phase} == set(MemberState)
    assert Phase.PREPARING.state is Phase.JOINING.state is Phase.SYNCING.state is MemberState.REBALANCING


def test_table_moves_and_refuses() -> None:
    assert next_phase(Phase.UNJOINED, Step.BEGIN_REBALANCE) is Phase.PREPARING
    assert next_phase(Phase.SYNCING, Step.SYNCED) is Phase.STABLE
    with pytest.raises(AssertionError, match="UNJOINED --synced-->"):
        next_phase(Phase.UNJOINED, Step.SYNCED)
    with pytest.raises(AssertionError):
        next_phase(Phase.CLOSED, Step.CLOSE)
    # every live phase can fail and close; nothing leaves CLOSED
    assert all((p, Step.CLOSE) in TRANSITIONS for p in Phase if p is not Phase.CLOSED)
    assert not [key for key in TRANSITIONS if key[0] is Phase.CLOSED]


def test_diagram_lists_every_transition_and_the_docs_embed_it() -> None:
    diagram = transition_diagram()
    for (source, step), target in TRANSITIONS.items():
        line = next(
            ln for ln in diagram.splitlines() if ln.strip().startswith(f"{source.name} --> {target.name}:")
        )
        assert step.value in line
    docs = Path(__file__).resolve().parents[2] / "docs" / "member.md"
    assert diagram in docs.read_text(), "docs/member.md must embed transition_diagram() verbatim"


def test_consumer_member_is_the_deprecated_name_of_the_classic_member() -> None:
    import kgroup
    from kgroup.member import ClassicConsumerMember, ConsumerMember

    assert ConsumerMember is ClassicConsumerMember is kgroup.ClassicConsumerMember is kgroup.ConsumerMember
    assert ClassicConsumerMember.__name__ == "ClassicConsumerMember"
    assert "ClassicConsumerMember" in kgroup.__all__ and "ConsumerMember" in kgroup.__all__
