"""Requests at the edges of Kafka's encoding: long strings, huge arrays, and the piecewise reader.

Kafka's generated readers refuse a string longer than 0x7fff bytes; kgroup's guard does the same, so
no longer string ever reaches the coordinator (whose records carry int16-length strings). The broker's
element limit is checked by the same walk. The piecewise reader (a large body read in short native
calls, in the broker's codec thread) must give exactly what kio's native reader gives.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.static.primitive import Records

from kgroup.broker.dispatch import registered_versions
from kgroup.model import PeerError
from kgroup.wire.codec import build, decode_request, decode_request_header, encode_request, request_class

SUPPORTED_VERSIONS = registered_versions()

st.register_type_strategy(Records, st.binary(max_size=64).map(Records))
API_VERSIONS = [(key, v) for key, (low, high) in SUPPORTED_VERSIONS.items() for v in range(low, high + 1)]


def _commit_frame(group_id: str, partitions: int, version: int = 8) -> bytes:
    cls = request_class(8, version)
    request = build(
        cls,
        {
            "group_id": group_id,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": i,
                            "committed_offset": i,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                        for i in range(partitions)
                    ],
                }
            ],
        },
    )
    return encode_request(request, 1)


@pytest.mark.parametrize("version", [2, 7, 8, 9])
def test_a_string_of_0x7fff_bytes_is_read_and_one_more_is_refused(version: int) -> None:
    ok = _commit_frame("g" * 0x7FFF, 1, version)
    assert decode_request(ok, decode_request_header(ok)).body.group_id == "g" * 0x7FFF
    if version < 8:
        return  # a legacy int16 length cannot say more than 0x7fff: only compact strings can
    too_long = _commit_frame("g" * 100_000, 1, version)
    with pytest.raises(PeerError, match="string field had invalid length 100000"):
        decode_request(too_long, decode_request_header(too_long))
    edge = _commit_frame("g" * 0x8000, 1, version)
    with pytest.raises(PeerError, match="invalid length 32768"):
        decode_request(edge, decode_request_header(edge))


def test_the_element_limit_counts_every_array_element() -> None:
    frame = _commit_frame("g", 999)  # one topic + 999 partitions = 1,000 elements
    header = decode_request_header(frame)
    assert len(decode_request(frame, header, max_elements=1000).body.topics[0].partitions) == 999
    with pytest.raises(PeerError, match="more than 999 array elements"):
        decode_request(frame, header, max_elements=999)


def test_a_fixed_width_array_is_checked_without_walking_it() -> None:
    # OffsetFetch v8: groups[].topics[].partition_indexes is an int32 array; a count that the frame
    # cannot hold is refused, one that it holds is read
    cls = request_class(9, 8)
    request = build(
        cls,
        {
            "groups": [{"group_id": "g", "topics": [{"name": "t", "partition_indexes": list(range(5000))}]}],
            "require_stable": False,
        },
    )
    frame = encode_request(request, 1)
    header = decode_request_header(frame)
    assert decode_request(frame, header).body == request
    with pytest.raises(PeerError, match="runs past the end"):
        decode_request(frame[:-100], header)


def test_piecewise_reads_a_large_commit_as_kio_does() -> None:
    frame = _commit_frame("g", 20_000)
    header = decode_request_header(frame)
    native = decode_request(frame, header).body
    assert decode_request(frame, header, piecewise=True).body == native
    assert len(native.topics[0].partitions) == 20_000


@settings(
    max_examples=len(API_VERSIONS) * 4,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_piecewise_equals_native_for_every_request_and_version(data: st.DataObject) -> None:
    key, version = data.draw(st.sampled_from(API_VERSIONS))
    cls = request_class(key, version)
    assert cls is not None
    frame = encode_request(data.draw(st.from_type(cls)), 1)
    native, piecewise = _both_readers(frame)
    assert piecewise == native


def _read(frame: bytes, *, piecewise: bool) -> object:
    try:
        return decode_request(frame, decode_request_header(frame), piecewise=piecewise).body
    except PeerError:  # e.g. a generated duration kio itself cannot read back: both must refuse it
        return PeerError


def _both_readers(frame: bytes) -> tuple[object, object]:
    return _read(frame, piecewise=False), _read(frame, piecewise=True)


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_piecewise_refuses_what_native_refuses(data: st.DataObject) -> None:
    """Mutated bodies: both readers accept the same frames and give the same entity, or both refuse."""
    key, version = data.draw(st.sampled_from(API_VERSIONS))
    cls = request_class(key, version)
    assert cls is not None
    frame = bytearray(encode_request(data.draw(st.from_type(cls)), 1))
    header = decode_request_header(bytes(frame))
    if len(frame) > header.size:
        at = data.draw(st.integers(header.size, len(frame) - 1))
        frame[at] = data.draw(st.integers(0, 255))
    native, piecewise = _both_readers(bytes(frame))
    assert native == piecewise
