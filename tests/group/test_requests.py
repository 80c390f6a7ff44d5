"""Each request's handling and errors, state by state (KAFKA_SEMANTICS.md Part 2)."""

from __future__ import annotations

import re
from random import Random

import pytest

from group.context import GROUP, TOPIC, GroupTestContext, protocols
from kgroup.group import (
    ClassicGroups,
    CoordinatorConfig,
    CoordinatorResult,
    GroupCoordinator,
    GroupState,
    GroupStateChanged,
    IllegalStateTransition,
)
from kgroup.javacompat import hashmap_iteration_order
from kgroup.messages import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kgroup.messages import LeaveGroupMember as Leave
from kgroup.model import ErrorCode, KgroupError, TopicPartition
from kgroup.wire.consumer_protocol import decode_assignment, decode_subscription

S = GroupState
E = ErrorCode
TP0, TP1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)


# --- JoinGroup -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"group_id": ""}, E.INVALID_GROUP_ID),
        ({"session_timeout_ms": 5999}, E.INVALID_SESSION_TIMEOUT),
        ({"session_timeout_ms": 1_800_001}, E.INVALID_SESSION_TIMEOUT),
        ({"protocols": ()}, E.INCONSISTENT_GROUP_PROTOCOL),
        ({"protocol_type": ""}, E.INCONSISTENT_GROUP_PROTOCOL),
    ],
)
def test_join_rejected_before_anything_happens(kwargs: dict[str, object], error: ErrorCode) -> None:
    ctx = GroupTestContext()
    call = ctx.join(**kwargs)  # type: ignore[arg-type]
    assert call.join.error_code is error
    assert ctx.timers.armed() == {}


def test_join_session_timeout_limits_are_inclusive() -> None:
    ctx = GroupTestContext()
    assert ctx.join(session_timeout_ms=6000).join.error_code is E.MEMBER_ID_REQUIRED
    assert ctx.join(session_timeout_ms=1_800_000).join.error_code is E.MEMBER_ID_REQUIRED


def test_join_inconsistent_protocols_with_a_non_empty_group() -> None:
    ctx = GroupTestContext()
    ctx.join_group_to_stable(1)
    assert ctx.join(protocol_type="connect").join.error_code is E.INCONSISTENT_GROUP_PROTOCOL
    only_rr = protocols(("roundrobin", [TOPIC]))
    assert ctx.join(protocols=only_rr).join.error_code is E.INCONSISTENT_GROUP_PROTOCOL


def test_member_ids_are_client_id_plus_uuid_from_the_injected_rng() -> None:
    ids = []
    for _ in range(2):
        ctx = GroupTestContext(seed=99)
        ids.append(ctx.join(client_id="my-client").join.member_id)
    assert ids[0] == ids[1]
    assert re.fullmatch(
        r"my-client-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", ids[0]
    )
    ctx = GroupTestContext(seed=99)
    static = ctx.join_static("instance-7")
    assert not static.done  # parked in the initial delay
    ctx.sleep_until(lambda: static.done)
    assert static.join.member_id.startswith("instance-7-")


def test_protocol_chosen_by_vote_among_protocols_everyone_supports() -> None:
    ctx = GroupTestContext()
    calls = [
        ctx.join_dynamic(protocols=protocols(("range", [TOPIC]), ("roundrobin", [TOPIC])), connection="a"),
        ctx.join_dynamic(protocols=protocols(("roundrobin", [TOPIC]), ("range", [TOPIC])), connection="b"),
        ctx.join_dynamic(protocols=protocols(("roundrobin", [TOPIC]), ("range", [TOPIC])), connection="c"),
    ]
    ctx.sleep_until(lambda: all(c.done for c in calls))
    assert {c.join.protocol_name for c in calls} == {"roundrobin"}


