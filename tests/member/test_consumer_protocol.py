"""The consumer-protocol member (KIP-848) against the behaviour Kafka 4.x's client tests pin down
(``ConsumerMembershipManagerTest``, ``ConsumerHeartbeatRequestManagerTest``): joining, what each
heartbeat carries, reconciliation (revoke before assign, acknowledge at once), topic ids waiting for
metadata, and the member id the client draws."""

from __future__ import annotations

import base64
import random
import re

import pytest

from kgroup.member import (
    ConsumerMemberState,
    ConsumerProtocolMember,
    OffsetsFetched,
    PartitionsAssigned,
    PartitionsRevoked,
)
from kgroup.member.consumer_protocol_heartbeat import ExponentialBackoff, random_member_id
from kgroup.member.consumer_protocol_states import (
    CONSUMER_TRANSITIONS,
    consumer_transition_diagram,
    next_consumer_state,
)
from kgroup.messages import (
    ConsumerGroupHeartbeatRequest,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchResponse,
    TopicPartitions,
)
from kgroup.model import ErrorCode, KgroupError, TopicId

from .consumer_protocol_helpers import (
    COORDINATOR,
    INTERVAL,
    NAMES,
    Driver,
    T,
    U,
    assignment,
    config,
    heartbeat,
    kinds,
    ok,
    only,
    tp,
)

S = ConsumerMemberState

# --- the member id -----------------------------------------------------------------------------------


def test_member_id_is_a_random_kafka_uuid_string_drawn_from_the_injected_random() -> None:
    ids = {random_member_id(random.Random(seed)) for seed in range(200)}
    assert len(ids) == 200
    for text in ids:
        assert re.fullmatch(r"[A-Za-z0-9_-]{22}", text) and not text.startswith("-")
        raw = base64.urlsafe_b64decode(text + "==")
        assert raw[6] >> 4 == 4 and raw[8] >> 6 == 0b10  # java.util.UUID.randomUUID: version 4, IETF variant
    assert random_member_id(random.Random(1)) == random_member_id(random.Random(1))
    member = ConsumerProtocolMember(config(), rng=random.Random(1))
    assert member.member_id == random_member_id(random.Random(1))
    assert ConsumerProtocolMember(config(), rng=random.Random(1), member_id="chosen").member_id == "chosen"


# --- joining -----------------------------------------------------------------------------------------


def test_an_unsubscribed_member_sends_nothing_and_joins_only_at_the_next_poll() -> None:
    d = Driver(topics=())
    assert d.poll() == [] and d.member.state is S.UNSUBSCRIBED and d.member.next_wakeup_ms() is None
    d.member.subscribe(["t"])
    assert d.member.state is S.UNSUBSCRIBED  # subscribe() alone does not join (onSubscriptionUpdated)
    assert kinds(d.poll()) == ["FindCoordinatorRequest"]
    assert d.member.state is S.JOINING


def test_the_joining_heartbeat_carries_every_field() -> None:
    d = Driver(topics=("u", "t"), group_instance_id="i-1", rack_id="r1", remote_assignor="uniform")
    cid, body = heartbeat(d.find(d.poll()))
    assert body == ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id=d.member.member_id,
        member_epoch=0,
        instance_id="i-1",
        rack_id="r1",
        rebalance_timeout_ms=300000,
        subscribed_topic_names=("u", "t"),
        subscribed_topic_regex=None,
        server_assignor="uniform",
        topic_partitions=(),
    )
    # the answer gives the epoch and the interval; the next heartbeat waits for the interval and
    # carries only the instance id and what changed (nothing)
    # an empty assignment is reconciled too (onPartitionsAssigned with nothing) and acknowledged
    assert d.answer(cid, ok(1, interval=INTERVAL, empty=True)) == []
    assert d.member.state is S.ACKNOWLEDGING and d.member.member_epoch == 1
    assert d.member.drain_events() == [PartitionsAssigned((), 1)]
    cid, ack = heartbeat(d.background())
    assert ack == ConsumerGroupHeartbeatRequest(
        "g", d.member.member_id, 1, instance_id="i-1", topic_partitions=()
    )
    assert d.member.state is S.STABLE
    d.answer(cid, ok(1, interval=INTERVAL))
    assert d.member.next_wakeup_ms() == d.now + INTERVAL
    d.advance(INTERVAL - 1)
    assert d.background() == []
    d.advance(1)
    _, body = heartbeat(d.background())
    assert body == ConsumerGroupHeartbeatRequest("g", d.member.member_id, 1, instance_id="i-1")


