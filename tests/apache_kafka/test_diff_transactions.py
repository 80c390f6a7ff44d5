"""The transaction APIs on ``kgroup serve`` and on Apache Kafka 4.4.0 (the ``target`` fixture): raw requests
answered alike, field by field, and librdkafka's transactional producer (confluent-kafka) initialising,
committing and being fenced alike.

What differs by nature and is not compared: producer ids (each broker allocates its own), node ids and
ports, and the transaction start time (compared as within the test's wall-clock window).
"""

from __future__ import annotations

import struct
import time
from typing import Any

import pytest
from crc32c import crc32c
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.wire import Raw
from tests.log.batches import kio_batch

from kgroup.broker.answer_order import txn_partition_errors_order
from kgroup.wire.varint import read_uvarint

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
CONCURRENT_TRANSACTIONS = 51
OPERATION_NOT_ATTEMPTED = 55
PRODUCER_FENCED = 90
_RETRIABLE = (
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    NOT_COORDINATOR,
    CONCURRENT_TRANSACTIONS,
)


def _until(call: Any, error_of: Any, timeout_s: float = 30.0) -> Any:
    """``call()`` again while its answer's error is one a client retries (bounded)."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = call()
        if error_of(answer) not in _RETRIABLE or time.monotonic() > deadline:
            return answer
        time.sleep(0.1)


def _find_transaction_coordinator(raw: Raw, transactional_id: str) -> dict[str, Any]:
    answer = _until(
        lambda: raw.call("FindCoordinator", 4, {"key_type": 1, "coordinator_keys": [transactional_id]}),
        lambda a: a["coordinators"][0]["error_code"],
    )
    (found,) = answer["coordinators"]
    return dict(found)


def _init(raw: Raw, transactional_id: str, version: int = 5) -> dict[str, Any]:
    fields = {"transactional_id": transactional_id, "transaction_timeout": 60_000}
    if version >= 3:
        fields |= {"producer_id": -1, "producer_epoch": -1}
    return dict(_until(lambda: raw.call("InitProducerId", version, fields), lambda a: a["error_code"]))


def _add(raw: Raw, txn: str, pid: int, epoch: int, partitions: dict[str, list[int]], version: int = 3) -> Any:
    answer = raw.call(
        "AddPartitionsToTxn",
        version,
        {
            "v3_and_below_transactional_id": txn,
            "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [{"name": t, "partitions": p} for t, p in partitions.items()],
        },
    )
    return {
        (topic["name"], p["partition_index"]): p["partition_error_code"]
        for topic in answer["results_by_topic_v3_and_below"]
        for p in topic["results_by_partition"]
    }


def _end(raw: Raw, txn: str, pid: int, epoch: int, committed: bool, version: int = 3) -> int:
    fields = {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch, "committed": committed}
    return int(raw.call("EndTxn", version, fields)["error_code"])


def _describe(raw: Raw, txn: str) -> dict[str, Any]:
    """DescribeTransactions v0, read here: kio's reader refuses the -1 start time of a transaction that
    has not started (both brokers answer it)."""
    raw.send("DescribeTransactions", 0, {"transactional_ids": [txn]})
    raw._pending = None
    frame = raw.client.read_frame()
    at = 4 + 1 + 4  # correlation id, the header's tagged fields, throttle time (a flexible version)

    def take(fmt: str) -> Any:
        nonlocal at
        (value,) = struct.unpack_from(fmt, frame, at)
        at += struct.calcsize(fmt)
        return value

    def uvarint() -> int:
        nonlocal at
        value, at = read_uvarint(frame, at, len(frame))
        return value

    def string() -> str:
        nonlocal at
        length = uvarint() - 1
        value = frame[at : at + length].decode()
        at += length
        return value

    assert uvarint() - 1 == 1
    state: dict[str, Any] = {
        "error_code": take(">h"),
        "transactional_id": string(),
        "transaction_state": string(),
        "transaction_timeout": take(">i"),
        "transaction_start_time": take(">q"),
        "producer_id": take(">q"),
        "producer_epoch": take(">h"),
    }
    topics = []
    for _ in range(uvarint() - 1):
        name = string()
        topics.append({"topic": name, "partitions": [take(">i") for _ in range(uvarint() - 1)]})
        assert uvarint() == 0  # no tagged fields
    state["topics"] = topics
    return state


def _describe_settled(raw: Raw, txn: str, timeout_s: float = 30.0) -> dict[str, Any]:
    """Described once its markers are written (Apache Kafka writes them after answering EndTxn)."""
    deadline = time.monotonic() + timeout_s
    while True:
        state = _describe(raw, txn)
        if not state["transaction_state"].startswith("Prepare") or time.monotonic() > deadline:
            return state
        time.sleep(0.1)


def test_transaction_apis_answer_as_kafka(target: Target, names: str) -> None:
    """FindCoordinator for a transactional id, InitProducerId and its epoch bumps, AddPartitionsToTxn's
    per-partition errors, DescribeTransactions, ListTransactions' filters, EndTxn, and a fenced producer's
    errors at old and new versions."""
    topic, txn = f"{names}-out", f"{names}-tx"
    target.create_topic(topic, 2)
    started_ms = int(time.time() * 1000)
    with Raw(target.bootstrap_servers) as raw:
        found = _find_transaction_coordinator(raw, txn)
        assert (found["error_code"], found["key"]) == (NONE, txn)
        init = _init(raw, txn)
        assert (init["error_code"], init["producer_epoch"]) == (NONE, 0)
        pid = init["producer_id"]
        assert pid >= 0

        # an unknown partition fails the request: the others are not attempted
        refused = _add(raw, txn, pid, 0, {topic: [0], f"{names}-missing": [0]})
        assert refused == {
            (topic, 0): OPERATION_NOT_ATTEMPTED,
            (f"{names}-missing", 0): UNKNOWN_TOPIC_OR_PARTITION,
        }
        assert _describe(raw, txn)["transaction_state"] == "Empty"

        assert _add(raw, txn, pid, 0, {topic: [1, 0]}) == {(topic, 1): NONE, (topic, 0): NONE}
        described = _describe(raw, txn)
        # the partitions' order is the coordinator's hash set's: kgroup's differs from Kafka's for some
        # topic names (docs/transactions.md), so they are compared as sets here
        for entry in described["topics"]:
            entry["partitions"] = sorted(entry["partitions"])
        start = described.pop("transaction_start_time")
        assert started_ms - 1000 <= start <= int(time.time() * 1000) + 1000
        assert described == {
            "error_code": NONE,
            "transactional_id": txn,
            "transaction_state": "Ongoing",
            "transaction_timeout": 60_000,
            "producer_id": pid,
            "producer_epoch": 0,
            "topics": [{"topic": topic, "partitions": [0, 1]}],
        }
        listed = raw.call(
            "ListTransactions",
            2,
            {
                "state_filters": ["Ongoing", "Bogus"],
                "producer_id_filters": [pid],
                "duration_filter": -1,
                "transactional_id_pattern": f"{names}-t.*",
            },
        )
        assert (listed["error_code"], listed["unknown_state_filters"]) == (NONE, ["Bogus"])
        assert listed["transaction_states"] == [
            {"transactional_id": txn, "producer_id": pid, "transaction_state": "Ongoing"}
        ]

        # transactions v1 (EndTxn v3): the epoch stays
        assert _end(raw, txn, pid, 0, committed=False) == NONE
        settled = _describe_settled(raw, txn)
        assert (settled["transaction_state"], settled["producer_epoch"], settled["topics"]) == (
            "CompleteAbort",
            0,
            [],
        )
        # committing what was aborted: INVALID_TXN_STATE
        assert _end(raw, txn, pid, 0, committed=True) == INVALID_TXN_STATE

        # a second producer with the id: the same producer id, the epoch bumped; the first is fenced
        again = _init(raw, txn)
        assert (again["error_code"], again["producer_id"], again["producer_epoch"]) == (NONE, pid, 1)
        assert _add(raw, txn, pid, 0, {topic: [0]}, version=3) == {(topic, 0): PRODUCER_FENCED}
        assert _add(raw, txn, pid, 0, {topic: [0]}, version=1) == {(topic, 0): INVALID_PRODUCER_EPOCH}
        assert _end(raw, txn, pid, 0, committed=True, version=3) == PRODUCER_FENCED
        assert _end(raw, txn, pid, 0, committed=True, version=1) == INVALID_PRODUCER_EPOCH
        assert (
            raw.call(
                "AddOffsetsToTxn",
                3,
                {"transactional_id": txn, "producer_id": pid, "producer_epoch": 0, "group_id": f"{names}-g"},
            )["error_code"]
            == PRODUCER_FENCED
        )

        # transactions v2 (EndTxn v5) on an empty transaction: an abort is allowed and bumps the epoch
        assert _add(raw, txn, pid, 1, {topic: [0]}) == {(topic, 0): NONE}
        ended = raw.call(
            "EndTxn", 5, {"transactional_id": txn, "producer_id": pid, "producer_epoch": 1, "committed": True}
        )
        assert (ended["error_code"], ended["producer_id"], ended["producer_epoch"]) == (NONE, pid, 2)
        settled = _describe_settled(raw, txn)
        assert (settled["transaction_state"], settled["producer_epoch"]) == ("CompleteCommit", 2)

        # an id nobody initialised
        unknown = _describe(raw, f"{names}-nobody")
        assert unknown["error_code"] == 105  # TRANSACTIONAL_ID_NOT_FOUND
        # nothing else set: every field its default (0), not the -1s of a transaction not started
        assert {k: v for k, v in unknown.items() if k not in ("error_code", "transactional_id")} == {
            "transaction_state": "",
            "transaction_timeout": 0,
            "transaction_start_time": 0,
            "producer_id": 0,
            "producer_epoch": 0,
            "topics": [],
        }


def test_a_transactional_id_on_a_coordinator_that_is_not_its_own(target: Target, names: str) -> None:
    """InitProducerId v0 (no producer id fields) works as v5 does; an empty id is INVALID_REQUEST."""
    with Raw(target.bootstrap_servers) as raw:
        # DescribeTransactions: an empty id is INVALID_REQUEST before whose coordinator it is looked for
        # (TransactionCoordinator.handleDescribeTransactions) — even before __transaction_state exists
        described = raw.call("DescribeTransactions", 0, {"transactional_ids": [""]})
        assert [(s["transactional_id"], s["error_code"]) for s in described["transaction_states"]] == [
            ("", 42)
        ]
        _find_transaction_coordinator(raw, f"{names}-tx")
        v0 = _init(raw, f"{names}-tx", version=0)
        assert (v0["error_code"], v0["producer_epoch"]) == (NONE, 0)
        empty = raw.call("InitProducerId", 0, {"transactional_id": "", "transaction_timeout": 60_000})
        assert empty["error_code"] == 42  # INVALID_REQUEST


def test_librdkafka_transactional_producer_is_fenced_alike(target: Target, names: str) -> None:
    """confluent-kafka's transactional producer: init_transactions, an empty transaction committed and
    one aborted, then a second producer with the same transactional.id fences the first, whose next
    transaction fails with the fatal _FENCED error, on both brokers."""
    from confluent_kafka import KafkaError, KafkaException, Producer

    topic = f"{names}-out"
    target.create_topic(topic, 1)
    config = {
        "bootstrap.servers": target.bootstrap_servers,
        "transactional.id": f"{names}-tx",
        "log_level": 0,
    }
    first = Producer(config)
    first.init_transactions(60)
    first.begin_transaction()
    first.commit_transaction(30)
    first.begin_transaction()
    first.abort_transaction(30)
    second = Producer(config)
    second.init_transactions(60)
    first.begin_transaction()
    first.produce(topic, b"zombie")
    with pytest.raises(KafkaException) as failed:
        first.commit_transaction(30)
    error = failed.value.args[0]
    assert (error.code(), error.fatal()) == (KafkaError._FENCED, True)
    second.begin_transaction()
    second.abort_transaction(30)


def test_init_producer_id_fences_an_ongoing_transaction(target: Target, names: str) -> None:
    """A second InitProducerId while a (transactions v1) transaction is Ongoing: CONCURRENT_TRANSACTIONS
    while the fenced transaction aborts — at the cluster's transaction version 2, whose abort bumps the
    epoch once, and that bump is the fence — then the new producer at epoch 2. The zombie's EndTxn v5 at
    epoch 0 then looks like a retry after a bump (its epoch + 1 is the abort's): committing what was
    aborted, INVALID_TXN_STATE."""
    topic, txn = f"{names}-out", f"{names}-tx"
    target.create_topic(topic, 2)
    fields = {"transactional_id": txn, "transaction_timeout": 60_000, "producer_id": -1, "producer_epoch": -1}
    with Raw(target.bootstrap_servers) as raw:
        _find_transaction_coordinator(raw, txn)
        pid = _init(raw, txn)["producer_id"]
        assert _add(raw, txn, pid, 0, {topic: [0, 1]}) == {(topic, 0): NONE, (topic, 1): NONE}
        assert raw.call("InitProducerId", 5, fields)["error_code"] == CONCURRENT_TRANSACTIONS
        aborted = _describe_settled(raw, txn)
        assert (aborted["transaction_state"], aborted["producer_epoch"]) == ("CompleteAbort", 1)
        zombie = {"transactional_id": txn, "producer_id": pid, "producer_epoch": 0, "committed": True}
        assert raw.call("EndTxn", 5, zombie)["error_code"] == INVALID_TXN_STATE
        again = _init(raw, txn)
        assert (again["error_code"], again["producer_id"], again["producer_epoch"]) == (NONE, pid, 2)
        settled = _describe_settled(raw, txn)
        assert (settled["transaction_state"], settled["producer_epoch"], settled["topics"]) == (
            "Empty",
            2,
            [],
        )
        assert raw.call("EndTxn", 5, zombie)["error_code"] == PRODUCER_FENCED  # the epoch is 2 now


def _read_all(bootstrap: str, topic: str, isolation: str, expected: int) -> list[tuple[int, bytes]]:
    """(offset, value) of the records a consumer at ``isolation`` reads from partition 0, from the
    start, until it has ``expected`` records and has reached the partition's end (for read_committed
    the last stable offset), bounded: a record visible when it should not be is read before the end."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic}-{isolation}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        seen: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                if message.error().code() == KafkaError._PARTITION_EOF and len(seen) >= expected:
                    break
                continue
            seen.append((message.offset(), message.value()))
        return seen
    finally:
        consumer.close()