@pytest.mark.parametrize(
    ("first", "second", "winner"),
    # Java 17: a HashMap holding these names iterates [sticky, range, roundrobin, cooperative-sticky],
    # and Stream.max keeps the first of equal maxima
    [
        ("range", "roundrobin", "range"),
        ("cooperative-sticky", "roundrobin", "roundrobin"),
        ("range", "sticky", "sticky"),
    ],
)
def test_protocol_vote_tie_goes_to_java_hashmap_order(first: str, second: str, winner: str) -> None:
    ctx = GroupTestContext()
    calls = [
        ctx.join_dynamic(protocols=protocols((first, [TOPIC]), (second, [TOPIC])), connection="a"),
        ctx.join_dynamic(protocols=protocols((second, [TOPIC]), (first, [TOPIC])), connection="b"),
    ]
    ctx.sleep_until(lambda: all(c.done for c in calls))
    assert {c.join.protocol_name for c in calls} == {winner}


def test_leader_is_first_to_join_and_alone_gets_the_members_in_java_map_order() -> None:
    ctx = GroupTestContext()
    calls = [ctx.join_dynamic(connection=f"m{i}") for i in range(20)]
    ctx.sleep_until(lambda: all(c.done for c in calls))
    ids = [c.join.member_id for c in calls]
    assert {c.join.leader for c in calls} == {ids[0]}
    leader_members = calls[0].join.members
    assert [m.member_id for m in leader_members] == hashmap_iteration_order(ids)
    assert all(decode_subscription(m.metadata).topics == (TOPIC,) for m in leader_members)
    assert all(c.join.members == () for c in calls[1:])


def test_known_member_rejoins_in_stable() -> None:
    ctx = GroupTestContext()
    (a, b), leader, generation = ctx.join_group_to_stable(2)
    follower = b if leader == a else a
    same = ctx.join(follower)
    assert same.done and same.join.generation_id == generation and ctx.state() is S.STABLE
    changed = ctx.join(follower, protocols=protocols(("range", [TOPIC, "bar"])))
    assert not changed.done and ctx.state() is S.PREPARING_REBALANCE


def test_leader_rejoin_in_stable_forces_a_rebalance() -> None:
    ctx = GroupTestContext()
    _, leader, generation = ctx.join_group_to_stable(1)
    call = ctx.join(leader)
    assert call.done and call.join.generation_id == generation + 1  # alone, so it completes at once
    assert ctx.state() is S.COMPLETING_REBALANCE


def test_join_with_member_id_in_an_empty_group_is_unknown() -> None:
    ctx = GroupTestContext()
    (member,), _, _ = ctx.join_group_to_stable(1)
    assert ctx.leave(Leave(member)).members[0].error_code is E.NONE
    assert ctx.state() is S.EMPTY
    assert ctx.join(member).join.error_code is E.UNKNOWN_MEMBER_ID


# --- SyncGroup -------------------------------------------------------------------------------------


def test_sync_errors() -> None:
    ctx = GroupTestContext()
    assert ctx.sync("m", 1).sync.error_code is E.UNKNOWN_MEMBER_ID  # no group
    assert ctx.sync("m", 1, group_id="").sync.error_code is E.INVALID_GROUP_ID
    (member,), _, generation = ctx.join_group_to_stable(1)
    assert ctx.sync("other", generation).sync.error_code is E.UNKNOWN_MEMBER_ID
    assert ctx.sync(member, generation - 1).sync.error_code is E.ILLEGAL_GENERATION
    wrong = ctx.send(SyncGroupRequest(GROUP, generation, member, protocol_name="roundrobin"))
    assert (
        isinstance(wrong.body, SyncGroupResponse) and wrong.body.error_code is E.INCONSISTENT_GROUP_PROTOCOL
    )
    stable = ctx.sync(member, generation)
    assert stable.sync.error_code is E.NONE and stable.sync.protocol_name == "range"
    ctx.join_dynamic(connection="new")
    assert ctx.state() is S.PREPARING_REBALANCE
    assert ctx.sync(member, generation).sync.error_code is E.REBALANCE_IN_PROGRESS


