"""An exactly-once stage worker with Kafka's Java clients as a process handle:
:class:`JavaExactlyOnceWorker`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from kgroup.testing.apache_kafka.distribution import KafkaLibs
from kgroup.testing.apache_kafka.java_process import JavaClientProcess, _text
from kgroup.testing.eos_worker import committed_records, worker_config

__all__ = ["JavaExactlyOnceWorker"]


class JavaExactlyOnceWorker(JavaClientProcess):
    """One worker of an exactly-once consume-transform-produce stage with Kafka's Java clients: a
    ``read_committed`` ``KafkaConsumer`` of ``input`` and a transactional ``KafkaProducer``
    (``transactional_id``) in one JVM; each poll's records go to ``output`` (same partition and key,
    ``suffix`` appended to the value) in one transaction with the consumer's offsets
    (``sendOffsetsToTransaction`` with ``consumer.groupMetadata()``). Events: ``started`` (after
    ``initTransactions``), ``assigned`` / ``revoked`` / ``lost``, ``committed`` (``count``),
    ``aborted``, ``fatal`` (fenced), ``closed``. :meth:`close` ends it cleanly (after the transaction
    in progress); :meth:`kill` is a crash, its transaction left open."""

    kind = "eos"

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
        libs: KafkaLibs | None = None,
        log_dir: str | Path | None = None,
        log_level: str = "WARN",
    ) -> None:
        where = (bootstrap_servers, group, input, output, transactional_id)
        config = worker_config(*where, suffix, consumer_config, producer_config)
        for side in ("consumer", "producer"):
            config[side] = {k: _text(v) for k, v in config[side].items()}
        super().__init__(
            config,
            name=name,
            libs=libs,
            log_dir=log_dir,
            log_level=log_level,
        )

    @property
    def committed_records(self) -> int:
        """The records of the transactions it committed so far."""
        return committed_records(self.events)
