"""Producer partitioners: RoundRobinPartitioner vectors and each partitioner's documented behaviour."""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kgroup.model import KgroupError
from kgroup.partitioning import (
    AdaptivePartitioner,
    ClusterView,
    NodeLatency,
    Partitioner,
    ProducerModel,
    TopicState,
    UniformStickyPartitioner,
    create_partitioner,
    partition_for_key,
    partition_record,
    partitioner_names,
    register_partitioner,
    spread_unkeyed,
)
from kgroup.partitioning.partitioners import LoadStats, null_key_chooser

RR_VECTORS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parents[1] / "vectors" / "producer" / "roundrobin_partitioner.json").read_text()
)


class ScriptedRandom(random.Random):
    """A Random whose 32-bit draws are given in advance (Java's nextInt() values, as unsigned)."""

    def __init__(self, draws: list[int]) -> None:
        super().__init__(0)
        self.draws = list(draws)

    def getrandbits(self, k: int, /) -> int:
        assert k == 32
        return self.draws.pop(0) & 0xFFFFFFFF


def test_roundrobin_partitioner_vectors() -> None:
    assert len(RR_VECTORS) == 30
    for vector in RR_VECTORS:
        spec = vector["input"]
        cluster = ClusterView.single("t", spec["numPartitions"], available=spec["availablePartitions"])
        partitioner = create_partitioner("round-robin")
        got = [partitioner.partition("t", None, None, cluster) for _ in range(spec["calls"])]
        assert got == vector["expected"]["partitions"], spec


def test_roundrobin_counter_is_per_topic_and_ignores_keys() -> None:
    cluster = ClusterView({"a": TopicState(3), "b": TopicState(3)})
    partitioner = create_partitioner("round-robin")
    got = [partitioner.partition(t, b"key", None, cluster) for t in ("a", "a", "b", "a", "b")]
    assert got == [0, 1, 0, 2, 1]


def test_roundrobin_double_call_on_new_batch_skips_partitions() -> None:
    """KAFKA-9965 / KAFKA-16283: in a producer before Kafka 4.0 every record that starts a batch took
    two counter values, so with 4 partitions the even ones never got a batch. Kafka 4.4.0 asks once
    (the default; checked against a real 4.4.0 producer in tests/apache_kafka/test_oracle_vectors.py)."""
    doubled = spread_unkeyed(
        create_partitioner("round-robin", double_call_on_new_batch=True), 4000, 4, batch_size=1000
    )
    assert set(doubled.tolist()) == {1, 3}
    single = spread_unkeyed("round-robin", 4000, 4, record_bytes=100, batch_size=1000)
    assert np.bincount(single, minlength=4).tolist() == [1000, 1000, 1000, 1000]
    assert single[:8].tolist() == [0, 1, 2, 3, 0, 1, 2, 3]


def test_uniform_sticky_switches_only_on_a_new_batch() -> None:
    partitioner = create_partitioner("uniform-sticky", rng=random.Random(5))
    model = ProducerModel(partitioner, ClusterView.single("t", 6), batch_size=1000)
    history: list[tuple[int, int]] = []
    for _ in range(200):
        p = model.send("t", size_bytes=100)
        history.append((p, model.new_batch_calls))
    for (p0, calls0), (p1, calls1) in itertools.pairwise(history):
        if p1 != p0:
            assert calls1 == calls0 + 1  # a change of partition only with a new batch
        else:
            assert calls1 == calls0
    runs = [len(list(g)) for _, g in itertools.groupby(p for p, _ in history)]
    # 61-byte batch header + 9 records of 100 bytes fill a 1000-byte batch
    assert set(runs[:-1]) == {9}


def test_uniform_sticky_cache_rules() -> None:
    cluster = ClusterView.single("t", 5, available=[1, 3, 4])
    # draws: 0 -> available[0] = 1; then 3 -> available[0] = 1 again (same: redrawn); 4 -> available[1] = 3
    partitioner = UniformStickyPartitioner(rng=ScriptedRandom([0, 3, 4]), ignore_keys=True)
    assert partitioner.partition("t", b"ignored", None, cluster) == 1
    assert partitioner.partition("t", None, None, cluster) == 1
    partitioner.on_new_batch("t", cluster, prev_partition=4)  # not the sticky partition: no switch
    assert partitioner.sticky_partition("t") == 1
    partitioner.on_new_batch("t", cluster, prev_partition=1)
    assert partitioner.sticky_partition("t") == 3
    one = ClusterView.single("t", 5, available=[2])
    partitioner.on_new_batch("t", one, prev_partition=3)
    assert partitioner.sticky_partition("t") == 2
    keyed = create_partitioner("uniform-sticky", ignore_keys=False)  # Kafka 2.4-3.2 DefaultPartitioner
    assert keyed.partition("t", b"k", None, cluster) == partition_for_key(b"k", 5)


