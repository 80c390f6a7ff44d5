"""The benchmark harnesses that run Apache Kafka's code beside kgroup's give Kafka's answers.

``LeaderPathBench.java`` (``kgroup bench assign --leader-path``) must produce, through Kafka's own
``ConsumerProtocol`` and assignors, the assignments kgroup's leader path produces from the same
subscription bytes; ``Murmur2Bench.java`` (``benchmarks/bench_murmur2.py``) must compute kgroup's
partitions for the same keys. Scaled cases keep it to seconds; timings are never asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from kgroup.assignors.leader_path import assign_subscriptions
from kgroup.assignors.registry import create_assignor
from kgroup.bench.cases import CASES, Phase, build_request
from kgroup.bench.java_leader import compare_answers, run_java_leader_path, subscription_bytes
from kgroup.bench.java_murmur2 import JavaMurmur2
from kgroup.partitioning import partitions_for_keys
from kgroup.testing.apache_kafka import require_apache_kafka


@pytest.fixture(autouse=True)
def _kafka_jars() -> None:
    require_apache_kafka()


@pytest.mark.parametrize(
    ("case", "assignor", "phase", "scale", "byte_equal"),
    [
        ("uniform", "sticky", "initial", 0.05, True),
        ("uniform-rack", "cooperative-sticky", "initial", 0.05, None),
        ("notimeout-rack", "cooperative-sticky", "reassign", 0.1, None),
        ("nonequal", "sticky", "reassign", 0.05, None),
        ("notimeout", "range", "initial", 0.1, None),
    ],
)
def test_javas_leader_path_gives_kgroups_partitions(
    case: str, assignor: str, phase: str, scale: float, byte_equal: bool | None
) -> None:
    request = build_request(CASES[case].scaled(scale), assignor, Phase(phase))
    java = run_java_leader_path(request, assignor, warmups=0, runs=1, timeout_s=120)
    assert len(java.bare_ms) == len(java.leader_ms) == 1
    mine = dict(assign_subscriptions(create_assignor(assignor), subscription_bytes(request), request.topics,
                                     prefer_rack_aware_logic=request.prefer_rack_aware_logic))
    agree, comparison = compare_answers(mine, java.assignments)
    assert agree, comparison
    if byte_equal:
        assert comparison == "the same bytes"


def test_compare_answers_tells_order_from_content() -> None:
    from kgroup.messages import ConsumerAssignment
    from kgroup.model import TopicPartition as TP
    from kgroup.wire.consumer_protocol import encode_assignment

    def enc(*tps: TP) -> bytes:
        return encode_assignment(ConsumerAssignment(partitions=tps))

    same = {"a": enc(TP("t", 0), TP("u", 1))}
    assert compare_answers(same, dict(same)) == (True, "the same bytes")
    assert compare_answers(same, {"a": enc(TP("u", 1), TP("t", 0))})[0] is True
    assert compare_answers(same, {"a": enc(TP("t", 0))})[0] is False
    assert compare_answers(same, {"b": same["a"]})[0] is False


def test_the_cli_prints_three_kgroup_paths_beside_java() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kgroup", "bench", "assign", "--case", "uniform", "--assignor", "sticky",
         "--leader-path", "--runs", "1", "--scale", "0.02", "--json"],
        capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data["kgroup"]) == {"assign", "read", "leader"}
    assert all(len(cell["runs_ms"]) == 1 and cell["median_ms"] > 0 for cell in data["kgroup"].values())
    assert data["java"]["kafka"] and data["java"]["leader"]["median_ms"] > 0
    assert data["answers_agree"] is True


def test_the_cli_refuses_kafka_python_for_the_leader_path() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kgroup", "bench", "assign", "--case", "uniform", "--assignor", "sticky",
         "--leader-path", "--impl", "kafka-python", "--scale", "0.02"],
        capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode != 0
    assert "--leader-path" in result.stderr and "Traceback" not in result.stderr


def test_javas_murmur2_pass_computes_kgroups_partitions() -> None:
    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 25, size=5_000)
    offsets = np.zeros(lengths.size + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = rng.integers(0, 256, size=int(offsets[-1]), dtype=np.uint8)
    keys = pa.BinaryArray.from_buffers(pa.binary(), lengths.size,
                                       [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data.tobytes())])
    mine = int(partitions_for_keys(keys, 100).sum(dtype=np.int64))
    with JavaMurmur2(data, offsets, 100) as java:
        assert java.keys == lengths.size
        first, second = java.run(), java.run()
    assert first.partition_sum == second.partition_sum == mine
    assert first.wall_ns > 0 and first.cpu_ns >= 0