def test_followers_wait_for_the_leader_and_omitted_members_get_nothing() -> None:
    ctx = GroupTestContext()
    calls = [ctx.join_dynamic(connection=f"m{i}") for i in range(3)]
    ctx.sleep_until(lambda: all(c.done for c in calls))
    leader = calls[0].join.member_id
    a, b = calls[1].join.member_id, calls[2].join.member_id
    follower_sync = ctx.sync(a, 1, connection="m1")
    assert not follower_sync.done and ctx.state() is S.COMPLETING_REBALANCE
    leader_sync = ctx.sync(leader, 1, {leader: [TP0], a: [TP1]}, connection="m0")
    assert decode_assignment(leader_sync.sync.assignment).partitions == (TP0,)
    assert decode_assignment(follower_sync.sync.assignment).partitions == (TP1,)
    assert ctx.state() is S.STABLE
    late = ctx.sync(b, 1, connection="m2")
    assert late.sync.error_code is E.NONE and decode_assignment(late.sync.assignment).partitions == ()


def test_leader_failure_in_sync_group() -> None:
    """testLeaderFailureInSyncGroup: a follower waiting for the leader's SyncGroup is told
    REBALANCE_IN_PROGRESS when the leader's session expires."""
    ctx = GroupTestContext()
    calls = [ctx.join_dynamic(connection=f"m{i}", session_timeout_ms=6000) for i in range(2)]
    ctx.sleep_until(lambda: all(c.done for c in calls))
    follower = calls[1].join.member_id
    waiting = ctx.sync(follower, 1, connection="m1")
    assert not waiting.done
    ctx.sleep(6000)
    assert waiting.sync.error_code is E.REBALANCE_IN_PROGRESS
    view = ctx.coordinator.kind(ClassicGroups).group(GROUP)
    assert view.member_ids == (follower,) and view.state is S.PREPARING_REBALANCE


def test_members_that_never_sync_are_removed_after_the_rebalance_timeout() -> None:
    ctx = GroupTestContext()
    calls = [ctx.join_dynamic(connection=f"m{i}", session_timeout_ms=60_000) for i in range(2)]
    ctx.sleep_until(lambda: all(c.done for c in calls))
    leader, other = calls[0].join.member_id, calls[1].join.member_id
    ctx.sync(leader, 1, {leader: [TP0], other: [TP1]})
    assert ctx.state() is S.STABLE
    ctx.sleep(5000 - 1)
    assert set(ctx.coordinator.kind(ClassicGroups).group(GROUP).member_ids) == {leader, other}
    ctx.sleep(1)
    view = ctx.coordinator.kind(ClassicGroups).group(GROUP)
    assert view.member_ids == (leader,) and view.state is S.PREPARING_REBALANCE


# --- Heartbeat -------------------------------------------------------------------------------------


def test_heartbeat_answer_in_every_state() -> None:
    ctx = GroupTestContext()
    assert ctx.heartbeat("m", 0) is E.UNKNOWN_MEMBER_ID  # no group
    assert ctx.heartbeat("m", 0, group_id="") is E.INVALID_GROUP_ID
    calls = [ctx.join_dynamic(connection="a")]
    assert ctx.state() is S.PREPARING_REBALANCE
    member = ctx.coordinator.kind(ClassicGroups).group(GROUP).member_ids[0]
    assert ctx.heartbeat(member, 0) is E.REBALANCE_IN_PROGRESS
    ctx.sleep_until(lambda: calls[0].done)
    assert ctx.state() is S.COMPLETING_REBALANCE
    assert ctx.heartbeat(member, 1) is E.NONE
    assert ctx.heartbeat(member, 0) is E.ILLEGAL_GENERATION
    ctx.sync(member, 1, {member: [TP0]})
    assert ctx.heartbeat(member, 1) is E.NONE
    ctx.leave(Leave(member))
    assert ctx.state() is S.EMPTY
    assert ctx.heartbeat(member, 2) is E.UNKNOWN_MEMBER_ID
    ctx.absorb(ctx.coordinator.unload(ctx.time_ms))
    assert ctx.state() is S.DEAD
    assert ctx.heartbeat(member, 2) is E.COORDINATOR_NOT_AVAILABLE


