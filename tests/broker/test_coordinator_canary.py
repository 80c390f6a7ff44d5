"""One heartbeat must never freeze the broker (issue 35): a canary's round trips beside the heaviest
coordinator work one client can cause.

The canary is two connections to a ``kgroup serve`` process: one sends Produce, Fetch and ApiVersions
every 50 ms, the other a KIP-848 heartbeat of its own group every 250 ms. Beside it, one client:

* subscribes with ``(a+)+$`` while a topic named ``a…ab`` exists (Python's backtracking ``re`` took
  2.3 s per resolution on a 27-character name, and never finished on a 41-character one; the
  resolution came back at every topic creation and refresh);
* subscribes with a regex nested 1,000 deep (which RE2/J compiles; the old emulation raised
  ``RecursionError`` inside the coordinator and the connection was closed with no answer);
* alternates two subscriptions of 100,000 names (2.5 s to join, ~9 s per heartbeat, on the loop).

Each is answered as Kafka answers it, and the canary's worst round trip stays short: the coordinator
runs on its own thread, regexes on RE2 in another (docs/broker.md). The bound asserted is generous
for a loaded two-core machine; the figures printed (``-s``) are what docs/broker.md quotes.
Restarting on a log of 100,000 groups: the broker listens at once and answers
COORDINATOR_LOAD_IN_PROGRESS until the log is replayed, then serves the groups.
"""

from __future__ import annotations

import statistics
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest
from tests.broker.procs import BrokerProcess
from tests.broker.rawclient import RawClient
from tests.broker.rawdata import fetch_request, produce_request
from tests.log.batches import kio_batch

from kgroup.group.records import GroupCreated, OffsetAndMetadata, OffsetCommitted
from kgroup.group.records.serde import encode_record
from kgroup.log.coordinator import CoordinatorLog
from kgroup.log.manager import TopicCreation
from kgroup.model import TopicPartition
from kgroup.testing import KafkaBroker
from kgroup.wire.codec import build, request_class

pytestmark = pytest.mark.xdist_group("coordinator-canary")

#: the worst canary round trip allowed: the freezes were 2.3 s to forever; a loaded two-core machine
#: shows a few hundred milliseconds at most (the figures printed are docs/broker.md's)
WORST_ROUND_TRIP_S = 1.5
#: a 27-character topic name that made Python's backtracking regex take 2.3 s, and a 41-character one
EVIL_TOPICS = ("a" * 26 + "b", "a" * 40 + "b")
NONE, INVALID_REGULAR_EXPRESSION, LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE = 0, 128, 14, 15


def heartbeat(
    group: str,
    member: str,
    epoch: int,
    names: list[str] | None = None,
    regex: str | None = None,
) -> Any:
    return build(
        request_class(68, 1),
        {
            "group_id": group,
            "member_id": member,
            "member_epoch": epoch,
            "rebalance_timeout": 30000,
            "subscribed_topic_names": names,
            "subscribed_topic_regex": regex,
            "topic_partitions": [] if epoch == 0 else None,
            "server_assignor": None,
            "rack_id": None,
            "instance_id": None,
        },
    )


