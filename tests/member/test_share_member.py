"""The pure share member (``kgroup.member.share.ShareMember``), its share sessions
(``kgroup.member.share_session``) and the share consumer's record reader
(``kgroup.client.share_records``), without a broker: Kafka 4.4's ``ShareMembershipManager`` /
``ShareHeartbeatRequestManager`` and ``ShareSessionHandler`` rules, step by step."""

from __future__ import annotations

import random
import struct

import pytest

from kgroup.client.share_records import acquired_records, read_batches
from kgroup.member.requests import OutboundRequest
from kgroup.member.share import (
    SHARE_PROTOCOL_NOT_SUPPORTED,
    ShareMember,
    ShareMemberConfig,
    ShareMemberState,
)
from kgroup.member.share_session import (
    FINAL_EPOCH,
    AcknowledgementBatch,
    AcknowledgeType,
    ShareSession,
    acknowledgement_batches,
    next_epoch,
)
from kgroup.messages import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    TopicPartitions,
)
from kgroup.model import ErrorCode, KgroupError, TopicId, TopicPartition
from kgroup.wire.record_batch import CONTROL_MASK, record_batch

ORDERS = TopicId.from_int(0x1111)
PAYMENTS = TopicId.from_int(0x2222)
NAMES = {ORDERS: "orders", PAYMENTS: "payments"}
S = ShareMemberState


def _member(**config: object) -> ShareMember:
    return ShareMember(ShareMemberConfig("workers", **config), rng=random.Random(7))  # type: ignore[arg-type]


def _one(out: list[OutboundRequest], kind: type) -> OutboundRequest:
    assert len(out) == 1 and isinstance(out[0].body, kind), out
    return out[0]


def _found(member: ShareMember, now: int = 0) -> OutboundRequest:
    """Subscribe to orders, poll, answer FindCoordinator (node 3): the joining heartbeat."""
    member.subscribe(["orders"])
    find = _one(member.poll(now), FindCoordinatorRequest)
    assert find.node_id is None and find.body == FindCoordinatorRequest(key="workers", key_type=0)
    return _one(
        member.on_response(now, find.correlation_id, FindCoordinatorResponse(ErrorCode.NONE, 3, "h", 1)),
        ShareGroupHeartbeatRequest,
    )


def _answer(
    epoch: int,
    *assigned: tuple[TopicId, tuple[int, ...]],
    error: ErrorCode = ErrorCode.NONE,
    interval: int = 5000,
) -> ShareGroupHeartbeatResponse:
    assignment = tuple(TopicPartitions(t, p) for t, p in assigned) if assigned else None
    return ShareGroupHeartbeatResponse(
        error, None, None, epoch, interval, assignment if error is ErrorCode.NONE else None
    )


def _stable(member: ShareMember) -> None:
    join = _found(member)
    member.update_metadata(NAMES)
    ack = _one(
        member.on_response(10, join.correlation_id, _answer(1, (ORDERS, (0, 1)))), ShareGroupHeartbeatRequest
    )
    member.on_response(20, ack.correlation_id, _answer(1))
    assert member.state is S.STABLE


def test_join_at_epoch_0_with_its_own_id_then_the_assignment() -> None:
    member = _member(rack_id="r1")
    assert len(member.member_id) == 22 and not member.member_id.startswith("-")
    assert member.state is S.UNSUBSCRIBED and member.poll(0) == []  # nothing to do before subscribing
    join = _found(member)
    assert join.node_id == 3
    assert join.body == ShareGroupHeartbeatRequest("workers", member.member_id, 0, "r1", ("orders",))
    assert member.state is S.JOINING
    # the answer names a topic id the metadata does not know yet: a refresh is asked for
    out = member.on_response(10, join.correlation_id, _answer(1, (ORDERS, (1, 0))))
    assert out == [] and member.member_epoch == 1 and member.metadata_update_requested
    assert member.assignment() == frozenset() and member.state is S.RECONCILING
    member.update_metadata(NAMES)
    assert member.assignment() == {TopicPartition("orders", 0), TopicPartition("orders", 1)}
    assert member.state is S.ACKNOWLEDGING and member.next_wakeup_ms() == 10
    # ACKNOWLEDGING: the next heartbeat goes at once, without the unchanged subscription or the rack
    ack = _one(member.background(10), ShareGroupHeartbeatRequest)
    assert ack.body == ShareGroupHeartbeatRequest("workers", member.member_id, 1, None, None)
    assert member.state is S.STABLE
    assert member.on_response(12, ack.correlation_id, _answer(1, interval=3000)) == []
    # the interval counts from the answer that named it (Kafka's heartbeatTimer.updateAndReset)
    assert member.heartbeat_interval_ms == 3000 and member.next_wakeup_ms() == 12 + 3000
    assert member.background(3011) == []
    beat = _one(member.background(3012), ShareGroupHeartbeatRequest)
    assert beat.body.member_epoch == 1 and beat.body.subscribed_topic_names is None