def test_heartbeat_fenced_instance() -> None:
    ctx = GroupTestContext()
    (member,), _, generation = ctx.join_group_to_stable(1, static=True)
    assert ctx.heartbeat(member, generation, instance_id="instance-0") is E.NONE
    assert ctx.heartbeat("other", generation, instance_id="instance-0") is E.FENCED_INSTANCE_ID
    assert ctx.heartbeat(member, generation, instance_id="instance-9") is E.UNKNOWN_MEMBER_ID


def test_heartbeats_keep_a_member_alive_and_silence_expires_it() -> None:
    ctx = GroupTestContext()
    (member,), _, generation = ctx.join_group_to_stable(1, session_timeout_ms=10_000)
    for _ in range(5):
        ctx.sleep(9_000)
        assert ctx.heartbeat(member, generation) is E.NONE
    ctx.sleep(9_999)
    assert ctx.state() is S.STABLE
    ctx.sleep(1)
    assert ctx.state() is S.EMPTY and ctx.generation() == generation + 1


# --- LeaveGroup ------------------------------------------------------------------------------------


def test_batched_leave_answers_each_member() -> None:
    ctx = GroupTestContext()
    ids, _, generation = ctx.join_group_to_stable(3, static=True)
    pending = ctx.join(connection="p").join.member_id  # handed out, not yet joined
    response = ctx.leave(
        Leave(ids[0], "instance-0"),
        Leave("", "instance-1"),  # an admin removing a static member by instance id
        Leave("nobody"),
        Leave("", "instance-9"),
        Leave("wrong-id", "instance-2"),
        Leave(pending),
    )
    assert [m.error_code for m in response.members] == [
        E.NONE,
        E.NONE,
        E.UNKNOWN_MEMBER_ID,
        E.UNKNOWN_MEMBER_ID,
        E.FENCED_INSTANCE_ID,
        E.NONE,
    ]
    view = ctx.coordinator.kind(ClassicGroups).group(GROUP)
    assert view.member_ids == (ids[2],) and view.pending_members == frozenset()
    assert view.state is S.PREPARING_REBALANCE and view.generation == generation


def test_leave_of_the_last_member_empties_the_group_with_a_new_generation() -> None:
    ctx = GroupTestContext()
    (member,), _, generation = ctx.join_group_to_stable(1)
    ctx.leave(Leave(member))
    view = ctx.coordinator.kind(ClassicGroups).group(GROUP)
    assert view.state is S.EMPTY and view.generation == generation + 1 and view.protocol is None
    assert view.leader is None


def test_leave_unknown_group_and_empty_id() -> None:
    ctx = GroupTestContext()
    # as Kafka 4.4.0's GroupCoordinatorService answers a group it does not have: no error, each member unknown
    answer = ctx.leave(Leave("m"), Leave("n", "instance-n"))
    assert answer.error_code is E.NONE
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in answer.members] == [
        ("m", None, E.UNKNOWN_MEMBER_ID),
        ("n", "instance-n", E.UNKNOWN_MEMBER_ID),
    ]
    assert ctx.leave(Leave("m"), group_id="").error_code is E.INVALID_GROUP_ID


def test_new_leader_is_first_member_in_java_map_order_after_the_leader_leaves() -> None:
    ctx = GroupTestContext()
    ids, leader, _ = ctx.join_group_to_stable(5)
    ctx.leave(Leave(leader))
    remaining = [m for m in hashmap_iteration_order(ids) if m != leader]
    assert ctx.coordinator.kind(ClassicGroups).group(GROUP).leader == remaining[0]


# --- OffsetCommit / OffsetFetch -------------------------------------------------------------------


