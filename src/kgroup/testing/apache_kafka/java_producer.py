"""Kafka's Java ``KafkaProducer`` as a process handle: :class:`JavaProducer` (plain or transactional)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgroup.model import TopicPartition
from kgroup.testing.apache_kafka.distribution import KafkaLibs
from kgroup.testing.apache_kafka.java_process import DEFAULT_WAIT_S, JavaClientError, JavaClientProcess, _text

__all__ = ["JavaProducer", "SentRecord"]


@dataclass(frozen=True, slots=True)
class SentRecord:
    key: str | None
    topic: str
    partition: int
    offset: int


class JavaProducer(JavaClientProcess):
    """Kafka's Java ``KafkaProducer`` (Kafka's default partitioner; string values; keys as text, or as
    decimal text when ``key.serializer`` names Kafka's Long/Integer/ShortSerializer)."""

    kind = "producer"

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        config: Mapping[str, object] | None = None,
        name: str | None = None,
        libs: KafkaLibs | None = None,
        log_dir: str | Path | None = None,
        log_level: str = "INFO",
    ) -> None:
        properties: dict[str, object] = {"bootstrap.servers": bootstrap_servers, **(config or {})}
        super().__init__(
            {"properties": {k: _text(v) for k, v in properties.items()}},
            name=name,
            libs=libs,
            log_dir=log_dir,
            log_level=log_level,
        )

    def send_records(
        self,
        topic: str,
        records: Iterable[tuple[str | None, str | None]],
        *,
        partition: int | None = None,
        timeout_s: float = DEFAULT_WAIT_S,
    ) -> list[SentRecord]:
        """Send ``(key, value)`` records, flush, and return where each landed (in callback order).

        A record the producer could not send raises :class:`JavaClientError` with its error.
        """
        rows = [
            {"topic": topic, "key": key, "value": value, "partition": partition} for key, value in records
        ]
        mark = self.mark()
        self.send({"cmd": "send", "records": rows})
        flushed = self.wait_for(
            lambda e: e["event"] == "flushed", since=mark, timeout_s=timeout_s, what="the records to be sent"
        )
        events = self.events[mark:]
        failures = [e for e in events if e["event"] == "send_error"]
        if failures or flushed.get("failed"):
            first = failures[0]["error"] if failures else {"type": "?", "message": "?"}
            raise JavaClientError(
                f"{self.name}: {len(failures)} of {len(rows)} records were not sent "
                f"(first: {first['type']}: {first['message']})"
            )
        return [
            SentRecord(e["key"], e["topic"], int(e["partition"]), int(e["offset"]))
            for e in events
            if e["event"] == "sent"
        ]

    def transaction(
        self,
        op: str,
        *,
        offsets: Mapping[TopicPartition, int] | None = None,
        group: str | None = None,
        generation: int = -1,
        member_id: str = "",
        instance_id: str | None = None,
        timeout_s: float = DEFAULT_WAIT_S,
    ) -> dict[str, Any] | None:
        """One step of a transactional producer (``transactional.id`` in its config): ``init``,
        ``begin``, ``send_offsets`` (``offsets`` for ``group`` with its ``generation``, ``member_id``
        and ``instance_id``: a ``ConsumerGroupMetadata``), ``commit`` or ``abort``. The exception it
        threw (``{"type", "message", ...}``), or ``None`` when it succeeded."""
        if op not in ("init", "begin", "send_offsets", "commit", "abort"):
            raise JavaClientError(
                f"op: {op!r} is not a transaction step; give init, begin, send_offsets, commit or abort"
            )
        command: dict[str, Any] = {"cmd": "txn", "op": op}
        if op == "send_offsets":
            command |= {
                "offsets": [[tp.topic, tp.partition, offset] for tp, offset in (offsets or {}).items()],
                "group": group,
                "generation": generation,
                "member_id": member_id,
                "instance_id": instance_id,
            }
        mark = self.mark()
        self.send(command)
        done = self.wait_for(
            lambda e: e["event"] == "txn" and e["op"] == op, since=mark, timeout_s=timeout_s, what=f"txn {op}"
        )
        error: dict[str, Any] | None = done.get("error")
        return error
