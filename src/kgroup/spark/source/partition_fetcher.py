"""One partition's records, fetched raw: the ``kgroup`` source's bulk read path in an executor task.

:class:`PartitionFetcher` speaks Kafka's protocol itself over a blocking socket
(:mod:`kgroup.spark.source.broker_connection`; requests and answers are kgroup's ``kio`` codec):
Metadata finds the partition's leader, then Fetch (v11, topics by name; every Kafka broker since
2.3 and ``kgroup serve`` answer it) asks for the records from an offset. The answer's record
batches are handed as bytes to :mod:`kgroup.spark.source.record_columns`, which turns them into
Arrow columns in bulk. librdkafka would build a Python object per record; this path builds none.

It is the path of a PLAINTEXT connection (``kafka.security.protocol`` unset or ``PLAINTEXT``);
any other security protocol reads through confluent-kafka (:func:`kgroup.spark.source.kafka_io.fetch_range`).
Leadership moves (NOT_LEADER_OR_FOLLOWER and its kin) are followed through a new Metadata request.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from kgroup.model import ErrorCode, KgroupError
from kgroup.spark.source.broker_connection import BrokerConnection, RetriableBrokerError, bootstrap_addresses
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.codec import build, error_from_wire, request_class

__all__ = ["FetchAnswer", "PartitionFetcher", "RetriableFetchError"]

FETCH_VERSION = 11  # the newest Fetch that names topics (v13+ use topic ids)
METADATA_VERSION = 8
LIST_OFFSETS_VERSION = 4

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
        if not self._bootstrap:
            raise KgroupError("kafka.bootstrap.servers: no address given; give host:port[,host:port]")
        self._timeout_s = timeout_s
        self._read_committed = read_committed
        self._max_wait_ms = max_wait_ms
        self._partition_max_bytes = partition_max_bytes
        self._client_id = client_id
        self._leader: BrokerConnection | None = None
        fetch_cls = request_class(ApiKey.FETCH, FETCH_VERSION)
        metadata_cls = request_class(ApiKey.METADATA, METADATA_VERSION)
        list_offsets_cls = request_class(ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION)
        assert fetch_cls is not None and metadata_cls is not None and list_offsets_cls is not None
        self._list_offsets_cls = list_offsets_cls
        self._fetch_cls = fetch_cls
        self._metadata_cls = metadata_cls

    def close(self) -> None:
        if self._leader is not None:
            self._leader.close()
            self._leader = None

    def _find_leader(self) -> BrokerConnection:
        """Ask the bootstrap brokers (in turn) who leads the partition; connect to it."""
        request = build(
            self._metadata_cls,
            {
                "topics": [{"name": self.topic}],
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            },
        )
        problems = []
        for host, port in self._bootstrap:
            try:
                connection = BrokerConnection(host, port, self._timeout_s, self._client_id)
            except RetriableFetchError as exc:
                problems.append(str(exc))
                continue
            try:
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
            for part in topic.partitions:
                if int(part.partition_index) == self.partition and int(part.error_code) == 0:
                    return brokers.get(int(part.leader_id))
        return None

    def fetch(self, offset: int) -> FetchAnswer:
        """The leader's answer for the records from ``offset`` (RetriableFetchError: ask again)."""
        if self._leader is None:
            self._leader = self._find_leader()
        request = build(
            self._fetch_cls,
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
            if topic.topic != self.topic:
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
            self._list_offsets_cls,
            {
                "replica_id": -1,
                "isolation_level": 1 if self._read_committed else 0,
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
