"""The Java client handles themselves: a JVM that cannot run, or a wait that runs out, is one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgroup.testing.apache_kafka import require_apache_kafka
from kgroup.testing.apache_kafka.java_client import (
    JavaClientDied,
    JavaClientTimeout,
    JavaConsumer,
    JavaProducer,
)


def test_a_client_kafka_refuses_to_construct_is_reported_in_one_line(tmp_path: Path) -> None:
    require_apache_kafka()
    consumer = JavaConsumer("127.0.0.1:1", "g", ["t"], session_timeout_ms="soon", log_dir=tmp_path)  # type: ignore[arg-type]
    with pytest.raises(JavaClientDied) as info:
        consumer.start()
    message = str(info.value)
    assert (
        message.startswith(f"{consumer.name} (JVM pid ") and "exited with code 1: ConfigException:" in message
    )
    assert "session.timeout.ms" in message and "\n" not in message
    assert consumer.pid is None


def test_a_wait_that_runs_out_says_what_it_waited_for(tmp_path: Path) -> None:
    require_apache_kafka()
    # nothing listens on port 1: the producer is constructed, but no record can be sent
    with JavaProducer(
        "127.0.0.1:1", config={"max.block.ms": 60000}, name="lonely", log_dir=tmp_path
    ) as producer:
        with pytest.raises(
            JavaClientTimeout, match=r"^lonely: waited 1 s for the records to be sent \(last event: "
        ):
            producer.send_records("t", [("k", "v")], timeout_s=1)
        producer.kill()
    assert producer.pid is None
