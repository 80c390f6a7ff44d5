"""Kafka's own coordinator test scenarios (``GroupMetadataManagerTest``), replayed against kgroup.

Each test names the Kafka test it reproduces: same requests, same errors, same states and
generations. Kafka's test context can join without KIP-394's MEMBER_ID_REQUIRED round trip (old
JoinGroup versions); kgroup always requires it, so dynamic joins here take the two steps.
"""

from __future__ import annotations

from random import Random

from group.context import DEFAULT_PROTOCOLS, GROUP, GroupTestContext, protocols
from kgroup.group import ClassicGroups, CoordinatorConfig, GroupCoordinator, GroupState, TimerTable
from kgroup.messages import UNKNOWN_MEMBER_ID, JoinGroupRequest, LeaveGroupMember
from kgroup.model import ErrorCode

S = GroupState


def test_static_member_rejoin_with_known_member_id() -> None:
    """testStaticMemberRejoinWithKnownMemberId: a static member rejoining with its id and unchanged
    metadata during CompletingRebalance gets the current generation at once; its sync stabilises."""
    ctx = GroupTestContext()
    first = ctx.join_static("group-instance-id")
    ctx.sleep_until(lambda: first.done)
    assert first.join.error_code is ErrorCode.NONE
    member_id = first.join.member_id
    again = ctx.join(member_id, instance_id="group-instance-id")
    assert again.done and again.join.error_code is ErrorCode.NONE
    assert again.join.generation_id == first.join.generation_id
    assert ctx.state() is S.COMPLETING_REBALANCE
    sync = ctx.sync(member_id, first.join.generation_id, {member_id: []}, instance_id="group-instance-id")
    assert sync.sync.error_code is ErrorCode.NONE
    assert ctx.state() is S.STABLE


def test_replace_static_member_in_stable_state_no_error() -> None:
    """testReplaceStaticMemberInStableStateNoError: a static member returning with an unknown id while
    Stable, with protocols that keep the selected one, replaces its id without a rebalance: same
    generation, old leader id in the answer (pre-v9 JoinGroup), new timeouts and protocols kept."""
    ctx = GroupTestContext()
    first = ctx.join_static("group-instance-id", protocols=protocols(("range", ["foo"])))
    ctx.sleep_until(lambda: first.done)
    old_id = first.join.member_id
    ctx.sync(old_id, 1, {old_id: []}, instance_id="group-instance-id")
    assert ctx.state() is S.STABLE
    new_protocols = protocols(("range", ["foo"]), ("roundrobin", ["foo"]))
    rejoin = ctx.join_static(
        "group-instance-id",
        protocols=new_protocols,
        rebalance_timeout_ms=7000,
        session_timeout_ms=6000,
        api_version=8,
    )
    assert rejoin.done
    response = rejoin.join
    assert response.error_code is ErrorCode.NONE
    assert response.generation_id == 1
    assert response.leader == old_id  # the trick that stops the returning leader from assigning
    assert response.member_id != old_id
    assert response.members == () and response.skip_assignment is False
    assert (response.protocol_type, response.protocol_name) == ("consumer", "range")
    view = ctx.coordinator.kind(ClassicGroups).group(GROUP)
    assert view.state is S.STABLE and view.generation == 1
    member = view.member(response.member_id)
    assert (member.rebalance_timeout_ms, member.session_timeout_ms) == (7000, 6000)
    assert member.protocols == new_protocols
    assert view.member_ids == (response.member_id,)
    # the old id is fenced from now on
    assert ctx.heartbeat(old_id, 1, instance_id="group-instance-id") is ErrorCode.FENCED_INSTANCE_ID