class Canary:
    """Produce, Fetch and ApiVersions every 50 ms; a KIP-848 heartbeat of group ``canary`` every 250 ms."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.data = RawClient(bootstrap, timeout_s=120)
        self.group = RawClient(bootstrap, timeout_s=120)
        self.topic = topic
        self.round_trips: dict[str, list[float]] = {
            kind: [] for kind in ("produce", "fetch", "api_versions", "heartbeat")
        }
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._data), threading.Thread(target=self._heartbeats)]

    def _timed(self, kind: str, call: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        answer = call()
        self.round_trips[kind].append(time.perf_counter() - started)
        return answer

    def _data(self) -> None:
        batch = kio_batch([b"canary"])
        versions = ApiVersionsRequest(client_software_name="canary", client_software_version="1")
        while not self._stop.is_set():
            self._timed("produce", lambda: self.data.request(produce_request(self.topic, 0, batch)))
            self._timed("fetch", lambda: self.data.request(fetch_request([(self.topic, 0, 0)])))
            self._timed("api_versions", lambda: self.data.request(versions))
            time.sleep(0.05)

    def _heartbeats(self) -> None:
        member, epoch = str(uuid.uuid4()), 0
        while not self._stop.is_set():
            request = heartbeat("canary", member, epoch, names=[self.topic] if epoch == 0 else None)
            answer = self._timed("heartbeat", lambda request=request: self.group.request(request))
            if int(answer.error_code) != NONE:
                self.errors.append(f"canary heartbeat: {int(answer.error_code)} {answer.error_message}")
            else:
                epoch = answer.member_epoch
            time.sleep(0.25)

    def __enter__(self) -> Canary:
        # one of each first, untimed: a broker reads an API's schema when it first sees the API
        self.data.request(produce_request(self.topic, 0, kio_batch([b"warm"])))
        self.data.request(fetch_request([(self.topic, 0, 0)]))
        self.group.request(heartbeat("canary-warm-up", str(uuid.uuid4()), 0, names=[self.topic]))
        for thread in self._threads:
            thread.start()
        time.sleep(0.5)
        return self

    def __exit__(self, *exc: object) -> None:
        time.sleep(0.5)
        self._stop.set()
        for thread in self._threads:
            thread.join(120)
        self.data.close()
        self.group.close()

    @property
    def worst(self) -> float:
        return max(max(times) for times in self.round_trips.values())

    def report(self, what: str) -> str:
        parts = [
            f"{kind} {len(t)}x p50 {statistics.median(t) * 1000:.1f} ms worst {max(t) * 1000:.0f} ms"
            for kind, t in self.round_trips.items()
        ]
        return f"{what}: " + "; ".join(parts)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The module's broker: its bootstrap servers and data directory."""
    args = ["--topic", "canary-t:1", "--topic", "aaa:1", "--fsync", "never"]
    for name in EVIL_TOPICS:
        args += ["--topic", f"{name}:1"]
    data_dir = tmp_path_factory.mktemp("coordinator-canary")
    process = BrokerProcess(data_dir, *args)
    try:
        yield process.bootstrap_servers, data_dir
    finally:
        process.terminate()


@pytest.fixture
def bootstrap(served: tuple[str, Path]) -> str:
    return served[0]


def test_a_backtracking_regex_is_resolved_in_linear_time_beside_the_canary(bootstrap: str) -> None:
    with Canary(bootstrap, "canary-t") as canary, RawClient(bootstrap, timeout_s=120) as hostile:
        member = str(uuid.uuid4())
        joined = hostile.request(heartbeat("evil-regex", member, 0, names=[], regex="(a+)+$"))
        assert int(joined.error_code) == NONE
        epoch, assigned = joined.member_epoch, None
        deadline = time.monotonic() + 60
        while assigned is None and time.monotonic() < deadline:  # resolved, then assigned
            time.sleep(0.3)
            answer = hostile.request(heartbeat("evil-regex", member, epoch))
            assert int(answer.error_code) == NONE
            epoch = answer.member_epoch
            if answer.assignment is not None and answer.assignment.topic_partitions:
                assigned = [list(t.partitions) for t in answer.assignment.topic_partitions]
    print("\n" + canary.report("(a+)+$ beside topics a{26}b and a{40}b"))
    # the one topic the regex matches ('aaa'; both a…ab names end in 'b'), partition 0
    assert assigned == [[0]]
    assert canary.errors == []
    assert canary.worst < WORST_ROUND_TRIP_S, canary.report("regex")


def test_a_regex_nested_a_thousand_deep_is_answered_beside_the_canary(bootstrap: str) -> None:
    deep = "(" * 1000 + "canary-t" + ")" * 1000
    with Canary(bootstrap, "canary-t") as canary, RawClient(bootstrap, timeout_s=120) as hostile:
        answer = hostile.request(heartbeat("evil-deep", str(uuid.uuid4()), 0, names=[], regex=deep))
        assert int(answer.error_code) == NONE  # RE2/J compiles it, so Kafka takes it
        too_deep = hostile.request(heartbeat("evil-deep", str(uuid.uuid4()), 0, names=[], regex="(" * 1000))
        assert int(too_deep.error_code) == INVALID_REGULAR_EXPRESSION
        assert too_deep.error_message.endswith("is not a valid regular expression: missing closing ).")
    print("\n" + canary.report("a regex nested 1,000 deep"))
    assert canary.errors == []
    assert canary.worst < WORST_ROUND_TRIP_S, canary.report("deep")


