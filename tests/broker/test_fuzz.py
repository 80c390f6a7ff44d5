"""Fuzz: random and mutated frames never raise anything but the protocol's own errors, never crash the
server, and a real client is served afterwards (h11's rule: parse it or raise the protocol error).

Every frame runs to completion: an answer, no answer (a request Kafka answers with nothing), or the
protocol's error. Only a request that Kafka parks may still be running after a short look, and then
it must be parked for its own reason, which the test checks before cutting it short: a Fetch inside
its ``max_wait`` (one whose ``max_wait`` is already over must answer), a JoinGroup whose group is
preparing a rebalance, a SyncGroup whose group waits for its leader's assignment. Any other frame
still running after ``FINISH_S`` fails as a hung handler.

Each test runs on a broker of its own (one per API for the per-API tests), so a failure never
depends on what another test's frames left behind. Every failure names its Hypothesis seed and the
command that replays it (``KGROUP_FUZZ_SEED=<seed> pytest '<test id>'``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import socket
import struct
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from kio.static.primitive import Records

from kgroup.broker.dispatch import CloseConnection, dispatch, registered_versions
from kgroup.model import PeerError
from kgroup.testing import KafkaBroker
from kgroup.wire.codec import (
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    request_class,
    response_class,
)

SUPPORTED_VERSIONS = registered_versions()

# 5,000 + 3,500 + 2,000 = 10,500 frames (generating whole kio requests is the slow part)
_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture]

st.register_type_strategy(Records, st.binary(max_size=256).map(Records))
API_VERSIONS = [(key, v) for key, (low, high) in SUPPORTED_VERSIONS.items() for v in range(low, high + 1)]
API_KEYS = sorted(SUPPORTED_VERSIONS)

FETCH, JOIN_GROUP, SYNC_GROUP, DESCRIBE_GROUPS = 1, 11, 14, 15
#: the requests Kafka parks: a Fetch up to its max_wait, a JoinGroup or SyncGroup until the rebalance
#: moves on; one still running after PARK_LOOK_S is checked for its reason to wait
PARKING_APIS = frozenset({FETCH, JOIN_GROUP, SYNC_GROUP})
PARK_LOOK_S = 0.05
#: every frame that does not park is answered, refused or closed well within this; past it the
#: handler hangs (generous: the machine may be loaded)
FINISH_S = 10.0
#: a parked JoinGroup waits in PreparingRebalance, a parked SyncGroup in CompletingRebalance
PARKED_STATES = {JOIN_GROUP: "PreparingRebalance", SYNC_GROUP: "CompletingRebalance"}

#: KGROUP_FUZZ_SEED replays a failure; without it every test draws a fresh seed
_FIXED_SEED = os.environ.get("KGROUP_FUZZ_SEED")


def _seed() -> int:
    return int(_FIXED_SEED) if _FIXED_SEED else random.SystemRandom().randrange(2**32)


def _run_seeded(
    request: pytest.FixtureRequest, examples: int, given_: Callable[[Callable[..., None]], Any]
) -> Callable[[Callable[..., None]], None]:
    """Decorate a property with ``given_`` and run it ``examples`` times from a known seed; a failure
    carries the seed and the one-line command that replays it."""

    def run(prop: Callable[..., None]) -> None:
        chosen = _seed()
        test = seed(chosen)(
            settings(
                max_examples=examples,
                deadline=None,
                database=None,
                suppress_health_check=_HEALTH,
                print_blob=True,
            )(given_(prop))
        )
        try:
            test()
        except BaseException as exc:
            exc.add_note(
                f"fuzz seed {chosen}; replay: KGROUP_FUZZ_SEED={chosen} "
                f"python -m pytest '{request.node.nodeid}' -p no:xdist"
            )
            raise

    return run


@pytest.fixture
def fuzz_broker() -> Iterator[KafkaBroker]:
    """A fresh broker for one test (for the per-API tests: one per API)."""
    with KafkaBroker(topics={"orders": 3}) as kafka:
        yield kafka


def _api_key(frame: bytes) -> int | None:
    return struct.unpack(">h", frame[:2])[0] if len(frame) >= 2 else None


async def _group_state(kafka: KafkaBroker, group_id: str) -> str:
    """The group's state as DescribeGroups (v0) reports it, asked through the same dispatch."""
    cls = request_class(DESCRIBE_GROUPS, 0)
    response_cls = response_class(DESCRIBE_GROUPS, 0)
    assert cls is not None and response_cls is not None
    frame = encode_request(cls(groups=(group_id,)), 7)
    answer = await asyncio.wait_for(dispatch(kafka.broker, 0, frame), timeout=FINISH_S)
    assert answer is not None
    _correlation, response = decode_response(answer, response_cls)
    (group,) = response.groups
    state: str = group.group_state
    return state