def test_replace_static_leader_in_stable_state_skips_assignment_from_join_group_v9() -> None:
    """testReplaceStaticMemberInStableStateNoError with supportSkippingAssignment (KIP-814, JoinGroup
    v9, what Kafka 4.0's consumer sends): the returning static leader is named leader under its new
    id, gets the member list with the exact metadata bytes, and is told to skip the assignor."""
    ctx = GroupTestContext()
    first = ctx.join_static("group-instance-id", protocols=protocols(("range", ["foo"])))
    ctx.sleep_until(lambda: first.done)
    old_id = first.join.member_id
    ctx.sync(old_id, 1, {old_id: []}, instance_id="group-instance-id")
    new_protocols = protocols(("range", ["foo"]), ("roundrobin", ["foo"]))
    rejoin = ctx.join_static("group-instance-id", protocols=new_protocols, api_version=9)
    response = rejoin.join
    assert response.error_code is ErrorCode.NONE and response.generation_id == 1
    assert response.member_id != old_id
    assert response.leader == response.member_id
    assert response.skip_assignment is True
    assert [(m.member_id, m.group_instance_id, m.metadata) for m in response.members] == [
        (response.member_id, "group-instance-id", new_protocols[0].metadata)
    ]
    assert ctx.state() is S.STABLE and ctx.generation() == 1


def test_returning_static_follower_v9_gets_no_members_and_no_skip() -> None:
    """KIP-814 only concerns the leader: a returning static follower gets the current generation with
    the (unchanged) leader id, no members and skip_assignment false."""
    ctx = GroupTestContext()
    ids, leader, generation = ctx.join_group_to_stable(2, static=True)
    follower_index = 1 if ids[0] == leader else 0
    rejoin = ctx.join_static(f"instance-{follower_index}", connection="again", api_version=9)
    response = rejoin.join
    assert response.error_code is ErrorCode.NONE and response.generation_id == generation
    assert response.leader == leader and response.members == () and response.skip_assignment is False


def test_join_group_before_v4_adds_new_dynamic_member_directly() -> None:
    """JoinGroupRequest.requiresKnownMemberId: before v4 a new dynamic member is not asked for
    MEMBER_ID_REQUIRED; it is added with a new id and the group rebalances."""
    ctx = GroupTestContext()
    call = ctx.join(api_version=3)
    assert not call.done  # parked in the initial rebalance, not answered MEMBER_ID_REQUIRED
    ctx.sleep_until(lambda: call.done)
    assert call.join.error_code is ErrorCode.NONE and call.join.member_id.startswith("consumer-")
    assert call.join.leader == call.join.member_id and ctx.state() is S.COMPLETING_REBALANCE
    v4 = ctx.join(api_version=4, connection="other")
    assert v4.join.error_code is ErrorCode.MEMBER_ID_REQUIRED


def test_replace_static_member_in_stable_state_with_updated_protocol_triggers_rebalance() -> None:
    """testReplaceStaticMemberInStableStateWithUpdatedProtocolTriggersRebalance: the returning static
    member now supports only another protocol, so the selected protocol would change: rebalance."""
    ctx = GroupTestContext()
    first = ctx.join_static(
        "group-instance-id", protocols=protocols(("range", ["foo"]), ("roundrobin", ["foo"]))
    )
    ctx.sleep_until(lambda: first.done)
    ctx.sync(first.join.member_id, 1, {first.join.member_id: []}, instance_id="group-instance-id")
    assert ctx.state() is S.STABLE and ctx.coordinator.kind(ClassicGroups).group(GROUP).protocol == "range"
    rejoin = ctx.join_static("group-instance-id", protocols=protocols(("roundrobin", ["foo"])))
    # the only member rejoined, so the join completes at once
    assert rejoin.done and rejoin.join.error_code is ErrorCode.NONE
    assert ctx.generation() == 2
    assert ctx.state() is S.COMPLETING_REBALANCE
    assert rejoin.join.protocol_name == "roundrobin"
    assert len(ctx.coordinator.kind(ClassicGroups).group(GROUP).members) == 1