def test_adaptive_switches_after_batch_size_bytes() -> None:
    cluster = ClusterView.single("t", 4)
    partitioner = AdaptivePartitioner(rng=ScriptedRandom([0, 1, 2, 3]), batch_size=1000)
    assert partitioner.partition("t", None, None, cluster) == 0
    partitioner.record_appended("t", None, 0, 600, cluster)
    assert partitioner.partition("t", None, None, cluster) == 0
    partitioner.record_appended("t", None, 0, 400, cluster)  # 1000 bytes: switch
    assert partitioner.partition("t", None, None, cluster) == 1
    # while the batch is open the switch waits, up to twice batch.size
    partitioner.record_appended("t", None, 1, 1500, cluster, enable_switch=False)
    assert partitioner.partition("t", None, None, cluster) == 1
    assert partitioner.before_append("t", None, 1, cluster, queue_all_full=True)  # deferred switch
    assert partitioner.partition("t", None, None, cluster) == 2
    partitioner.record_appended("t", None, 2, 2000, cluster, enable_switch=False)
    assert partitioner.partition("t", None, None, cluster) == 3


def test_adaptive_in_a_producer_switches_after_batch_size_when_batches_drain() -> None:
    partitioner = create_partitioner("adaptive", rng=random.Random(1), **{"batch.size": 1000})
    model = ProducerModel(partitioner, ClusterView.single("t", 8))
    bytes_on_partition = 0
    current = model.send("t", size_bytes=100)
    model.drain()
    switches = []
    for _ in range(300):
        bytes_on_partition += 100 + 61  # every record opens a batch, as the queue is drained
        p = model.send("t", size_bytes=100)
        model.drain()
        if p != current:
            switches.append(bytes_on_partition)
            bytes_on_partition = 0
            current = p
    # 7 records of 161 bytes (record + batch header) reach batch.size; the next partition is drawn
    # then (and may be the same partition again, Kafka does not exclude it)
    assert len(switches) > 20
    assert all(b % 1127 == 0 for b in switches)
    assert Counter(switches).most_common(1)[0][0] == 1127


def test_load_stats_follow_kafka_example() -> None:
    partitioner = AdaptivePartitioner(rng=ScriptedRandom([3, 4, 5, 7]), batch_size=10)
    cluster = ClusterView.single("t", 3, queue_sizes=(0, 3, 1))
    partitioner.update_load_stats("t", cluster)
    assert partitioner.load_stats("t") == LoadStats((4, 5, 8), (0, 1, 2))
    picks = [partitioner.partition("t", None, None, cluster)]
    for _ in range(3):
        partitioner.record_appended("t", None, picks[-1], 10, cluster)
        picks.append(partitioner.partition("t", None, None, cluster))
    assert picks == [0, 1, 2, 2]
    # equal queues and every partition eligible: no table, uniform choice
    partitioner.update_load_stats("t", ClusterView.single("t", 3, queue_sizes=(2, 2, 2)))
    assert partitioner.load_stats("t") is None
    disabled = create_partitioner("adaptive", **{"partitioner.adaptive.partitioning.enable": False})
    disabled.update_load_stats("t", cluster)
    assert isinstance(disabled, AdaptivePartitioner) and disabled.load_stats("t") is None


def _pick_counts(partitioner: Partitioner, cluster: ClusterView, draws: int) -> Counter[int]:
    counts: Counter[int] = Counter()
    for _ in range(draws):
        p = partitioner.partition("t", None, None, cluster)
        counts[p] += 1
        partitioner.record_appended("t", None, p, 16384, cluster)  # a full batch.size: switch
    return counts