def _latest(raw: Raw, topic: str, isolation_level: int, partition: int = 0) -> int:
    answer = raw.call(
        "ListOffsets",
        7,
        {
            "replica_id": -1,
            "isolation_level": isolation_level,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": partition, "current_leader_epoch": -1, "timestamp": -1}
                    ],
                }
            ],
        },
    )
    (entry,) = answer["topics"][0]["partitions"]
    assert entry["error_code"] == NONE
    return int(entry["offset"])


def test_committed_records_are_read_and_aborted_ones_skipped(target: Target, names: str) -> None:
    """librdkafka's transactional producer commits, aborts and commits again: a read_committed consumer
    reads the committed records, a read_uncommitted one every record, at the same offsets on both
    brokers (each transaction's marker taking one offset after its records); while a transaction is
    open, ListOffsets' latest offset for read_committed is its first offset (the last stable offset) and
    a read_committed consumer stops before it."""
    from confluent_kafka import Producer

    topic = f"{names}-out"
    target.create_topic(topic, 1)
    producer = Producer({"bootstrap.servers": target.bootstrap_servers, "transactional.id": f"{names}-tx"})
    producer.init_transactions(60)
    producer.begin_transaction()
    producer.produce(topic, b"c1", partition=0)
    producer.produce(topic, b"c2", partition=0)
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, b"a1", partition=0)
    producer.flush(30)
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, b"c3", partition=0)
    producer.commit_transaction(30)
    committed = [(0, b"c1"), (1, b"c2"), (5, b"c3")]
    everything = [(0, b"c1"), (1, b"c2"), (3, b"a1"), (5, b"c3")]
    assert _read_all(target.bootstrap_servers, topic, "read_committed", 3) == committed
    assert _read_all(target.bootstrap_servers, topic, "read_uncommitted", 4) == everything

    producer.begin_transaction()
    producer.produce(topic, b"open", partition=0)
    producer.flush(30)
    with Raw(target.bootstrap_servers) as raw:
        assert (_latest(raw, topic, 0), _latest(raw, topic, 1)) == (8, 7)
        assert _read_all(target.bootstrap_servers, topic, "read_committed", 3) == committed
        producer.abort_transaction(30)
        # Kafka writes the markers after answering EndTxn (kgroup before): waited for, bounded
        deadline = time.monotonic() + 15
        while _latest(raw, topic, 0) < 9 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (_latest(raw, topic, 0), _latest(raw, topic, 1)) == (9, 9)
    assert _read_all(target.bootstrap_servers, topic, "read_uncommitted", 5) == [*everything, (7, b"open")]