def test_static_member_fence_duplicate_rejoined_follower() -> None:
    """testStaticMemberFenceDuplicateRejoinedFollower: while a rebalance runs, the old follower rejoins
    with its id (parked); a duplicate with the same instance id and no member id replaces it, and the
    old follower's parked JoinGroup is answered FENCED_INSTANCE_ID at once."""
    ctx = GroupTestContext()
    (leader_id, follower_id), leader, generation = ctx.join_group_to_stable(2, static=True)
    assert leader == leader_id
    third = ctx.join_dynamic(connection="m2")  # a third member triggers a rebalance
    assert not third.done
    assert ctx.state() is S.PREPARING_REBALANCE
    old_follower = ctx.join(follower_id, instance_id="instance-1", connection="m1")
    assert not old_follower.done
    duplicate = ctx.join_static("instance-1", connection="dup")
    assert old_follower.done
    fenced = old_follower.join
    assert fenced.error_code is ErrorCode.FENCED_INSTANCE_ID
    assert fenced.member_id == follower_id
    assert fenced.generation_id == -1 and fenced.leader == "" and fenced.protocol_name is None
    assert ctx.state() is S.PREPARING_REBALANCE
    assert not duplicate.done
    # the leader rejoins too: everyone is in, the join completes with the duplicate as the follower
    leader_rejoin = ctx.join(leader_id, instance_id="instance-0", connection="m0")
    assert leader_rejoin.done and duplicate.done and third.done
    assert ctx.generation() == generation + 1
    assert set(ctx.coordinator.kind(ClassicGroups).group(GROUP).member_ids) == {
        leader_id,
        duplicate.join.member_id,
        third.join.member_id,
    }


def test_leave_group_with_fenced_instance_id() -> None:
    """testLeaveGroupWithFencedInstanceId: leaving with a known instance id but another member id is
    answered FENCED_INSTANCE_ID for that member; the group is untouched."""
    ctx = GroupTestContext()
    (member_id,), _, _ = ctx.join_group_to_stable(1, static=True)
    response = ctx.leave(LeaveGroupMember("some-other-member-id", "instance-0"))
    assert response.error_code is ErrorCode.NONE
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in response.members] == [
        ("some-other-member-id", "instance-0", ErrorCode.FENCED_INSTANCE_ID)
    ]
    assert ctx.state() is S.STABLE
    assert ctx.coordinator.kind(ClassicGroups).group(GROUP).member_ids == (member_id,)


