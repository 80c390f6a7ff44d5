"""The group side of transactions in the pure coordinator: TxnOffsetCommit's checks (KIP-447's generation,
member and instance id for classic groups), offsets pending per producer until the transaction ends,
committed or dropped by the marker, ``require_stable`` (UNSTABLE_OFFSET_COMMIT), the order of mixed plain
and transactional commits, a deleted group, and replay and checkpoints keeping all of it — as Kafka
4.4.0's ``OffsetMetadataManager`` (``pendingTransactionalOffsets``) does."""

from __future__ import annotations

from random import Random

from hypothesis import given, settings
from hypothesis import strategies as st

from group.context import GROUP, TOPIC, GroupTestContext
from kgroup.group import GroupCoordinator
from kgroup.group.records import OffsetAndMetadata, TxnOffsetsEnded
from kgroup.group.records.serde import decode_record, encode_record
from kgroup.messages import (
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from kgroup.model import ErrorCode, TopicPartition

E = ErrorCode
TP0, TP1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
PID, OTHER = 1000, 2000


def _txn_commit(
    ctx: GroupTestContext,
    offsets: dict[TopicPartition, int],
    *,
    producer_id: int = PID,
    group_id: str = GROUP,
    version: int = 5,
    **kwargs: object,
) -> TxnOffsetCommitResponse:
    body = TxnOffsetCommitRequest(
        group_id,
        "tx",
        producer_id,
        0,
        tuple(OffsetCommitPartition(tp, offset) for tp, offset in offsets.items()),
        **kwargs,  # type: ignore[arg-type]
    )
    answer = ctx.send(body, api_version=version).body
    assert isinstance(answer, TxnOffsetCommitResponse)
    return answer


def _fetch(
    ctx: GroupTestContext, partitions: tuple[TopicPartition, ...] | None, *, stable: bool
) -> dict[TopicPartition, tuple[int, ErrorCode]]:
    answer = ctx.send(OffsetFetchRequest(GROUP, partitions, require_stable=stable), api_version=8).body
    assert isinstance(answer, OffsetFetchResponse)
    assert answer.error_code is E.NONE
    return {p.partition: (p.committed_offset, p.error_code) for p in answer.partitions}


def _end(ctx: GroupTestContext, producer_id: int, *, committed: bool) -> None:
    ctx.absorb(ctx.coordinator.end_transaction(ctx.time_ms, producer_id, committed, lambda _: True))


def _committed(coordinator: GroupCoordinator) -> dict[TopicPartition, int]:
    return {tp: v.offset for tp, v in coordinator.committed_offsets(GROUP).items()}


def test_pending_until_the_commit_marker_then_committed() -> None:
    ctx = GroupTestContext()
    assert _txn_commit(ctx, {TP0: 5, TP1: 7}).results == ((TP0, E.NONE), (TP1, E.NONE))
    # read_uncommitted-style fetch: the pending offsets are not there; require_stable: unstable
    assert _fetch(ctx, (TP0, TP1), stable=False) == {TP0: (-1, E.NONE), TP1: (-1, E.NONE)}
    assert _fetch(ctx, (TP0, TP1), stable=True) == {
        TP0: (-1, E.UNSTABLE_OFFSET_COMMIT),
        TP1: (-1, E.UNSTABLE_OFFSET_COMMIT),
    }
    _end(ctx, PID, committed=True)
    assert _committed(ctx.coordinator) == {TP0: 5, TP1: 7}
    assert _fetch(ctx, (TP0, TP1), stable=True) == {TP0: (5, E.NONE), TP1: (7, E.NONE)}
    assert ctx.records[-1] == TxnOffsetsEnded(GROUP, PID, True)


def test_an_abort_drops_the_pending_offsets() -> None:
    ctx = GroupTestContext()
    ctx.send(OffsetCommitRequest(GROUP, -1, "", (OffsetCommitPartition(TP0, 3),)))
    _txn_commit(ctx, {TP0: 9})
    # every committed partition, stable: the partition with a pending offset is unstable
    assert _fetch(ctx, None, stable=True) == {TP0: (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert _fetch(ctx, None, stable=False) == {TP0: (3, E.NONE)}
    _end(ctx, PID, committed=False)
    assert _committed(ctx.coordinator) == {TP0: 3}
    assert _fetch(ctx, None, stable=True) == {TP0: (3, E.NONE)}
    assert not ctx.coordinator.pending_offsets


def test_a_marker_of_another_producer_or_partition_changes_nothing() -> None:
    ctx = GroupTestContext()
    _txn_commit(ctx, {TP0: 5})
    _end(ctx, OTHER, committed=True)
    ctx.absorb(ctx.coordinator.end_transaction(ctx.time_ms, PID, True, lambda _: False))
    assert _committed(ctx.coordinator) == {}
    assert ctx.coordinator.pending_offsets.pending(PID, GROUP) == {TP0: OffsetAndMetadata(5, -1, "", 0)}


def test_a_plain_commit_after_the_transactional_one_wins() -> None:
    """``replayEndTransactionMarker`` keeps the most recent commit: a plain commit written after the
    transactional offset supersedes it; one written before does not."""
    ctx = GroupTestContext()
    ctx.send(OffsetCommitRequest(GROUP, -1, "", (OffsetCommitPartition(TP1, 1),)))
    _txn_commit(ctx, {TP0: 5, TP1: 6})
    ctx.send(OffsetCommitRequest(GROUP, -1, "", (OffsetCommitPartition(TP0, 3),)))
    _end(ctx, PID, committed=True)
    assert _committed(ctx.coordinator) == {TP0: 3, TP1: 6}


def test_two_producers_the_later_write_wins_whatever_the_commit_order() -> None:
    ctx = GroupTestContext()
    _txn_commit(ctx, {TP0: 10}, producer_id=PID)
    _txn_commit(ctx, {TP0: 20}, producer_id=OTHER)
    _end(ctx, OTHER, committed=True)
    assert _committed(ctx.coordinator) == {TP0: 20}
    assert _fetch(ctx, (TP0,), stable=True) == {TP0: (-1, E.UNSTABLE_OFFSET_COMMIT)}  # PID still open
    _end(ctx, PID, committed=True)  # written earlier: skipped
    assert _committed(ctx.coordinator) == {TP0: 20}


def test_replay_and_checkpoint_keep_pending_superseded_and_committed() -> None:
    ctx = GroupTestContext()
    _txn_commit(ctx, {TP0: 10}, producer_id=PID)
    ctx.send(OffsetCommitRequest(GROUP, -1, "", (OffsetCommitPartition(TP0, 15),)))  # supersedes PID's
    _txn_commit(ctx, {TP1: 30}, producer_id=OTHER)
    _txn_commit(ctx, {TopicPartition(TOPIC, 2): 40}, producer_id=3000)
    _end(ctx, 3000, committed=False)
    # the log's bytes replayed, and a checkpoint of the state replayed: the same coordinator
    replayed = GroupCoordinator(rng=Random(1))
    for record in ctx.records:
        replayed.replay(decode_record(*encode_record(record)))
    compacted = GroupCoordinator(rng=Random(2))
    for record in ctx.coordinator.checkpoint():
        compacted.replay(record)
    expected = ctx.coordinator.snapshot()
    for coordinator in (ctx.coordinator, replayed, compacted):
        assert coordinator.snapshot() == expected
        for pid in (PID, OTHER):
            coordinator.replay(TxnOffsetsEnded(GROUP, pid, True))
        # PID's offset was superseded by the plain commit; OTHER's committed
        assert _committed(coordinator) == {TP0: 15, TP1: 30}
        assert not coordinator.pending_offsets


def test_classic_group_generation_member_and_instance_checks() -> None:
    """KIP-447: a member's TxnOffsetCommit carries its generation, member id and instance id."""
    ctx = GroupTestContext()
    (member,), _, generation = ctx.join_group_to_stable(1)
    ok = _txn_commit(ctx, {TP0: 1}, generation_id=generation, member_id=member)
    assert ok.results == ((TP0, E.NONE),)
    stale = _txn_commit(ctx, {TP0: 1}, generation_id=generation - 1, member_id=member)
    assert stale.results == ((TP0, E.ILLEGAL_GENERATION),)
    stranger = _txn_commit(ctx, {TP0: 1}, generation_id=generation, member_id="who")
    assert stranger.results == ((TP0, E.UNKNOWN_MEMBER_ID),)
    # no member at all: a transactional commit to a non-empty group is accepted (a plain one is not)
    assert _txn_commit(ctx, {TP0: 1}).results == ((TP0, E.NONE),)
    plain = ctx.send(OffsetCommitRequest(GROUP, -1, "", (OffsetCommitPartition(TP0, 1),))).body
    assert isinstance(plain, OffsetCommitResponse)
    assert plain.results == ((TP0, E.UNKNOWN_MEMBER_ID),)


def test_classic_static_member_fenced_instance() -> None:
    ctx = GroupTestContext()
    (member,), _, generation = ctx.join_group_to_stable(1, static=True)
    fenced = _txn_commit(
        ctx, {TP0: 1}, generation_id=generation, member_id="someone-else", group_instance_id="instance-0"
    )
    assert fenced.results == ((TP0, E.FENCED_INSTANCE_ID),)
    ok = _txn_commit(
        ctx, {TP0: 1}, generation_id=generation, member_id=member, group_instance_id="instance-0"
    )
    assert ok.results == ((TP0, E.NONE),)


def test_a_group_that_does_not_exist() -> None:
    ctx = GroupTestContext()
    # with a generation: ILLEGAL_GENERATION, from v6 GROUP_ID_NOT_FOUND (KIP-1319); nothing written
    assert _txn_commit(ctx, {TP0: 1}, generation_id=1, member_id="m", version=5).results == (
        (TP0, E.ILLEGAL_GENERATION),
    )
    assert _txn_commit(ctx, {TP0: 1}, generation_id=1, member_id="m", version=6).results == (
        (TP0, E.GROUP_ID_NOT_FOUND),
    )
    assert ctx.records == []
    # without: a simple group is made, as for a plain commit
    assert _txn_commit(ctx, {TP0: 1}).results == ((TP0, E.NONE),)
    assert ctx.coordinator.has_group(GROUP)


def test_metadata_too_large_is_refused_per_partition() -> None:
    ctx = GroupTestContext()
    big = "x" * (ctx.config.offset_metadata_max_bytes + 1)
    body = TxnOffsetCommitRequest(
        GROUP, "tx", PID, 0, (OffsetCommitPartition(TP0, 1, big), OffsetCommitPartition(TP1, 2))
    )
    answer = ctx.send(body, api_version=5).body
    assert isinstance(answer, TxnOffsetCommitResponse)
    assert answer.results == ((TP0, E.OFFSET_METADATA_TOO_LARGE), (TP1, E.NONE))
    assert set(ctx.coordinator.pending_offsets.pending(PID, GROUP)) == {TP1}


def test_deleting_the_group_drops_its_pending_offsets() -> None:
    ctx = GroupTestContext()
    _txn_commit(ctx, {TP0: 5})
    error, result = ctx.coordinator.delete_group(ctx.time_ms, GROUP)
    ctx.absorb(result)
    assert error is E.NONE
    assert not ctx.coordinator.pending_offsets.has_pending(GROUP, TP0)
    _end(ctx, PID, committed=True)
    assert not ctx.coordinator.has_group(GROUP)


# --- random runs against a model of Kafka's rule ------------------------------------------------------

_PARTITIONS = (TP0, TP1)
_PRODUCERS = (PID, OTHER, 3000)
_STEP = st.one_of(
    st.tuples(st.just("plain"), st.sampled_from(_PARTITIONS), st.integers(0, 99)),
    st.tuples(st.just("txn"), st.sampled_from(_PRODUCERS), st.sampled_from(_PARTITIONS), st.integers(0, 99)),
    st.tuples(st.just("end"), st.sampled_from(_PRODUCERS), st.booleans()),
    st.tuples(st.just("delete")),
)


class _Model:
    """Kafka's ``OffsetMetadataManager`` with record offsets: each write gets the next offset in
    ``__consumer_offsets``; a commit marker materialises a pending offset whose record offset is newer
    than the committed one's."""

    def __init__(self) -> None:
        self.next_offset = 0
        self.committed: dict[TopicPartition, tuple[int, int]] = {}  # partition -> (offset, record offset)
        self.pending: dict[int, dict[TopicPartition, tuple[int, int]]] = {}

    def plain(self, tp: TopicPartition, offset: int) -> None:
        self.committed[tp] = (offset, self.next_offset)
        self.next_offset += 1

    def txn(self, producer: int, tp: TopicPartition, offset: int) -> None:
        self.pending.setdefault(producer, {})[tp] = (offset, self.next_offset)
        self.next_offset += 1

    def end(self, producer: int, committed: bool) -> None:
        for tp, (offset, record) in self.pending.pop(producer, {}).items():
            current = self.committed.get(tp)
            if committed and (current is None or record > current[1]):
                self.committed[tp] = (offset, record)

    def delete(self) -> None:
        self.committed.clear()
        for held in self.pending.values():
            held.clear()

    def unstable(self) -> set[TopicPartition]:
        return {tp for held in self.pending.values() for tp in held}


@settings(max_examples=150)
@given(st.lists(_STEP, max_size=25))
def test_random_runs_follow_kafkas_rule_and_survive_replay_and_checkpoints(
    steps: list[tuple[object, ...]],
) -> None:
    ctx, model = GroupTestContext(), _Model()
    for step in steps:
        kind = step[0]
        if kind == "plain":
            _, tp, offset = step
            ctx.send(OffsetCommitRequest(GROUP, -1, "", (OffsetCommitPartition(tp, offset),)))  # type: ignore[arg-type]
            model.plain(tp, offset)  # type: ignore[arg-type]
        elif kind == "txn":
            _, producer, tp, offset = step
            _txn_commit(ctx, {tp: offset}, producer_id=producer)  # type: ignore[dict-item,arg-type]
            model.txn(producer, tp, offset)  # type: ignore[arg-type]
        elif kind == "end":
            _, producer, committed = step
            _end(ctx, producer, committed=committed)  # type: ignore[arg-type]
            model.end(producer, committed)  # type: ignore[arg-type]
        elif ctx.coordinator.has_group(GROUP):
            error, result = ctx.coordinator.delete_group(ctx.time_ms, GROUP)
            ctx.absorb(result)
            assert error is E.NONE
            model.delete()
        assert _committed(ctx.coordinator) == {tp: v[0] for tp, v in model.committed.items()}
        for tp in _PARTITIONS:
            assert ctx.coordinator.pending_offsets.has_pending(GROUP, tp) is (tp in model.unstable())
    # the log replayed, and the checkpoint replayed, then every transaction committed: the same offsets
    replayed = GroupCoordinator(rng=Random(1))
    for record in ctx.records:
        replayed.replay(decode_record(*encode_record(record)))
    compacted = GroupCoordinator(rng=Random(2))
    for record in ctx.coordinator.checkpoint():
        compacted.replay(record)
    expected = ctx.coordinator.snapshot()
    for producer in _PRODUCERS:
        model.end(producer, True)
    for coordinator in (replayed, compacted):
        assert coordinator.snapshot() == expected
        for producer in _PRODUCERS:
            result = coordinator.end_transaction(0, producer, True, lambda _: True)
            assert all(isinstance(r, TxnOffsetsEnded) for r in result.records)
        assert _committed(coordinator) == {tp: v[0] for tp, v in model.committed.items()}


def test_consumer_group_transactional_commit_by_assignment_epoch() -> None:
    """A KIP-848 group: TxnOffsetCommit checked against the epoch each partition was assigned at
    (STALE_MEMBER_EPOCH from v6, ILLEGAL_GENERATION before), its offset pending, unstable, then the
    group's committed offset once the transaction commits."""
    import dataclasses

    from group.consumer.context import ConsumerTestContext, current, image, member, subscription
    from kgroup.model import TopicId

    bar = TopicId.from_int(0xBA4BA4)
    bar_0 = TopicPartition("bar", 0)
    ctx = ConsumerTestContext(image((bar, "bar", 3)))
    ctx.build_group("foo", 1)
    m = member("member", epoch=10, previous=10, assigned={bar: {0: 5}})
    ctx.replay(
        dataclasses.replace(subscription(m), group_id="foo"), dataclasses.replace(current(m), group_id="foo")
    )

    def commit(epoch: int, version: int) -> ErrorCode:
        body = TxnOffsetCommitRequest(
            "foo", "tx", PID, 0, (OffsetCommitPartition(bar_0, 100),), generation_id=epoch, member_id="member"
        )
        answer = ctx.send(body, version).response
        assert isinstance(answer, TxnOffsetCommitResponse)
        ((_, code),) = answer.results
        return code

    assert commit(3, 6) is E.STALE_MEMBER_EPOCH  # older than the partition's assignment epoch
    assert commit(3, 5) is E.ILLEGAL_GENERATION
    assert commit(11, 6) is E.STALE_MEMBER_EPOCH  # newer than the member's
    assert commit(5, 5) is E.NONE
    assert ctx.coordinator.pending_offsets.has_pending("foo", bar_0)
    assert bar_0 not in ctx.coordinator.committed_offsets("foo")

    def fetch(stable: bool) -> OffsetFetchResponse:
        answer = ctx.send(OffsetFetchRequest("foo", (bar_0,), require_stable=stable), 8).response
        assert isinstance(answer, OffsetFetchResponse)
        return answer

    # the consumer kind's OffsetFetch answers require_stable as the classic kind's does
    unstable = OffsetFetchPartition(bar_0, -1, "", E.UNSTABLE_OFFSET_COMMIT, -1)
    assert fetch(stable=True) == OffsetFetchResponse(E.NONE, (unstable,))
    assert fetch(stable=False) == OffsetFetchResponse(E.NONE, (OffsetFetchPartition(bar_0, -1, "", E.NONE),))
    ctx.absorb(ctx.coordinator.end_transaction(ctx.time_ms, PID, True, lambda _: True))
    assert ctx.coordinator.committed_offsets("foo")[bar_0].offset == 100
    assert fetch(stable=True) == OffsetFetchResponse(E.NONE, (OffsetFetchPartition(bar_0, 100, "", E.NONE),))
