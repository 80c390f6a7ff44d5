"""The hand-written Metadata answer (:mod:`kgroup.wire.metadata_response`) is byte for byte what kio
encodes from the same data, for every version kgroup answers (v0-v13): random answers with brokers
with and without racks, a null cluster id, error topics, null topic names (v12+), topic ids (none among
them), internal topics, leader epochs, replica lists of every length, authorized operations, fields
left out (their defaults); and a topic's partitions encoded ahead (the broker's cache) give the same
bytes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode as KioErrorCode

from kgroup.wire.codec import build, encode_response, response_class
from kgroup.wire.metadata_response import (
    VERSIONS,
    EncodedPartitions,
    PartitionsCache,
    encode_partitions,
    metadata_response,
)

_i32 = st.integers(-(2**31), 2**31 - 1)
_error_codes = st.sampled_from([int(code) for code in KioErrorCode])
_names = st.text(min_size=0, max_size=12)
_nodes = st.lists(st.integers(-1, 2**31 - 1), max_size=5)

_partitions = st.fixed_dictionaries(
    {"error_code": _error_codes, "partition_index": _i32, "leader_id": _i32},
    optional={
        "leader_epoch": _i32,
        "replica_nodes": _nodes,
        "isr_nodes": _nodes,
        "offline_replicas": _nodes,
    },
)


def _topics(nullable_name: bool) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "error_code": _error_codes,
            "name": (st.none() | _names) if nullable_name else _names,
            "topic_id": st.none() | st.uuids(),
            "partitions": st.lists(_partitions, max_size=6),
        },
        optional={"is_internal": st.booleans(), "topic_authorized_operations": _i32},
    )


_brokers = st.fixed_dictionaries(
    {"node_id": _i32, "host": _names, "port": _i32}, optional={"rack": st.none() | _names}
)


def _answers(version: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "brokers": st.lists(_brokers, max_size=4),
            "topics": st.lists(_topics(version >= 12), max_size=4),
            "error_code": _error_codes,  # kio requires it (v13 has no default for it)
            "throttle_time": st.integers(0, 2**31 - 1),
        },
        optional={
            "cluster_id": st.none() | _names,
            "controller_id": _i32,
            "cluster_authorized_operations": _i32,
        },
    )


def _kio(correlation_id: int, version: int, data: dict[str, Any]) -> bytes:
    cls = response_class(3, version)
    assert cls is not None
    return encode_response(correlation_id, build(cls, data))


@pytest.mark.parametrize("version", list(VERSIONS))
@settings(max_examples=60, deadline=None)
@given(data=st.data(), correlation_id=_i32)
def test_the_answer_is_what_kio_encodes(version: int, data: st.DataObject, correlation_id: int) -> None:
    answer = data.draw(_answers(version))
    expected = _kio(correlation_id, version, answer)
    assert b"".join(metadata_response(correlation_id, version, answer)) == expected
    # the same answer with each topic's partitions encoded ahead, as the broker's cache hands them
    ahead = {
        **answer,
        "topics": [
            {
                **topic,
                "partitions": EncodedPartitions(
                    version, encode_partitions(version, topic["partitions"]), len(topic["partitions"])
                ),
            }
            for topic in answer["topics"]
        ],
    }
    assert b"".join(metadata_response(correlation_id, version, ahead)) == expected


def test_partitions_encoded_for_another_version_are_refused() -> None:
    encoded = EncodedPartitions(9, encode_partitions(9, []), 0)
    topic = {"error_code": 0, "name": "t", "topic_id": None, "partitions": encoded}
    data = {"brokers": [], "topics": [topic], "error_code": 0, "throttle_time": 0}
    with pytest.raises(ValueError, match="encoded for v9"):
        metadata_response(1, 12, data)


def test_a_null_name_before_v12_is_refused_as_kio_refuses_it() -> None:
    topic = {"error_code": 0, "name": None, "topic_id": None, "partitions": []}
    data = {"brokers": [], "topics": [topic], "error_code": 0, "throttle_time": 0}
    with pytest.raises(ValueError, match="name may not be null"):
        metadata_response(1, 11, data)


def test_the_cache_keeps_a_topics_arrays_while_the_topic_and_its_leaders_stay() -> None:
    cache = PartitionsCache()
    topic, same_name_again = object(), object()
    cache.put(topic, 1, 12, b"v12")
    cache.put(topic, 1, 9, b"v9")
    assert cache.get(topic, 1, 12) == b"v12" and cache.get(topic, 1, 9) == b"v9"
    assert cache.get(topic, 1, 1) is None
    assert cache.get(topic, 2, 12) is None  # a leader moved
    assert cache.get(same_name_again, 1, 12) is None  # the topic was made again
    cache.put(topic, 2, 12, b"new")
    assert cache.get(topic, 2, 12) == b"new"
    assert cache.get(topic, 1, 9) is None  # the old stamp's arrays are gone