def _commit(
    ctx: GroupTestContext, member: str, generation: int, offset: int = 10, **kw: object
) -> list[ErrorCode]:
    api_version = int(kw.pop("api_version", -1))  # type: ignore[call-overload]
    body = ctx.send(
        OffsetCommitRequest(
            kw.pop("group_id", GROUP),  # type: ignore[arg-type]
            generation,
            member,
            (OffsetCommitPartition(TP0, offset, **kw),),  # type: ignore[arg-type]
        ),
        api_version=api_version,
    ).body
    assert isinstance(body, OffsetCommitResponse)
    return [error for _, error in body.results]


def _fetch(
    ctx: GroupTestContext, partitions: tuple[TopicPartition, ...] | None = (TP0,)
) -> OffsetFetchResponse:
    body = ctx.send(OffsetFetchRequest(GROUP, partitions)).body
    assert isinstance(body, OffsetFetchResponse)
    return body


def test_simple_commit_creates_an_empty_group_and_is_fetched() -> None:
    ctx = GroupTestContext()
    assert _commit(ctx, "", -1, 42, committed_metadata="m") == [E.NONE]
    assert ctx.state() is S.EMPTY
    fetched = _fetch(ctx, (TP0, TP1))
    assert [(p.partition, p.committed_offset, p.metadata) for p in fetched.partitions] == [
        (TP0, 42, "m"),
        (TP1, -1, ""),
    ]
    assert [p.partition for p in _fetch(ctx, None).partitions] == [TP0]
    # the coordinator's read-only view of the same offsets (what the simulator samples lag from)
    view = ctx.coordinator.committed_offsets(GROUP)
    assert {tp: (v.offset, v.metadata) for tp, v in view.items()} == {TP0: (42, "m")}
    with pytest.raises(TypeError):
        view[TP1] = view[TP0]  # type: ignore[index]
    assert dict(ctx.coordinator.committed_offsets("no-such-group")) == {}


def test_commit_errors() -> None:
    ctx = GroupTestContext()
    # no group, generation given: GROUP_ID_NOT_FOUND from OffsetCommit v9, ILLEGAL_GENERATION before
    assert _commit(ctx, "m", 3, api_version=8) == [E.ILLEGAL_GENERATION]
    assert _commit(ctx, "m", 3) == [E.GROUP_ID_NOT_FOUND]
    # the empty group id takes simple commits, as Kafka 4.4.0's coordinator service still does
    assert _commit(ctx, "", -1, group_id="") == [E.NONE]
    assert dict(ctx.coordinator.committed_offsets("")) != {}
    calls = [ctx.join_dynamic(connection="a")]
    ctx.sleep_until(lambda: calls[0].done)
    member = calls[0].join.member_id
    assert _commit(ctx, member, 1) == [E.REBALANCE_IN_PROGRESS]  # CompletingRebalance
    ctx.sync(member, 1, {member: [TP0]})
    assert _commit(ctx, "", -1) == [E.UNKNOWN_MEMBER_ID]  # simple commits only when Empty
    assert _commit(ctx, "stranger", 1) == [E.UNKNOWN_MEMBER_ID]
    assert _commit(ctx, member, 2) == [E.ILLEGAL_GENERATION]
    assert _commit(ctx, member, 1, committed_metadata="x" * 4097) == [E.OFFSET_METADATA_TOO_LARGE]
    assert _commit(ctx, member, 1, committed_metadata="é" * 4096) == [E.NONE]  # Java length: chars
    assert _commit(ctx, member, 1, committed_metadata="\U0001f600" * 2049) == [E.OFFSET_METADATA_TOO_LARGE]
    assert _commit(ctx, member, 1, 7) == [E.NONE]
    assert _fetch(ctx).partitions[0].committed_offset == 7


