"""The sink's librdkafka path: one confluent-kafka ``produce()`` per record.

It is what a write uses when the bulk path (:mod:`kgroup.spark.source.bulk_sink`) cannot do what the
``kafka.*`` options ask: TLS or SASL (``kafka.security.protocol``), compression, or a librdkafka
property the bulk path does not know. Partitions are still chosen by kgroup
(:class:`kgroup.spark.source.sink_rows.RowPlanner`) and passed explicitly: librdkafka's own default
partitioner (CRC32) would pick other partitions than a Java producer.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from kgroup.model import KgroupError
from kgroup.spark.source.bulk_producer import missing_topic_message, unauthorized_topic_message
from kgroup.spark.source.options import SinkOptions
from kgroup.spark.source.sink_rows import RowPlanner, SinkColumns

__all__ = ["LibrdkafkaTaskProducer", "topic_partition_count"]


def _auto_create_enabled(config: dict[str, Any], metadata: Any, timeout_s: float) -> bool | None:
    """``auto.create.topics.enable`` of a broker of the cluster (an AdminClient's DescribeConfigs),
    or None when it cannot be asked (no DescribeConfigs right on the cluster, say)."""
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AdminClient,
        ConfigResource,
        ResourceType,
    )

    if not metadata.brokers:
        return None
    node = min(metadata.brokers)
    admin = AdminClient(dict(config))
    resource = ConfigResource(ResourceType.BROKER, str(node))
    try:
        described = admin.describe_configs([resource], request_timeout=timeout_s)[resource].result(timeout_s)
    except Exception:
        return None
    entry = described.get("auto.create.topics.enable")
    return None if entry is None or entry.value is None else entry.value.strip().lower() == "true"


def topic_partition_count(
    producer: Any, topic: str, bootstrap: str, timeout_s: float, config: dict[str, Any]
) -> int:
    """The topic's partition count through a confluent-kafka producer, whose Metadata request lets
    the broker create a missing topic (librdkafka's ``allow.auto.create.topics``, true for
    producers, as Kafka's Java producer): asked again while it is being created (no partitions yet,
    ``LEADER_NOT_AVAILABLE``), one line when the cluster will not create it or refuses the principal."""
    from confluent_kafka import KafkaError

    deadline = time.monotonic() + timeout_s
    asked_config = False
    while True:
        try:
            metadata = producer.list_topics(topic=topic, timeout=max(0.1, deadline - time.monotonic()))
        except Exception as exc:
            raise KgroupError(
                f"kafka.bootstrap.servers: no broker answered at {bootstrap} "
                f"({exc}); check the address and that the broker is running"
            ) from None
        meta = metadata.topics.get(topic)
        code = None if meta is None or meta.error is None else meta.error.code()
        if code == KafkaError.UNKNOWN_TOPIC_OR_PART and not asked_config:
            # KRaft answers so whether or not it creates the topic: the broker's config says which
            asked_config = True
            if _auto_create_enabled(config, metadata, timeout_s) is False:
                raise KgroupError(missing_topic_message(topic, bootstrap))
        if code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
            raise KgroupError(unauthorized_topic_message(topic))
        if meta is not None and code is None and meta.partitions:
            return len(meta.partitions)
        if time.monotonic() >= deadline:
            raise KgroupError(
                f"topic: {topic!r} does not exist on the cluster at {bootstrap} and was not created "
                f"within {timeout_s:g} s ({meta.error if meta is not None else 'no answer'}); create it "
                "first, or grant Create on it"
            )
        time.sleep(0.1)  # retry.backoff.ms


class LibrdkafkaTaskProducer:
    """One Spark task's librdkafka producer: partitions chosen as a Java producer would, then produced."""

    def __init__(self, options: SinkOptions, columns: SinkColumns, task_id: int) -> None:
        from confluent_kafka import Producer

        from kgroup.spark.source.kafka_io import producer_config

        self.options = options
        self.columns = columns
        self.timeout_s = options.api_timeout_ms / 1000
        # Only failed deliveries are reported (delivery.report.only.error): no Python call per record.
        self.config = producer_config(options.client_dict())
        config = {"delivery.report.only.error": True, **self.config}
        config["on_delivery"] = self._on_delivery
        self.producer = Producer(config)
        self.partition_counts: dict[str, int] = {}
        self.planner = RowPlanner(options, columns, task_id, self.partitions_of)
        self.counts: dict[tuple[str, int], int] = {}
        self.first_error: str | None = None

    def _on_delivery(self, error: Any, _message: Any) -> None:
        if error is not None and self.first_error is None:
            self.first_error = str(error)

    def partitions_of(self, topic: str) -> int:
        count = self.partition_counts.get(topic)
        if count is None:
            bootstrap = self.options.bootstrap_servers
            count = topic_partition_count(self.producer, topic, bootstrap, self.timeout_s, self.config)
            self.partition_counts[topic] = count
        return count

    def write_batch(self, batch: Any) -> None:
        planned = self.planner.plan(batch)
        if planned is None:
            return
        topics = planned.topic_list()
        key_list = planned.keys.to_pylist()
        value_list = planned.values.to_pylist()  # str values are produced as UTF-8 by the client
        partition_list = planned.partitions.tolist()
        produce = self.producer.produce
        if planned.headers is not None:
            header_list = [
                [(h["key"], h["value"]) for h in headers] if headers else None
                for headers in planned.headers.to_pylist()
            ]
            for topic, value, key, partition, headers in zip(
                topics, value_list, key_list, partition_list, header_list, strict=True
            ):
                try:
                    produce(topic, value, key, partition, headers=headers)
                except BufferError:
                    self._produce_when_room(topic, value, key, partition, headers)
        else:
            for topic, value, key, partition in zip(
                topics, value_list, key_list, partition_list, strict=True
            ):
                try:
                    produce(topic, value, key, partition)
                except BufferError:
                    self._produce_when_room(topic, value, key, partition, None)
        for tp, count in Counter(zip(topics, partition_list, strict=True)).items():
            self.counts[tp] = self.counts.get(tp, 0) + count
        self.producer.poll(0)  # serve delivery reports as they come
        self.fail_if_error()

    def _produce_when_room(self, topic: str, value: Any, key: Any, partition: int, headers: Any) -> None:
        """Produce once the local queue has room (deliveries drain it), waiting at most the API timeout."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            self.producer.poll(0.05)
            self.fail_if_error()
            try:
                self.producer.produce(topic, value, key, partition, headers=headers)
                return
            except BufferError:
                if time.monotonic() > deadline:
                    raise KgroupError(
                        "kafka.bootstrap.servers: the producer's queue stayed full for "
                        f"{self.timeout_s:g} s; check that the broker is reachable"
                    ) from None

    def fail_if_error(self) -> None:
        if self.first_error is not None:
            raise KgroupError(f"kafka.bootstrap.servers: a record was not delivered ({self.first_error})")

    def finish(self) -> dict[tuple[str, int], int]:
        """Wait for every delivery; the records written per (topic, partition)."""
        remaining = self.producer.flush(self.timeout_s)
        self.fail_if_error()
        if remaining:
            raise KgroupError(
                f"kafka.bootstrap.servers: {remaining} records not delivered within {self.timeout_s:g} s "
                "(kafka.default.api.timeout.ms); check the broker"
            )
        return self.counts
