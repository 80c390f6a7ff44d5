"""An exactly-once consume-transform-produce chain against any broker, with real clients.

Three stages (``topic0 -> stage 1 -> topic1 -> stage 2 -> topic2 -> stage 3 -> topic3``), each a
consumer group of transactional workers: every poll's records are written to the next topic (same
key and partition, ``/<stage>`` appended to the value) in one transaction with the consumer's
offsets (``send_offsets_to_transaction`` with the consumer's group metadata, KIP-447), committed;
a failed transaction is aborted and the consumer rewound to its committed offsets. A worker is
either confluent-kafka (librdkafka's transactional producer) in a Python process of its own
(``python -m kgroup.testing.eos_chain worker CONFIG``), or Kafka's Java ``KafkaConsumer`` and
``KafkaProducer`` in a JVM (:class:`~kgroup.testing.apache_kafka.java_client.JavaExactlyOnceWorker`).

:func:`run_chain` runs the chain while its groups change: two workers per stage at first, then a
third joins each stage, one leaves cleanly (``close()``), and one is killed (``SIGKILL``, its
transaction possibly open) and restarted with its transactional id (and its ``group.instance.id``
in a static group), which fences its zombie's transaction. Input goes in three waves so each
change happens while records flow. The caller reads the final topic with ``read_committed``
(:func:`read_committed`) and checks that every input is there exactly once. Used by
``tests/apache_kafka/test_eos_chain.py`` (on ``kgroup serve`` and Apache Kafka 4.4.0) and
``benchmarks/bench_eos_chain.py``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kgroup.model import KgroupError
from kgroup.testing.eos_worker import committed_records, worker_config
from kgroup.testing.event_process import EventProcess

__all__ = [
    "VARIANTS",
    "ChainResult",
    "ChainVariant",
    "PythonExactlyOnceWorker",
    "expected_output",
    "read_committed",
    "run_chain",
]

STAGES = 3
#: classic groups' ``session.timeout.ms`` and ``heartbeat.interval.ms`` (the broker's
#: ``group.min.session.timeout.ms`` must allow it); a KIP-848 group's are the broker's
SESSION_TIMEOUT_MS = 4000
HEARTBEAT_INTERVAL_MS = 500
BATCH = 50
WAIT_S = 90.0


@dataclass(frozen=True)
class ChainVariant:
    """A kind of group: the consumer settings of librdkafka and of Java, and whether its workers
    are static members. ``java_stages`` are the stages (1-based) run by Kafka's Java clients."""

    name: str
    librdkafka: Mapping[str, str]
    java: Mapping[str, str]
    static: bool = False
    java_stages: tuple[int, ...] = (2,)


_CLASSIC = {
    "session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "heartbeat.interval.ms": str(HEARTBEAT_INTERVAL_MS),
}
_JAVA_ASSIGNORS = "org.apache.kafka.clients.consumer"
VARIANTS: Mapping[str, ChainVariant] = {
    v.name: v
    for v in (
        ChainVariant(
            "eager",
            {**_CLASSIC, "partition.assignment.strategy": "range"},
            {**_CLASSIC, "partition.assignment.strategy": f"{_JAVA_ASSIGNORS}.RangeAssignor"},
        ),
        ChainVariant(
            "cooperative",
            {**_CLASSIC, "partition.assignment.strategy": "cooperative-sticky"},
            {
                **_CLASSIC,
                "partition.assignment.strategy": f"{_JAVA_ASSIGNORS}.CooperativeStickyAssignor",
            },
        ),
        ChainVariant(
            "static",
            {**_CLASSIC, "partition.assignment.strategy": "range"},
            {**_CLASSIC, "partition.assignment.strategy": f"{_JAVA_ASSIGNORS}.RangeAssignor"},
            static=True,
        ),
        ChainVariant("consumer", {"group.protocol": "consumer"}, {"group.protocol": "consumer"}),
    )
}


