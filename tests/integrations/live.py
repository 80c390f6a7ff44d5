"""Real consumers for the live tests: kafka-python, librdkafka, aiokafka, kgroup and Java members, each
in a thread (the Java member's thread drives a JVM running Apache Kafka's ``KafkaConsumer``).

Every member reports each assignment and revocation to one :class:`Ledger`, which records a violation
whenever a partition is handed to a member while another still holds it. A member releases its
partitions in the ledger after it has stopped consuming and before it leaves the group, so the ledger
never blames a hand-over that Kafka's protocol orders correctly.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from kgroup.testing.apache_kafka.distribution import KafkaLibs
from kgroup.testing.apache_kafka.java_client import JavaConsumer, Rebalance

TP = tuple[str, int]

# generous: the broker runs in the test's own process and shares its GIL with every client thread
SESSION_TIMEOUT_MS = 30_000
HEARTBEAT_MS = 500
POLL_S = 0.1
#: kafka-python's poll timeout: longer than a rebalance round, to stay clear of kafka-python 3.0.12's
#: lost rejoin (docs/integrations.md: a snapshot-triggered join that outlasts poll() is never applied)
KAFKA_PYTHON_POLL_MS = 1000


class Ledger:
    """Who holds which partition right now, and every moment two members held one.

    A member that has released everything (:meth:`release_all`: it stopped consuming and is leaving)
    holds nothing until it starts again (:meth:`started`): a client may still complete a rebalance
    while it closes (aiokafka's ``stop()`` calls ``on_partitions_assigned`` for a SyncGroup answer
    that arrives then), but it never consumes those partitions, and it leaves without revoking them.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner: dict[TP, str] = {}
        self._released: set[str] = set()
        self.violations: list[str] = []
        #: exceptions that ended a member's thread, reported in any timeout message
        self.member_errors: list[str] = []
        self.revocations: dict[str, list[TP]] = {}
        self.changed_at = time.monotonic()
        #: every call, in order (for a failure message)
        self.history: list[str] = []

    def started(self, member: str) -> None:
        with self._lock:
            self._released.discard(member)
            self._note("started", member, [])

    def assigned(self, member: str, partitions: Iterable[TP]) -> None:
        partitions = list(partitions)
        with self._lock:
            if member in self._released:
                self._note("assigned while closing (ignored)", member, partitions)
                return
            self._note("assigned", member, partitions)
            for tp in partitions:
                other = self._owner.get(tp)
                if other is not None and other != member:
                    self.violations.append(f"{tp} given to {member} while {other} holds it")
                if other != member:
                    self._owner[tp] = member
                    self.changed_at = time.monotonic()

    def revoked(self, member: str, partitions: Iterable[TP]) -> None:
        partitions = list(partitions)
        with self._lock:
            self._note("revoked", member, partitions)
            for tp in partitions:
                if self._owner.get(tp) == member:
                    del self._owner[tp]
                    self.revocations.setdefault(member, []).append(tp)
                    self.changed_at = time.monotonic()

    def release_all(self, member: str) -> None:
        with self._lock:
            mine = [tp for tp, owner in self._owner.items() if owner == member]
            self._released.add(member)
        self.revoked(member, mine)

    def _note(self, what: str, member: str, partitions: list[TP]) -> None:
        listed = ",".join(f"{t}-{p}" for t, p in partitions)
        self.history.append(f"{time.monotonic():.3f} {member} {what} [{listed}]")

    def report(self) -> str:
        """The violations and the calls that led to them, one per line."""
        with self._lock:
            return "\n".join([*self.violations, "history:", *self.history])

    def owners(self) -> dict[TP, str]:
        with self._lock:
            return dict(self._owner)

    def quiet_for(self) -> float:
        with self._lock:
            return time.monotonic() - self.changed_at


def wait_until(
    condition: Callable[[], bool], timeout_s: float, what: str, state: Callable[[], object] | None = None
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    now = f"; now: {state()}" if state is not None else ""
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}{now}")