def _transactional_batch(pid: int, epoch: int, sequence: int, value: bytes) -> bytes:
    batch = bytearray(kio_batch([value], producer_id=pid, producer_epoch=epoch, base_sequence=sequence))
    struct.pack_into(">h", batch, 21, 0x10)  # transactional
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return bytes(batch)


def _produce(
    raw: Raw, version: int, txn: str | None, topic: str, partition: int, records: bytes
) -> tuple[int, int]:
    """One Produce; NOT_LEADER_OR_FOLLOWER (a topic just made, its leader not yet known to the broker
    that answers: Apache Kafka) is retried as a client retries it, bounded."""
    deadline = time.monotonic() + 15
    while True:
        code, offset = _produce_once(raw, version, txn, topic, partition, records)
        if code != NOT_LEADER_OR_FOLLOWER or time.monotonic() > deadline:
            return code, offset
        time.sleep(0.1)


def _produce_once(
    raw: Raw, version: int, txn: str | None, topic: str, partition: int, records: bytes
) -> tuple[int, int]:
    answer = raw.call(
        "Produce",
        version,
        {
            "transactional_id": txn,
            "acks": -1,
            "timeout": 30_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}],
        },
    )
    (entry,) = answer["responses"][0]["partition_responses"]
    return int(entry["error_code"]), int(entry["base_offset"])