def test_a_join_answer_without_assignment_is_an_empty_one() -> None:
    member = _member()
    join = _found(member)
    ack = _one(member.on_response(5, join.correlation_id, _answer(2)), ShareGroupHeartbeatRequest)
    assert ack.body.member_epoch == 2 and member.assignment() == frozenset() and member.state is S.STABLE
    member.update_metadata(NAMES)
    # a later answer brings it, acknowledged by a heartbeat at once
    again = _one(
        member.on_response(6, ack.correlation_id, _answer(3, (ORDERS, (0,)))), ShareGroupHeartbeatRequest
    )
    assert again.body.member_epoch == 3
    assert member.assignment() == {TopicPartition("orders", 0)} and member.state is S.STABLE


def test_a_subscription_change_goes_with_the_next_heartbeat() -> None:
    member = _member()
    _stable(member)
    member.subscribe(["orders", "payments"])
    assert member.poll(100) == []  # not due yet: the interval decides
    beat = _one(member.background(20 + 5000), ShareGroupHeartbeatRequest)
    assert beat.body.subscribed_topic_names == ("orders", "payments")
    member.on_response(5030, beat.correlation_id, _answer(2, (ORDERS, (0,)), (PAYMENTS, (0,))))
    assert member.assignment() == {TopicPartition("orders", 0), TopicPartition("payments", 0)}
    assert member.member_epoch == 2


@pytest.mark.parametrize("error", [ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID])
def test_fenced_drops_the_assignment_and_rejoins_with_the_same_id(error: ErrorCode) -> None:
    member = _member()
    _stable(member)
    member_id = member.member_id
    beat = _one(member.background(5020), ShareGroupHeartbeatRequest)
    rejoin = _one(
        member.on_response(5030, beat.correlation_id, _answer(0, error=error)), ShareGroupHeartbeatRequest
    )
    assert member.assignment() == frozenset() and member.state is S.JOINING
    assert rejoin.body == ShareGroupHeartbeatRequest("workers", member_id, 0, None, ("orders",))


def test_a_lost_coordinator_is_found_again() -> None:
    member = _member()
    _stable(member)
    beat = _one(member.background(5020), ShareGroupHeartbeatRequest)
    find = _one(
        member.on_response(5030, beat.correlation_id, _answer(0, error=ErrorCode.NOT_COORDINATOR)),
        FindCoordinatorRequest,
    )
    assert member.coordinator is None and member.assignment() == {
        TopicPartition("orders", 0),
        TopicPartition("orders", 1),
    }
    beat = _one(
        member.on_response(5040, find.correlation_id, FindCoordinatorResponse(ErrorCode.NONE, 4, "h", 2)),
        ShareGroupHeartbeatRequest,
    )
    assert beat.node_id == 4 and beat.body.member_epoch == 1
    assert beat.body.subscribed_topic_names == ("orders",)  # an error makes the next heartbeat full
    # a dropped connection: the coordinator is looked up again
    _one(member.on_request_failed(5050, beat.correlation_id), FindCoordinatorRequest)
    assert member.coordinator is None


