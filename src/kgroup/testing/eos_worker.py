"""What the two exactly-once stage workers share, the confluent-kafka one
(:class:`kgroup.testing.eos_chain.PythonExactlyOnceWorker`) and the Java one
(:class:`kgroup.testing.apache_kafka.java_eos_worker.JavaExactlyOnceWorker`): the configuration a
worker is given and the count of what it committed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["committed_records", "worker_config"]


def worker_config(
    bootstrap_servers: str,
    group: str,
    input: str,
    output: str,
    transactional_id: str,
    suffix: str,
    consumer_config: Mapping[str, object] | None,
    producer_config: Mapping[str, object] | None,
) -> dict[str, Any]:
    """What a stage worker is told, whichever clients it runs: its consumer's settings (the bootstrap
    servers and ``group``, then ``consumer_config``), its producer's (the bootstrap servers and
    ``transactional_id``, then ``producer_config``), the topic it reads, the topic it writes and the
    suffix it appends to each value."""
    return {
        "consumer": {"bootstrap.servers": bootstrap_servers, "group.id": group, **(consumer_config or {})},
        "producer": {
            "bootstrap.servers": bootstrap_servers,
            "transactional.id": transactional_id,
            **(producer_config or {}),
        },
        "input": input,
        "output": output,
        "suffix": suffix,
    }


def committed_records(events: Sequence[Mapping[str, Any]]) -> int:
    """The records of the transactions a stage worker committed (its ``committed`` events)."""
    return sum(int(e["count"]) for e in events if e["event"] == "committed")