def test_transactional_produce_errors_answer_as_kafka(target: Target, names: str) -> None:
    """Raw transactional Produce: a batch to a partition the transaction holds is appended; to one it
    does not, refused (INVALID_TXN_STATE before Produce v11, TRANSACTION_ABORTABLE from v11); without a
    transactional id, TRANSACTIONAL_ID_AUTHORIZATION_FAILED; a zombie's batch after its successor's
    InitProducerId, INVALID_PRODUCER_EPOCH; the offsets, the commit marker's included, alike."""
    topic, txn = f"{names}-out", f"{names}-tx"
    target.create_topic(topic, 2)
    with Raw(target.bootstrap_servers) as raw:
        _find_transaction_coordinator(raw, txn)
        pid = _init(raw, txn)["producer_id"]
        assert _add(raw, txn, pid, 0, {topic: [0]}) == {(topic, 0): NONE}
        assert _produce(raw, 9, txn, topic, 0, _transactional_batch(pid, 0, 0, b"in")) == (NONE, 0)
        outside = _transactional_batch(pid, 0, 0, b"outside")
        assert _produce(raw, 9, txn, topic, 1, outside)[0] == INVALID_TXN_STATE
        assert _produce(raw, 11, txn, topic, 1, outside)[0] == 120  # TRANSACTION_ABORTABLE
        no_id = _transactional_batch(pid, 0, 1, b"no-id")
        assert _produce(raw, 9, None, topic, 0, no_id)[0] == 53  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert _end(raw, txn, pid, 0, committed=True) == NONE
        _describe_settled(raw, txn)
        assert _latest(raw, topic, 1) == 2  # the record and the commit marker
        assert _init(raw, txn)["producer_epoch"] == 1
        zombie = _transactional_batch(pid, 0, 1, b"zombie")
        assert _produce(raw, 9, txn, topic, 0, zombie)[0] == INVALID_PRODUCER_EPOCH
        assert _latest(raw, topic, 0) == 2