def test_coordinator_load_in_progress_backs_off() -> None:
    member = _member(retry_backoff_ms=100, retry_backoff_max_ms=100)
    _stable(member)
    beat = _one(member.background(5020), ShareGroupHeartbeatRequest)
    error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert member.on_response(5030, beat.correlation_id, _answer(0, error=error)) == []
    assert member.next_wakeup_ms() == 5130 and member.background(5129) == []
    assert _one(member.background(5130), ShareGroupHeartbeatRequest).body.member_epoch == 1


def test_joining_heartbeats_again_at_once() -> None:
    """Kafka's ``shouldHeartbeatNow``: a JOINING member does not wait for the interval or the backoff."""
    member = _member()
    join = _found(member)
    again = member.on_response(
        0, join.correlation_id, _answer(0, error=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    )
    assert _one(again, ShareGroupHeartbeatRequest).body.member_epoch == 0


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (ErrorCode.GROUP_AUTHORIZATION_FAILED, "ShareGroupHeartbeat failed: GROUP_AUTHORIZATION_FAILED"),
        (ErrorCode.GROUP_MAX_SIZE_REACHED, "ShareGroupHeartbeat failed: GROUP_MAX_SIZE_REACHED"),
        (ErrorCode.UNSUPPORTED_VERSION, SHARE_PROTOCOL_NOT_SUPPORTED),
        (ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "unexpected error"),
    ],
)
def test_fatal_errors_stop_the_member(error: ErrorCode, message: str) -> None:
    member = _member()
    join = _found(member)
    assert member.on_response(0, join.correlation_id, _answer(0, error=error)) == []
    assert member.state is S.FATAL and member.next_wakeup_ms() is None and member.background(10_000) == []
    failure = member.take_error()
    assert failure is not None and failure.fatal and failure.error is error and message in failure.message
    assert member.fatal_error == failure and member.take_error() is None


def test_topic_authorization_failed_is_raised_once_and_the_member_stays() -> None:
    member = _member()
    join = _found(member)
    member.on_response(0, join.correlation_id, _answer(0, error=ErrorCode.TOPIC_AUTHORIZATION_FAILED))
    failure = member.take_error()
    assert failure is not None and not failure.fatal and member.state is S.JOINING
    assert member.take_error() is None


def test_close_leaves_with_epoch_minus_1() -> None:
    member = _member()
    _stable(member)
    leave = _one(member.close(30), ShareGroupHeartbeatRequest)
    assert leave.body == ShareGroupHeartbeatRequest("workers", member.member_id, -1, None, None)
    assert member.assignment() == frozenset() and not member.left
    member.on_response(40, leave.correlation_id, _answer(-1))
    assert member.left and member.state is S.UNSUBSCRIBED
    with pytest.raises(KgroupError, match="closed"):
        member.poll(50)


def test_close_without_a_coordinator_or_group_sends_nothing() -> None:
    member = _member()
    member.subscribe(["orders"])
    _one(member.poll(0), FindCoordinatorRequest)
    assert member.close(1) == [] and member.left
    assert _member().close(0) == []


def test_an_answer_of_the_wrong_type_is_refused() -> None:
    member = _member()
    member.subscribe(["orders"])
    find = _one(member.poll(0), FindCoordinatorRequest)
    with pytest.raises(KgroupError, match="FindCoordinator answer was expected"):
        member.on_response(0, find.correlation_id, _answer(1))
    assert member.on_response(0, 999, _answer(1)) == []  # unknown correlation id: ignored


def test_bad_config_names_the_field() -> None:
    with pytest.raises(KgroupError, match="group_id"):
        ShareMemberConfig(" ")
    with pytest.raises(KgroupError, match="retry_backoff_ms"):
        ShareMemberConfig("g", retry_backoff_ms=500, retry_backoff_max_ms=100)


# --- share sessions -------------------------------------------------------------------------------