class Worker(Protocol):
    name: str

    def start(self) -> Any: ...

    def close(self, timeout_s: float = 30.0) -> None: ...

    def kill(self) -> None: ...

    @property
    def events(self) -> list[dict[str, Any]]: ...

    @property
    def committed_records(self) -> int: ...


class PythonExactlyOnceWorker(EventProcess):
    """A confluent-kafka worker in its own Python process (the same events and commands as the Java
    one: ``started``, ``assigned`` / ``revoked`` / ``lost``, ``committed``, ``aborted``, ``fatal``,
    ``closed``; ``close`` on stdin, or its end)."""

    default_wait_s = WAIT_S

    def __init__(
        self,
        bootstrap_servers: str,
        group: str,
        input: str,
        output: str,
        transactional_id: str,
        *,
        suffix: str = "",
        consumer_config: Mapping[str, object] | None = None,
        producer_config: Mapping[str, object] | None = None,
        name: str | None = None,
        batch: int = BATCH,
    ) -> None:
        super().__init__()
        self.name = name or transactional_id
        where = (bootstrap_servers, group, input, output, transactional_id)
        self._config = {**worker_config(*where, suffix, consumer_config, producer_config), "batch": batch}

    def start(self) -> PythonExactlyOnceWorker:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "kgroup.testing.eos_chain", "worker", json.dumps(self._config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._start_reading()
        try:
            self.wait_for(lambda e: e["event"] == "started", what="the worker to start")
        except BaseException:
            self.kill()
            raise
        return self

    @property
    def committed_records(self) -> int:
        return committed_records(self.events)

    def close(self, timeout_s: float = 30.0) -> None:
        """Close it cleanly (after the transaction in progress) and wait for the process to exit."""
        process = self._process
        if process is None or process.poll() is not None:
            self._end_process()
            return
        try:
            assert process.stdin is not None
            with contextlib.suppress(OSError):
                process.stdin.write(b'{"cmd": "close"}\n')
                process.stdin.flush()
            closed = self.wait_for(lambda e: e["event"] == "closed", timeout_s=timeout_s, what="close")
            process.wait(timeout=timeout_s)
        finally:
            self._end_process()
        if closed.get("error"):
            raise KgroupError(f"{self.name}: close failed: {closed['error']}")

    def kill(self) -> None:
        """SIGKILL the process (a crash: no LeaveGroup, its transaction left open)."""
        self._end_process()


@dataclass
class ChainResult:
    """What a run did: each stage's workers (name -> committed records), the output read."""

    variant: str
    records: int
    elapsed_s: float
    workers: dict[str, int] = field(default_factory=dict)
    fatal: list[str] = field(default_factory=list)


def topic_names(prefix: str) -> list[str]:
    return [f"{prefix}-topic{i}" for i in range(STAGES + 1)]


def expected_output(records: int) -> dict[tuple[bytes, bytes], int]:
    """The final topic's records, each once: key ``i``, value ``record-i/1/2/3``."""
    suffix = "".join(f"/{stage}" for stage in range(1, STAGES + 1))
    return {(str(i).encode(), f"record-{i}{suffix}".encode()): 1 for i in range(records)}


def produce_inputs(bootstrap_servers: str, topic: str, first: int, last: int, partitions: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap_servers, "enable.idempotence": True, "log_level": 0})
    for i in range(first, last):
        producer.produce(topic, f"record-{i}".encode(), key=str(i).encode(), partition=i % partitions)
    if producer.flush(30) != 0:
        raise KgroupError(f"the inputs {first}..{last} were not all acknowledged")