def coordinator_state(member: Any) -> str:
    """kafka-python's view of its group membership (for a timeout message)."""
    coordinator = getattr(getattr(member, "consumer", None), "_coordinator", None)
    if coordinator is None:
        return "no consumer"
    state = getattr(coordinator, "state", "?")
    generation = getattr(coordinator, "_generation", "?")
    rejoining = getattr(coordinator, "rejoining", "?")
    join_task = getattr(coordinator, "_join_task", "?")
    return f"state={state} generation={generation} rejoining={rejoining} join_task={join_task}"


def wait_stable(
    ledger: Ledger,
    partitions: set[TP],
    members: set[str],
    timeout_s: float = 120.0,
    extra: Callable[[], object] | None = None,
) -> dict[TP, str]:
    """Every partition held, by the expected members only, every one of them holding some, quiet 3 s."""

    def stable() -> bool:
        owners = ledger.owners()
        return set(owners) == partitions and set(owners.values()) == members and ledger.quiet_for() >= 3.0

    wait_until(
        stable,
        timeout_s,
        f"{len(partitions)} partitions held by {sorted(members)}",
        lambda: (ledger.owners(), ledger.member_errors, extra() if extra is not None else None),
    )
    return ledger.owners()


class Member:
    """A consumer polling in its own thread until :meth:`stop`."""

    def __init__(self, name: str, ledger: Ledger) -> None:
        self.name = name
        self.ledger = ledger
        self.consumed: set[tuple[str, int, int]] = set()
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._guarded, name=f"member-{name}", daemon=True)

    def start(self) -> Member:
        self.ledger.started(self.name)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stop.set()
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            raise AssertionError(f"member {self.name} did not stop within {timeout_s:.0f} s")

    def _guarded(self) -> None:
        try:
            self.run(self._stop)
        except BaseException as exc:  # reported by the test, never lost in a thread
            self.errors.append(exc)
            self.ledger.member_errors.append(f"{self.name}: {exc!r}")

    def run(self, stop: threading.Event) -> None:
        raise NotImplementedError


class KafkaPythonMember(Member):
    def __init__(
        self, name: str, ledger: Ledger, bootstrap: str, group: str, topics: list[str], assignor: Any
    ):
        super().__init__(name, ledger)
        self.bootstrap, self.group, self.topics, self.assignor = bootstrap, group, topics, assignor

    def run(self, stop: threading.Event) -> None:
        from kafka import ConsumerRebalanceListener, KafkaConsumer

        ledger, name = self.ledger, self.name

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            def on_partitions_revoked(self, revoked: Any) -> None:
                ledger.revoked(name, [(tp.topic, tp.partition) for tp in revoked])

            def on_partitions_assigned(self, assigned: Any) -> None:
                ledger.assigned(name, [(tp.topic, tp.partition) for tp in assigned])

            def on_partitions_lost(self, lost: Any) -> None:
                ledger.revoked(name, [(tp.topic, tp.partition) for tp in lost])

        self.consumer = consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            client_id=name,
            partition_assignment_strategy=[self.assignor],
            auto_offset_reset="earliest",
            session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=HEARTBEAT_MS,
        )
        try:
            consumer.subscribe(self.topics, listener=Listener())
            while not stop.is_set():
                for records in consumer.poll(timeout_ms=KAFKA_PYTHON_POLL_MS).values():
                    self.consumed.update((r.topic, r.partition, r.offset) for r in records)
        finally:
            ledger.release_all(name)
            consumer.close()


