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

from kgroup.broker.dispatch import CloseConnection, dispatch, registered_versions
from kgroup.model import PeerError
from kgroup.testing import KafkaBroker
from kgroup.wire.codec import encode_request, request_class

SUPPORTED_VERSIONS = registered_versions()

# 5,000 + 3,500 + 2,000 = 10,500 frames (generating whole kio requests is the slow part)
_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture]


def _fuzz(examples: int) -> settings:
    # print_blob: a failure prints the @reproduce_failure line that replays it exactly
    return settings(
        max_examples=examples, deadline=None, database=None, suppress_health_check=_HEALTH, print_blob=True
    )


st.register_type_strategy(Records, st.binary(max_size=256).map(Records))
API_VERSIONS = [(key, v) for key, (low, high) in SUPPORTED_VERSIONS.items() for v in range(low, high + 1)]
API_KEYS = sorted(SUPPORTED_VERSIONS)

#: the requests that legitimately wait: a Fetch parks up to its max_wait, a JoinGroup or SyncGroup
#: until the rebalance completes; only these may be cut short, after PARK_S
PARKING_APIS = frozenset({1, 11, 14})
PARK_S = 0.05
#: every other frame must be answered, refused or closed well within this; past it the handler hangs
FINISH_S = 10.0


@pytest.fixture(scope="module")
def fuzz_broker() -> KafkaBroker:
    """For frames with no valid header: they never reach a handler, so one broker serves them all."""
    with KafkaBroker(topics={"orders": 3}) as kafka:
        yield kafka  # type: ignore[misc]


def _api_key(frame: bytes) -> int | None:
    return struct.unpack(">h", frame[:2])[0] if len(frame) >= 2 else None


def _feed(kafka: KafkaBroker, frame: bytes) -> None:
    """One frame through the broker's dispatch, run to completion: an answer, no answer, or a protocol
    error — nothing else; a frame that does not finish fails the test unless its API parks."""
    parks = _api_key(frame) in PARKING_APIS

    async def guarded() -> None:
        with contextlib.suppress(PeerError, CloseConnection):
            try:
                await asyncio.wait_for(
                    dispatch(kafka.broker, 0, frame), timeout=PARK_S if parks else FINISH_S
                )
            except TimeoutError:
                if not parks:
                    raise AssertionError(
                        f"a frame of api key {_api_key(frame)} did not finish in {FINISH_S:.0f} s: "
                        f"{frame[:64]!r}…"
                    ) from None

    kafka.run_in_loop(guarded())


@_fuzz(5000)
@given(frame=st.binary(max_size=512))
def test_random_bytes(fuzz_broker: KafkaBroker, frame: bytes) -> None:
    _feed(fuzz_broker, frame)


@pytest.mark.parametrize("api_key", API_KEYS)
def test_valid_header_random_body(api_key: int) -> None:
    """A fresh broker per API (a failure never depends on what another API's frames left behind)."""
    versions = [v for k, v in API_VERSIONS if k == api_key]
    with KafkaBroker(topics={"orders": 3}) as kafka:

        @_fuzz(max(40, 3500 // len(API_KEYS)))
        @given(
            version=st.sampled_from(versions),
            correlation=st.integers(-(2**31), 2**31 - 1),
            body=st.binary(max_size=512),
        )
        def check(version: int, correlation: int, body: bytes) -> None:
            flexible = request_class(api_key, version).__flexible__  # type: ignore[union-attr]
            header = (
                struct.pack(">hhih", api_key, version, correlation, 4)
                + b"fuzz"
                + (b"\x00" if flexible else b"")
            )
            _feed(kafka, header + body)

        check()


@st.composite
def mutated_requests(draw: st.DrawFn, api_key: int) -> bytes:
    version = draw(st.sampled_from([v for k, v in API_VERSIONS if k == api_key]))
    cls = request_class(api_key, version)
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


@pytest.mark.parametrize("api_key", API_KEYS)
def test_mutated_valid_requests(api_key: int) -> None:
    with KafkaBroker(topics={"orders": 3}) as kafka:

        @_fuzz(max(25, 2000 // len(API_KEYS)))
        @given(frame=mutated_requests(api_key))
        def check(frame: bytes) -> None:
            _feed(kafka, frame)

        check()


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


@pytest.mark.parametrize("api_key", API_KEYS)
def test_every_supported_version_answers_well_formed_requests(api_key: int) -> None:
    """Each API at each version it advertises, on a fresh broker per API: generated requests get a
    response that kio encodes (or Kafka's protocol error), never an exception from building the answer."""
    with KafkaBroker(topics={"orders": 3}) as kafka:
        for version in [v for k, v in API_VERSIONS if k == api_key]:
            cls = request_class(api_key, version)
            assert cls is not None

            @_fuzz(8)
            @given(request=st.from_type(cls))
            def check(request: object) -> None:
                _feed(kafka, encode_request(request, 1))

            check()
