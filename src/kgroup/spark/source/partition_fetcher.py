"""One partition's records, fetched raw: the ``kgroup`` source's bulk read path in an executor task.

:class:`PartitionFetcher` speaks Kafka's protocol itself over a blocking socket
(:mod:`kgroup.spark.source.broker_connection`; requests and answers are kgroup's ``kio`` codec):
Metadata finds the partition's leader, then Fetch asks for the records from an offset — at the
highest version both sides support (ApiVersions, asked once per connection, as Kafka's clients do:
v13+ name the topic by the id Metadata gave, v12 by name when it gave none). The answer's record
batches are handed as bytes to :mod:`kgroup.spark.source.record_columns`, which turns them into
Arrow columns in bulk. librdkafka would build a Python object per record; this path builds none.

It is the path of a PLAINTEXT connection (``kafka.security.protocol`` unset or ``PLAINTEXT``);
any other security protocol reads through confluent-kafka (:func:`kgroup.spark.source.kafka_io.fetch_range`).
Leadership moves (NOT_LEADER_OR_FOLLOWER and its kin) are followed through a new Metadata request.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from kgroup.model import ErrorCode
from kgroup.spark.source.broker_connection import BrokerConnection, RetriableBrokerError, bootstrap_addresses
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.codec import build, error_from_wire, request_class

__all__ = ["FetchAnswer", "PartitionFetcher", "RetriableFetchError"]

#: the versions the bulk read speaks: (lowest, highest); the highest the broker supports too is spoken
FETCH_VERSIONS = (5, 18)  # v5: the log start offset in the answer; v13+ name topics by id
METADATA_VERSIONS = (8, 13)  # v10+ give topic ids
LIST_OFFSETS_VERSIONS = (4, 11)  # v4: the current leader epoch
_FETCH_BY_NAME = 12  # the last Fetch version that names topics

#: errors that a new Metadata request and a retry resolve (Kafka's consumer refreshes metadata on them)
_RETRY_AFTER_METADATA = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.KAFKA_STORAGE_ERROR,
    }
)


#: the broker could not answer now (no leader, moved leader, connection lost); fetch again
RetriableFetchError = RetriableBrokerError


@dataclass(frozen=True, slots=True)
class FetchAnswer:
    """One partition's part of a Fetch answer."""

    error: ErrorCode
    records: bytes | None
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted: tuple[tuple[int, int], ...]  # (producer id, first offset)