def _worker(
    variant: ChainVariant,
    bootstrap: str,
    prefix: str,
    stage: int,
    slot: str,
    txn_slot: str,
    name: str,
    batch: int,
) -> Worker:
    topics = topic_names(prefix)
    group = f"{prefix}-stage{stage}"
    java = stage in variant.java_stages
    consumer: dict[str, object] = dict(variant.java if java else variant.librdkafka)
    if java:
        consumer["max.poll.records"] = batch
    if variant.static:
        consumer["group.instance.id"] = f"{group}-{txn_slot}"
    producer: dict[str, object] = {"transaction.timeout.ms": 30_000}
    transactional_id = f"{group}-{txn_slot}"
    # what both workers take: where they read and write, and their clients' settings
    where = (bootstrap, group, topics[stage - 1], topics[stage], transactional_id)
    configs: dict[str, Any] = {
        "suffix": f"/{stage}",
        "consumer_config": consumer,
        "producer_config": producer,
        "name": name,
    }
    if java:
        from kgroup.testing.apache_kafka.java_client import JavaExactlyOnceWorker

        return JavaExactlyOnceWorker(*where, **configs)
    return PythonExactlyOnceWorker(*where, **configs, batch=batch)


def _wait(condition: Callable[[], bool], what: str, deadline: float, workers: Sequence[Worker]) -> None:
    while not condition():
        if time.monotonic() > deadline:
            state = ", ".join(
                f"{w.name}={w.committed_records} (last: {[e['event'] for e in w.events[-3:]]})"
                for w in workers
            )
            raise KgroupError(
                f"timed out waiting for {what} (records each worker reported committed: {state})"
            )
        time.sleep(0.05)


def _start_all(workers: Sequence[Worker]) -> None:
    """Start the workers side by side; the first failure is raised once every start has ended."""
    failures: list[BaseException] = []

    def start(worker: Worker) -> None:
        try:
            worker.start()
        except BaseException as exc:  # raised below, in the caller's thread
            failures.append(exc)

    threads = [threading.Thread(target=start, args=(w,), daemon=True) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]


def run_chain(
    variant: ChainVariant,
    bootstrap_servers: str,
    prefix: str,
    *,
    records: int = 300,
    partitions: int = 4,
    create_topic: Callable[[str, int], None],
    timeout_s: float = 120.0,
    progress: Callable[[str], None] = lambda message: None,
    churn: bool = True,
    batch: int = BATCH,
    session_timeout_ms: int = SESSION_TIMEOUT_MS,
) -> ChainResult:
    """Run the chain over ``records`` inputs while its groups change (see the module's docstring);
    return once stage 3 has committed at least ``records`` records and every worker is closed.

    ``churn=False`` (the benchmark's steady chain): two workers per stage, each holding partitions
    before the clock starts, then every input produced at once; ``elapsed_s`` runs from the first
    input produced to the last record committed by stage 3. ``batch`` is the most records of one
    transaction (a poll's); ``session_timeout_ms`` the classic groups' ``session.timeout.ms`` (the
    broker's ``group.min.session.timeout.ms``, 6000 by default, must allow it)."""
    if "session.timeout.ms" in variant.librdkafka:
        timeout = str(session_timeout_ms)
        variant = dataclasses.replace(
            variant,
            librdkafka={**variant.librdkafka, "session.timeout.ms": timeout},
            java={**variant.java, "session.timeout.ms": timeout},
        )
    topics = topic_names(prefix)
    for topic in topics:
        create_topic(topic, partitions)
    deadline = time.monotonic() + timeout_s
    every: list[Worker] = []
    stages: dict[int, dict[str, Worker]] = {s: {} for s in range(1, STAGES + 1)}

    def add(*slots: tuple[str, str]) -> None:
        """Start a worker in every stage for each (slot, transactional id's slot), all at once."""
        new = [
            (
                s,
                slot,
                _worker(
                    variant, bootstrap_servers, prefix, s, slot, txn_slot, f"{prefix}-s{s}-{slot}", batch
                ),
            )
            for slot, txn_slot in slots
            for s in range(1, STAGES + 1)
        ]
        for s, slot, worker in new:
            stages[s][slot] = worker
            every.append(worker)  # killed at the end whatever happens
        _start_all([worker for _, _, worker in new])  # each start() waits for its initTransactions

    def final_committed() -> int:
        return sum(w.committed_records for w in stages[STAGES].values())

    started = time.monotonic()
    output = CommittedOutput(bootstrap_servers, topics[-1], partitions) if churn else None
    try:
        add(("a", "a"), ("b", "b"))
        if not churn:
            _wait(
                lambda: all(
                    any(e["event"] == "assigned" and e["partitions"] for e in w.events) for w in every
                ),
                "every worker to hold partitions",
                deadline,
                every,
            )
            started = time.monotonic()
            produce_inputs(bootstrap_servers, topics[0], 0, records, partitions)
            _wait(lambda: final_committed() >= records, "every record through the chain", deadline, every)
            return _finish(ChainResult(variant.name, records, time.monotonic() - started), every, every)
        third = records // 3
        produce_inputs(bootstrap_servers, topics[0], 0, third, partitions)
        progress("wave 1 produced")
        assert output is not None
        watch = output
        _wait(lambda: watch.count() >= third, "wave 1 through the chain", deadline, every)

        add(("c", "c"))  # a member joins each stage
        produce_inputs(bootstrap_servers, topics[0], third, 2 * third, partitions)
        for s in range(1, STAGES + 1):
            stages[s]["b"].close()  # one leaves cleanly
        progress("c joined, b left")
        _wait(lambda: watch.count() >= 2 * third, "wave 2 through the chain", deadline, every)

        half = 2 * third + (records - 2 * third) // 2
        produce_inputs(bootstrap_servers, topics[0], 2 * third, half, partitions)
        _wait(
            lambda: sum(w.committed_records for w in stages[1].values()) > 2 * third,
            "wave 3 under way",
            deadline,
            every,
        )
        for s in range(1, STAGES + 1):
            stages[s]["a"].kill()  # one is killed, its transaction perhaps open
        add(("d", "a"))  # restarted with its transactional id (and instance id): the zombie fenced
        produce_inputs(bootstrap_servers, topics[0], half, records, partitions)
        progress("a killed and restarted as d")
        # what the final topic holds, not what the workers reported: a worker killed after its
        # transaction committed and before it said so has output no report counts
        _wait(lambda: watch.count() >= records, "every record through the chain", deadline, every)
        result = ChainResult(variant.name, records, time.monotonic() - started)
        return _finish(result, [stages[s][slot] for s in range(1, STAGES + 1) for slot in ("c", "d")], every)
    finally:
        for worker in every:
            worker.kill()
        if output is not None:
            output.close()