def test_produce_v12_adds_the_partition_to_the_transaction(target: Target, names: str) -> None:
    """Transactions v2 (KIP-890 part 2): a Produce v12+ of a transactional batch to a partition the
    producer never added adds it to the transaction (the partition leader asks the coordinator); the
    transaction's EndTxn v5 commits it and bumps the epoch; a read_committed reader sees the record."""
    topic, txn = f"{names}-out", f"{names}-tx"
    target.create_topic(topic, 2)
    with Raw(target.bootstrap_servers) as raw:
        _find_transaction_coordinator(raw, txn)
        pid = _init(raw, txn)["producer_id"]
        assert _produce(raw, 12, txn, topic, 1, _transactional_batch(pid, 0, 0, b"v2")) == (NONE, 0)
        described = _describe(raw, txn)
        assert (described["transaction_state"], described["topics"]) == (
            "Ongoing",
            [{"topic": topic, "partitions": [1]}],
        )
        assert _latest(raw, topic, 1, partition=1) == 0  # open: the last stable offset is its first offset
        ended = raw.call(
            "EndTxn", 5, {"transactional_id": txn, "producer_id": pid, "producer_epoch": 0, "committed": True}
        )
        assert (ended["error_code"], ended["producer_epoch"]) == (NONE, 1)
        _describe_settled(raw, txn)
        deadline = time.monotonic() + 15
        while _latest(raw, topic, 1, partition=1) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _latest(raw, topic, 1, partition=1) == 2  # the record and the commit marker