def test_adaptive_avoids_a_long_queue() -> None:
    partitioner = create_partitioner("adaptive", rng=random.Random(42))
    cluster = ClusterView.single("t", 4, queue_sizes=(0, 1, 0, 20))
    partitioner.update_load_stats("t", cluster)
    counts = _pick_counts(partitioner, cluster, 4000)
    # weights 21, 20, 21, 1 of 63
    assert counts[3] / 4000 < 0.04
    for p in (0, 1, 2):
        assert 0.27 < counts[p] / 4000 < 0.40


def test_adaptive_skips_partitions_without_leader_or_with_a_slow_leader() -> None:
    leaders = (0, 1, None, 3)
    slow = {1: NodeLatency.unready_since(since_ms=1000, now_ms=1500)}
    cluster = ClusterView({"t": TopicState(4, leaders, (1, 1, 1, 2))}, slow)
    partitioner = create_partitioner("adaptive", rng=random.Random(3), availability_timeout_ms=400)
    partitioner.update_load_stats("t", cluster)
    assert isinstance(partitioner, AdaptivePartitioner)
    assert partitioner.load_stats("t") == LoadStats((2, 3), (0, 3))
    assert set(_pick_counts(partitioner, cluster, 300)) == {0, 3}
    # a timeout longer than the wait keeps the slow leader's partition
    patient = create_partitioner("adaptive", rng=random.Random(3), availability_timeout_ms=600)
    patient.update_load_stats("t", cluster)
    assert set(_pick_counts(patient, cluster, 300)) == {0, 1, 3}
    # without stats, the choice is uniform over partitions with a leader
    plain = create_partitioner("adaptive", rng=random.Random(3))
    assert set(_pick_counts(plain, ClusterView({"t": TopicState(4, leaders)}), 300)) == {0, 1, 3}


def test_adaptive_never_excludes_an_idle_partition() -> None:
    """Kafka checks latency only for partitions with queued batches."""
    slow = {1: NodeLatency.unready_since(since_ms=0, now_ms=10_000)}
    cluster = ClusterView({"t": TopicState(3, None, (1, 0, 1))}, slow)
    partitioner = create_partitioner("adaptive", availability_timeout_ms=100)
    partitioner.update_load_stats("t", cluster)
    assert isinstance(partitioner, AdaptivePartitioner)
    stats = partitioner.load_stats("t")
    assert stats is not None and stats.partition_ids == (0, 1, 2)


@pytest.mark.parametrize("name", ["keyed", "adaptive", "legacy-round-robin"])
def test_keyed_records_hash_over_all_partitions_ignoring_availability(name: str) -> None:
    cluster = ClusterView.single("t", 10, available=[0])
    partitioner = create_partitioner(name)
    for key in (b"a", b"foobar", "text", b""):
        assert partitioner.partition("t", key, None, cluster) == partition_for_key(key, 10)


def test_ignore_keys_uses_the_null_key_path() -> None:
    cluster = ClusterView.single("t", 50)
    partitioner = create_partitioner("adaptive", rng=random.Random(9), **{"partitioner.ignore.keys": True})
    picks = {partitioner.partition("t", key, None, cluster) for key in (b"a", b"b", b"c", None)}
    assert len(picks) == 1  # sticky, whatever the key
    keyed = create_partitioner("keyed", null_key="round-robin", ignore_keys=True)
    assert [keyed.partition("t", b"x", None, cluster) for _ in range(3)] == [0, 1, 2]


def test_explicit_partition_always_wins() -> None:
    cluster = ClusterView.single("t", 4, available=[0])
    for name in partitioner_names():
        partitioner = create_partitioner(name)
        assert partition_record(partitioner, "t", b"key", None, cluster, partition=3) == 3
    model = ProducerModel(create_partitioner("keyed"), cluster)
    assert model.send("t", b"key", b"v", partition=2) == 2
    with pytest.raises(KgroupError, match=r"partition: 4 given by the record is not in 0\.\.3"):
        partition_record(create_partitioner("keyed"), "t", None, None, cluster, partition=4)


def test_legacy_round_robin_starts_at_a_random_value() -> None:
    cluster = ClusterView.single("t", 6, available=[0, 2, 4])
    partitioner = create_partitioner("legacy-round-robin", rng=ScriptedRandom([0xFFFFFFFF]))
    # counter starts at -1: toPositive(-1) = 0x7fffffff, % 3 = 1 -> partition 2
    got = [partitioner.partition("t", None, None, cluster) for _ in range(5)]
    assert got == [2, 0, 2, 4, 0]
    none = ClusterView.single("t", 6, available=[])
    fresh = create_partitioner("legacy-round-robin", rng=ScriptedRandom([4]))
    assert [fresh.partition("t", None, None, none) for _ in range(3)] == [4, 5, 0]


