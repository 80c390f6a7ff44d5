"""The oracle's driver: typed answers, one-line errors, a JVM that dies or hangs ends it cleanly."""

from __future__ import annotations

import os
import signal
import time

import pytest

from kgroup.assignors import AssignmentRequest
from kgroup.model import Member, TopicMetadata, TopicPartition
from kgroup.testing.apache_kafka import KafkaOracle, OracleDied, OracleError, require_apache_kafka


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_kgroup_request_and_a_vector_input_get_the_same_answer(kafka_oracle: KafkaOracle) -> None:
    request = AssignmentRequest(
        [
            Member("b", ("t",), owned=(TopicPartition("t", 2),), generation=3, rack_id="r1"),
            Member("a", ("t",)),
        ],
        {"t": TopicMetadata("t", 3, (frozenset({"r1"}), frozenset(), frozenset({"r2"})))},
    )
    data = {
        "topics": [{"name": "t", "partitions": 3, "racks": [["r1"], [], ["r2"]]}],
        "members": [
            {"memberId": "b", "topics": ["t"], "owned": ["t-2"], "generation": 3, "rackId": "r1"},
            {"memberId": "a", "topics": ["t"]},
        ],
    }
    for assignor in ("range", "roundrobin", "sticky", "cooperative-sticky"):
        typed, raw = kafka_oracle.assign(assignor, request), kafka_oracle.assign(assignor, data)
        assert typed == raw and typed.error is None
        assert sorted(typed.member_iteration_order) == ["a", "b"]
        assert sorted(p for parts in (typed.assignment or {}).values() for p in parts) == [
            TopicPartition("t", p) for p in range(3)
        ]


def test_bad_requests_are_one_line_errors(kafka_oracle: KafkaOracle) -> None:
    with pytest.raises(OracleError, match=r"^unknown assignor 'fair'; use one of range, roundrobin"):
        kafka_oracle.assign("fair", {"topics": [], "members": []})
    with pytest.raises(OracleError, match=r"^unknown server assignor 'sticky'; use one of uniform, range"):
        kafka_oracle.server_assign("sticky", {}, [])
    with pytest.raises(OracleError, match=r"^partition count 0 is not between 1"):
        kafka_oracle.murmur2([b"k"], [0])
    # an exception in the JVM comes back as that group's error, and the JVM goes on serving
    bad = {"topics": [{"name": "t", "partitions": 1}], "members": [{"memberId": "m", "owned": ["t-x"]}]}
    answer = kafka_oracle.assign("range", bad)
    assert answer.assignment is None
    assert answer.error == 'NumberFormatException: For input string: "x"'

    assert kafka_oracle.murmur2([b""], [1])[0].partitions == {1: 0}


def test_a_jvm_that_dies_is_reported_in_one_line() -> None:
    libs = require_apache_kafka()
    with KafkaOracle(libs) as oracle:
        pid = oracle.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(
            OracleDied, match=r"^the Kafka oracle's JVM \(pid \d+\) exited with code -9"
        ) as info:
            oracle.murmur2([b"k"], [3])
        assert "\n" not in str(info.value)
        assert oracle.pid is None
        # every later call says why it stopped, not only that it did
        with pytest.raises(
            OracleError, match=r"^KafkaOracle: stopped after an earlier call: the Kafka oracle's JVM"
        ):
            oracle.murmur2([b"k"], [3])
        oracle.start()  # and it starts anew
        assert oracle.failure is None and oracle.murmur2([b"k"], [3])[0].partitions[3] in range(3)


def test_a_call_that_takes_too_long_stops_the_jvm() -> None:
    libs = require_apache_kafka()
    big = {
        "topics": [{"name": f"t{i}", "partitions": 50} for i in range(20)],
        "members": [{"memberId": f"m{i}", "topics": [f"t{j}" for j in range(20)]} for i in range(50)],
    }
    with KafkaOracle(libs, call_timeout_s=0.05) as oracle:
        pid = oracle.pid
        assert pid is not None
        with pytest.raises(OracleDied, match="did not answer 'assign' within the bound; its JVM was stopped"):
            oracle.assign_many([("sticky", big)] * 200)
        assert oracle.pid is None and not _alive(pid)
        with pytest.raises(
            OracleError, match="stopped after an earlier call: the Kafka oracle did not answer 'assign'"
        ):
            oracle.murmur2([b"k"], [3])