class LibrdkafkaMember(Member):
    def __init__(self, name: str, ledger: Ledger, bootstrap: str, group: str, topics: list[str]):
        super().__init__(name, ledger)
        self.bootstrap, self.group, self.topics = bootstrap, group, topics

    def run(self, stop: threading.Event) -> None:
        import confluent_kafka

        ledger, name = self.ledger, self.name
        consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.group,
                "client.id": name,
                "partition.assignment.strategy": "cooperative-sticky",
                "auto.offset.reset": "earliest",
                "session.timeout.ms": SESSION_TIMEOUT_MS,
                "heartbeat.interval.ms": HEARTBEAT_MS,
            }
        )

        def on_assign(_c: Any, partitions: list[Any]) -> None:
            ledger.assigned(name, [(p.topic, p.partition) for p in partitions])

        def on_revoke(_c: Any, partitions: list[Any]) -> None:
            ledger.revoked(name, [(p.topic, p.partition) for p in partitions])

        try:
            consumer.subscribe(self.topics, on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
            while not stop.is_set():
                message = consumer.poll(POLL_S)
                if message is not None and message.error() is None:
                    self.consumed.add((message.topic(), message.partition(), message.offset()))
        finally:
            ledger.release_all(name)
            consumer.close()


class AiokafkaMember(Member):
    def __init__(
        self, name: str, ledger: Ledger, bootstrap: str, group: str, topics: list[str], assignor: Any
    ):
        super().__init__(name, ledger)
        self.bootstrap, self.group, self.topics, self.assignor = bootstrap, group, topics, assignor

    def run(self, stop: threading.Event) -> None:
        asyncio.run(self._main(stop))

    async def _main(self, stop: threading.Event) -> None:
        from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener

        ledger, name = self.ledger, self.name

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            def on_partitions_revoked(self, revoked: Any) -> None:
                ledger.revoked(name, [(tp.topic, tp.partition) for tp in revoked])

            def on_partitions_assigned(self, assigned: Any) -> None:
                ledger.assigned(name, [(tp.topic, tp.partition) for tp in assigned])

        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            client_id=name,
            partition_assignment_strategy=[self.assignor],
            auto_offset_reset="earliest",
            session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=HEARTBEAT_MS,
        )
        consumer.subscribe(self.topics, listener=Listener())
        await consumer.start()
        try:
            while not stop.is_set():
                batches = await consumer.getmany(timeout_ms=int(POLL_S * 1000))
                for records in batches.values():
                    self.consumed.update((r.topic, r.partition, r.offset) for r in records)
        finally:
            ledger.release_all(name)
            await consumer.stop()