def test_spread_unkeyed_is_deterministic_and_covers_partitions() -> None:
    for name in ("adaptive", "uniform-sticky", "legacy-round-robin", "keyed"):
        a = spread_unkeyed(name, 3000, 5, seed=11, batch_size=2000)
        assert np.array_equal(a, spread_unkeyed(name, 3000, 5, seed=11, batch_size=2000))
        assert set(a.tolist()) == set(range(5)), name
    choose = null_key_chooser("uniform-sticky", 3, rng=random.Random(0))
    assert {choose() for _ in range(1000)} == {0, 1, 2}


class EveryOther(Partitioner):
    """A custom partitioner for the registry test: even partitions only."""

    name = "every-other"

    def __init__(self, *, rng: random.Random, step: int = 2) -> None:
        self.step = step
        self.calls = 0

    def partition(self, topic: str, key: Any, value: bytes | None, cluster: ClusterView) -> int:
        self.calls += 1
        return (self.calls * self.step) % cluster.num_partitions(topic)


def test_custom_partitioner_registry() -> None:
    register_partitioner("test-every-other", EveryOther, replace=True)
    assert "test-every-other" in partitioner_names()
    partitioner = create_partitioner("test-every-other", step=2)
    model = ProducerModel(partitioner, ClusterView.single("t", 6), batch_size=500)
    sent = [model.send("t", size_bytes=100) for _ in range(6)]
    assert all(p % 2 == 0 for p in sent)
    assert model.new_batch_calls == 0  # Kafka 4.4.0 asks a pluggable partitioner once per record
    with pytest.raises(KgroupError, match="already registered"):
        register_partitioner("test-every-other", EveryOther)
    with pytest.raises(KgroupError, match="bad configuration"):
        create_partitioner("test-every-other", colour="red")
    with pytest.raises(KgroupError, match=r"is unknown; choose one of: .*adaptive"):
        create_partitioner("nope")


def test_cluster_view_validation() -> None:
    with pytest.raises(KgroupError, match="at least 1 partition"):
        TopicState(0)
    with pytest.raises(KgroupError, match="leaders: 2 entries"):
        TopicState(3, (0, 1))
    with pytest.raises(KgroupError, match=r"topic 'x' is not in the cluster metadata"):
        ClusterView.single("t", 3).num_partitions("x")
    with pytest.raises(KgroupError, match="available: partition 7"):
        ClusterView.single("t", 3, available=[7])
    with pytest.raises(KgroupError, match="batch_size"):
        create_partitioner("adaptive", batch_size=0)


def test_a_java_producer_lists_partitions_in_its_own_order() -> None:
    """kgroup.partitioning.client_order (checked against Kafka's ProducerMetadata by
    tests/apache_kafka/test_oracle_client_order.py): (1, 2, 3, 0) is what a real 4.4.0 producer listed
    for this topic (tests/apache_kafka/test_oracle_vectors.py); the round robin starts there."""
    from kgroup.partitioning import JavaClientMetadata, java_client_partition_order

    assert java_client_partition_order("oracle-round-robin-producer", 4) == (1, 2, 3, 0)
    view = ClusterView.single("oracle-round-robin-producer", 4, available=[0, 1, 3], java_client_order=True)
    assert view.available_partitions("oracle-round-robin-producer") == (1, 3, 0)
    metadata = JavaClientMetadata()
    metadata.update([("a", p) for p in range(3)])
    metadata.update([("b", 0)])  # a partial answer keeps a's partitions
    assert sorted(metadata.partitions_for("a")) == [0, 1, 2] and metadata.partitions_for("b") == (0,)
    metadata.update([("b", 0), ("b", 1)], partial=False)  # a full answer replaces them
    assert metadata.partitions_for("a") == () and sorted(metadata.partitions_for("b")) == [0, 1]
    with pytest.raises(KgroupError, match=r"order: not the partitions 0\.\.2"):
        TopicState(3, order=(0, 0, 1))