def test_a_joining_member_heartbeats_again_as_soon_as_the_answer_has_no_assignment() -> None:
    d = Driver()
    cid, _ = heartbeat(d.find(d.poll()))
    d.advance(60000)
    assert d.background() == []  # JOINING, but the joining heartbeat is still in flight
    # an answer without an assignment leaves the member JOINING: the next heartbeat goes at once,
    # with every field again
    cid, body = heartbeat(d.answer(cid, ok(1, interval=100)))
    assert (
        d.member.state is S.JOINING and body.member_epoch == 1 and body.subscribed_topic_names == ("t", "u")
    )
    d.answer(cid, ok(1, (T, [0]), interval=100))
    assert d.member.state is S.ACKNOWLEDGING


def test_a_changed_subscription_goes_out_with_the_next_heartbeat_without_rejoining() -> None:
    d = Driver(topics=("t",))
    d.stable_with(3)
    d.member.subscribe(["t", "u"])
    assert d.poll() == [] and d.member.state is S.STABLE and d.member.member_epoch == 3
    d.advance(INTERVAL)
    _, body = heartbeat(d.background())
    assert body.member_epoch == 3 and body.subscribed_topic_names == ("t", "u")


def test_a_regex_subscription_is_sent_for_the_coordinator_to_resolve() -> None:
    d = Driver(topics=())
    d.member.subscribe_pattern("orders-.*")
    cid, body = heartbeat(d.find(d.poll()))
    assert (body.subscribed_topic_regex, body.subscribed_topic_names) == ("orders-.*", ())
    d.answer(cid, ok(1, interval=1000, empty=True))
    cid, body = heartbeat(d.background())  # the acknowledgement
    assert body.subscribed_topic_regex is None  # unchanged: not sent
    d.answer(cid, ok(1, interval=1000))
    d.member.subscribe_pattern("payments-.*")
    d.advance(1000)
    cid, body = heartbeat(d.background())
    assert body.subscribed_topic_regex == "payments-.*"
    d.answer(cid, ok(1, interval=1000))
    d.member.subscribe(["t"])  # back to names: an empty regex removes the pattern
    d.advance(1000)
    _, body = heartbeat(d.background())
    assert (body.subscribed_topic_regex, body.subscribed_topic_names) == ("", ("t",))
    with pytest.raises(KgroupError, match=r"^pattern: empty"):
        d.member.subscribe_pattern("")


# --- reconciliation ----------------------------------------------------------------------------------


def test_an_assignment_is_reconciled_and_acknowledged_at_once() -> None:
    d = Driver()
    assert d.join(1, (T, [1, 0]), (U, [0])) == []
    assert d.member.state is S.ACKNOWLEDGING  # added partitions only: reconciled in the background
    events = d.member.drain_events()
    assert events == [PartitionsAssigned((tp("t", 0), tp("t", 1), tp("u", 0)), 1)]
    assert d.member.assignment() == {tp("t", 0), tp("t", 1), tp("u", 0)}
    cid, ack = heartbeat(d.background())  # not waiting for the interval
    assert ack.member_epoch == 1 and ack.topic_partitions == assignment((T, [0, 1]), (U, [0]))
    assert d.member.state is S.STABLE
    d.answer(cid, ok(1))
    d.advance(INTERVAL)
    _, body = heartbeat(d.background())
    assert body.topic_partitions is None  # acknowledged: not sent again


def test_revocation_comes_before_assignment_and_only_from_the_applications_poll() -> None:
    d = Driver()
    d.stable_with(1, (T, [0, 1]))
    d.member.drain_events()
    d.advance(INTERVAL)
    cid, _ = heartbeat(d.background())
    # the coordinator moves t-0 away and gives u-0: the background does not revoke
    assert d.answer(cid, ok(2, (T, [1]), (U, [0]))) == []
    assert d.member.state is S.RECONCILING and d.member.assignment() == {tp("t", 0), tp("t", 1)}
    assert d.background() == [] and d.member.drain_events() == []
    cid, ack = heartbeat(d.poll())
    assert d.member.drain_events() == [
        PartitionsRevoked((tp("t", 0),), 2),
        PartitionsAssigned((tp("u", 0),), 2),
    ]
    assert ack.member_epoch == 2 and ack.topic_partitions == assignment((T, [1]), (U, [0]))
    assert d.member.state is S.STABLE and d.member.assignment() == {tp("t", 1), tp("u", 0)}


def test_the_same_assignment_again_is_nothing_to_reconcile() -> None:
    d = Driver()
    d.stable_with(1, (T, [0]))
    d.member.drain_events()
    d.advance(INTERVAL)
    cid, _ = heartbeat(d.background())
    d.answer(cid, ok(2, (T, [0])))
    assert d.member.state is S.STABLE and d.member.member_epoch == 2
    assert d.poll() == [] and d.member.drain_events() == []


