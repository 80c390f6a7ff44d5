"""One Spark task's producer on Kafka's wire: the sink's bulk write path.

:class:`BulkProducer` sends record batches that :mod:`kgroup.spark.source.record_batches` has
written from Arrow columns, over blocking connections (:mod:`kgroup.spark.source.broker_connection`)
— no librdkafka, no Python object per record. It keeps the delivery rules of Kafka's Java producer
with its defaults (``acks=all``, ``enable.idempotence=true``, at most 5 requests in flight per
connection):

* Each connection asks ApiVersions first and speaks the highest version of each API both sides
  support, as Kafka's clients do (Produce v13 names topics by id: it is spoken when Metadata gave
  every topic's id, v12 otherwise, as the Java producer decides).
* Metadata finds each topic's partitions and their leaders; each leader gets one connection.
* Idempotent (the default): InitProducerId gives the task a producer id; each partition's batches
  carry consecutive sequence numbers, so a batch sent again after a lost answer is written once
  (the broker answers it as a duplicate).
* A Produce request holds at most one batch per partition (Kafka requires it from v3 on); a
  partition's batches are sent in order, and up to ``max_in_flight`` requests wait for their answers
  on a connection.
* A retriable error (a moved leader, too few in-sync replicas, a lost connection, …) makes the
  producer wait for every answer still due, ask Metadata again, and send every unacknowledged batch
  again in sequence order, until the batch's delivery timeout; any other error fails the task with one
  line naming it.
"""

from __future__ import annotations

import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kgroup.member.errors import RETRIABLE
from kgroup.model import ErrorCode, KgroupError
from kgroup.spark.source.broker_connection import (
    BrokerConnection,
    InFlight,
    RetriableBrokerError,
    bootstrap_addresses,
)
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.codec import build, error_from_wire, request_class

__all__ = ["BulkProducer", "ProducerSettings", "SentBatch"]

#: the versions the sink speaks: (lowest, highest); the highest the broker supports too is spoken
PRODUCE_VERSIONS = (8, 13)  # v8: Kafka 2.4+ (record errors in the answer); v13 names topics by id
INIT_PRODUCER_ID_VERSIONS = (1, 5)
METADATA_VERSIONS = (8, 13)  # v10+ give topic ids
DESCRIBE_CONFIGS_VERSIONS = (1, 4)
_BROKER_RESOURCE = 4  # ConfigResource.Type.BROKER
_AUTO_CREATE = "auto.create.topics.enable"
#: the last Produce version that names topics
_PRODUCE_BY_NAME = 12
NO_PRODUCER_ID = -1
NO_SEQUENCE = -1
_INT32_MAX = 2**31 - 1

#: InitProducerId answers that mean "not ready yet" (a broker just started, a coordinator moving)
_INIT_RETRIABLE = frozenset(
    {
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NETWORK_EXCEPTION,
    }
)
_HINTS = {
    ErrorCode.MESSAGE_TOO_LARGE: "a record is larger than the topic's max.message.bytes",
    ErrorCode.RECORD_LIST_TOO_LARGE: "a batch is larger than the topic's max.message.bytes; "
    "lower kafka.batch.size",
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "the principal may not write to the topic",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "the principal may not write idempotently; set "
    "kafka.enable.idempotence=false or grant IdempotentWrite",
    ErrorCode.INVALID_REQUIRED_ACKS: "give kafka.acks as all, -1, 0 or 1",
}


def missing_topic_message(topic: str, bootstrap: str) -> str:
    """The sink's line for a topic the cluster neither has nor creates on first use."""
    return (
        f"topic: {topic!r} does not exist on the cluster at {bootstrap}, which does not create topics "
        "on first use (auto.create.topics.enable=false); create it first (kafka-topics.sh --create, "
        "or an AdminClient's create_topics)"
    )


def unauthorized_topic_message(topic: str) -> str:
    return (
        f"topic: the principal may not write to {topic!r} (TOPIC_AUTHORIZATION_FAILED); grant it Write "
        "on the topic (and Create, for a topic the broker creates on first use)"
    )


@dataclass(frozen=True, slots=True)
class ProducerSettings:
    """What the bulk path does with the ``kafka.*`` options it honours (checked on the driver)."""

    acks: int = -1
    idempotent: bool = True
    client_id: str = "kgroup-spark"
    request_timeout_ms: int = 30_000
    delivery_timeout_ms: int = 60_000
    max_batch_bytes: int = 1_000_000
    max_in_flight: int = 5
    retry_backoff_ms: int = 100


