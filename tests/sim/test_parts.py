"""The simulator's own parts in isolation: queue order, network, workload arithmetic, ownership clocks."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping

from kgroup.group import ClassicGroups
from kgroup.model import TopicPartition
from kgroup.sim.network import Network
from kgroup.sim.ownership import OwnershipTracker
from kgroup.sim.scenario import NetworkSpec, WorkloadSpec
from kgroup.sim.scheduler import EventQueue
from kgroup.sim.workload import ConsumerLoad, Workload, _water_fill


def test_queue_orders_by_time_then_scheduling_order() -> None:
    q = EventQueue()
    q.push(10, 0, "b")
    q.push(5, 0, "a")
    q.push(10, 0, "c")
    out = []
    while q:
        out.append(q.pop())
    assert out == [(0, "a"), (0, "b"), (0, "c")]
    assert q.now_ms == 10
    q.push(3, 1, "late")  # the past runs now
    assert q.peek_time() == 10
    q.push(20, 2, "later")
    assert q.pop_due(15) == (10, 1, "late")
    assert q.pop_due(15) is None and len(q) == 1 and q.now_ms == 10


def test_network_keeps_fifo_order_and_holds_messages_through_cuts() -> None:
    net = Network(NetworkSpec(latency_ms=5, jitter_ms=20, loss=0.0), random.Random(1))
    times = [net.transit("c", "c#1", True, t) for t in range(0, 50, 2)]
    assert all(t is not None for t in times)
    assert times == sorted(times)  # type: ignore[type-var]
    assert all(t is not None and t >= s + 5 for t, s in zip(times, range(0, 50, 2), strict=True))
    net.cut("c", 60, 100)
    assert net.is_cut("c", 99) and not net.is_cut("c", 100) and not net.is_cut("c", 59)
    # TCP: a segment sent into the cut is retransmitted (RTO max(200, 2*5 + 4*20) = 200 ms, doubling)
    # and arrives after the cut heals, never dropped
    held = net.transit("c", "c#2", True, 99)
    assert held is not None and 299 + 5 <= held <= 299 + 25
    assert net.transit("c", "c#2", False, 100) is not None


def test_network_loss_is_retransmission_delay_with_backoff() -> None:
    def delays(seed: int) -> list[int]:
        net = Network(NetworkSpec(latency_ms=1, loss=0.3), random.Random(seed))
        out = []
        for t in range(0, 200_000, 1000):
            at = net.transit("c", f"x{t}", True, t)  # a connection each: no head-of-line blocking
            assert at is not None  # TCP never drops a message
            out.append(at - t)
        return out

    assert delays(4) == delays(4)
    got = delays(4)
    assert set(got) <= {1, 201, 601, 1401, 3001, 6201, 12601}  # 200, +400, +800 … (RTO backoff)
    assert 30 < sum(d > 1 for d in got) < 90  # about 30 % of messages needed a retransmission
    assert any(d >= 601 for d in got)  # some needed two or more


def test_network_resets_are_a_seeded_poisson_process() -> None:
    net = Network(NetworkSpec(resets_per_hour=60.0), random.Random(0), reset_rng=random.Random(3))
    gaps = [net.next_reset_ms("c", 0) for _ in range(400)]
    assert all(g is not None and g > 0 for g in gaps)
    mean = sum(g for g in gaps if g is not None) / len(gaps)
    assert 45_000 < mean < 75_000  # one a minute on average
    assert Network(NetworkSpec(), random.Random(0)).next_reset_ms("c", 0) is None


def test_water_fill_is_fair_and_exact() -> None:
    assert _water_fill([5, 100, 100], 101) == [5, 48, 48]
    assert _water_fill([10, 20], 30) == [10, 20]
    assert sum(_water_fill([7, 7, 7], 10)) == 10


class FakeMember:
    """Just the consumption bookkeeping the workload reads and writes."""

    def __init__(self, owned: Mapping[TopicPartition, int]) -> None:
        self.pos = dict(owned)

    def assignment(self) -> frozenset[TopicPartition]:
        return frozenset(self.pos)

    def positions(self) -> Mapping[TopicPartition, int]:
        return self.pos

    def pending_revocation(self) -> frozenset[TopicPartition]:
        return frozenset()

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.pos[tp] = offset

    def record_processed_many(self, processed: Iterable[tuple[TopicPartition, int]]) -> None:
        for tp, next_offset in processed:
            self.pos[tp] = next_offset


def test_workload_catches_up_stalls_and_counts_reprocessing() -> None:
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    w = Workload(
        WorkloadSpec(
            produce_per_partition_per_s=100, consume_per_consumer_per_s=150, auto_offset_reset="earliest"
        )
    )
    w.add_partitions([a, b], 0)
    m = FakeMember({a: -1, b: -1})
    load = ConsumerLoad(last_ms=0)
    w.advance(load, m, 1000)  # 200 produced, 150 capacity: shared fairly
    assert m.pos == {a: 75, b: 75}
    load.stalled_until_ms = 3000
    w.advance(load, m, 3000)  # stalled: nothing processed
    assert m.pos == {a: 75, b: 75} and w.records_processed == 150
    # a second consumer restarts partition a from offset 0: 75 records processed twice
    other = FakeMember({a: 0})
    w.advance(ConsumerLoad(last_ms=2000), other, 3000)
    assert other.pos[a] == 150
    assert w.records_reprocessed == 75
    w.on_commit(a, 150)
    assert w.lag([0, 1], 3000) == (150, 150, 300 - 150 + 300 - 75)  # b has nothing committed
    w.on_commit(b, 0)
    assert w.lag([0, 1], 3000) == (150 + 300, 300, 300 - 150 + 300 - 75)


def test_workload_latest_reset_skips_and_counts() -> None:
    a = TopicPartition("t", 0)
    w = Workload(WorkloadSpec(produce_per_partition_per_s=10))
    w.add_partitions([a], 0)
    m = FakeMember({a: -1})
    w.advance(ConsumerLoad(last_ms=0), m, 5000)
    assert m.pos[a] == 50 and w.records_skipped == 50 and w.records_processed == 0


def test_ownership_clocks() -> None:
    own = OwnershipTracker()
    own.add_partitions(3, 0)
    own.set_subscribed([0, 1, 2])
    own.counting_unowned = True
    own.update_claims("x", frozenset(), frozenset({0, 1}), True, False, 0)
    own.account(1000)  # partition 2 unowned for 1 s
    assert own.unowned_ms == 1000
    own.update_claims("y", frozenset(), frozenset({1, 2}), True, False, 1000)
    assert own.n_double == 1 and own.double_owned() == [(1, ["x", "y"])]
    own.account(1500)
    assert own.double_ms == 500
    own.update_claims("y", frozenset({1, 2}), frozenset({1, 2}), False, True, 1500)  # y goes stale
    assert own.n_double == 0 and own.n_zombie == 2 and own.n_unowned == 1
    own.account(2000)
    assert own.zombie_ms == 1000 and own.unowned_ms == 1500
    own.close(2000)
    assert (2, "y", 1000, 1500) in own.intervals and (0, "x", 0, 2000) in own.intervals


def test_a_consumer_may_have_its_own_link() -> None:
    net = Network(NetworkSpec(latency_ms=1), random.Random(0), {"far": NetworkSpec(latency_ms=80, loss=0.0)})
    assert net.transit("near", "near#1", True, 0) == 1
    assert net.transit("far", "far#1", True, 0) == 80


def test_group_observer_follows_the_coordinators_records() -> None:
    """The pure observer: the group's state, generation, protocol and members from records alone,
    checked against the coordinator's own view after a real run of joins, a sync and a leave."""
    from group.context import GroupTestContext
    from kgroup.messages import LeaveGroupMember
    from kgroup.sim.observer import GroupObserver

    ctx = GroupTestContext()
    ids, _, _ = ctx.join_group_to_stable(3)
    ctx.leave(LeaveGroupMember(ids[0]))
    observer = GroupObserver()
    seen = observer.observe(ctx.records)
    view = ctx.coordinator.kind(ClassicGroups).group("group-id")
    assert (observer.state, observer.generation, observer.protocol) == (
        view.state,
        view.generation,
        view.protocol,
    )
    assert observer.members == frozenset(view.member_ids)
    assert [s.kafka_name for s, _ in seen.states][:3] == [
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
    ]
    assert seen.membership_changed and seen.generation_went_back == []
    assert observer.is_current(view.generation, ids[1]) and not observer.is_current(view.generation, ids[0])