def test_with_auto_commit_the_reconciliation_commits_first_then_revokes() -> None:
    d = Driver(enable_auto_commit=True, auto_commit_interval_ms=60000)
    d.join(1, (T, [0, 1]))
    assert d.member.state is S.RECONCILING  # with auto-commit, only the application's poll reconciles
    cid, _ = heartbeat(d.poll())
    d.answer(cid, ok(1))
    d.member.seek(tp("t", 0), 40)
    d.member.record_processed(tp("t", 0), 42)
    d.advance(INTERVAL)
    cid, _ = heartbeat(d.background())
    d.answer(cid, ok(2, (T, [1])))
    d.member.drain_events()
    commit = only(d.poll(), OffsetCommitRequest)
    assert isinstance(commit.body, OffsetCommitRequest)
    assert (commit.body.generation_id, commit.body.member_id) == (2, d.member.member_id)  # the member epoch
    assert [(p.partition, p.committed_offset) for p in commit.body.offsets] == [(tp("t", 0), 42)]
    assert d.member.drain_events() == [] and d.member.assignment() == {tp("t", 0), tp("t", 1)}
    # a failed commit (not retriable) does not stop the revocation
    out = d.answer(commit.correlation_id, OffsetCommitResponse(((tp("t", 0), ErrorCode.UNKNOWN_MEMBER_ID),)))
    events = d.member.drain_events()
    assert [type(e).__name__ for e in events] == ["CommitFailed", "PartitionsRevoked", "PartitionsAssigned"]
    _, ack = heartbeat(out)
    assert ack.topic_partitions == assignment((T, [1]))


def test_a_stale_epoch_commit_before_reconciling_is_retried_with_the_new_epoch() -> None:
    d = Driver(enable_auto_commit=True, auto_commit_interval_ms=60000)
    d.join(1, (T, [0, 1]))
    cid, _ = heartbeat(d.poll())
    d.answer(cid, ok(1))
    d.member.seek(tp("t", 1), 0)
    d.member.record_processed(tp("t", 1), 7)
    d.advance(INTERVAL)
    cid, _ = heartbeat(d.background())
    d.answer(cid, ok(2, (T, [0])))
    commit = only(d.poll(), OffsetCommitRequest)
    d.answer(commit.correlation_id, OffsetCommitResponse(((tp("t", 1), ErrorCode.STALE_MEMBER_EPOCH),)))
    assert d.member.assignment() == {tp("t", 0), tp("t", 1)}  # still waiting
    wake = d.member.next_wakeup_ms()
    assert wake is not None and d.now < wake <= d.now + 120  # the first backoff: 100 ms ± 20 %
    d.now = wake
    again = only(d.background(), OffsetCommitRequest)
    ok_answer = OffsetCommitResponse(((tp("t", 1), ErrorCode.NONE),))
    _, ack = heartbeat(d.answer(again.correlation_id, ok_answer))
    assert ack.topic_partitions == assignment((T, [0]))
    assert d.member.committed() == {tp("t", 1): 7}


def test_newly_assigned_partitions_fetch_their_offsets_with_the_member_id_and_epoch() -> None:
    d = Driver()
    d.join(4, (T, [0, 1]))
    [fetch] = d.fetches
    assert isinstance(fetch.body, OffsetFetchRequest) and fetch.node_id == COORDINATOR
    assert (fetch.body.member_id, fetch.body.member_epoch) == (d.member.member_id, 4)
    assert fetch.body.partitions == (tp("t", 0), tp("t", 1))
    d.member.drain_events()
    d.answer(
        fetch.correlation_id,
        OffsetFetchResponse(
            ErrorCode.NONE, (OffsetFetchPartition(tp("t", 0), 5), OffsetFetchPartition(tp("t", 1), -1))
        ),
    )
    assert d.member.positions() == {tp("t", 0): 5, tp("t", 1): -1}
    assert d.member.drain_events() == [OffsetsFetched(((tp("t", 0), 5), (tp("t", 1), -1)))]


# --- topic ids without names -------------------------------------------------------------------------


