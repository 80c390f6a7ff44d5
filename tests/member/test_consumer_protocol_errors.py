"""The consumer-protocol member's errors, leaving, and the poll timeout, as Kafka 4.x's client handles
them (``AbstractHeartbeatRequestManager.onErrorResponse``, ``ConsumerHeartbeatRequestManager``,
``transitionToFenced`` / ``transitionToFatal`` / ``leaveGroup`` / ``transitionToStale``)."""

from __future__ import annotations

import pytest

from kgroup.member import (
    ConsumerMemberState,
    FatalError,
    LeftGroup,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from kgroup.member.consumer_protocol import CONSUMER_PROTOCOL_NOT_SUPPORTED
from kgroup.messages import FindCoordinatorRequest, FindCoordinatorResponse
from kgroup.model import ErrorCode

from .consumer_protocol_helpers import INTERVAL, Driver, T, U, assignment, failed, heartbeat, kinds, ok, tp

S = ConsumerMemberState


def _stable(**overrides: object) -> Driver:
    d = Driver(**overrides)
    d.stable_with(5, (T, [0, 1]), (U, [0]))
    d.member.drain_events()
    d.advance(INTERVAL)
    return d


@pytest.mark.parametrize("error", [ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID])
def test_a_fenced_member_loses_its_partitions_and_rejoins_at_once_with_epoch_zero(error: ErrorCode) -> None:
    d = _stable()
    member_id = d.member.member_id
    cid, _ = heartbeat(d.background())
    cid, body = heartbeat(d.answer(cid, failed(error)))  # no backoff: the rejoin goes at once
    assert d.member.drain_events() == [PartitionsLost((tp("t", 0), tp("t", 1), tp("u", 0)), 0)]
    assert d.member.state is S.JOINING and d.member.assignment() == frozenset()
    assert (body.member_id, body.member_epoch) == (member_id, 0)  # the same member id, epoch 0
    assert body.topic_partitions == () and body.subscribed_topic_names == ("t", "u")  # a full request
    d.answer(cid, ok(7, (T, [0])))
    assert d.member.member_epoch == 7 and d.member.drain_events() == [PartitionsAssigned((tp("t", 0),), 7)]


FATAL = [
    ErrorCode.UNRELEASED_INSTANCE_ID,
    ErrorCode.FENCED_INSTANCE_ID,
    ErrorCode.UNSUPPORTED_ASSIGNOR,
    ErrorCode.INVALID_REQUEST,
    ErrorCode.GROUP_MAX_SIZE_REACHED,
    ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ErrorCode.INVALID_REGULAR_EXPRESSION,
    ErrorCode.UNSUPPORTED_VERSION,
    ErrorCode.GROUP_ID_NOT_FOUND,  # while in the group
    ErrorCode.STALE_MEMBER_EPOCH,  # not a heartbeat error: unexpected, so fatal
]


@pytest.mark.parametrize("error", FATAL)
def test_fatal_errors_stop_the_member_after_losing_its_partitions(error: ErrorCode) -> None:
    d = _stable()
    cid, _ = heartbeat(d.background())
    assert d.answer(cid, failed(error, "from the broker")) == []
    events = d.member.drain_events()
    assert [type(e) for e in events] == [FatalError, PartitionsLost]
    fatal = events[0]
    assert isinstance(fatal, FatalError) and fatal.error is error
    if error is ErrorCode.UNSUPPORTED_VERSION:
        assert fatal.reason == CONSUMER_PROTOCOL_NOT_SUPPORTED and "group_protocol='classic'" in fatal.reason
    else:
        assert "from the broker" in fatal.reason
    assert d.member.state is S.FATAL and d.member.assignment() == frozenset()
    d.advance(600000)
    assert d.poll() == [] and d.background() == [] and d.member.next_wakeup_ms() is None


def test_topic_authorization_failed_is_reported_but_the_member_stays() -> None:
    d = _stable()
    cid, _ = heartbeat(d.background())
    d.answer(cid, failed(ErrorCode.TOPIC_AUTHORIZATION_FAILED))
    [event] = d.member.drain_events()
    assert isinstance(event, FatalError) and event.error is ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert d.member.state is S.STABLE and d.member.assignment() == {tp("t", 0), tp("t", 1), tp("u", 0)}


@pytest.mark.parametrize("error", [ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE])
def test_a_moved_coordinator_is_looked_up_again_and_the_next_heartbeat_is_full(error: ErrorCode) -> None:
    d = _stable(remote_assignor="range")
    cid, _ = heartbeat(d.background())
    out = d.answer(cid, failed(error))
    assert kinds(out) == ["FindCoordinatorRequest"] and d.member.coordinator is None
    cid, body = heartbeat(d.find(out))  # no backoff once the coordinator is known again
    assert body.member_epoch == 5 and body.rebalance_timeout_ms == 300000
    assert body.subscribed_topic_names == ("t", "u") and body.server_assignor == "range"
    assert body.topic_partitions == assignment((T, [0, 1]), (U, [0]))
    assert d.member.state is S.STABLE


def test_coordinator_loading_backs_off_exponentially_then_sends_a_full_heartbeat() -> None:
    d = _stable()
    waits = []
    for _ in range(3):
        cid, _ = heartbeat(d.background())
        assert d.answer(cid, failed(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)) == []
        wake = d.member.next_wakeup_ms()
        assert wake is not None
        waits.append(wake - d.now)
        d.now = wake - 1
        assert d.background() == []
        d.now = wake
    assert 80 <= waits[0] <= 120 and 160 <= waits[1] <= 240 and 320 <= waits[2] <= 480
    _, body = heartbeat(d.background())
    assert body.subscribed_topic_names == ("t", "u")


def test_a_dropped_heartbeat_forgets_the_coordinator_and_backs_off() -> None:
    d = _stable()
    cid, _ = heartbeat(d.background())
    out = d.member.on_request_failed(d.now, cid)
    assert kinds(out) == ["FindCoordinatorRequest"]
    after = d.find(out)
    assert after == []  # the heartbeat waits for its backoff
    d.advance(130)
    _, body = heartbeat(d.background())
    assert body.topic_partitions is not None  # sent full after the failure


def test_find_coordinator_errors_are_retried_with_backoff() -> None:
    d = Driver()
    find = d.poll()[0]
    assert isinstance(find.body, FindCoordinatorRequest)
    assert d.answer(find.correlation_id, FindCoordinatorResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE)) == []
    wake = d.member.next_wakeup_ms()
    assert wake is not None and d.now + 80 <= wake <= d.now + 120
    d.now = wake
    assert kinds(d.background()) == ["FindCoordinatorRequest"]