class PartitionFetcher:
    """Fetches one partition's record batches from its leader (blocking; one task's own connection)."""

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        partition: int,
        *,
        timeout_s: float,
        read_committed: bool,
        max_wait_ms: int = 500,
        partition_max_bytes: int = 8 << 20,
        client_id: str = "kgroup-spark",
    ) -> None:
        self.topic = topic
        self.partition = partition
        self._bootstrap = bootstrap_addresses(bootstrap_servers)
        self._timeout_s = timeout_s
        self._read_committed = read_committed
        self._max_wait_ms = max_wait_ms
        self._partition_max_bytes = partition_max_bytes
        self._client_id = client_id
        self._leader: BrokerConnection | None = None
        self._topic_id: uuid.UUID | None = None  # from Metadata v10+
        #: api key -> the version last spoken
        self.versions_spoken: dict[ApiKey, int] = {}

    def _request(self, link: BrokerConnection, api_key: ApiKey, ours: tuple[int, int]) -> type[Any]:
        version = link.version(api_key, ours, self._timeout_s)
        if api_key == ApiKey.FETCH and version > _FETCH_BY_NAME and self._topic_id is None:
            version = _FETCH_BY_NAME  # no id known for the topic: by name (the Java consumer's rule)
        self.versions_spoken[api_key] = version
        cls = request_class(api_key, version)
        assert cls is not None  # every version in the ranges above is in kgroup's codec
        return cls

    def close(self) -> None:
        if self._leader is not None:
            self._leader.close()
            self._leader = None

    def _find_leader(self) -> BrokerConnection:
        """Ask the bootstrap brokers (in turn) who leads the partition; connect to it."""
        problems = []
        for host, port in self._bootstrap:
            try:
                connection = BrokerConnection(host, port, self._timeout_s, self._client_id)
            except RetriableFetchError as exc:
                problems.append(str(exc))
                continue
            try:
                request = build(
                    self._request(connection, ApiKey.METADATA, METADATA_VERSIONS),
                    {
                        "topics": [{"name": self.topic, "topic_id": None}],
                        "allow_auto_topic_creation": False,
                        "include_cluster_authorized_operations": False,
                        "include_topic_authorized_operations": False,
                    },
                )
                answer = connection.request(request, self._timeout_s)
            except RetriableFetchError as exc:
                problems.append(str(exc))
                continue
            leader = self._leader_of(answer)
            if leader is None:
                connection.close()
                problems.append(f"{connection.address}: {self.topic}-{self.partition} has no leader")
                continue
            node_host, node_port = leader
            if f"{node_host}:{node_port}" == connection.address:
                return connection
            connection.close()
            return BrokerConnection(node_host, node_port, self._timeout_s, self._client_id)
        raise RetriableFetchError("; ".join(problems) or "no bootstrap broker")

    def _leader_of(self, answer: Any) -> tuple[str, int] | None:
        brokers = {int(b.node_id): (b.host, int(b.port)) for b in answer.brokers}
        for topic in answer.topics:
            if topic.name != self.topic or int(topic.error_code) != 0:
                continue
            topic_id = getattr(topic, "topic_id", None)
            self._topic_id = topic_id if topic_id is not None and topic_id.int else None
            for part in topic.partitions:
                if int(part.partition_index) == self.partition and int(part.error_code) == 0:
                    return brokers.get(int(part.leader_id))
        return None

    def fetch(self, offset: int) -> FetchAnswer:
        """The leader's answer for the records from ``offset`` (RetriableFetchError: ask again)."""
        if self._leader is None:
            self._leader = self._find_leader()
        request = build(
            self._request(self._leader, ApiKey.FETCH, FETCH_VERSIONS),
            {
                "replica_id": -1,
                "max_wait": self._max_wait_ms,
                "min_bytes": 1,
                "max_bytes": max(self._partition_max_bytes, 1 << 20),
                "isolation_level": 1 if self._read_committed else 0,
                "session_id": 0,
                "session_epoch": -1,  # no fetch session: a full fetch each time
                "topics": [
                    {
                        "topic": self.topic,
                        "topic_id": self._topic_id,
                        "partitions": [
                            {
                                "partition": self.partition,
                                "current_leader_epoch": -1,
                                "fetch_offset": offset,
                                "log_start_offset": -1,
                                "partition_max_bytes": self._partition_max_bytes,
                            }
                        ],
                    }
                ],
                "forgotten_topics_data": [],
                "rack_id": "",
            },
        )
        answer = self._leader.request(request, self._timeout_s + self._max_wait_ms / 1000)
        top_error = error_from_wire(int(answer.error_code))
        if top_error != ErrorCode.NONE:
            self.close()
            raise RetriableFetchError(f"Fetch answered {top_error.name}")
        for topic in answer.responses:
            by_id = hasattr(topic, "topic_id")  # v13+
            if (topic.topic_id != self._topic_id) if by_id else (topic.topic != self.topic):
                continue
            for part in topic.partitions:
                if int(part.partition_index) != self.partition:
                    continue
                error = error_from_wire(int(part.error_code))
                if error in _RETRY_AFTER_METADATA:
                    self.close()
                    raise RetriableFetchError(f"{self.topic}-{self.partition}: {error.name}")
                return FetchAnswer(
                    error,
                    None if part.records is None else bytes(part.records),
                    int(part.high_watermark),
                    int(part.last_stable_offset),
                    int(part.log_start_offset),
                    tuple((int(t.producer_id), int(t.first_offset)) for t in part.aborted_transactions or ()),
                )
        raise RetriableFetchError(f"the Fetch answer has no {self.topic}-{self.partition}")

    def earliest_offset(self) -> int:
        """The partition's log start offset (ListOffsets, EARLIEST)."""
        if self._leader is None:
            self._leader = self._find_leader()
        request = build(
            self._request(self._leader, ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSIONS),
            {
                "replica_id": -1,
                "isolation_level": 1 if self._read_committed else 0,
                "timeout": int(self._timeout_s * 1000),  # (v10+)
                "topics": [
                    {
                        "name": self.topic,
                        "partitions": [
                            {"partition_index": self.partition, "current_leader_epoch": -1, "timestamp": -2}
                        ],
                    }
                ],
            },
        )
        answer = self._leader.request(request, self._timeout_s)
        for topic in answer.topics:
            for part in topic.partitions:
                if topic.name == self.topic and int(part.partition_index) == self.partition:
                    error = error_from_wire(int(part.error_code))
                    if error != ErrorCode.NONE:
                        self.close()
                        raise RetriableFetchError(f"ListOffsets answered {error.name}")
                    return int(part.offset)
        raise RetriableFetchError(f"the ListOffsets answer has no {self.topic}-{self.partition}")


def wait(seconds: float) -> None:
    """A short pause between retries (a name so the fetch loop reads as what it does)."""
    time.sleep(seconds)
