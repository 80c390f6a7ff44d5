"""Members and the coordinator together, on a virtual clock (see harness.py)."""

from __future__ import annotations

import pytest

from kgroup.assignors import create_assignor
from kgroup.assignors.api import AssignmentRequest
from kgroup.member import (
    LeftGroup,
    MemberConfig,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from kgroup.member.leader import group_members
from kgroup.messages import LeaveGroupResponse
from kgroup.model import RebalanceProtocol, TopicPartition
from kgroup.wire.consumer_protocol import decode_subscription

from .harness import World

TOPICS = {"t": 7, "u": 3}


def exclusive(world: World, *, current_only: bool = False) -> None:
    """No partition is held by two running members at once (``current_only``: two members of the
    group's current generation — a member that left while stalled still believes it holds its
    partitions until its next poll, exactly like Kafka's consumer)."""
    seen: dict[TopicPartition, str] = {}
    if current_only and world.group_state() is None:
        return  # no group yet, so no current generation
    generation = world.group_generation() if current_only else None
    for name, partitions in world.assignment().items():
        if generation is not None and world.nodes[name].member.generation != generation:
            continue
        for tp in partitions:
            assert tp not in seen, f"{tp} held by {seen[tp]} and {name} at {world.now} ms"
            seen[tp] = name


def run_checked(
    world: World, names: list[str], limit_ms: int = 120_000, *, current_only: bool = False
) -> None:
    """Run to stability, checking exclusive ownership every 10 ms on the way."""
    deadline = world.now + limit_ms
    while world.now < deadline:
        world.run_for(10)
        exclusive(world, current_only=current_only)
        if world.is_stable(names):
            world.run_for(2 * world.latency_ms + 1)  # let in-flight answers settle
            exclusive(world)
            return
    raise AssertionError(f"not stable by {deadline} ms")


def owned_by_all(world: World) -> list[TopicPartition]:
    return sorted(tp for parts in world.assignment().values() for tp in parts)


ALL = sorted([TopicPartition("t", p) for p in range(7)] + [TopicPartition("u", p) for p in range(3)])


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_members_reach_stable_with_kafkas_exact_assignment(assignor: str) -> None:
    world = World(TOPICS)
    names = ["c3", "c1", "c4", "c0", "c2"]
    for i, name in enumerate(names):
        topics = ["t", "u"] if i % 2 == 0 else ["t"]
        world.start(name, MemberConfig("g", assignors=(assignor,)), topics)
    run_checked(world, names)
    assert world.group_generation() == 1  # one rebalance: everyone joined within the initial delay
    resp = world.last_leader_join_response()
    members = group_members(resp.members)
    expected = create_assignor(assignor).assign(
        AssignmentRequest(members, {name: world.metadata[name] for name in TOPICS})
    )
    by_member_id = {node.member.member_id: node.member.assignment() for node in world.nodes.values()}
    assert by_member_id == {m: frozenset(p) for m, p in expected.items()}
    assert owned_by_all(world) == ALL


def test_eager_rebalance_revokes_everything() -> None:
    world = World(TOPICS)
    cfg = MemberConfig("g", assignors=("range",))
    for name in ("a", "b"):
        world.start(name, cfg, ["t", "u"])
    run_checked(world, ["a", "b"])
    before = world.assignment()
    for node in world.nodes.values():
        node.events.clear()
    world.start("c", cfg, ["t", "u"])
    run_checked(world, ["a", "b", "c"])
    assert world.group_generation() == 2
    for name in ("a", "b"):
        revoked = world.events_of(name, PartitionsRevoked)
        assert [(set(e.partitions), e.generation) for e in revoked] == [(set(before[name]), 1)]
        [assigned] = world.events_of(name, PartitionsAssigned)
        assert set(assigned.partitions) == world.assignment()[name] and assigned.generation == 2
    assert owned_by_all(world) == ALL


def test_cooperative_rebalance_moves_only_what_it_must_in_two_rebalances() -> None:
    world = World(TOPICS)
    cfg = MemberConfig("g", assignors=("cooperative-sticky",))
    for name in ("a", "b"):
        world.start(name, cfg, ["t", "u"])
    run_checked(world, ["a", "b"])
    before = world.assignment()
    for node in world.nodes.values():
        node.events.clear()
    world.start("c", cfg, ["t", "u"])
    run_checked(world, ["a", "b", "c"])
    after = world.assignment()
    assert world.group_generation() == 3  # the second rebalance hands over what was revoked
    moved: set[TopicPartition] = set()
    for name in ("a", "b"):
        revoked = world.events_of(name, PartitionsRevoked)
        assert len(revoked) == 1 and revoked[0].generation == 2
        assert set(revoked[0].partitions) == before[name] - after[name]
        assert after[name] <= before[name]  # kept partitions were never revoked
        moved |= set(revoked[0].partitions)
    assert moved == after["c"] and len(after["c"]) == 3
    got = [e for e in world.events_of("c", PartitionsAssigned) if e.partitions]
    assert [(set(e.partitions), e.generation) for e in got] == [(after["c"], 3)]
    assert owned_by_all(world) == ALL


@pytest.mark.parametrize("restart_leader", [False, True])
def test_static_member_restarting_within_the_session_gets_its_partitions_back(restart_leader: bool) -> None:
    world = World(TOPICS)
    for name in ("a", "b", "c"):
        world.start(name, MemberConfig("g", group_instance_id=f"id-{name}", assignors=("range",)), ["t", "u"])
    run_checked(world, ["a", "b", "c"])
    before = world.assignment()
    generation = world.group_generation()
    leader = next(n for n, node in world.nodes.items() if node.member.is_leader)
    name = leader if restart_leader else next(n for n in ("a", "b", "c") if n != leader)
    others = [n for n in ("a", "b", "c") if n != name]
    for node in world.nodes.values():
        node.events.clear()
    world.close(name)
    assert LeftGroup("the consumer is being closed", False) in world.events_of(name)
    world.run_for(5000)
    assert not any(isinstance(r.body, LeaveGroupResponse) for _, _, r in world.replies)  # none was sent
    world.start(name, MemberConfig("g", group_instance_id=f"id-{name}", assignors=("range",)), ["t", "u"])
    run_checked(world, ["a", "b", "c"])
    assert world.group_generation() == generation  # no rebalance
    assert world.assignment() == before
    for other in others:
        assert world.events_of(other, PartitionsRevoked) == []


def test_rolling_upgrade_to_cooperative_sticky() -> None:
    world = World(TOPICS)
    old = MemberConfig("g", assignors=("cooperative-sticky", "range"))
    new = MemberConfig("g", assignors=("cooperative-sticky",))
    names = ["a", "b", "c"]
    for name in names:
        world.start(name, old, ["t", "u"])
    run_checked(world, names)
    assert {n.member.protocol for n in world.nodes.values()} == {RebalanceProtocol.EAGER}
    assert {n.member.group_protocol for n in world.nodes.values()} == {"cooperative-sticky"}
    for name in names:  # one bounce at a time: close, restart with the new list
        world.close(name)
        world.run_for(500)
        world.start(name, new, ["t", "u"])
        run_checked(world, names)
        assert owned_by_all(world) == ALL
        assert {n.member.group_protocol for n in world.nodes.values()} == {"cooperative-sticky"}
    assert {n.member.protocol for n in world.nodes.values()} == {RebalanceProtocol.COOPERATIVE}
    # now fully cooperative: a new member moves partitions in two rebalances, revoking only those
    before = world.assignment()
    generation = world.group_generation()
    for node in world.nodes.values():
        node.events.clear()
    world.start("d", new, ["t", "u"])
    run_checked(world, [*names, "d"])
    assert world.group_generation() == generation + 2
    after = world.assignment()
    for name in names:
        revoked = {tp for e in world.events_of(name, PartitionsRevoked) for tp in e.partitions}
        assert revoked == before[name] - after[name]
    assert owned_by_all(world) == ALL


def test_a_stalled_member_leaves_and_comes_back() -> None:
    world = World(TOPICS)
    cfg = MemberConfig("g", assignors=("range",), max_poll_interval_ms=10_000)
    for name in ("a", "b"):
        world.start(name, cfg, ["t", "u"])
    run_checked(world, ["a", "b"])
    world.stall("b", world.now + 15_000)
    world.run_for(14_000)
    assert world.nodes["a"].member.assignment() == frozenset(ALL)  # the group went on without b
    assert any(isinstance(e, LeftGroup) and e.leave_group_sent for e in world.events_of("b"))
    assert world.nodes["b"].member.assignment()  # a zombie until its next poll, as in Kafka
    run_checked(world, ["a", "b"], current_only=True)
    assert world.events_of("b", PartitionsLost)  # what b held while stalled was lost, not revoked
    assert owned_by_all(world) == ALL and all(world.assignment().values())


def test_a_crashed_member_is_replaced_after_the_session_timeout() -> None:
    world = World(TOPICS)
    cfg = MemberConfig("g", assignors=("range",), session_timeout_ms=10_000)
    for name in ("a", "b"):
        world.start(name, cfg, ["t", "u"])
    run_checked(world, ["a", "b"])
    generation = world.group_generation()
    world.crash("b")
    world.run_for(9_000)
    assert world.group_generation() == generation  # still within the session
    world.run_for(6_000)
    assert world.group_generation() == generation + 1
    assert world.nodes["a"].member.assignment() == frozenset(ALL)


def test_partition_growth_is_picked_up_by_the_leader() -> None:
    world = World(TOPICS)
    cfg = MemberConfig("g", assignors=("range",))
    for name in ("a", "b"):
        world.start(name, cfg, ["t", "u"])
    run_checked(world, ["a", "b"])
    generation = world.group_generation()
    world.set_partitions("u", 6)
    run_checked(world, ["a", "b"])
    world.run_for(5000)
    assert world.group_generation() == generation + 1
    assert len(owned_by_all(world)) == 13


def test_eager_sticky_stays_sticky_through_its_user_data() -> None:
    """EAGER members own nothing when they rejoin; StickyAssignor remembers through its user data."""
    world = World({"t": 10})
    cfg = MemberConfig("g", assignors=("sticky",))
    for name in ("a", "b"):
        world.start(name, cfg, ["t"])
    run_checked(world, ["a", "b"])
    before = world.assignment()
    world.start("c", cfg, ["t"])
    run_checked(world, ["a", "b", "c"])
    after = world.assignment()
    assert sorted(len(p) for p in after.values()) == [3, 3, 4]
    kept = len(after["a"] & before["a"]) + len(after["b"] & before["b"])
    assert kept == 7  # only the three partitions c needs moved
    resp = world.last_leader_join_response()
    subscriptions = [decode_subscription(m.metadata) for m in resp.members]
    assert all(sub.owned_partitions == () for sub in subscriptions)  # eager: nothing owned
    assert sum(sub.user_data is not None for sub in subscriptions) == 2  # a and b remember
