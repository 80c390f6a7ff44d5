"""The hand-written Fetch answer (:mod:`kgroup.wire.fetch_response`) is byte for byte what kio
encodes from the same data, for every version it writes (v4-v18): random answers with throttling,
errors, aborted transactions (none, or null), the preferred read replica, the tagged fields of the
flexible versions at and off their defaults, topic ids (v13+, the all-zero id and none among them),
the leaders' endpoints (v16+: none, or some with and without a rack), empty and null records,
records large enough to stay a buffer of their own, fields left out (their defaults)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode as KioErrorCode

from kgroup.wire.codec import build, encode_response, response_class
from kgroup.wire.fetch_response import SEPARATE_RECORDS_BYTES, VERSIONS, fetch_response

_i32 = st.integers(-(2**31), 2**31 - 1)
_i64 = st.integers(-(2**63), 2**63 - 1)
_error_codes = st.sampled_from([int(code) for code in KioErrorCode])


def _often_default(values: st.SearchStrategy[int]) -> st.SearchStrategy[int]:
    return st.just(-1) | values


def _tagged(
    first: str, first_values: st.SearchStrategy[int], second: str, second_values: st.SearchStrategy[int]
) -> st.SearchStrategy[Any]:
    """A tagged struct: left out, or with either field left out (-1), at its default or not."""
    return st.fixed_dictionaries(
        {}, optional={first: _often_default(first_values), second: _often_default(second_values)}
    )


_records = (
    st.none()
    | st.binary(max_size=64)
    | st.binary(min_size=SEPARATE_RECORDS_BYTES, max_size=SEPARATE_RECORDS_BYTES + 300)
    | st.binary(min_size=SEPARATE_RECORDS_BYTES, max_size=SEPARATE_RECORDS_BYTES + 10).map(memoryview)
)

_partitions = st.fixed_dictionaries(
    {
        "partition_index": _i32,
        "error_code": _error_codes,
        "high_watermark": _i64,
        "aborted_transactions": st.none()
        | st.lists(st.fixed_dictionaries({"producer_id": _i64, "first_offset": _i64}), max_size=3),
        "records": _records,
    },
    optional={
        "last_stable_offset": _i64,
        "log_start_offset": _i64,
        "preferred_read_replica": _often_default(_i32),
        "diverging_epoch": _tagged("epoch", _i32, "end_offset", _i64),
        "current_leader": _tagged("leader_id", _i32, "leader_epoch", _i32),
        "snapshot_id": _tagged("end_offset", _i64, "epoch", _i32),
    },
)

_answers = st.fixed_dictionaries(
    {
        "throttle_time": st.integers(0, 2**31 - 1),
        "error_code": _error_codes,
        "responses": st.lists(
            st.fixed_dictionaries(
                {
                    "topic": st.text(max_size=20),
                    "topic_id": st.none() | st.just(uuid.UUID(int=0)) | st.uuids(),
                    "partitions": st.lists(_partitions, max_size=4),
                }
            ),
            max_size=3,
        ),
    },
    optional={
        "session_id": _i32,
        "node_endpoints": st.lists(
            st.fixed_dictionaries(
                {
                    "node_id": _i32,
                    "host": st.text(max_size=12),
                    "port": _i32,
                    "rack": st.none() | st.text(max_size=5),
                }
            ),
            max_size=3,
        ),
    },
)


@pytest.mark.parametrize("version", list(VERSIONS))
@given(answer=_answers, correlation_id=_i32)
@settings(max_examples=100, deadline=None)
def test_the_hand_written_answer_is_what_kio_encodes(
    version: int, answer: dict[str, Any], correlation_id: int
) -> None:
    pieces = fetch_response(correlation_id, version, answer)
    expected = encode_response(correlation_id, build(response_class(1, version), answer))
    assert b"".join(pieces) == expected
    # large records are handed on as they came, not copied
    large = [
        partition["records"]
        for topic in answer["responses"]
        for partition in topic["partitions"]
        if partition["records"] is not None and len(partition["records"]) >= SEPARATE_RECORDS_BYTES
    ]
    assert [piece for piece in pieces if any(piece is records for records in large)] == large


def test_what_the_broker_answers_is_what_kio_encodes() -> None:
    """The shape the Fetch handler returns (kgroup.broker.handlers_data), every version."""
    partition = {
        "partition_index": 3,
        "high_watermark": 100,
        "last_stable_offset": 100,
        "log_start_offset": 0,
        "diverging_epoch": {"epoch": -1, "end_offset": -1},
        "current_leader": {"leader_id": 2, "leader_epoch": 0},
        "snapshot_id": {"end_offset": -1, "epoch": -1},
        "aborted_transactions": None,
        "preferred_read_replica": -1,
        "records": b"r" * 5000,
        "error_code": 0,
    }
    answer = {
        "throttle_time": 0,
        "error_code": 0,
        "session_id": 0,
        "responses": [
            {
                "topic": "orders",
                "topic_id": uuid.UUID(int=7),
                "partitions": [partition, {**partition, "records": b""}],
            }
        ],
        "node_endpoints": [{"node_id": 2, "host": "127.0.0.1", "port": 9093, "rack": None}],
    }
    for version in VERSIONS:
        pieces = fetch_response(7, version, answer)
        assert b"".join(pieces) == encode_response(7, build(response_class(1, version), answer))


@pytest.mark.parametrize("version", [3, 19])
def test_a_version_it_does_not_write_is_refused(version: int) -> None:
    with pytest.raises(ValueError, match="writes v4-v18"):
        fetch_response(1, version, {"throttle_time": 0, "error_code": 0, "responses": []})
