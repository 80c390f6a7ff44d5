"""A Fetch with no partition to read is answered at once, as Kafka's ``KafkaApis`` answers it.

Kafka's broker sorts a fetch's partitions before reading: those it answers aside (a topic id or a
partition it does not know, no READ on the topic) and the "interesting" ones it reads, and when none
is interesting it answers without waiting ``max_wait``. A closing Java consumer sends such a fetch —
no partition, session epoch -1, the close of its fetch session — and waits for its answer before
``close()`` returns; kgroup used to park it for the whole ``max_wait`` (500 ms), so every member of
the group ETL benchmark took half a second longer to leave than on Kafka (docs/performance.md).

The partitions answered aside do not end a wait either: a fetch of an unknown topic and of a known
partition with nothing new waits for data on the known one. And a full fetch or a session close
(epoch 0 or -1) naming a session id is answered as a full fetch (Kafka drops the session if it has
it; kgroup hands out none); only an incremental fetch (epoch 1 and up) gets FETCH_SESSION_ID_NOT_FOUND.

Nothing here asserts a time: a parked fetch is seen by the broker's own count of parked fetches.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from tests.broker.rawclient import RawClient
from tests.broker.rawdata import fetch_request, produce_code, produce_request
from tests.log.batches import kio_batch

from kgroup.model import ErrorCode
from kgroup.testing import KafkaBroker
from kgroup.wire.codec import build, request_class

pytestmark = pytest.mark.timeout(300)


def _record_parks(kafka: KafkaBroker) -> list[tuple[Any, ...]]:
    """Wrap the broker's ``watch_appends`` (a fetch parks through it): the list gets each parked
    fetch's partitions."""
    parks: list[tuple[Any, ...]] = []
    broker = kafka.broker
    original = broker.watch_appends

    def watch(waiter: Any) -> None:
        parks.append(waiter.partitions)
        original(waiter)

    async def install() -> None:
        broker.watch_appends = watch  # type: ignore[method-assign]

    kafka.run_in_loop(install())
    return parks