def _finish(result: ChainResult, running: Sequence[Worker], every: Sequence[Worker]) -> ChainResult:
    """Close the running workers cleanly; what each committed, and every fenced worker's event."""
    for worker in running:
        worker.close()
    for worker in every:
        result.workers[worker.name] = worker.committed_records
        result.fatal.extend(f"{worker.name}: {e}" for e in worker.events if e["event"] == "fatal")
    return result


class CommittedOutput:
    """A ``read_committed`` reader of the chain's final topic from its start, counting the distinct
    records it has seen: what the chain has really committed. The workers' own reports can fall
    short of it — a worker killed after its transaction committed and before it reported so (the
    ``EndTxn`` answered, or not yet) leaves output that no ``committed`` event counts."""

    def __init__(self, bootstrap_servers: str, topic: str, partitions: int) -> None:
        from confluent_kafka import Consumer, TopicPartition

        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap_servers,
                "group.id": f"{topic}-watch",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "log_level": 0,
            }
        )
        self._consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        self._seen: set[tuple[bytes | None, bytes | None]] = set()

    def count(self) -> int:
        """Take what has arrived (without waiting) and count the distinct records so far."""
        for message in self._consumer.consume(10_000, 0):
            if message.error() is None:
                self._seen.add((message.key(), message.value()))
        return len(self._seen)

    def close(self) -> None:
        self._consumer.close()