async def _why_parked(kafka: KafkaBroker, frame: bytes, task: asyncio.Future[Any]) -> str | None:
    """Kafka's reason for ``frame`` (a parking API) to be still running, or None if it has none."""
    try:
        header = decode_request_header(frame)
        body = decode_request(frame, header, max_elements=kafka.broker.config.max_request_elements).body
    except PeerError:
        return None  # a frame that cannot be read is refused at once, never parked
    if header.api_key == FETCH:
        max_wait: timedelta = body.max_wait
        if max_wait.total_seconds() > PARK_LOOK_S:
            return f"Fetch parked within its max_wait of {max_wait}"
        # its max_wait is over: it must answer (a Fetch past its max_wait has no reason to wait)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), timeout=FINISH_S)
        return "finished" if task.done() else None
    expected = PARKED_STATES[header.api_key]
    state = await _group_state(kafka, str(body.group_id))
    return f"group {body.group_id!r} is {state}" if state == expected else None


def _feed(kafka: KafkaBroker, frame: bytes) -> None:
    """One frame through the broker's dispatch, run to completion: an answer, no answer, or a protocol
    error — nothing else. A frame of a parking API still running after a short look must be parked
    for Kafka's reason (then it is cut short); any other frame must finish within ``FINISH_S``."""
    api_key = _api_key(frame)
    parks = api_key in PARKING_APIS

    async def guarded() -> None:
        task = asyncio.ensure_future(dispatch(kafka.broker, 0, frame))
        try:
            await asyncio.wait({task}, timeout=PARK_LOOK_S if parks else FINISH_S)
            if not task.done() and parks:
                reason = await _why_parked(kafka, frame, task)
                if reason is None:
                    await asyncio.wait({task}, timeout=FINISH_S)
                    if not task.done():
                        raise AssertionError(
                            f"a frame of api key {api_key} is still running after {FINISH_S:.0f} s "
                            f"with no reason to park: {frame[:64]!r}…"
                        )
            elif not task.done():
                raise AssertionError(
                    f"a frame of api key {api_key} did not finish in {FINISH_S:.0f} s: {frame[:64]!r}…"
                )
            if task.done():
                with contextlib.suppress(PeerError, CloseConnection):
                    task.result()
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, PeerError, CloseConnection):
                    await task

    kafka.run_in_loop(guarded())


def test_random_bytes(fuzz_broker: KafkaBroker, request: pytest.FixtureRequest) -> None:
    @_run_seeded(request, 5000, given(frame=st.binary(max_size=512)))
    def check(frame: bytes) -> None:
        _feed(fuzz_broker, frame)


@pytest.mark.parametrize("api_key", API_KEYS)
def test_valid_header_random_body(
    api_key: int, fuzz_broker: KafkaBroker, request: pytest.FixtureRequest
) -> None:
    versions = [v for k, v in API_VERSIONS if k == api_key]
    strategies = given(
        version=st.sampled_from(versions),
        correlation=st.integers(-(2**31), 2**31 - 1),
        body=st.binary(max_size=512),
    )

    @_run_seeded(request, max(40, 3500 // len(API_KEYS)), strategies)
    def check(version: int, correlation: int, body: bytes) -> None:
        flexible = request_class(api_key, version).__flexible__  # type: ignore[union-attr]
        header = (
            struct.pack(">hhih", api_key, version, correlation, 4) + b"fuzz" + (b"\x00" if flexible else b"")
        )
        _feed(fuzz_broker, header + body)


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
def test_mutated_valid_requests(
    api_key: int, fuzz_broker: KafkaBroker, request: pytest.FixtureRequest
) -> None:
    @_run_seeded(request, max(25, 2000 // len(API_KEYS)), given(frame=mutated_requests(api_key)))
    def check(frame: bytes) -> None:
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


@pytest.mark.parametrize("api_key", API_KEYS)
def test_every_supported_version_answers_well_formed_requests(
    api_key: int, fuzz_broker: KafkaBroker, request: pytest.FixtureRequest
) -> None:
    """Each API at each version it advertises: generated requests get a response that kio encodes (or
    Kafka's protocol error), never an exception from building the answer."""
    for version in [v for k, v in API_VERSIONS if k == api_key]:
        cls = request_class(api_key, version)
        assert cls is not None

        @_run_seeded(request, 8, given(body=st.from_type(cls)))
        def check(body: object) -> None:
            _feed(fuzz_broker, encode_request(body, 1))