@pytest.mark.parametrize("kind", ["kgroup", "apache"])
def test_a_transaction_past_its_timeout_is_aborted_by_the_sweep(kind: str, tmp_path: Any) -> None:
    """``transaction.timeout.ms`` 1 s, the abort sweep every 200 ms (both brokers started with it): an
    open transaction with a record is fenced and aborted by the coordinator itself — its abort marker
    written, the record invisible to read_committed — and the producer's commit then fails fatally
    (fenced), on both brokers."""
    from confluent_kafka import KafkaException, Producer

    from kgroup.testing import KafkaBroker
    from kgroup.testing.apache_kafka import ApacheKafka, require_apache_kafka

    if kind == "apache":
        require_apache_kafka()
    server: Any = (
        KafkaBroker(transaction_abort_timed_out_interval_ms=200)
        if kind == "kgroup"
        else ApacheKafka(1, configs={"transaction.abort.timed.out.transaction.cleanup.interval.ms": 200})
    )
    with server:
        server.create_topic("out", 1)
        bootstrap = server.bootstrap_servers
        producer = Producer(
            {"bootstrap.servers": bootstrap, "transactional.id": "slow", "transaction.timeout.ms": 1000}
        )
        producer.init_transactions(60)
        producer.begin_transaction()
        producer.produce("out", b"late", partition=0)
        producer.flush(30)
        with Raw(bootstrap) as raw:
            aborted = _describe(raw, "slow")
            deadline = time.monotonic() + 20
            while aborted["transaction_state"] != "CompleteAbort" and time.monotonic() < deadline:
                time.sleep(0.1)
                aborted = _describe(raw, "slow")
            assert (aborted["transaction_state"], aborted["producer_epoch"]) == ("CompleteAbort", 1)
            assert (_latest(raw, "out", 0), _latest(raw, "out", 1)) == (2, 2)  # the record, the marker
        with pytest.raises(KafkaException) as failed:
            producer.commit_transaction(30)
        error = failed.value.args[0]
        assert (error.name(), error.fatal()) == ("_FENCED", True)
        assert _read_all(bootstrap, "out", "read_committed", 0) == []
        assert _read_all(bootstrap, "out", "read_uncommitted", 1) == [(0, b"late")]


