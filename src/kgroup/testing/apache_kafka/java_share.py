"""Apache Kafka's Java ``KafkaShareConsumer`` (KIP-932) as a process handle, beside
:mod:`kgroup.testing.apache_kafka.java_client`'s consumer and producer (the same driver, kind
``share``).

The consumer runs in explicit acknowledgement mode: every record it polls is an event (``topic``,
``partition``, ``offset``, ``value``, ``delivery_count``, ``ack``) and is acknowledged ACCEPT — RELEASE
for the offsets named in ``release`` at their first delivery — then ``commitSync()`` sends the
acknowledgements (an ``acknowledged`` event with the errors it returned). With ``hold=True`` it keeps
the first records it polls unacknowledged and stops polling (a consumer to kill or close holding them).

    >>> with JavaShareConsumer(kafka.bootstrap_servers, "g", ["orders"]) as consumer:  # doctest: +SKIP
    ...     records = consumer.wait_records(10)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kgroup.model import TopicPartition
from kgroup.testing.apache_kafka.distribution import KafkaLibs
from kgroup.testing.apache_kafka.java_process import DEFAULT_WAIT_S, JavaClientProcess

__all__ = ["JavaShareConsumer"]


class JavaShareConsumer(JavaClientProcess):
    """Kafka's ``KafkaShareConsumer`` in share group ``group_id``, subscribed to ``topics``."""

    kind = "share"

    def __init__(
        self,
        bootstrap_servers: str,
        group_id: str,
        topics: Sequence[str],
        *,
        release: Iterable[tuple[TopicPartition, int]] = (),
        hold: bool = False,
        config: Mapping[str, object] | None = None,
        client_id: str | None = None,
        poll_ms: int = 100,
        name: str | None = None,
        libs: KafkaLibs | None = None,
        log_dir: str | Path | None = None,
        log_level: str = "INFO",
    ) -> None:
        properties: dict[str, object] = {"bootstrap.servers": bootstrap_servers, "group.id": group_id}
        if client_id is not None:
            properties["client.id"] = client_id
        properties.update(config or {})
        super().__init__(
            {
                "properties": {
                    k: ("true" if v is True else "false" if v is False else str(v))
                    for k, v in properties.items()
                },
                "topics": list(topics),
                "poll_ms": poll_ms,
                "release": [[tp.topic, tp.partition, offset] for tp, offset in release],
                "hold": hold,
            },
            name=name or client_id,
            libs=libs,
            log_dir=log_dir,
            log_level=log_level,
        )
        self.group_id = group_id
        self.topics = tuple(topics)

    def records(self, since: int = 0) -> list[dict[str, Any]]:
        """Polled records (``topic``, ``partition``, ``offset``, ``value``, ``delivery_count``, ``ack``)."""
        return [e for e in self.events[since:] if e["event"] == "record"]

    def acknowledgements(self, since: int = 0) -> list[dict[str, Any]]:
        """Each ``commitSync()``'s result: ``count`` records, ``errors`` (empty when all succeeded)."""
        return [e for e in self.events[since:] if e["event"] == "acknowledged"]

    def wait_records(
        self, count: int, *, since: int = 0, timeout_s: float = DEFAULT_WAIT_S
    ) -> list[dict[str, Any]]:
        """Wait until at least ``count`` records were polled (and their acknowledgements committed)
        from event ``since`` on; return the records."""
        seen = [0, 0]

        def enough(event: dict[str, Any]) -> bool:
            if event["event"] == "record":
                seen[0] += 1
            elif event["event"] == "acknowledged":
                seen[1] += int(event["count"])
            return seen[1] >= count

        if count > 0:
            self.wait_for(enough, since=since, timeout_s=timeout_s, what=f"{count} records acknowledged")
        return self.records(since)

    def wait_holding(self, *, timeout_s: float = DEFAULT_WAIT_S) -> list[dict[str, Any]]:
        """For a consumer made with ``hold=True``: the records it polled first and holds."""
        self.wait_for(lambda e: e["event"] == "holding", timeout_s=timeout_s, what="records to hold")
        return self.records()

    def pause(self) -> None:
        """Stop polling (what it holds stays acquired until its lock times out)."""
        mark = self.mark()
        self.send({"cmd": "pause_polling"})
        self.wait_for(lambda e: e["event"] == "polling", since=mark, timeout_s=30, what="polling to stop")