def test_offsets_survive_rebalances_emptiness_and_replay() -> None:
    ctx = GroupTestContext()
    (member,), _, generation = ctx.join_group_to_stable(1)
    assert _commit(ctx, member, generation, 5, committed_leader_epoch=3) == [E.NONE]
    ctx.join(member)  # leader rejoin: new generation
    ctx.leave(Leave(member))
    assert ctx.state() is S.EMPTY
    fetched = _fetch(ctx).partitions[0]
    assert (fetched.committed_offset, fetched.committed_leader_epoch) == (5, 3)
    rebuilt = ctx.rebuilt()
    assert rebuilt.snapshot() == ctx.coordinator.snapshot()
    assert dict(rebuilt.kind(ClassicGroups).group(GROUP).offsets)[TP0].offset == 5


def test_commits_keep_the_session_alive() -> None:
    ctx = GroupTestContext()
    (member,), _, generation = ctx.join_group_to_stable(1, session_timeout_ms=10_000)
    for i in range(4):
        ctx.sleep(9_000)
        assert _commit(ctx, member, generation, i) == [E.NONE]
    assert ctx.state() is S.STABLE


def test_fetch_from_unknown_and_dead_groups() -> None:
    ctx = GroupTestContext()
    assert _fetch(ctx).partitions[0].committed_offset == -1
    assert _fetch(ctx, None).partitions == ()
    _commit(ctx, "", -1)
    assert _fetch(ctx).partitions[0].committed_offset == 10
    ctx.absorb(ctx.coordinator.unload(0))
    dead = _fetch(ctx)
    assert dead.error_code is E.NONE and dead.partitions[0].committed_offset == -1
    assert _fetch(ctx, None).partitions == ()


# --- DescribeGroups / ListGroups / delete / unload -------------------------------------------------


def _describe(ctx: GroupTestContext, *groups: str) -> DescribeGroupsResponse:
    body = ctx.send(DescribeGroupsRequest(groups)).body
    assert isinstance(body, DescribeGroupsResponse)
    return body


def test_describe_groups() -> None:
    ctx = GroupTestContext()
    ids, _, _ = ctx.join_group_to_stable(2)
    described = _describe(ctx, GROUP, "missing").groups
    stable, missing = described
    assert (stable.group_state, stable.protocol_type, stable.protocol_data) == ("Stable", "consumer", "range")
    assert {m.member_id for m in stable.members} == set(ids)
    assert all(m.metadata != b"" and m.assignment != b"" for m in stable.members)
    assert (missing.error_code, missing.group_state, missing.members) == (E.NONE, "Dead", ())
    ctx.join(ids[0])  # leader rejoin: PreparingRebalance, members described without metadata
    preparing = _describe(ctx, GROUP).groups[0]
    assert (preparing.group_state, preparing.protocol_type, preparing.protocol_data) == (
        "PreparingRebalance",
        "consumer",
        "",
    )
    assert all(m.metadata == b"" for m in preparing.members)  # Kafka's describeNoMetadata


def test_list_groups_with_states_filter() -> None:
    ctx = GroupTestContext()
    ctx.join_group_to_stable(1, group_id="g-stable")
    _commit(ctx, "", -1, group_id="g-simple")

    def listed(*states: str) -> list[tuple[str, str, str]]:
        body = ctx.send(ListGroupsRequest(states)).body
        assert isinstance(body, ListGroupsResponse)
        return [(g.group_id, g.protocol_type, g.group_state) for g in body.groups]

    assert listed() == [("g-simple", "", "Empty"), ("g-stable", "consumer", "Stable")]
    assert listed("stable") == [("g-stable", "consumer", "Stable")]
    assert listed("Empty", "Dead") == [("g-simple", "", "Empty")]


def test_delete_group() -> None:
    ctx = GroupTestContext()
    ctx.join_group_to_stable(1)
    error, result = ctx.coordinator.delete_group(ctx.time_ms, GROUP)
    assert error is E.NON_EMPTY_GROUP and result.records == ()
    _commit(ctx, "", -1, group_id="simple")
    error, result = ctx.coordinator.delete_group(ctx.time_ms, "simple")
    ctx.absorb(result)
    assert error is E.NONE and not ctx.coordinator.has_group("simple")
    assert ctx.coordinator.delete_group(ctx.time_ms, "simple")[0] is E.GROUP_ID_NOT_FOUND
    assert ctx.rebuilt().snapshot() == ctx.coordinator.snapshot()


