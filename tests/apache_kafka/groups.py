"""What the group scenarios share: members of both client libraries, waiting for a settled group,
the per-generation table of who got what, and kgroup's own assignor's answer for the same input."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from kgroup.assignors import AssignmentRequest, create_assignor
from kgroup.model import Member, TopicMetadata, TopicPartition
from kgroup.testing.apache_kafka.java_client import JavaConsumer, start_all

#: fast group settings every scenario's consumers use unless it says otherwise (6 s is the brokers'
#: group.min.session.timeout.ms)
FAST = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500}

Owners = dict[str, frozenset[TopicPartition]]
#: generation -> client name -> the partitions its listener had after that generation's assignment
Generations = dict[int, dict[str, frozenset[TopicPartition]]]


class GroupMember(Protocol):
    name: str

    @property
    def assignment(self) -> frozenset[TopicPartition]: ...


def tps(topic: str, *partitions: int) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(topic, p) for p in partitions)


def all_partitions(topics: Mapping[str, int]) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(t, p) for t, n in topics.items() for p in range(n))


def java_consumer(
    target_bootstrap: str, group: str, topics: Sequence[str], name: str, log_dir: Path, **settings: Any
) -> JavaConsumer:
    """A started Java consumer whose client id (and so member id prefix) is ``name``."""
    return java_consumers(target_bootstrap, group, topics, [name], log_dir, **settings)[0]


def java_consumers(
    target_bootstrap: str,
    group: str,
    topics: Sequence[str],
    names: Sequence[str],
    log_dir: Path,
    **settings: Any,
) -> list[JavaConsumer]:
    """Java consumers named ``names``, their JVMs started side by side (``subscribe=False`` to let the
    test decide when each joins)."""
    merged = {**FAST, **settings}
    consumers = [
        JavaConsumer(target_bootstrap, group, topics, client_id=name, name=name, log_dir=log_dir, **merged)
        for name in names
    ]
    start_all(*consumers)
    return consumers


class RdkafkaMember:
    """A librdkafka (confluent-kafka) consumer polling in a thread; ``assignment`` after each poll."""

    def __init__(self, bootstrap: str, group: str, topics: Sequence[str], name: str, **config: Any) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._assignment: frozenset[TopicPartition] = frozenset()
        self._stop = threading.Event()
        self.errors: list[str] = []
        self._config = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            "partitioner": "murmur2_random",
            "log_level": 3,
            **config,
        }
        self._topics = list(topics)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"rdkafka-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from confluent_kafka import Consumer

        try:
            consumer = Consumer({**self._config, "error_cb": lambda err: self.errors.append(str(err))})
            consumer.subscribe(self._topics)
            try:
                while not self._stop.is_set():
                    consumer.poll(0.1)
                    owned = frozenset(TopicPartition(tp.topic, tp.partition) for tp in consumer.assignment())
                    with self._lock:
                        self._assignment = owned
            finally:
                consumer.close()
                with self._lock:
                    self._assignment = frozenset()
        except BaseException as exc:
            self._error = exc

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        with self._lock:
            if self._error is not None:
                raise AssertionError(f"{self.name} failed: {self._error}")
            return self._assignment

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)
        assert not self._thread.is_alive(), f"{self.name} did not close"
        if self._error is not None:
            raise AssertionError(f"{self.name} failed: {self._error}")


def exact_owners(members: Sequence[GroupMember], partitions: frozenset[TopicPartition]) -> str | None:
    """Why ``members`` do not own ``partitions`` exactly once each, or ``None`` when they do."""
    seen: dict[TopicPartition, list[str]] = {}
    for member in members:
        for tp in member.assignment:
            seen.setdefault(tp, []).append(member.name)
    doubled = {str(tp): owners for tp, owners in seen.items() if len(owners) > 1}
    missing = sorted(str(tp) for tp in partitions - set(seen))
    extra = sorted(str(tp) for tp in set(seen) - partitions)
    if doubled or missing or extra:
        return f"owned twice {doubled}, unowned {missing}, unknown {extra}"
    return None


def wait_settled(
    members: Sequence[GroupMember],
    partitions: frozenset[TopicPartition],
    *,
    timeout_s: float = 90.0,
    settle_s: float = 0.0,
    also: Callable[[], bool] = lambda: True,
) -> Owners:
    """Until every partition has exactly one owner, every Java member is in the same generation and
    ``also()`` holds — for ``settle_s`` without a change; then each member's partitions."""
    deadline = time.monotonic() + timeout_s
    stable_since: float | None = None
    last: Owners | None = None
    problem = "nothing checked"
    while time.monotonic() < deadline:
        owners = {m.name: m.assignment for m in members}
        generations = {m.generation for m in members if isinstance(m, JavaConsumer)}
        problem = exact_owners(members, partitions) or ""
        if not problem and len(generations) > 1:
            problem = f"Java members in generations {sorted(generations)}"
        if not problem and not also():
            problem = "the scenario's own condition does not hold"
        now = time.monotonic()
        if problem:
            stable_since = None
        elif owners != last or stable_since is None:
            stable_since = now
        last = owners
        if stable_since is not None and now - stable_since >= settle_s:
            return owners
        time.sleep(0.1)
    shown = {name: sorted(str(tp) for tp in parts) for name, parts in (last or {}).items()}
    raise AssertionError(f"the group did not settle within {timeout_s:.0f} s: {problem}; owners {shown}")


