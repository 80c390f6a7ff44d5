"""The sink's bulk path: an Arrow batch to record batches in one kernel, sent on Kafka's wire.

:class:`BulkTaskProducer` is what a write task runs when :func:`bulk_settings` says the ``kafka.*``
options allow it (PLAINTEXT, no compression, only the properties below): the rows' partitions come
from :class:`~kgroup.spark.source.sink_rows.RowPlanner` (exact to a Java producer), the records are
grouped by partition and written as RecordBatch v2 by
:func:`~kgroup.spark.source.record_batches.encode_records` (no Python object per record), and
:class:`~kgroup.spark.source.bulk_producer.BulkProducer` sends them — idempotent, ``acks=all``, five
requests in flight, retried until the delivery timeout, as Kafka's Java producer does by default.

The ``kafka.*`` properties it honours (librdkafka's names and aliases, as the librdkafka path takes):
``acks`` / ``request.required.acks``, ``enable.idempotence``, ``client.id``, ``request.timeout.ms``,
``delivery.timeout.ms`` / ``message.timeout.ms``, ``batch.size`` (the most bytes of one batch),
``max.in.flight.requests.per.connection`` / ``max.in.flight``, ``retry.backoff.ms``,
``compression.type`` / ``compression.codec`` = ``none``, ``security.protocol`` = ``plaintext``; and the
queueing properties that have nothing to do when every record is already in hand (``linger.ms``,
``queue.buffering.max.*``, ``batch.num.messages``). Any other property is librdkafka's: the write
then goes through :mod:`kgroup.spark.source.librdkafka_sink`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from kgroup.model import KgroupError
from kgroup.spark.source.bulk_producer import BulkProducer, ProducerSettings, SentBatch
from kgroup.spark.source.options import SinkOptions
from kgroup.spark.source.sink_rows import RowPlanner, SinkColumns

__all__ = ["BulkTaskProducer", "bulk_settings"]

#: librdkafka properties the bulk path honours (aliases share a meaning)
_HONOURED = frozenset(
    {
        "bootstrap.servers",
        "security.protocol",
        "compression.type",
        "compression.codec",
        "acks",
        "request.required.acks",
        "enable.idempotence",
        "client.id",
        "request.timeout.ms",
        "delivery.timeout.ms",
        "message.timeout.ms",
        "batch.size",
        "max.in.flight.requests.per.connection",
        "max.in.flight",
        "retry.backoff.ms",
    }
)
#: librdkafka's queueing between produce() calls and the network: nothing to do when the records of a
#: whole Arrow batch are encoded at once
_QUEUEING = frozenset(
    {
        "linger.ms",
        "queue.buffering.max.ms",
        "queue.buffering.max.messages",
        "queue.buffering.max.kbytes",
        "batch.num.messages",
    }
)
_MAX_IN_FLIGHT_IDEMPOTENT = 5  # Kafka's limit for an idempotent producer


def _int(config: Mapping[str, str], names: tuple[str, ...], default: int, low: int, what: str) -> int:
    for name in names:
        if name in config:
            text = config[name].strip()
            try:
                value = int(text)
            except ValueError:
                raise KgroupError(f"kafka.{name}: {text!r} is not a whole number; give {what}") from None
            if value < low:
                raise KgroupError(f"kafka.{name}: {value} is too small; give {what}")
            return value
    return default


def bulk_settings(config: Mapping[str, str], api_timeout_ms: int) -> ProducerSettings | None:
    """The bulk path's settings for the ``kafka.*`` options (prefix removed), or None when they ask for
    something only librdkafka does (TLS/SASL, compression, a property the bulk path does not know).
    Raises :class:`KgroupError` for a value the bulk path cannot take."""
    if config.get("security.protocol", "plaintext").strip().lower() != "plaintext":
        return None
    for name in ("compression.type", "compression.codec"):
        if config.get(name, "none").strip().lower() != "none":
            return None
    if any(name not in _HONOURED and name not in _QUEUEING for name in config):
        return None
    acks_name = "acks" if "acks" in config else "request.required.acks"
    acks_text = config.get(acks_name, "all").strip().lower()
    acks = {"all": -1, "-1": -1, "0": 0, "1": 1}.get(acks_text)
    if acks is None:
        raise KgroupError(f"kafka.{acks_name}: {acks_text!r} is not one of all, -1, 0, 1; give one of them")
    idempotence_text = config.get("enable.idempotence")
    if idempotence_text is None:
        idempotent = acks == -1  # Kafka's default: idempotent unless the options conflict with it
    else:
        text = idempotence_text.strip().lower()
        if text not in ("true", "false"):
            raise KgroupError(f"kafka.enable.idempotence: {idempotence_text!r} is not true or false")
        idempotent = text == "true"
        if idempotent and acks != -1:
            raise KgroupError(
                f"kafka.enable.idempotence: an idempotent producer needs acks=all, not kafka.{acks_name}="
                f"{acks_text}; remove one of the two"
            )
    max_in_flight = _int(
        config,
        ("max.in.flight.requests.per.connection", "max.in.flight"),
        _MAX_IN_FLIGHT_IDEMPOTENT,
        1,
        "a number of 1 or more",
    )
    if idempotent and max_in_flight > _MAX_IN_FLIGHT_IDEMPOTENT:
        raise KgroupError(
            f"kafka.max.in.flight.requests.per.connection: {max_in_flight} is more than an idempotent "
            f"producer may have (5); give at most 5 or set kafka.enable.idempotence=false"
        )
    return ProducerSettings(
        acks=acks,
        idempotent=idempotent,
        client_id=config.get("client.id", "kgroup-spark"),
        request_timeout_ms=_int(config, ("request.timeout.ms",), 30_000, 1, "milliseconds, 1 or more"),
        delivery_timeout_ms=_int(
            config,
            ("delivery.timeout.ms", "message.timeout.ms"),
            api_timeout_ms,
            1,
            "milliseconds, 1 or more",
        ),
        max_batch_bytes=_int(config, ("batch.size",), 1_000_000, 1, "a number of bytes, 1 or more"),
        max_in_flight=max_in_flight,
        retry_backoff_ms=_int(config, ("retry.backoff.ms",), 100, 0, "milliseconds, 0 or more"),
    )


class BulkTaskProducer:
    """One Spark task's bulk producer: partitions as a Java producer picks them, records in bulk."""

    def __init__(
        self, options: SinkOptions, columns: SinkColumns, task_id: int, settings: ProducerSettings
    ) -> None:
        self.producer = BulkProducer(options.bootstrap_servers, settings, options.api_timeout_ms / 1000)
        self.settings = settings
        self.planner = RowPlanner(options, columns, task_id, self.producer.partition_count)

    def write_batch(self, batch: Any) -> None:
        from kgroup.spark.source.record_batches import encode_records, group_rows, seal_batch

        planned = self.planner.plan(batch)
        if planned is None:
            return
        # one group per (topic, partition): the topic's index above the partition's bits
        groups = (planned.topic_index << 32) | planned.partitions
        order, bounds, group_values = group_rows(groups)
        encoded = encode_records(
            planned.keys, planned.values, planned.headers, order, bounds, self.settings.max_batch_bytes
        )
        now_ms = int(time.time() * 1000)  # CreateTime, as a Java producer stamps each record at send()
        producer = self.producer
        sent = []
        for encoded_batch in encoded.batches:
            group = int(group_values[encoded_batch.group])
            topic = planned.topics[group >> 32]
            partition = group & 0xFFFFFFFF
            sequence = producer.next_sequence(topic, partition, encoded_batch.records)
            data = seal_batch(
                encoded,
                encoded_batch,
                producer_id=producer.producer_id,
                producer_epoch=producer.producer_epoch,
                base_sequence=sequence,
                timestamp_ms=now_ms,
            )
            sent.append(SentBatch(topic, partition, data, encoded_batch.records, sequence))
        producer.send(sent)

    def finish(self) -> dict[tuple[str, int], int]:
        """Wait until every record is acknowledged; the records written per (topic, partition)."""
        try:
            self.producer.flush()
        finally:
            self.producer.close()
        return dict(self.producer.acknowledged)

    def abort(self) -> None:
        self.producer.close()
