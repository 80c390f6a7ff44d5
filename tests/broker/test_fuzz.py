"""Fuzz: random and mutated frames never raise anything but the protocol's own errors, never crash the
server, and a real client is served afterwards (h11's rule: parse it or raise the protocol error)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.static.primitive import Records

from kgroup.broker.dispatch import CloseConnection, dispatch
from kgroup.model import PeerError
from kgroup.testing import KafkaBroker
from kgroup.wire.codec import encode_request, request_class
from kgroup.wire.versions import SUPPORTED_VERSIONS

# 5,000 + 3,500 + 2,000 = 10,500 frames (generating whole kio requests is the slow part)
_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture]


def _fuzz(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None, database=None, suppress_health_check=_HEALTH)


st.register_type_strategy(Records, st.binary(max_size=256).map(Records))
API_VERSIONS = [(key, v) for key, (low, high) in SUPPORTED_VERSIONS.items() for v in range(low, high + 1)]


@pytest.fixture(scope="module")
def fuzz_broker() -> KafkaBroker:
    with KafkaBroker(topics={"orders": 3}) as kafka:
        yield kafka  # type: ignore[misc]


def _feed(kafka: KafkaBroker, frame: bytes) -> None:
    """One frame through the broker's dispatch: an answer, no answer, or a protocol error — nothing else."""

    async def guarded() -> None:
        # a well-formed long poll (Fetch with max_wait, a parked JoinGroup) may wait: bounded here
        with contextlib.suppress(PeerError, CloseConnection, TimeoutError):
            await asyncio.wait_for(dispatch(kafka.broker, 0, frame), timeout=0.02)

    kafka.run_in_loop(guarded())


@_fuzz(5000)
@given(frame=st.binary(max_size=512))
def test_random_bytes(fuzz_broker: KafkaBroker, frame: bytes) -> None:
    _feed(fuzz_broker, frame)


@_fuzz(3500)
@given(
    api=st.sampled_from(API_VERSIONS),
    correlation=st.integers(-(2**31), 2**31 - 1),
    body=st.binary(max_size=512),
)
def test_valid_header_random_body(
    fuzz_broker: KafkaBroker, api: tuple[int, int], correlation: int, body: bytes
) -> None:
    key, version = api
    flexible = request_class(key, version).__flexible__  # type: ignore[union-attr]
    header = struct.pack(">hhih", key, version, correlation, 4) + b"fuzz" + (b"\x00" if flexible else b"")
    _feed(fuzz_broker, header + body)


@st.composite
def mutated_requests(draw: st.DrawFn) -> bytes:
    key, version = draw(st.sampled_from(API_VERSIONS))
    cls = request_class(key, version)
    assert cls is not None
    frame = bytearray(encode_request(draw(st.from_type(cls)), draw(st.integers(0, 2**31 - 1))))
    for _ in range(draw(st.integers(0, 4))):
        action = draw(st.sampled_from(["flip", "truncate", "insert", "none"]))
        if action == "flip" and frame:
            at = draw(st.integers(0, len(frame) - 1))
            frame[at] = draw(st.integers(0, 255))
        elif action == "truncate" and frame:
            del frame[draw(st.integers(0, len(frame) - 1)) :]
        elif action == "insert":
            at = draw(st.integers(0, len(frame)))
            frame[at:at] = draw(st.binary(min_size=1, max_size=8))
    return bytes(frame)


@_fuzz(2000)
@given(frame=mutated_requests())
def test_mutated_valid_requests(fuzz_broker: KafkaBroker, frame: bytes) -> None:
    _feed(fuzz_broker, frame)


def test_garbage_over_sockets_then_a_real_client_is_served(fuzz_broker: KafkaBroker) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    host, port = "127.0.0.1", fuzz_broker.port(0)
    sizes = [0, 1, 7, 9, 100, 4096]
    for i in range(120):
        with socket.create_connection((host, port), timeout=5) as sock:
            size = sizes[i % len(sizes)]
            payload = bytes((i * 31 + j) % 256 for j in range(size))
            declared = size if i % 3 else size + 50  # every third frame is truncated
            sock.sendall(struct.pack(">i", declared) + payload)
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(5)
            while sock.recv(65536):  # read until the broker answers and/or closes
                pass
    producer = Producer({"bootstrap.servers": fuzz_broker.bootstrap_servers})
    producer.produce("orders", key=b"after-fuzz", value=b"still-serving", partition=0)
    assert producer.flush(20) == 0
    consumer = Consumer({"bootstrap.servers": fuzz_broker.bootstrap_servers, "group.id": "fuzz-check"})
    consumer.assign([TopicPartition("orders", 0, 0)])
    deadline = time.monotonic() + 20
    values = []
    while time.monotonic() < deadline and b"still-serving" not in values:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    assert b"still-serving" in values


@pytest.mark.parametrize(("api_key", "version"), API_VERSIONS, ids=[f"{k}v{v}" for k, v in API_VERSIONS])
def test_every_supported_version_answers_well_formed_requests(
    fuzz_broker: KafkaBroker, api_key: int, version: int
) -> None:
    """Each API at each version it advertises: generated requests get a response that kio encodes
    (or Kafka's protocol error), never an exception from building the answer."""
    cls = request_class(api_key, version)
    assert cls is not None

    @_fuzz(8)
    @given(request=st.from_type(cls))
    def check(request: object) -> None:
        _feed(fuzz_broker, encode_request(request, 1))

    check()