def read_committed(
    bootstrap_servers: str, topic: str, partitions: int, timeout_s: float = 60.0
) -> list[tuple[bytes | None, bytes | None]]:
    """Every record of ``topic`` a ``read_committed`` reader finds (to the end of every partition)."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    reader = Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": f"{topic}-reader",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
            "log_level": 0,
        }
    )
    try:
        reader.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        seen: list[tuple[bytes | None, bytes | None]] = []
        at_end: set[int | None] = set()
        deadline = time.monotonic() + timeout_s
        while len(at_end) < partitions:
            if time.monotonic() > deadline:
                raise KgroupError(f"{topic}: not read to the end within {timeout_s:.0f} s ({len(seen)} read)")
            message = reader.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(message.partition())
                continue
            at_end.discard(message.partition())
            seen.append((message.key(), message.value()))
        return seen
    finally:
        reader.close()


# --- the librdkafka worker's process ---------------------------------------------------------------


def _emit(event: str, **fields: object) -> None:
    sys.stdout.write(json.dumps({"event": event, "ts": int(time.time() * 1000), **fields}) + "\n")
    sys.stdout.flush()


def _commands() -> queue.Queue[str]:
    commands: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in sys.stdin:
            with contextlib.suppress(ValueError):
                commands.put(str(json.loads(line).get("cmd", "")))
        commands.put("close")  # the end of stdin: the parent is gone

    threading.Thread(target=read, name="commands", daemon=True).start()
    return commands


def _partitions(partitions: Sequence[Any]) -> list[list[object]]:
    return sorted([tp.topic, tp.partition] for tp in partitions)


def _run_worker(config: Mapping[str, Any]) -> int:  # pragma: no cover - runs in the worker's process
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

    consumer = Consumer(
        {
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "log_level": 0,
            **config["consumer"],
        }
    )
    producer = Producer({"log_level": 0, **config["producer"]})
    producer.init_transactions(60)
    commands = _commands()

    def rebalanced(name: str) -> Callable[[Any, list[Any]], None]:
        return lambda _consumer, partitions: _emit(name, partitions=_partitions(partitions))

    consumer.subscribe(
        [config["input"]],
        on_assign=rebalanced("assigned"),
        on_revoke=rebalanced("revoked"),
        on_lost=rebalanced("lost"),
    )
    _emit("started", transactional_id=config["producer"]["transactional.id"])
    output, suffix = config["output"], config["suffix"].encode()
    while True:
        with contextlib.suppress(queue.Empty):
            if commands.get_nowait() == "close":
                consumer.close()
                producer.flush(30)
                _emit("closed")
                return 0
        messages = [m for m in consumer.consume(int(config["batch"]), 0.1) if m.error() is None]
        if not messages:
            continue
        try:
            producer.begin_transaction()
            offsets: dict[tuple[str, int], int] = {}
            for m in messages:
                topic, partition, offset = m.topic(), m.partition(), m.offset()
                assert topic is not None and partition is not None and offset is not None
                producer.produce(output, (m.value() or b"") + suffix, key=m.key(), partition=partition)
                offsets[(topic, partition)] = offset + 1
            producer.send_offsets_to_transaction(
                [TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                consumer.consumer_group_metadata(),
                30,
            )
            producer.commit_transaction(30)
            _emit(
                "committed", count=len(messages), offsets=sorted([t, p, o] for (t, p), o in offsets.items())
            )
        except KafkaException as failed:
            error = failed.args[0]
            if error.fatal():
                _emit("fatal", type=error.name(), message=error.str())
                return 1
            _emit("aborted", type=error.name(), message=error.str())
            producer.abort_transaction(30)
            try:
                for tp in consumer.committed(consumer.assignment(), 30):  # back to the committed offsets
                    offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
                    consumer.seek(TopicPartition(tp.topic, tp.partition, offset))
            except KafkaException as unwound:  # it would go on past what it did not commit: stop
                _emit("fatal", type="rewind", message=str(unwound.args[0]))
                return 1


def main(argv: Sequence[str]) -> int:  # pragma: no cover - the worker's process
    if len(argv) != 2 or argv[0] != "worker":
        print("usage: python -m kgroup.testing.eos_chain worker CONFIG_JSON", file=sys.stderr)
        return 2
    return _run_worker(json.loads(argv[1]))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
