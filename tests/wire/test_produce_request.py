"""The hand-written Produce reader (:mod:`kgroup.wire.produce_request`) reads what kio reads, every
version: random requests, the same requests damaged byte by byte (both refuse, or both read the same
request), and the records are views of the frame, not copies."""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.model import PeerError
from kgroup.wire.codec import build, decode_request, decode_request_header, encode_request, request_class
from kgroup.wire.produce_request import VERSIONS, read_produce_request

_requests = st.fixed_dictionaries(
    {
        "transactional_id": st.none() | st.text(max_size=8),
        "acks": st.integers(-(2**15), 2**15 - 1),
        "timeout": st.integers(-(2**31), 2**31 - 1),
        "topic_data": st.lists(
            st.fixed_dictionaries(
                {
                    "name": st.text(max_size=10),  # v3-v12
                    "topic_id": st.none() | st.just(uuid.UUID(int=0)) | st.uuids(),  # v13
                    "partition_data": st.lists(
                        st.fixed_dictionaries(
                            {
                                "index": st.integers(-(2**31), 2**31 - 1),
                                "records": st.none() | st.binary(max_size=40),
                            }
                        ),
                        max_size=3,
                    ),
                }
            ),
            max_size=3,
        ),
    }
)


def _plain(request: Any) -> Any:
    """The request's values (kio's entity or the hand-read one) as plain data."""
    topics = [
        (
            getattr(topic, "name", None),
            getattr(topic, "topic_id", None),
            [(int(p.index), None if p.records is None else bytes(p.records)) for p in partitions],
        )
        for topic in request.topic_data
        for partitions in [topic.partition_data]
    ]
    return (request.transactional_id, int(request.acks), request.timeout, topics)


def _outcome(frame: bytes, hand: bool) -> Any:
    try:
        header = decode_request_header(frame)
        body = decode_request(frame, header, read_body=read_produce_request if hand else None).body
    except PeerError:
        return "refused"
    return _plain(body)


@pytest.mark.parametrize("version", list(VERSIONS))
@given(
    data=_requests,
    damage=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=3),
    cut=st.none() | st.integers(0, 10_000),
)
@settings(max_examples=150, deadline=None)
def test_the_hand_reader_reads_what_kio_reads(
    version: int, data: dict[str, Any], damage: list[tuple[int, int]], cut: int | None
) -> None:
    frame = bytearray(encode_request(build(request_class(0, version), data), 1))
    header_size = decode_request_header(bytes(frame)).size
    assert _outcome(bytes(frame), hand=True) == _outcome(bytes(frame), hand=False) != "refused"
    for at, value in damage:  # damage the body only: the header is not this reader's
        if len(frame) > header_size:
            frame[header_size + at % (len(frame) - header_size)] = value
    if cut is not None:
        del frame[header_size + cut % (len(frame) - header_size + 1) :]
    assert _outcome(bytes(frame), hand=True) == _outcome(bytes(frame), hand=False)


@pytest.mark.parametrize("version", [3, 9, 12, 13])
def test_the_records_are_views_of_the_frame(version: int) -> None:
    request = {
        "transactional_id": None,
        "acks": -1,
        "timeout": 30_000,
        "topic_data": [
            {
                "name": "t",
                "topic_id": uuid.UUID(int=9),
                "partition_data": [{"index": 0, "records": b"r" * 100}],
            }
        ],
    }
    frame = encode_request(build(request_class(0, version), request), 1)
    header = decode_request_header(frame)
    records = read_produce_request(frame, header.size, version).topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview) and records.readonly and records.obj is frame
    assert bytes(records) == b"r" * 100


def test_a_tagged_field_is_refused_as_kio_refuses_it() -> None:
    body = b"\x00" + struct.pack(">hi", 1, 1000) + b"\x01" + b"\x01\x00\x00"  # one top-level tag
    frame = struct.pack(">hhih", 0, 9, 1, 1) + b"c\x00" + body
    assert _outcome(frame, hand=True) == _outcome(frame, hand=False) == "refused"