def serves_consumer_groups(bootstrap: str, timeout_s: float = 10.0) -> bool:
    """Ask the broker (ApiVersions v0) whether it answers JoinGroup (11) and SyncGroup (14)."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    client_id = b"kgroup-probe"
    body = struct.pack(">hhih", 18, 0, 1, len(client_id)) + client_id
    with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        header = _read(sock, 4)
        (size,) = struct.unpack(">i", header)
        payload = _read(sock, size)
    _correlation, error, count = struct.unpack_from(">ihi", payload, 0)
    if error != 0:
        return False
    keys = {struct.unpack_from(">hhh", payload, 10 + 6 * i)[0] for i in range(count)}
    return {11, 14} <= keys


def _read(sock: socket.socket, n: int) -> bytes:
    chunks = b""
    while len(chunks) < n:
        chunk = sock.recv(n - len(chunks))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        chunks += chunk
    return chunks


def produce(bootstrap: str, topic: str, count: int) -> dict[int, int]:
    """``count`` keyed records into ``topic``; returns partition -> records written."""
    import confluent_kafka

    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    written: dict[int, int] = {}
    errors: list[Any] = []

    def delivered(err: Any, message: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            written[message.partition()] = written.get(message.partition(), 0) + 1

    for i in range(count):
        producer.produce(topic, key=f"key-{i}".encode(), value=f"value-{i}".encode(), on_delivery=delivered)
    left = producer.flush(30)
    assert left == 0 and not errors, (left, errors[:3])
    return written


class KgroupClientMember(Member):
    """kgroup's own group client (``kgroup.client.GroupConsumer``), cooperative-sticky; it joins and
    rebalances but fetches no records."""

    def __init__(self, name: str, ledger: Ledger, bootstrap: str, group: str, topics: list[str]):
        super().__init__(name, ledger)
        self.bootstrap, self.group, self.topics = bootstrap, group, topics

    def run(self, stop: threading.Event) -> None:
        asyncio.run(self._main(stop))

    async def _main(self, stop: threading.Event) -> None:
        from kgroup.client import GroupConsumer
        from kgroup.member.config import MemberConfig
        from kgroup.member.events import PartitionsAssigned, PartitionsLost, PartitionsRevoked

        ledger, name = self.ledger, self.name

        def on_event(event: object) -> None:
            if isinstance(event, PartitionsAssigned):
                ledger.assigned(name, [(tp.topic, tp.partition) for tp in event.partitions])
            elif isinstance(event, (PartitionsRevoked, PartitionsLost)):
                ledger.revoked(name, [(tp.topic, tp.partition) for tp in event.partitions])

        config = MemberConfig(
            group_id=self.group,
            client_id=name,
            session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=HEARTBEAT_MS,
            assignors=("cooperative-sticky",),
        )
        consumer = GroupConsumer(self.bootstrap, config, topics=self.topics, on_event=on_event)
        await consumer.start()
        try:
            while not stop.is_set():
                await consumer.poll(int(POLL_S * 1000))
        finally:
            ledger.release_all(name)
            await consumer.close()


class JavaMember(Member):
    """Apache Kafka's Java ``KafkaConsumer`` in its own JVM: kgroup's shared driver
    (:class:`kgroup.testing.apache_kafka.java_client.JavaConsumer`, Kafka's default auto-commit as the
    other members have it).

    Its rebalance listener reports to the ledger through ``on_rebalance``, which the Java callback
    waits for: the ledger has a release before the consumer goes on (and, on close, before its
    LeaveGroup is sent). An exception ``poll()`` throws ends the member, as a failure.
    """

    def __init__(
        self,
        name: str,
        ledger: Ledger,
        bootstrap: str,
        group: str,
        topics: list[str],
        libs: KafkaLibs,
        assignor: str = "cooperative-sticky",
    ):
        super().__init__(name, ledger)
        self.bootstrap, self.group, self.topics = bootstrap, group, topics
        self.libs, self.assignor = libs, assignor

    def run(self, stop: threading.Event) -> None:
        ledger, name = self.ledger, self.name

        def on_rebalance(change: Rebalance) -> None:
            partitions = [(tp.topic, tp.partition) for tp in change.partitions]
            if change.kind == "assigned":
                ledger.assigned(name, partitions)
            else:  # revoked or lost
                ledger.revoked(name, partitions)

        consumer = JavaConsumer(
            self.bootstrap,
            self.group,
            self.topics,
            client_id=name,
            assignment_strategy=self.assignor,
            session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=HEARTBEAT_MS,
            enable_auto_commit=True,
            on_rebalance=on_rebalance,
            libs=self.libs,
        )
        failures: list[str] = []
        seen = 0

        def absorb() -> None:
            nonlocal seen
            events = consumer.events
            for event in events[seen:]:
                if event["event"] == "record":
                    self.consumed.add((event["topic"], int(event["partition"]), int(event["offset"])))
                elif event["event"] == "error":
                    failures.append(f"{event.get('where')}: {event.get('type')}: {event.get('message')}")
            seen = len(events)

        consumer.start()
        try:
            while not stop.wait(POLL_S) and not failures and consumer.pid is not None:
                absorb()
        finally:
            try:
                consumer.close()  # the revocations are in the ledger before the LeaveGroup
            finally:
                ledger.release_all(name)
        absorb()
        # a JVM that exited on its own has no "closed" event: JavaClientDied says why, in one line
        consumer.wait_for(lambda e: e["event"] == "closed", timeout_s=0, what="the close")
        if failures:
            raise AssertionError(f"java member {name} failed: {'; '.join(failures)}")