@dataclass(slots=True)
class SentBatch:
    """One partition's batch: its bytes (header sealed), record count and base sequence."""

    topic: str
    partition: int
    data: Any  # bytes-like
    records: int
    sequence: int = NO_SEQUENCE
    order: int = 0  # the send order, which retries keep
    first_sent: float = 0.0  # when it was handed to send() (time.monotonic())


@dataclass(slots=True)
class _Connection:
    node: int
    link: BrokerConnection
    waiting: deque[tuple[InFlight, list[SentBatch]]] = field(default_factory=deque)


def _request(api_key: ApiKey, version: int) -> type[Any]:
    cls = request_class(api_key, version)
    assert cls is not None  # every version in the ranges above is in kgroup's codec
    return cls


class BulkProducer:
    """One task's producer (blocking, single-threaded): batches in, acknowledged records counted."""

    def __init__(self, bootstrap_servers: str, settings: ProducerSettings, timeout_s: float) -> None:
        self.settings = settings
        self._bootstrap = bootstrap_addresses(bootstrap_servers)
        self._bootstrap_text = bootstrap_servers
        self._timeout_s = timeout_s
        self._request_timeout_s = settings.request_timeout_ms / 1000
        self._brokers: dict[int, tuple[str, int]] = {}
        self._leaders: dict[str, list[int]] = {}
        self._connections: dict[int, _Connection] = {}
        self._sequences: dict[tuple[str, int], int] = {}
        self._failed: list[SentBatch] = []
        self._sent = 0
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = -1
        self.acknowledged: dict[tuple[str, int], int] = {}
        #: api key -> the version last spoken (what ApiVersions and the topics' ids allowed)
        self.versions_spoken: dict[ApiKey, int] = {}
        self._topic_ids: dict[str, uuid.UUID] = {}  # (Metadata v10+)
        self._topic_names: dict[uuid.UUID, str] = {}

    # --- the cluster -------------------------------------------------------------------------------

    def partition_count(self, topic: str) -> int:
        """The topic's partition count (Metadata, asked once per topic).

        As Kafka's Java producer (and so Spark's ``format("kafka")`` sink), the Metadata request
        allows the broker to create a missing topic (``allow_auto_topic_creation``): a cluster with
        ``auto.create.topics.enable`` creates it with its ``num.partitions``, answering
        ``LEADER_NOT_AVAILABLE`` (asked again after ``retry.backoff.ms``) until it has leaders. A
        cluster that does not create topics answers ``UNKNOWN_TOPIC_OR_PARTITION``: one line at
        once, where the Java producer would wait ``max.block.ms`` first."""
        deadline = time.monotonic() + self._timeout_s
        asked_config = False
        while topic not in self._leaders:
            missing = self._refresh_metadata([topic], missing_is_error=False)
            if topic in self._leaders:
                break
            if missing and not asked_config:
                # KRaft answers UNKNOWN_TOPIC_OR_PARTITION whether or not it creates the topic:
                # the broker's auto.create.topics.enable says which (DescribeConfigs)
                asked_config = True
                if self._auto_create_enabled() is False:
                    raise KgroupError(missing_topic_message(topic, self._bootstrap_text))
            if time.monotonic() >= deadline:
                raise KgroupError(
                    f"topic: {topic!r} does not exist on the cluster at {self._bootstrap_text} and was not "
                    f"created within {self._timeout_s:g} s (kafka.default.api.timeout.ms); create it first, "
                    "or grant Create on it"
                )
            time.sleep(self.settings.retry_backoff_ms / 1000)
        return len(self._leaders[topic])

    def _auto_create_enabled(self) -> bool | None:
        """``auto.create.topics.enable`` of a broker of the cluster (DescribeConfigs on the broker
        itself, as Kafka's admin client sends a BROKER resource), or None when none says."""
        for node, (host, port) in sorted(self._brokers.items()):
            try:
                link = BrokerConnection(host, port, self._timeout_s, self.settings.client_id)
            except RetriableBrokerError:
                continue
            try:
                version = link.version(ApiKey.DESCRIBE_CONFIGS, DESCRIBE_CONFIGS_VERSIONS, self._timeout_s)
                request = {
                    "resources": [
                        {
                            "resource_type": _BROKER_RESOURCE,
                            "resource_name": str(node),
                            "configuration_keys": [_AUTO_CREATE],
                        }
                    ],
                    "include_synonyms": False,
                    "include_documentation": False,
                }
                body = build(_request(ApiKey.DESCRIBE_CONFIGS, version), request)
                answer = link.request(body, self._timeout_s)
            except (RetriableBrokerError, KgroupError, OSError):
                continue
            finally:
                link.close()
            for result in answer.results:
                if int(result.error_code) != ErrorCode.NONE:
                    return None  # not allowed to describe the broker (DescribeConfigs on the cluster)
                for entry in result.configs:
                    if entry.name == _AUTO_CREATE and entry.value is not None:
                        return bool(entry.value.strip().lower() == "true")
            return None
        return None

    def _bootstrap_request(self, make: Callable[[BrokerConnection], Any]) -> Any:
        """Ask a known broker (a bootstrap one first) until one answers; ``make`` builds the request
        for the connection (at a version it speaks)."""
        problems = []
        candidates = list(self._bootstrap) + [a for a in self._brokers.values() if a not in self._bootstrap]
        for host, port in candidates:
            try:
                link = BrokerConnection(host, port, self._timeout_s, self.settings.client_id)
            except RetriableBrokerError as exc:
                problems.append(str(exc))
                continue
            try:
                return link.request(make(link), self._timeout_s)
            except RetriableBrokerError as exc:
                problems.append(str(exc))
            finally:
                link.close()
        raise KgroupError(
            f"kafka.bootstrap.servers: no broker answered at {self._bootstrap_text} ({'; '.join(problems)}); "
            "check the address and that the broker is running"
        )

    def _refresh_metadata(self, topics: list[str], *, missing_is_error: bool) -> set[str]:
        """Ask Metadata for ``topics`` (allowing the broker to create them, as producers do); the
        ones it answered UNKNOWN_TOPIC_OR_PARTITION (``missing_is_error``: a :class:`KgroupError`)."""
        missing: set[str] = set()

        def metadata(link: BrokerConnection) -> Any:
            version = link.version(ApiKey.METADATA, METADATA_VERSIONS, self._timeout_s)
            self.versions_spoken[ApiKey.METADATA] = version
            return build(
                _request(ApiKey.METADATA, version),
                {
                    "topics": [{"name": t, "topic_id": None} for t in sorted(set(topics))],
                    "allow_auto_topic_creation": True,
                    "include_cluster_authorized_operations": False,
                    "include_topic_authorized_operations": False,
                },
            )

        answer = self._bootstrap_request(metadata)
        self._brokers.update({int(b.node_id): (b.host, int(b.port)) for b in answer.brokers})
        for meta in answer.topics:
            error = error_from_wire(int(meta.error_code))
            if error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                if missing_is_error:
                    raise KgroupError(missing_topic_message(meta.name, self._bootstrap_text))
                missing.add(meta.name)
                continue
            if error == ErrorCode.TOPIC_AUTHORIZATION_FAILED:
                raise KgroupError(unauthorized_topic_message(meta.name))
            if not meta.partitions:  # being created (LEADER_NOT_AVAILABLE): asked again
                continue
            if error not in (ErrorCode.NONE, *RETRIABLE):
                raise KgroupError(
                    f"topic: the broker refused Metadata for {meta.name!r} ({error.name}); "
                    f"{_HINTS.get(error, 'check the broker')}"
                )
            leaders = [-1] * len(meta.partitions)
            for part in meta.partitions:
                index = int(part.partition_index)
                if 0 <= index < len(leaders):
                    leaders[index] = int(part.leader_id)
            self._leaders[meta.name] = leaders
            topic_id = getattr(meta, "topic_id", None)
            if topic_id is not None and topic_id.int:
                self._topic_ids[meta.name] = topic_id
                self._topic_names[topic_id] = meta.name
        return missing

    def _connection(self, node: int) -> _Connection | None:
        connection = self._connections.get(node)
        if connection is None:
            address = self._brokers.get(node)
            if address is None:
                return None
            connection = _Connection(
                node, BrokerConnection(*address, self._timeout_s, self.settings.client_id)
            )
            self._connections[node] = connection
        return connection

    def _init_producer_id(self) -> None:
        """A producer id for this task (InitProducerId, asked again while the broker is not ready)."""

        def init(link: BrokerConnection) -> Any:
            version = link.version(ApiKey.INIT_PRODUCER_ID, INIT_PRODUCER_ID_VERSIONS, self._timeout_s)
            self.versions_spoken[ApiKey.INIT_PRODUCER_ID] = version
            fields = {"transactional_id": None, "transaction_timeout": 60_000}
            return build(_request(ApiKey.INIT_PRODUCER_ID, version), fields)

        deadline = time.monotonic() + self._timeout_s
        while True:
            answer = self._bootstrap_request(init)
            error = error_from_wire(int(answer.error_code))
            if error not in _INIT_RETRIABLE or time.monotonic() > deadline:
                break
            time.sleep(self.settings.retry_backoff_ms / 1000)
        if error != ErrorCode.NONE:
            raise KgroupError(
                f"kafka.enable.idempotence: the broker gave no producer id ({error.name}); "
                f"{_HINTS.get(error, 'set kafka.enable.idempotence=false to write without one')}"
            )
        self.producer_id = int(answer.producer_id)
        self.producer_epoch = int(answer.producer_epoch)

    # --- sending -----------------------------------------------------------------------------------

    def next_sequence(self, topic: str, partition: int, records: int) -> int:
        """The base sequence of a partition's next batch of ``records`` (-1 when not idempotent)."""
        if not self.settings.idempotent:
            return NO_SEQUENCE
        if self.producer_id == NO_PRODUCER_ID:
            self._init_producer_id()
        key = (topic, partition)
        base = self._sequences.get(key, 0)
        self._sequences[key] = (base + records) % (_INT32_MAX + 1)  # Kafka's sequences wrap to 0
        return base

    def send(self, batches: list[SentBatch]) -> None:
        """Send ``batches`` (each partition's in sequence order), waiting only for room in flight."""
        now = time.monotonic()  # the delivery timeout runs from here, as from a Java producer's send()
        for batch in batches:
            self._sent += 1
            batch.order = self._sent
            batch.first_sent = now
        self._send_all(batches)
        if self._failed:
            self._recover()

    def _send_all(self, batches: list[SentBatch]) -> None:
        """Send ``batches`` in requests of at most one batch per partition: the k-th batch of a
        partition goes in its leader's k-th request, so each partition's batches go out in order."""
        by_leader: dict[int, list[list[SentBatch]]] = {}
        depth: dict[tuple[str, int], int] = {}
        for batch in batches:
            leaders = self._leaders.get(batch.topic, [])
            leader = leaders[batch.partition] if batch.partition < len(leaders) else -1
            if leader < 0:  # no leader now: sent again after the next Metadata
                self._failed.append(batch)
                continue
            requests = by_leader.setdefault(leader, [])
            key = (batch.topic, batch.partition)
            index = depth.get(key, 0)
            depth[key] = index + 1
            if index == len(requests):
                requests.append([])
            requests[index].append(batch)
        for leader, requests in by_leader.items():
            for request in requests:
                self._send_request(leader, request)

    def _connection_or_none(self, leader: int) -> _Connection | None:
        try:
            return self._connection(leader)
        except RetriableBrokerError:
            return None

    def _send_request(self, leader: int, batches: list[SentBatch]) -> None:
        # Once a batch has failed, nothing newer goes out until it is sent again (``_recover``): a
        # partition's batches reach the broker in sequence order, and a batch written whose answer
        # was lost is still among the last five the broker remembers when it comes again.
        connection = None if self._failed else self._connection_or_none(leader)
        if connection is None:
            self._failed.extend(batches)
            return
        while len(connection.waiting) >= self.settings.max_in_flight or self._first_unanswered(
            connection, batches
        ):
            self._receive_oldest(connection)
            if self._failed:
                self._failed.extend(batches)
                return
        topics: dict[str, list[dict[str, Any]]] = {}
        for batch in batches:
            topics.setdefault(batch.topic, []).append(
                {"index": batch.partition, "records": bytes(batch.data)}
            )
        try:
            version = connection.link.version(ApiKey.PRODUCE, PRODUCE_VERSIONS, self._timeout_s)
            if version > _PRODUCE_BY_NAME and not all(t in self._topic_ids for t in topics):
                version = _PRODUCE_BY_NAME  # a topic without a known id: by name (the Java producer's rule)
            self.versions_spoken[ApiKey.PRODUCE] = version
            body = build(
                _request(ApiKey.PRODUCE, version),
                {
                    "transactional_id": None,
                    "acks": self.settings.acks,
                    "timeout": self.settings.request_timeout_ms,
                    "topic_data": [
                        {"name": t, "topic_id": self._topic_ids.get(t), "partition_data": parts}
                        for t, parts in topics.items()
                    ],
                },
            )
            in_flight = connection.link.send(body, self._request_timeout_s)
        except RetriableBrokerError:
            self._lose(connection)
            self._failed.extend(batches)
            return
        if self.settings.acks == 0:  # no answer comes: sent is done
            for batch in batches:
                self._acknowledge(batch)
            return
        connection.waiting.append((in_flight, batches))

    def _first_unanswered(self, connection: _Connection, batches: list[SentBatch]) -> bool:
        """A partition of ``batches`` has no batch acknowledged yet and one waiting for its answer.

        A partition's first batch goes alone: a broker that has no state of this producer for the
        partition takes a batch of any sequence, so were the first batch refused (a leader not ready
        yet) while the second is in flight, the second would be written first and the first then
        refused as out of order."""
        if not self.settings.idempotent:
            return False
        new = {(b.topic, b.partition) for b in batches} - self.acknowledged.keys()
        return bool(new) and any(
            (b.topic, b.partition) in new for _in_flight, waiting in connection.waiting for b in waiting
        )

    def _receive_oldest(self, connection: _Connection) -> None:
        in_flight, batches = connection.waiting[0]
        try:
            answer = connection.link.receive(in_flight, self._request_timeout_s + 5)
        except RetriableBrokerError:
            self._lose(connection)
            return
        connection.waiting.popleft()
        results: dict[tuple[str, int], Any] = {}
        for topic in answer.responses:
            name = getattr(topic, "name", None)
            if name is None:  # v13+: by id
                name = self._topic_names.get(topic.topic_id, "")
            for part in topic.partition_responses:
                results[(name, int(part.index))] = part
        for batch in batches:
            part = results.get((batch.topic, batch.partition))
            if part is None:
                self._failed.append(batch)
                continue
            error = error_from_wire(int(part.error_code))
            if error in (ErrorCode.NONE, ErrorCode.DUPLICATE_SEQUENCE_NUMBER):
                self._acknowledge(batch)
            elif error in RETRIABLE or (
                error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and self._earlier_failed(batch)
            ):
                self._failed.append(batch)
            else:
                raise self._not_delivered(batch, error, part)

    def _earlier_failed(self, batch: SentBatch) -> bool:
        """An earlier batch of the same partition failed: this one's sequence gap is that batch's."""
        return any(
            f.topic == batch.topic and f.partition == batch.partition and f.order < batch.order
            for f in self._failed
        )

    def _acknowledge(self, batch: SentBatch) -> None:
        key = (batch.topic, batch.partition)
        self.acknowledged[key] = self.acknowledged.get(key, 0) + batch.records

    def _lose(self, connection: _Connection) -> None:
        """A lost connection: its unanswered batches are sent again."""
        connection.link.close()
        self._connections.pop(connection.node, None)
        for _in_flight, batches in connection.waiting:
            self._failed.extend(batches)
        connection.waiting.clear()

    def _not_delivered(self, batch: SentBatch, error: ErrorCode, part: Any) -> KgroupError:
        detail = error.name if error != ErrorCode.UNKNOWN_SERVER_ERROR else f"error {int(part.error_code)}"
        message = getattr(part, "error_message", None)
        if message:
            detail += f": {message}"
        hint = _HINTS.get(error, "check the broker")
        return KgroupError(
            f"kafka.bootstrap.servers: {batch.records} records to {batch.topic}-{batch.partition} were not "
            f"delivered ({detail}); {hint}"
        )

    def _drain(self) -> None:
        """Read every answer still due."""
        for connection in list(self._connections.values()):
            while connection.waiting and connection.node in self._connections:
                self._receive_oldest(connection)

    def _recover(self) -> None:
        """Wait for every answer still due, ask Metadata again, and send the failed batches again in
        their first order; until a batch's delivery timeout."""
        while self._failed:
            self._drain()
            retry = sorted(self._failed, key=lambda b: b.order)
            self._failed = []
            now = time.monotonic()
            timeout_s = self.settings.delivery_timeout_ms / 1000
            for batch in retry:
                if now - batch.first_sent > timeout_s:
                    raise KgroupError(
                        f"kafka.bootstrap.servers: {batch.records} records to {batch.topic}-"
                        f"{batch.partition} were not delivered within {timeout_s:g} s "
                        "(kafka.delivery.timeout.ms); check the broker"
                    )
            time.sleep(self.settings.retry_backoff_ms / 1000)
            try:
                self._refresh_metadata([b.topic for b in retry], missing_is_error=False)
            except KgroupError:
                self._failed = retry  # no broker answered: ask again, until the delivery timeout
                continue
            self._send_all(retry)

    def flush(self) -> None:
        """Wait until every batch sent is acknowledged (or fail with the first error)."""
        self._drain()
        while self._failed:
            self._recover()
            self._drain()

    def close(self) -> None:
        for connection in self._connections.values():
            connection.link.close()
        self._connections.clear()