def test_delay_initial_rebalance_by_group_initial_rebalance_delay_on_empty_group() -> None:
    """testDelayInitialRebalanceByGroupInitialRebalanceDelayOnEmptyGroup: the first join into an empty
    group waits group.initial.rebalance.delay.ms, not a millisecond less."""
    ctx = GroupTestContext()
    delay = ctx.config.group_initial_rebalance_delay_ms
    call = ctx.join_dynamic()
    ctx.sleep(delay // 2)
    assert not call.done and ctx.state() is S.PREPARING_REBALANCE
    ctx.sleep(delay // 2 - 1)
    assert not call.done
    ctx.sleep(1)
    assert call.done and call.join.error_code is ErrorCode.NONE
    assert ctx.state() is S.COMPLETING_REBALANCE and ctx.generation() == 1


def test_reset_rebalance_delay_when_new_member_joins_group_during_initial_rebalance() -> None:
    """testResetRebalanceDelayWhenNewMemberJoinsGroupDuringInitialRebalance: a member arriving during
    the initial delay restarts it (rebalance timeout 3x the delay leaves room)."""
    ctx = GroupTestContext()
    delay = ctx.config.group_initial_rebalance_delay_ms
    first = ctx.join_dynamic(rebalance_timeout_ms=delay * 3, connection="a")
    ctx.sleep(delay - 1)
    second = ctx.join_dynamic(rebalance_timeout_ms=delay * 3, connection="b")
    ctx.sleep(1)  # the first deadline: a member arrived, so the delay starts again
    assert not first.done and not second.done
    ctx.sleep(delay - 1)
    assert not first.done and not second.done
    ctx.sleep(1)
    assert first.done and second.done
    assert ctx.time_ms == 2 * delay
    assert first.join.generation_id == second.join.generation_id == 1
    assert ctx.state() is S.COMPLETING_REBALANCE


def test_delay_rebalance_upto_rebalance_timeout() -> None:
    """testDelayRebalanceUptoRebalanceTimeout: extensions stop at the rebalance timeout even while
    members keep arriving (rebalance timeout = 2x the delay)."""
    ctx = GroupTestContext()
    delay = ctx.config.group_initial_rebalance_delay_ms
    calls = [ctx.join_dynamic(rebalance_timeout_ms=delay * 2, connection="a")]
    ctx.sleep(delay - 1)
    calls.append(ctx.join_dynamic(rebalance_timeout_ms=delay * 2, connection="b"))
    ctx.sleep(1)
    assert not any(c.done for c in calls)  # extended once, to the rebalance timeout
    ctx.sleep(delay - 1)
    calls.append(ctx.join_dynamic(rebalance_timeout_ms=delay * 2, connection="c"))
    assert not any(c.done for c in calls)
    ctx.sleep(1)  # exactly the rebalance timeout: no further extension despite the new member
    assert all(c.done and c.join.error_code is ErrorCode.NONE for c in calls)
    assert ctx.time_ms == delay * 2
    assert ctx.generation() == 1 and len(ctx.coordinator.kind(ClassicGroups).group(GROUP).members) == 3


def test_join_group_should_receive_error_if_group_over_max_size() -> None:
    """testJoinGroupShouldReceiveErrorIfGroupOverMaxSize: with group.max.size 10, the 11th member
    joining during the initial rebalance gets GROUP_MAX_SIZE_REACHED."""
    ctx = GroupTestContext(CoordinatorConfig(group_max_size=10))
    calls = [ctx.join_dynamic(rebalance_timeout_ms=10_000, connection=f"m{i}") for i in range(10)]
    extra = ctx.join(rebalance_timeout_ms=10_000, connection="m10")
    assert extra.join.error_code is ErrorCode.GROUP_MAX_SIZE_REACHED
    assert extra.join.member_id == UNKNOWN_MEMBER_ID
    ctx.sleep_until(lambda: all(c.done for c in calls))
    assert all(c.join.error_code is ErrorCode.NONE for c in calls)
    assert len(ctx.coordinator.kind(ClassicGroups).group(GROUP).members) == 10


def test_last_joining_members_are_kicked_out_when_rejoining_group_with_max_size() -> None:
    """testLastJoiningMembersAreKickedOutWhenRejoiningGroupWithMaxSize: a group of 20 reloaded by a
    coordinator whose group.max.size is 10 (the limit was lowered): on the next rebalance the first
    10 to rejoin stay, the last 10 get GROUP_MAX_SIZE_REACHED and are removed."""
    big = GroupTestContext(CoordinatorConfig(group_max_size=100))
    member_ids, leader, generation = big.join_group_to_stable(20, rebalance_timeout_ms=10_000)
    ctx = GroupTestContext(CoordinatorConfig(group_max_size=10), time_ms=big.time_ms)
    for record in big.records:
        ctx.coordinator.replay(record)
    ctx.records = list(big.records)
    ctx.timers = TimerTable.from_armed(ctx.coordinator.armed_timers())
    rejoin_order = [leader] + [m for m in member_ids if m != leader]
    calls = [ctx.join(m, rebalance_timeout_ms=10_000, connection=f"r{i}") for i, m in enumerate(rejoin_order)]
    assert ctx.state() is S.PREPARING_REBALANCE
    for call in calls[10:]:
        assert call.done and call.join.error_code is ErrorCode.GROUP_MAX_SIZE_REACHED
    assert not any(c.done for c in calls[:10])
    assert set(ctx.coordinator.kind(ClassicGroups).group(GROUP).member_ids) == set(rejoin_order[:10])
    ctx.sleep_until(lambda: all(c.done for c in calls[:10]))
    assert all(c.join.error_code is ErrorCode.NONE for c in calls[:10])
    assert ctx.generation() == generation + 1
    assert len(ctx.coordinator.kind(ClassicGroups).group(GROUP).members) == 10


def test_join_group_unknown_member_new_group() -> None:
    """testJoinGroupUnknownMemberNewGroup: a member id sent to a group that does not exist gets
    UNKNOWN_MEMBER_ID, and no group is created."""
    ctx = GroupTestContext()
    call = ctx.join("member-id")
    assert call.join.error_code is ErrorCode.UNKNOWN_MEMBER_ID
    assert call.join.member_id == "member-id"
    assert not ctx.coordinator.has_group(GROUP)


def test_heartbeat_expiration_should_remove_pending_member() -> None:
    """testHeartbeatExpirationShouldRemovePendingMember: a member id handed out with
    MEMBER_ID_REQUIRED that never comes back is forgotten after its session timeout."""
    ctx = GroupTestContext()
    first = ctx.join(session_timeout_ms=1000 * 6)
    assert first.join.error_code is ErrorCode.MEMBER_ID_REQUIRED
    pending_id = first.join.member_id
    assert pending_id.startswith("consumer-")
    assert ctx.coordinator.kind(ClassicGroups).group(GROUP).pending_members == {pending_id}
    ctx.sleep(6000)
    assert ctx.coordinator.kind(ClassicGroups).group(GROUP).pending_members == frozenset()
    late = ctx.join(pending_id)
    assert late.join.error_code is ErrorCode.UNKNOWN_MEMBER_ID


def test_new_member_join_expiration() -> None:
    """testNewMemberJoinExpiration: a new member parked in a rebalance that cannot complete (the old
    member neither rejoins nor expires) is dropped after the new-member join timeout with
    UNKNOWN_MEMBER_ID, even though its own session timeout is longer."""
    ctx = GroupTestContext()
    long_ms = ctx.config.group_new_member_join_timeout_ms * 2
    (old_id,), _, _ = ctx.join_group_to_stable(1, session_timeout_ms=long_ms, rebalance_timeout_ms=long_ms)
    new = ctx.join_dynamic(session_timeout_ms=long_ms, rebalance_timeout_ms=long_ms, connection="new")
    assert not new.done and ctx.state() is S.PREPARING_REBALANCE
    new_id = next(m for m in ctx.coordinator.kind(ClassicGroups).group(GROUP).member_ids if m != old_id)
    ctx.sleep(ctx.config.group_new_member_join_timeout_ms - 1)
    assert not new.done
    ctx.sleep(1)
    assert new.done and new.join.error_code is ErrorCode.UNKNOWN_MEMBER_ID
    assert new.join.member_id == UNKNOWN_MEMBER_ID
    view = ctx.coordinator.kind(ClassicGroups).group(GROUP)
    assert new_id not in view.member_ids and view.member_ids == (old_id,)
    assert view.state is S.PREPARING_REBALANCE


def test_classic_group_member_session_timeout_during_rebalance() -> None:
    """testClassicGroupMemberSessionTimeoutDuringRebalance: while a rebalance waits for the leader,
    its heartbeats get REBALANCE_IN_PROGRESS; once it stops heartbeating its session expires, the
    join completes without it, and the new member leads generation 2."""
    ctx = GroupTestContext()
    (leader_id,), _, generation = ctx.join_group_to_stable(
        1, session_timeout_ms=6000, rebalance_timeout_ms=60_000
    )
    new = ctx.join_dynamic(session_timeout_ms=6000, rebalance_timeout_ms=60_000, connection="new")
    assert ctx.state() is S.PREPARING_REBALANCE
    ctx.sleep(3000)
    assert ctx.heartbeat(leader_id, generation) is ErrorCode.REBALANCE_IN_PROGRESS
    ctx.sleep(5999)
    assert not new.done
    ctx.sleep(1)  # the leader's session ends 6000 ms after its last heartbeat
    assert new.done and new.join.error_code is ErrorCode.NONE
    assert new.join.generation_id == generation + 1
    assert new.join.leader == new.join.member_id
    assert ctx.coordinator.kind(ClassicGroups).group(GROUP).member_ids == (new.join.member_id,)
    assert ctx.heartbeat(leader_id, generation) is ErrorCode.UNKNOWN_MEMBER_ID


def test_static_member_leader_fail_to_rejoin_before_rebalance_timeout() -> None:
    """testStaticMemberLeaderFailToRejoinBeforeRebalanceTimeout: the static leader does not rejoin in
    time; it stays a member (static members are not removed for missing a rejoin) but the follower
    that rejoined becomes leader of the next generation. The old leader rejoining later gets that
    generation as a follower."""
    ctx = GroupTestContext()
    (leader_id, follower_id), _, generation = ctx.join_group_to_stable(
        2, static=True, session_timeout_ms=60_000, rebalance_timeout_ms=10_000
    )
    follower = ctx.join(
        follower_id,
        instance_id="instance-1",
        rebalance_timeout_ms=10_000,
        session_timeout_ms=60_000,
        protocols=protocols(("range", ["foo", "bar"])),
        connection="m1",
    )  # changed metadata: a rebalance
    assert ctx.state() is S.PREPARING_REBALANCE
    ctx.sleep(9999)
    assert not follower.done
    ctx.sleep(1)
    assert follower.done and follower.join.error_code is ErrorCode.NONE
    assert follower.join.generation_id == generation + 1
    assert follower.join.leader == follower_id
    assert {m.member_id for m in follower.join.members} == {leader_id, follower_id}
    assert ctx.state() is S.COMPLETING_REBALANCE
    old_leader = ctx.join(
        leader_id, instance_id="instance-0", session_timeout_ms=60_000, rebalance_timeout_ms=10_000
    )
    assert old_leader.done and old_leader.join.error_code is ErrorCode.NONE
    assert old_leader.join.generation_id == generation + 1
    assert old_leader.join.leader == follower_id and old_leader.join.members == ()


def test_group_stuck_in_rebalance_timeout_due_to_nonjoined_static_member() -> None:
    """testGroupStuckInRebalanceTimeoutDueToNonjoinedStaticMember: static members with long sessions
    that do not rejoin cannot hold the group: at the rebalance timeout the join completes with the
    new member as leader, and when the static members do not sync either, the sync timeout removes
    them and the next generation holds only the member that took part."""
    ctx = GroupTestContext()
    long_session = 100_000
    (_leader_id, _follower_id), _, generation = ctx.join_group_to_stable(
        2, static=True, session_timeout_ms=long_session, rebalance_timeout_ms=5000
    )
    new = ctx.join_dynamic(session_timeout_ms=long_session, rebalance_timeout_ms=5000, connection="new")
    ctx.sleep(5000)
    assert new.done and new.join.error_code is ErrorCode.NONE
    new_id = new.join.member_id
    assert new.join.leader == new_id and new.join.generation_id == generation + 1
    assert ctx.state() is S.COMPLETING_REBALANCE
    assert len(ctx.coordinator.kind(ClassicGroups).group(GROUP).members) == 3
    sync = ctx.sync(new_id, generation + 1, {new_id: []})
    assert sync.done and ctx.state() is S.STABLE
    ctx.sleep(5000)  # the static members never synced: removed, rebalance with the new member alone
    rejoin = ctx.join(new_id, session_timeout_ms=long_session, rebalance_timeout_ms=5000)
    assert rejoin.done and rejoin.join.generation_id == generation + 2
    assert ctx.coordinator.kind(ClassicGroups).group(GROUP).member_ids == (new_id,)


def test_sync_group_from_illegal_generation() -> None:
    """testSyncGroupFromIllegalGeneration: SyncGroup with generation + 1 gets ILLEGAL_GENERATION."""
    ctx = GroupTestContext()
    call = ctx.join_static("leader-instance-id")
    ctx.sleep_until(lambda: call.done)
    sync = ctx.sync(call.join.member_id, call.join.generation_id + 1, instance_id="leader-instance-id")
    assert sync.sync.error_code is ErrorCode.ILLEGAL_GENERATION
    assert ctx.state() is S.COMPLETING_REBALANCE


def test_heartbeat_illegal_generation() -> None:
    """testHeartbeatIllegalGeneration: a heartbeat from another generation gets ILLEGAL_GENERATION."""
    ctx = GroupTestContext()
    (member_id,), _, generation = ctx.join_group_to_stable(1)
    assert ctx.heartbeat(member_id, generation + 1) is ErrorCode.ILLEGAL_GENERATION
    assert ctx.heartbeat(member_id, generation) is ErrorCode.NONE


def test_heartbeat_unknown_member_existing_group() -> None:
    """testHeartbeatUnknownMemberExistingGroup: a heartbeat from a member id the group does not know."""
    ctx = GroupTestContext()
    _, _, generation = ctx.join_group_to_stable(1)
    assert ctx.heartbeat("unknown-member-id", generation) is ErrorCode.UNKNOWN_MEMBER_ID


def test_every_scenario_replays_to_the_same_state() -> None:
    """Not a Kafka test: a long mixed scenario whose record log, replayed, rebuilds the same state."""
    ctx = GroupTestContext(seed=7)
    member_ids, leader, generation = ctx.join_group_to_stable(3, static=False)
    ctx.join_dynamic(connection="late")
    ctx.sleep(20_000)
    assert ctx.rebuilt().snapshot() == ctx.coordinator.snapshot()
    fresh = GroupCoordinator(ctx.config, rng=Random(1))
    for record in ctx.records:
        fresh.replay(record)
    assert fresh.kind(ClassicGroups).group(GROUP) == ctx.coordinator.kind(ClassicGroups).group(GROUP)
    assert len(ctx.records) > 10 and leader in member_ids and generation == 1


def test_static_member_rejoin_with_leader_id_and_unknown_member_id() -> None:
    """testStaticMemberRejoinWithLeaderIdAndUnknownMemberId (pre-v9 answer): the static leader comes
    back with no member id: no rebalance, the old leader id in the answer; the old id is then fenced
    on JoinGroup and SyncGroup, and without its instance id it is simply unknown."""
    ctx = GroupTestContext()
    (leader_id, _follower_id), _, generation = ctx.join_group_to_stable(2, static=True)
    superset = protocols(("range", ["foo"]), ("roundrobin", ["foo"]))
    rejoin = ctx.join_static("instance-0", protocols=superset, api_version=8)
    assert rejoin.done and rejoin.join.error_code is ErrorCode.NONE
    assert (rejoin.join.generation_id, rejoin.join.leader, rejoin.join.members) == (generation, leader_id, ())
    assert ctx.state() is S.STABLE
    old = ctx.join(leader_id, instance_id="instance-0", protocols=superset)
    assert old.join.error_code is ErrorCode.FENCED_INSTANCE_ID
    assert (
        ctx.sync(leader_id, generation, instance_id="instance-0").sync.error_code
        is ErrorCode.FENCED_INSTANCE_ID
    )
    assert ctx.sync(leader_id, generation).sync.error_code is ErrorCode.UNKNOWN_MEMBER_ID


def test_static_member_rejoin_with_leader_id_and_known_member_id() -> None:
    """testStaticMemberRejoinWithLeaderIdAndKnownMemberId: the known static leader rejoining forces a
    rebalance; the follower neither rejoins nor heartbeats, so its session ends and the leader alone
    forms the next generation."""
    ctx = GroupTestContext()
    (leader_id, follower_id), _, generation = ctx.join_group_to_stable(
        2, static=True, session_timeout_ms=6000, rebalance_timeout_ms=10_000
    )
    call = ctx.join(leader_id, instance_id="instance-0", session_timeout_ms=6000, rebalance_timeout_ms=10_000)
    ctx.sleep_until(lambda: call.done)
    assert call.join.error_code is ErrorCode.NONE
    assert (call.join.generation_id, call.join.leader) == (generation + 1, leader_id)
    assert [m.member_id for m in call.join.members] == [leader_id]
    assert follower_id not in ctx.coordinator.kind(ClassicGroups).group(GROUP).member_ids
    assert ctx.state() is S.COMPLETING_REBALANCE


def test_static_rejoin_unknown_id_change_of_protocol_selected_protocol_changed() -> None:
    """testStaticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWithSelectedProtocolChanged: the
    static follower returns with a new id and only roundrobin, so the vote changes: a rebalance; the
    leader does not rejoin in time, so the returning follower leads, with roundrobin, and the old
    leader stays in the group as a static member."""
    ctx = GroupTestContext()
    (leader_id, follower_id), _, generation = ctx.join_group_to_stable(
        2,
        static=True,
        protocols=protocols(("range", ["foo"]), ("roundrobin", ["foo"])),
        session_timeout_ms=15_000,
        rebalance_timeout_ms=10_000,
    )
    call = ctx.join_static(
        "instance-1",
        protocols=protocols(("roundrobin", ["foo"])),
        session_timeout_ms=15_000,
        rebalance_timeout_ms=10_000,
    )
    assert not call.done and ctx.state() is S.PREPARING_REBALANCE
    ctx.sleep(10_000)
    response = call.join
    assert response.error_code is ErrorCode.NONE
    assert response.member_id != follower_id
    assert (response.leader, response.protocol_name, response.generation_id) == (
        response.member_id,
        "roundrobin",
        generation + 1,
    )
    assert {m.member_id for m in response.members} == {leader_id, response.member_id}
    assert ctx.coordinator.kind(ClassicGroups).group(GROUP).static_member_id("instance-0") == leader_id


def test_envelope_defaults_to_the_versions_kafka_4_consumer_sends() -> None:
    """Envelope.api_version: unless given, the version Kafka 4.0's Java consumer sends for the API
    (the highest stable version of each schema), so the simulator speaks Kafka 4.0's versions."""
    from kgroup.messages import (
        CONSUMER_API_VERSIONS,
        ConsumerGroupDescribeRequest,
        ConsumerGroupHeartbeatRequest,
        Envelope,
        HeartbeatRequest,
        OffsetCommitRequest,
        SyncGroupRequest,
    )

    join = Envelope("c", 1, JoinGroupRequest("g", 10_000, 5000, "", DEFAULT_PROTOCOLS))
    assert join.api_version == 9
    assert Envelope("c", 2, SyncGroupRequest("g", 1, "m")).api_version == 5
    assert Envelope("c", 3, HeartbeatRequest("g", 1, "m")).api_version == 4
    assert Envelope("c", 4, OffsetCommitRequest("g", 1, "m", ())).api_version == 9
    assert Envelope("c", 5, HeartbeatRequest("g", 1, "m"), api_version=2).api_version == 2
    # the nine classic group APIs, and KIP-848's two as Kafka 4.4's consumer sends them (v1)
    assert len(CONSUMER_API_VERSIONS) == 11
    assert Envelope("c", 6, ConsumerGroupHeartbeatRequest("g", "m", 0)).api_version == 1
    assert Envelope("c", 7, ConsumerGroupDescribeRequest(("g",))).api_version == 1


def test_sync_group_before_v5_has_no_protocol_fields_to_check() -> None:
    """SyncGroup v5 added the protocol type and name the coordinator checks
    (INCONSISTENT_GROUP_PROTOCOL); an older request cannot carry them, so nothing is checked."""
    from kgroup.messages import SyncGroupRequest

    ctx = GroupTestContext()
    first = ctx.join_dynamic()
    ctx.sleep_until(lambda: first.done)
    member, generation = first.join.member_id, first.join.generation_id
    wrong = SyncGroupRequest(GROUP, generation, member, (), protocol_type="connect", protocol_name="range")
    assert ctx.send(wrong).sync.error_code is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert ctx.send(wrong, api_version=4).sync.error_code is ErrorCode.NONE