def test_unload_answers_parked_requests_not_coordinator() -> None:
    ctx = GroupTestContext()
    parked = ctx.join_dynamic()
    ctx.absorb(ctx.coordinator.unload(ctx.time_ms))
    assert parked.join.error_code is E.NOT_COORDINATOR
    assert ctx.state() is S.DEAD and ctx.timers.armed() == {}
    assert ctx.join().join.error_code is E.COORDINATOR_NOT_AVAILABLE
    assert ctx.sync("m", 0).sync.error_code is E.COORDINATOR_NOT_AVAILABLE


# --- the machine itself ----------------------------------------------------------------------------


def test_illegal_transition_raises() -> None:
    ctx = GroupTestContext()
    ctx.join_dynamic()
    with pytest.raises(IllegalStateTransition, match="PreparingRebalance cannot transition to Stable"):
        ctx.coordinator.replay(GroupStateChanged(GROUP, S.STABLE, 0))


def test_stale_and_unknown_timers_do_nothing() -> None:
    ctx = GroupTestContext()
    ctx.join_dynamic()
    before = ctx.coordinator.snapshot()
    assert ctx.coordinator.on_timer(0, ("join", GROUP)) == CoordinatorResult()  # before its deadline
    assert ctx.coordinator.on_timer(0, ("sync", GROUP, "1")) == CoordinatorResult()  # never armed
    assert ctx.coordinator.on_timer(10**9, ("heartbeat", GROUP, "nobody")).records == ()
    assert ctx.coordinator.snapshot() == before


def test_unknown_group_view_is_a_clear_error() -> None:
    with pytest.raises(KgroupError, match="group_id: no group 'nope'"):
        GroupCoordinator(rng=Random(0)).kind(ClassicGroups).group("nope")
    with pytest.raises(KeyError):
        GroupCoordinator(rng=Random(0)).kind(ClassicGroups).group("nope")


def test_config_validation() -> None:
    with pytest.raises(KgroupError, match="group_max_size"):
        CoordinatorConfig(group_max_size=0)


def test_static_replacement_before_sync_leaves_the_old_id_pending() -> None:
    """Kafka's ``replaceStaticMember`` removes the old id from the member map only, so an old id that
    had not sent SyncGroup yet stays pending: when the sync deadline passes the group rebalances even
    though the new id synced."""
    ctx = GroupTestContext()
    calls = [
        ctx.join_static(f"instance-{i}", connection=f"m{i}", session_timeout_ms=60_000) for i in range(2)
    ]
    ctx.sleep_until(lambda: all(c.done for c in calls))
    leader, follower = calls[0].join.member_id, calls[1].join.member_id
    ctx.sync(leader, 1, {leader: [TP0], follower: [TP1]}, instance_id="instance-0")
    assert ctx.state() is S.STABLE
    assert ctx.coordinator.kind(ClassicGroups).group(GROUP).pending_sync_members == {follower}
    rejoin = ctx.join_static("instance-1", connection="m1b", session_timeout_ms=60_000)
    new_id = rejoin.join.member_id
    assert rejoin.join.generation_id == 1 and ctx.state() is S.STABLE
    assert decode_assignment(ctx.sync(new_id, 1, instance_id="instance-1").sync.assignment).partitions == (
        TP1,
    )
    assert ctx.coordinator.kind(ClassicGroups).group(GROUP).pending_sync_members == {follower}
    ctx.sleep(5000)
    assert ctx.state() is S.PREPARING_REBALANCE
    assert set(ctx.coordinator.kind(ClassicGroups).group(GROUP).member_ids) == {leader, new_id}
