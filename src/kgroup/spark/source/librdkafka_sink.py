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
from kgroup.spark.source.options import SinkOptions
from kgroup.spark.source.sink_rows import RowPlanner, SinkColumns

__all__ = ["LibrdkafkaTaskProducer"]


class LibrdkafkaTaskProducer:
    """One Spark task's librdkafka producer: partitions chosen as a Java producer would, then produced."""

    def __init__(self, options: SinkOptions, columns: SinkColumns, task_id: int) -> None:
        from confluent_kafka import Producer

        from kgroup.spark.source.kafka_io import producer_config

        self.options = options
        self.columns = columns
        self.timeout_s = options.api_timeout_ms / 1000
        # Only failed deliveries are reported (delivery.report.only.error): no Python call per record.
        config = {"delivery.report.only.error": True, **producer_config(options.client_dict())}
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
            try:
                metadata = self.producer.list_topics(topic=topic, timeout=self.timeout_s)
            except Exception as exc:
                raise KgroupError(
                    f"kafka.bootstrap.servers: no broker answered at {self.options.bootstrap_servers} "
                    f"({exc}); check the address and that the broker is running"
                ) from None
            meta = metadata.topics.get(topic)
            if meta is None or meta.error is not None or not meta.partitions:
                raise KgroupError(f"topic: {topic!r} does not exist on the cluster; create it first")
            count = len(meta.partitions)
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