def test_an_unknown_topic_id_waits_for_metadata_while_the_rest_is_reconciled() -> None:
    d = Driver()
    d.member.update_metadata({T: "t"})
    d.join(1, (T, [0]), (U, [0, 1]))
    assert d.member.metadata_update_requested
    assert d.member.assignment() == {tp("t", 0)}
    cid, ack = heartbeat(d.background())
    assert ack.topic_partitions == assignment((T, [0]))  # only the resolved part is acknowledged
    # the target is not reached: back to RECONCILING, where the resolvable part equals the current
    # assignment, so it is acknowledged again (Kafka re-acknowledges until the names are known) …
    assert d.member.state is S.ACKNOWLEDGING
    assert d.background() == []  # … once the heartbeat in flight is answered
    cid, again = heartbeat(d.answer(cid, ok(1)))
    assert again.topic_partitions is None  # the same local assignment: not sent again
    d.member.update_metadata(NAMES)
    assert not d.member.metadata_update_requested
    # after this answer the member acknowledges once more, is RECONCILING again and now resolves all
    cid, _ = heartbeat(d.answer(cid, ok(1)))
    assert d.member.assignment() == {tp("t", 0), tp("u", 0), tp("u", 1)}
    _, ack = heartbeat(d.answer(cid, ok(1)))
    assert ack.topic_partitions == assignment((T, [0]), (U, [0, 1]))


def test_a_partly_resolved_assignment_equal_to_the_current_one_is_acknowledged_again() -> None:
    d = Driver()
    d.stable_with(1, (T, [0]))
    d.member.drain_events()
    d.member.update_metadata({T: "t"})  # u's name is not known
    d.advance(INTERVAL)
    cid, _ = heartbeat(d.background())
    d.answer(cid, ok(2, (T, [0]), (U, [0])))
    _, ack = heartbeat(d.poll())  # a new local epoch: the (same) partitions are sent again
    assert ack.topic_partitions == assignment((T, [0]))
    assert d.member.metadata_update_requested and d.member.state is S.ACKNOWLEDGING
    assert d.member.drain_events() == []  # nothing was revoked or assigned


def test_a_topic_still_assigned_keeps_its_name_when_metadata_forgets_it() -> None:
    d = Driver()
    d.stable_with(1, (T, [0, 1]))
    d.member.drain_events()
    d.member.update_metadata({})  # e.g. a refresh that no longer lists the topic
    d.advance(INTERVAL)
    cid, _ = heartbeat(d.background())
    d.answer(cid, ok(2, (T, [1])))
    heartbeat(d.poll())
    assert d.member.drain_events()[0] == PartitionsRevoked((tp("t", 0),), 2)
    assert not d.member.metadata_update_requested


# --- the state table ---------------------------------------------------------------------------------


def test_the_transition_table_is_kafkas_and_refuses_other_moves() -> None:
    assert (S.STALE, S.JOINING) in CONSUMER_TRANSITIONS and (S.LEAVING, S.STALE) in CONSUMER_TRANSITIONS
    assert (S.STABLE, S.ACKNOWLEDGING) not in CONSUMER_TRANSITIONS
    assert next_consumer_state(S.STABLE, S.STABLE) is S.STABLE
    with pytest.raises(AssertionError, match="not allowed: FATAL --> JOINING"):
        next_consumer_state(S.FATAL, S.JOINING)
    assert [s for s in S if s.can_handle_new_assignment] == [
        S.JOINING,
        S.RECONCILING,
        S.ACKNOWLEDGING,
        S.STABLE,
    ]
    assert "LEAVING --> STALE" in consumer_transition_diagram()


def test_backoff_doubles_within_jitter_up_to_the_maximum() -> None:
    backoff = ExponentialBackoff(100, 1000)
    rng = random.Random(3)
    for attempts, low, high in ((0, 80, 120), (1, 160, 240), (2, 320, 480), (10, 800, 1000)):
        for _ in range(20):
            assert low <= backoff.backoff(attempts, rng) <= high
    assert ExponentialBackoff(100, 100).backoff(5, rng) == 100


def test_a_response_to_the_wrong_request_is_refused() -> None:
    d = Driver()
    find = d.poll()[0]
    with pytest.raises(KgroupError, match="got a OffsetCommitResponse for a FindCoordinator request"):
        d.answer(find.correlation_id, OffsetCommitResponse(()))


def test_topic_partitions_merge_and_sort_like_kafkas_sorted_sets() -> None:
    d = Driver()
    cid, _ = heartbeat(d.find(d.poll()))
    d.answer(
        cid,
        ok(1, interval=10).__class__(
            ErrorCode.NONE,
            member_epoch=1,
            heartbeat_interval_ms=10,
            assignment=(TopicPartitions(U, (2, 0)), TopicPartitions(T, (1,)), TopicPartitions(U, (1,))),
        ),
    )
    assert d.member.target_assignment() == {T: (1,), U: (0, 1, 2)}
    assert d.member.coordinator == COORDINATOR and isinstance(T, TopicId)