# --- leaving -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("instance", "epoch"), [(None, -1), ("static-1", -2)])
def test_close_revokes_then_sends_the_leave_heartbeat(instance: str | None, epoch: int) -> None:
    d = _stable(group_instance_id=instance)
    out = d.member.close(d.now)
    cid, body = heartbeat(out)
    assert body.member_epoch == epoch and body.instance_id == instance
    events = d.member.drain_events()
    assert events[0] == PartitionsRevoked((tp("t", 0), tp("t", 1), tp("u", 0)), 5)
    assert isinstance(events[1], LeftGroup) and events[1].leave_group_sent
    assert d.member.state is S.UNSUBSCRIBED and d.member.assignment() == frozenset()
    assert d.answer(cid, ok(epoch)) == [] and d.member.closed and d.member.next_wakeup_ms() is None


def test_unsubscribe_without_a_coordinator_completes_the_leave_without_sending() -> None:
    d = _stable()
    cid, _ = heartbeat(d.background())
    assert kinds(d.answer(cid, failed(ErrorCode.NOT_COORDINATOR))) == ["FindCoordinatorRequest"]
    assert d.member.unsubscribe(d.now) == []  # the lookup is in flight; the leave is not waited for
    assert d.member.state is S.UNSUBSCRIBED
    events = d.member.drain_events()
    assert events[0] == PartitionsRevoked((tp("t", 0), tp("t", 1), tp("u", 0)), 5)
    assert events[1] == LeftGroup("the consumer unsubscribed", leave_group_sent=False)


def test_an_assignment_arriving_while_leaving_is_ignored() -> None:
    d = _stable()
    cid, _ = heartbeat(d.background())  # a heartbeat in flight …
    leave_cid, leave = heartbeat(d.member.unsubscribe(d.now))  # … and the leave goes anyway
    assert leave.member_epoch == -1
    d.member.drain_events()
    d.answer(cid, ok(6, (T, [0, 1, 2])))  # the old heartbeat's answer: the member is out already
    assert d.member.state is S.UNSUBSCRIBED and d.member.assignment() == frozenset()
    assert d.answer(leave_cid, ok(-1)) == [] and d.member.drain_events() == []


def test_fenced_while_leaving_stops_and_does_not_rejoin() -> None:
    d = _stable()
    cid, _ = heartbeat(d.background())
    d.member.unsubscribe(d.now)
    d.answer(cid, failed(ErrorCode.FENCED_MEMBER_EPOCH))
    assert d.member.state is S.UNSUBSCRIBED
    d.advance(60000)
    assert d.background() == []


# --- max.poll.interval.ms ----------------------------------------------------------------------------


@pytest.mark.parametrize(("instance", "epoch"), [(None, -1), ("static-1", -2)])
def test_a_poll_timeout_leaves_goes_stale_and_rejoins_at_the_next_poll(
    instance: str | None, epoch: int
) -> None:
    d = Driver(max_poll_interval_ms=20000, group_instance_id=instance)
    d.stable_with(5, (T, [0]))
    d.member.drain_events()
    polled_at = d.now
    # heartbeats go on while the application does not poll …
    while d.now + INTERVAL < polled_at + 20000:
        d.advance(INTERVAL)
        cid, _ = heartbeat(d.background())
        d.answer(cid, ok(5))
    d.now = polled_at + 20000
    assert d.member.next_wakeup_ms() == d.now
    # … until max.poll.interval.ms: the leave heartbeat goes (its answer ignored) and the member is STALE
    cid, body = heartbeat(d.background())
    assert body.member_epoch == epoch
    assert d.member.state is S.STALE
    events = d.member.drain_events()
    assert events[0] == PartitionsLost((tp("t", 0),), epoch)
    assert isinstance(events[1], LeftGroup)
    assert d.answer(cid, failed(ErrorCode.UNKNOWN_MEMBER_ID)) == []  # ignored
    d.advance(60000)
    assert d.background() == [] and d.member.state is S.STALE  # no heartbeats while stale
    cid, body = heartbeat(d.poll())  # the next poll rejoins: epoch 0, every field
    assert d.member.state is S.JOINING and body.member_epoch == 0 and body.topic_partitions == ()