def test_two_subscriptions_of_100000_names_alternate_beside_the_canary(bootstrap: str) -> None:
    lists = ([f"t{i}" for i in range(100_000)], [f"u{i}" for i in range(100_000)])
    took: list[float] = []
    with Canary(bootstrap, "canary-t") as canary, RawClient(bootstrap, timeout_s=300) as hostile:
        member, epoch = str(uuid.uuid4()), 0
        for n in range(6):
            started = time.perf_counter()
            answer = hostile.request(heartbeat("evil-names", member, epoch, names=lists[n % 2]))
            took.append(time.perf_counter() - started)
            assert int(answer.error_code) == NONE
            epoch = answer.member_epoch
    print("\n" + canary.report("100,000-name subscriptions alternating"))
    print(f"the hostile heartbeats took {', '.join(f'{t:.2f}' for t in took)} s")
    assert canary.errors == []
    assert canary.worst < WORST_ROUND_TRIP_S, canary.report("names")


def _topics_request(api: int, version: int, fields: dict[str, Any]) -> Any:
    return build(request_class(api, version), fields)


@pytest.mark.slow
def test_a_topic_of_10000_partitions_is_deleted_beside_the_canary(served: tuple[str, Path]) -> None:
    """Its 10,000 directories are renamed at once (the name is free again) and removed in a thread
    (5 s on the loop before, in which nobody else was served)."""
    bootstrap, data_dir = served

    def create(partitions: int) -> Any:
        topic = {"name": "doomed", "num_partitions": partitions, "replication_factor": 1}
        fields = {"topics": [{**topic, "assignments": [], "configs": []}], "timeout": 60_000}
        return _topics_request(19, 7, {**fields, "validate_only": False})

    delete = _topics_request(20, 6, {"topics": [{"name": "doomed", "topic_id": None}], "timeout": 60_000})
    with RawClient(bootstrap, timeout_s=300) as admin:
        assert int(admin.request(create(10_000)).topics[0].error_code) == NONE
        assert sum(1 for p in data_dir.iterdir() if p.name.startswith("doomed-")) == 10_000
        with Canary(bootstrap, "canary-t") as canary:
            assert int(admin.request(delete).responses[0].error_code) == NONE
            # the name is free at once
            assert int(admin.request(create(1)).topics[0].error_code) == NONE
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            left = [p for p in data_dir.iterdir() if p.name.startswith("doomed-") and p.name != "doomed-0"]
            if not left:
                break
            time.sleep(0.5)
    print("\n" + canary.report("DeleteTopics of 10,000 partitions"))
    assert left == []  # every old directory removed (the new topic's doomed-0 stays)
    assert canary.errors == []
    assert canary.worst < WORST_ROUND_TRIP_S, canary.report("delete")


def test_deleted_directories_a_crash_left_are_removed_at_start(tmp_path: Path) -> None:
    left = tmp_path / "gone-3.0123456789abcdef-delete"
    left.mkdir()
    (left / "00000000000000000000.log").write_bytes(b"x" * 100)
    process = BrokerProcess(tmp_path, "--topic", "t:1", "--fsync", "never")
    try:
        deadline = time.monotonic() + 60
        while left.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        process.terminate()
    assert not left.exists()