def test_share_session_opens_full_then_goes_incremental() -> None:
    session = ShareSession()
    a, b, c = (ORDERS, 0), (ORDERS, 1), (PAYMENTS, 0)
    opening = session.plan_fetch({a, b}, {a: {5: 1}})
    assert opening.epoch == 0 and set(opening.partitions) == {a, b} and opening.forgotten == ()
    assert all(batches == [] for batches in opening.partitions.values())  # no acks at epoch 0
    assert session.epoch == 1
    nothing = session.plan_fetch({a, b}, {})
    assert (nothing.epoch, nothing.partitions, nothing.forgotten) == (1, {}, ())
    changed = session.plan_fetch({a, c}, {a: {0: 1, 1: 1, 2: 2, 4: 3}})
    assert changed.epoch == 2
    assert changed.partitions == {
        c: [],
        a: [AcknowledgementBatch(0, 2, (1, 1, 2)), AcknowledgementBatch(4, 4, (3,))],
    }
    assert changed.forgotten == (b,)
    ack = session.plan_acknowledge({a: {7: 1}}, closing=False)
    assert ack.epoch == 3 and session.epoch == 4
    session.on_answer(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
    assert session.epoch == 0 and session.partitions == frozenset()
    assert session.plan_fetch({a}, {}).epoch == 0
    closing = session.plan_acknowledge({}, closing=True)
    assert closing.epoch == FINAL_EPOCH and session.epoch == 0


def test_epochs_wrap_to_1() -> None:
    assert next_epoch(0) == 1 and next_epoch(2**31 - 1) == 1 and next_epoch(-1) == -1


def test_acknowledgement_batches() -> None:
    assert acknowledgement_batches({}) == []
    assert acknowledgement_batches({3: 1, 1: 1, 2: 1}) == [AcknowledgementBatch(1, 3, (1,))]
    assert acknowledgement_batches({1: 1, 2: 0, 3: 1, 9: 2}) == [
        AcknowledgementBatch(1, 3, (1, 0, 1)),
        AcknowledgementBatch(9, 9, (2,)),
    ]
    assert [t.value for t in AcknowledgeType] == [0, 1, 2, 3, 4]


# --- records ----------------------------------------------------------------------------------------


def _at(batch: bytes, base_offset: int) -> bytes:
    return struct.pack(">q", base_offset) + batch[8:]  # the base offset is outside the CRC


def test_only_acquired_records_reach_the_application_with_their_delivery_count() -> None:
    first = _at(record_batch([(b"k0", b"v0"), (None, b"v1"), (b"k2", None)], 1000), 10)
    second = _at(record_batch([(None, b"v3"), (None, b"v4")], 2000), 13)
    control = _at(record_batch([(None, b"marker")], 3000, attributes=CONTROL_MASK), 15)
    data = first + second + control
    assert [(r.offset, r.key, r.value, r.timestamp) for r in read_batches(data)] == [
        (10, b"k0", b"v0", 1000),
        (11, None, b"v1", 1000),
        (12, b"k2", None, 1000),
        (13, None, b"v3", 2000),
        (14, None, b"v4", 2000),
    ]
    records, gaps = acquired_records(data, [(11, 11, 2), (13, 15, 1)])
    assert [(r.offset, count) for r, count in records] == [(11, 2), (13, 1), (14, 1)]
    assert gaps == [15]  # the control record: acknowledged as a gap
    # a last batch cut by max_bytes is left out, as Kafka's client leaves it
    assert [r.offset for r in read_batches(data[: len(first) + 20])] == [10, 11, 12]
    assert acquired_records(data, []) == ([], [])


def test_a_compressed_batch_is_inflated() -> None:
    import gzip

    from kgroup.wire.record_batch import HEADER, HEADER_SIZE, LOG_OVERHEAD

    plain = _at(record_batch([(b"a", b"1"), (b"b", b"2")], 500), 40)
    fields = list(HEADER.unpack_from(plain, 0))
    payload = gzip.compress(plain[HEADER_SIZE:])
    fields[1] = HEADER_SIZE - LOG_OVERHEAD + len(payload)  # batchLength
    fields[5] |= 1  # attributes: gzip
    packed = HEADER.pack(*fields) + payload
    records, gaps = acquired_records(packed, [(40, 41, 3)])
    assert [(r.offset, r.key, r.value, count) for r, count in records] == [
        (40, b"a", b"1", 3),
        (41, b"b", b"2", 3),
    ]
    assert gaps == []