def _empty_fetch(*, session_id: int = 0, session_epoch: int = -1, max_wait_ms: int = 60_000) -> Any:
    """Fetch v12 naming no partition (what a closing Java consumer sends to close its session)."""
    return build(
        request_class(1, 12),
        {
            "cluster_id": None,
            "replica_id": -1,
            "max_wait": max_wait_ms,
            "min_bytes": 1,
            "max_bytes": 50 << 20,
            "isolation_level": 0,
            "session_id": session_id,
            "session_epoch": session_epoch,
            "topics": [],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )


@pytest.mark.parametrize(("session_id", "session_epoch"), [(0, -1), (0, 0), (123456, -1), (123456, 0)])
def test_a_fetch_of_no_partition_is_answered_without_parking(session_id: int, session_epoch: int) -> None:
    with KafkaBroker(topics={"t": 1}) as kafka, RawClient(kafka.bootstrap_servers, timeout_s=30) as client:
        parks = _record_parks(kafka)
        answer = client.request(_empty_fetch(session_id=session_id, session_epoch=session_epoch))
        assert int(answer.error_code) == ErrorCode.NONE
        assert int(answer.session_id) == 0  # no session handed out: the client keeps sending full fetches
        assert list(answer.responses) == []
        assert parks == []


def test_an_incremental_fetch_names_a_session_the_broker_does_not_have() -> None:
    with KafkaBroker(topics={"t": 1}) as kafka, RawClient(kafka.bootstrap_servers, timeout_s=30) as client:
        for session_id in (0, 123456):
            answer = client.request(_empty_fetch(session_id=session_id, session_epoch=1))
            assert int(answer.error_code) == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
            assert int(answer.session_id) == 0


def test_partitions_answered_aside_neither_end_nor_join_a_wait() -> None:
    """An unknown topic beside a known partition with nothing new: the fetch waits for the known one,
    then answers both (the unknown one UNKNOWN_TOPIC_OR_PARTITION)."""
    with KafkaBroker(topics={"t": 1}) as kafka, RawClient(kafka.bootstrap_servers, timeout_s=30) as producer:
        parks = _record_parks(kafka)
        result: list[Any] = []

        def fetch() -> None:
            with RawClient(kafka.bootstrap_servers, timeout_s=60) as client:
                request = fetch_request([("nope", 0, 0), ("t", 0, 0)], max_wait_ms=30_000)
                result.append(client.request(request))

        thread = threading.Thread(target=fetch)
        thread.start()
        deadline = time.monotonic() + 20
        while not parks:
            assert time.monotonic() < deadline, "the fetch never parked"
            time.sleep(0.01)
        assert parks == [(("t", 0),)]  # only the partition it reads is watched
        assert produce_code(producer.request(produce_request("t", 0, kio_batch([b"x"])))) == 0
        thread.join(60)
        assert not thread.is_alive()
        (answer,) = result
        codes = {
            (topic.topic, int(part.partition_index)): int(part.error_code)
            for topic in answer.responses
            for part in topic.partitions
        }
        assert codes == {("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ("t", 0): ErrorCode.NONE}
        assert [topic.topic for topic in answer.responses] == ["t", "nope"]  # read first, then aside
        (records,) = [bytes(p.records) for t in answer.responses if t.topic == "t" for p in t.partitions]
        assert records  # the batch that ended the wait


def test_the_answer_lists_the_partitions_read_then_those_answered_aside() -> None:
    """``KafkaApis`` answers the partitions it read first, then the ones it answered aside, each in the
    request's order; ``FetchResponse`` puts a topic's partitions in one entry only where they follow
    one another (so topic t appears twice here, and its partition 2 joins the entry before it)."""
    topics = {"t": 2, "u": 1}
    with KafkaBroker(topics=topics) as kafka, RawClient(kafka.bootstrap_servers, timeout_s=30) as client:
        assert produce_code(client.request(produce_request("u", 0, kio_batch([b"x"])))) == 0
        entries = [("t", 0, 0), ("t", 9, 0), ("u", 0, 0), ("nope", 0, 0), ("t", 1, 0), ("t", 2, 0)]
        answer = client.request(fetch_request(entries, max_wait_ms=30_000))
        layout = [
            (topic.topic, [int(p.partition_index) for p in topic.partitions]) for topic in answer.responses
        ]
        assert layout == [("t", [0]), ("u", [0]), ("t", [1, 9]), ("nope", [0]), ("t", [2])]
        codes = {
            (t.topic, int(p.partition_index)): int(p.error_code)
            for t in answer.responses
            for p in t.partitions
        }
        aside = {("t", 9), ("nope", 0), ("t", 2)}
        assert {key for key, code in codes.items() if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION} == aside


def test_a_closing_java_consumer_is_not_kept_waiting(tmp_path: Path) -> None:
    """Kafka's own Java clients (the ETL benchmark's stage, members churning): every member's close
    sends the empty session-closing fetch, and no fetch without a partition parks."""
    from kgroup.bench.java_etl import run_java_stage
    from kgroup.testing.apache_kafka import require_apache_kafka

    require_apache_kafka()
    records = 4000  # two members at once, each leaving after 1,000: at least four members in all
    with KafkaBroker(topics={"src": 4, "dst": 4}) as kafka, RawClient(kafka.bootstrap_servers) as producer:
        for i in range(0, records, 100):
            batch = kio_batch([b"%d" % n for n in range(i, i + 100)])
            assert produce_code(producer.request(produce_request("src", i // 100 % 4, batch))) == 0
        parks = _record_parks(kafka)
        log = tmp_path / "clients.log"
        result = run_java_stage(
            "range", kafka.bootstrap_servers, "etl-close", "src", "dst", records, 2, 120.0, log
        )
    text = log.read_text(errors="replace")
    closes = re.findall("Successfully sent a close message for fetch session", text)
    assert result.members > 2  # members left and others took their places
    assert len(closes) >= result.members - 2  # every member that left closed its fetch session
    assert all(partitions for partitions in parks), parks