@pytest.mark.slow
def test_a_restart_on_100000_groups_listens_at_once_and_loads_them_apart(tmp_path: Path) -> None:
    """The log of 100,000 groups (one offset each) is written directly; the broker, started on it,
    answers at once — COORDINATOR_LOAD_IN_PROGRESS while it replays, then each group's offset.

    As in a real restart, ``__consumer_offsets`` already exists: a first run makes it (its first
    FindCoordinator). Without it the first group request would make the topic's 50 partitions while
    the coordinators' thread loads — each of those file calls waits for the interpreter lock behind
    the loading, so the request could be answered only after the loading ended."""
    first = BrokerProcess(tmp_path, "--topic", "t:1", "--fsync", "never")
    try:
        with RawClient(first.bootstrap_servers, timeout_s=30) as client:
            deadline = time.monotonic() + 30
            while True:
                found = client.request(FindCoordinatorRequest(key="g0", key_type=0))
                if found.error_code == NONE or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert found.error_code == NONE, found
    finally:
        first.terminate()
    log = CoordinatorLog(tmp_path / "coordinator" / "__consumer_offsets.log")
    groups = 100_000
    for start in range(0, groups, 1000):
        entries = []
        for n in range(start, start + 1000):
            entries.append(encode_record(GroupCreated(f"g{n}", 1)))
            value = OffsetAndMetadata(n, -1, "", 1)
            entries.append(encode_record(OffsetCommitted(f"g{n}", TopicPartition("t", 0), value)))
        log.append(entries)
    log.close()
    started = time.monotonic()
    served = BrokerProcess(tmp_path, "--topic", "t:1", "--fsync", "never")
    try:
        listening = time.monotonic() - started
        codes = []
        with RawClient(served.bootstrap_servers, timeout_s=120) as client:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                answer = client.request(
                    build(
                        request_class(9, 7),
                        {"group_id": f"g{groups - 1}", "topics": None, "require_stable": False},
                    )
                )
                codes.append(int(answer.error_code))
                if codes[-1] == NONE:
                    offsets = [p.committed_offset for t in answer.topics for p in t.partitions]
                    break
                time.sleep(0.05)
        loaded = time.monotonic() - started
    finally:
        served.terminate()
    print(f"\n100,000 groups: listening after {listening:.1f} s, loaded after {loaded:.1f} s")
    assert codes[0] == LOAD_IN_PROGRESS  # answered while loading (the broker did not wait to listen)
    assert set(codes[:-1]) == {LOAD_IN_PROGRESS} and codes[-1] == NONE
    assert offsets == [groups - 1]


def test_the_offsets_topic_is_made_off_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first FindCoordinator makes ``__consumer_offsets``' partitions in a thread of their own
    (under a busy coordinators' thread each of its file calls waits for the interpreter lock: seconds
    of the loop's time): another connection is served meanwhile, a group request before any
    FindCoordinator waits for the same creation and is served, the FindCoordinator is answered
    COORDINATOR_NOT_AVAILABLE once the topic exists (as Kafka answers the one that makes it), and the
    next finds the coordinator. Each step of the creation is made 3 s slow here."""
    original = TopicCreation.step
    threads: list[str] = []

    def slow_step(self: TopicCreation, count: int) -> bool:
        if self.name == "__consumer_offsets":
            threads.append(threading.current_thread().name)
            time.sleep(3.0)
        return original(self, count)

    monkeypatch.setattr(TopicCreation, "step", slow_step)
    answers: dict[str, Any] = {}
    with KafkaBroker(topics={"t": 1}) as kafka:

        def find() -> None:
            with RawClient(kafka.bootstrap_servers, timeout_s=30) as client:
                started = time.monotonic()
                answers["first"] = client.request(FindCoordinatorRequest(key="g", key_type=0))
                answers["first_s"] = time.monotonic() - started
                answers["second"] = client.request(FindCoordinatorRequest(key="g", key_type=0))

        finder = threading.Thread(target=find)
        finder.start()
        try:
            with RawClient(kafka.bootstrap_servers, timeout_s=30) as other:
                deadline = time.monotonic() + 10
                while not threads and time.monotonic() < deadline:
                    time.sleep(0.01)
                started = time.monotonic()
                other.request(ApiVersionsRequest(client_software_name="canary", client_software_version="1"))
                served_s = time.monotonic() - started
                fetched = other.request(
                    build(request_class(9, 7), {"group_id": "g", "topics": None, "require_stable": False})
                )
        finally:
            finder.join(30)
    assert threads == ["kgroup-topics_0"]  # one creation, in its thread
    assert served_s < WORST_ROUND_TRIP_S, served_s
    assert int(fetched.error_code) == NONE  # waited for the creation, then served
    assert int(answers["first"].error_code) == COORDINATOR_NOT_AVAILABLE and answers["first_s"] >= 3.0
    assert int(answers["second"].error_code) == NONE