def generations(consumers: Sequence[JavaConsumer]) -> Generations:
    """Each generation's assignment per client, from the consumers' ``assigned`` callbacks."""
    table: Generations = {}
    for consumer in consumers:
        for rebalance in consumer.rebalances():
            if rebalance.kind == "assigned":
                table.setdefault(rebalance.generation, {})[consumer.name] = rebalance.assignment
    return dict(sorted(table.items()))


#: what the Java client logs (INFO, AbstractCoordinator) when its SyncGroup is answered
#: REBALANCE_IN_PROGRESS: the leader had assigned the generation, the next rebalance began first
_MISSED_SYNC = re.compile(
    r"SyncGroup failed: The group began another rebalance\."
    r".*Sent generation was Generation\{generationId=(\d+),"
)


def missed_generations(consumer: JavaConsumer) -> frozenset[int]:
    """The generations ``consumer`` was a member of but never got its assignment for (its SyncGroup
    came after the next rebalance began, as its client logged): it joins the next one still owning
    what it had before, which changes the generations that follow (Kafka does this under load)."""
    if not consumer.log_file.exists():
        return frozenset()
    text = consumer.log_file.read_text(errors="replace")
    return frozenset(int(m.group(1)) for m in _MISSED_SYNC.finditer(text))


def kgroup_assignment(
    strategy: str, consumers: Sequence[JavaConsumer], generation: int, topics: Mapping[str, int]
) -> dict[str, frozenset[TopicPartition]]:
    """kgroup's own assignor's answer for the members of ``generation``, each with what it owned and
    the generation it last had when it joined (read from its listener's callbacks).

    The members are the consumers subscribed before the generation's first callback and not closed
    by then: a member may miss a generation's callback (a cooperative newcomer whose SyncGroup comes
    after the next rebalance began), yet it was in the group the leader assigned.
    """
    callbacks = [r for c in consumers for r in c.rebalances() if r.generation == generation]
    started = min(r.ts_ms for r in callbacks)
    members: list[Member] = []
    names: dict[str, str] = {}
    for consumer in consumers:
        events = consumer.events
        subscribed = [e["ts"] for e in events if e["event"] == "subscribed"]
        closed = [e["ts"] for e in events if e["event"] == "closed"]
        if not subscribed or subscribed[0] > started or (closed and closed[0] <= started):
            continue
        rebalances = consumer.rebalances()
        later = [r for r in rebalances if r.generation >= generation]
        if not later:
            continue
        before = [r for r in rebalances if r.generation < generation]
        owned = before[-1].assignment if before else frozenset()
        last_generation = before[-1].generation if before else -1
        names[later[0].member_id] = consumer.name
        members.append(
            Member(later[0].member_id, tuple(topics), owned=tuple(sorted(owned)), generation=last_generation)
        )
    members.sort(key=lambda m: m.member_id)
    request = AssignmentRequest(members, {t: TopicMetadata(t, n) for t, n in topics.items()})
    answer = create_assignor(strategy).assign(request)
    return {names[member_id]: frozenset(parts) for member_id, parts in answer.items()}


def show(table: Mapping[int, Mapping[str, frozenset[TopicPartition]]]) -> dict[int, dict[str, list[str]]]:
    """A generation table in a form that reads well in an assertion message."""
    return {g: {n: sorted(str(tp) for tp in parts) for n, parts in row.items()} for g, row in table.items()}