def test_add_partitions_answers_the_request_as_asked(target: Target, names: str) -> None:
    """``handleAddPartitionsToTxnRequest``: an answer of the coordinator (success or its one error) is
    the request's entries as asked (``errorResponseForTransaction``: a partition or topic named twice
    answered twice, a topic without partitions too); a refusal before it (an unknown partition, an
    internal topic, which a client may never add) answers each partition once, in Kafka's maps' order
    (``resultForTransaction``)."""
    topic, other, txn = f"{names}-a", f"{names}-b", f"{names}-tx"
    target.create_topic(topic, 3)
    target.create_topic(other, 2)
    with Raw(target.bootstrap_servers) as raw:
        _find_transaction_coordinator(raw, txn)
        init = _init(raw, txn)
        pid, epoch = init["producer_id"], init["producer_epoch"]

        def add(entries: list[tuple[str, list[int]]], version: int = 3, producer_epoch: int = epoch) -> Any:
            answer = raw.call(
                "AddPartitionsToTxn",
                version,
                {
                    "v3_and_below_transactional_id": txn,
                    "v3_and_below_producer_id": pid,
                    "v3_and_below_producer_epoch": producer_epoch,
                    "v3_and_below_topics": [{"name": t, "partitions": p} for t, p in entries],
                },
            )
            return [
                (
                    t["name"].replace(names, "N"),
                    [(p["partition_index"], p["partition_error_code"]) for p in t["results_by_partition"]],
                )
                for t in answer["results_by_topic_v3_and_below"]
            ]

        refused = add(
            [(other, [1, 0]), ("__consumer_offsets", [0]), (topic, [2, 0, 1]), (f"{names}-missing", [0])]
        )
        fenced = add([(topic, [1, 1]), (topic, [0]), (other, [])], producer_epoch=epoch + 9)
        added = add([(topic, [1, 1]), (topic, [0]), (other, [])])
        again = add([(other, [1, 0, 1])], version=2)
        _end(raw, txn, pid, epoch, committed=False)
    assert refused == [
        (t.replace(names, "N"), [(p, codes[(t, p)]) for p in ps])
        for codes in [
            {(other, 1): 55, (other, 0): 55, ("__consumer_offsets", 0): 29, (topic, 2): 55, (topic, 0): 55}
            | {(topic, 1): 55, (f"{names}-missing", 0): UNKNOWN_TOPIC_OR_PARTITION}
        ]
        for t, ps in txn_partition_errors_order(list(codes))
    ]
    assert fenced == [
        ("N-a", [(1, PRODUCER_FENCED), (1, PRODUCER_FENCED)]),
        ("N-a", [(0, PRODUCER_FENCED)]),
        ("N-b", []),
    ]
    assert added == [("N-a", [(1, NONE), (1, NONE)]), ("N-a", [(0, NONE)]), ("N-b", [])]
    assert again == [("N-b", [(1, NONE), (0, NONE), (1, NONE)])]
