"""docs/client.md's ShareConsumer example, run as written against ``kgroup serve``, and the share
consumer's bad settings and unreachable brokers (no broker needed)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import socket

import pytest
from confluent_kafka import Producer
from tests.doc_commands import python_blocks

from kgroup.client import ClientError, ShareConsumer, ShareConsumerStateError, ShareRecord
from kgroup.model import KgroupError
from kgroup.testing import KafkaBroker


def test_the_share_consumer_example_runs_as_written() -> None:
    [example] = [
        text
        for name, text in python_blocks().items()
        if name.startswith("docs/client.md") and "ShareConsumer(" in text
    ]
    with KafkaBroker(topics={"orders": 2}, share_auto_offset_reset="earliest") as kafka:
        producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
        for n in range(12):
            producer.produce("orders", value=None if n == 3 else f"order-{n}".encode(), partition=n % 2)
        assert producer.flush(30) == 0
        source = example.replace("127.0.0.1:9092", kafka.bootstrap_servers)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(source, "docs/client.md (ShareConsumer)", "exec"), {})
    handled, rest = out.getvalue().split(" ", 1)
    assert int(handled) >= 10 and rest.startswith("records handled by "), out.getvalue()


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"acknowledgement_mode": "manual"}, "acknowledgement_mode"),
        ({"max_poll_records": 0}, "max_poll_records"),
        ({"fetch_max_wait_ms": -5}, "fetch_max_wait_ms"),
    ],
)
def test_bad_settings_name_the_field(settings: dict[str, object], named: str) -> None:
    with pytest.raises(KgroupError, match=named):
        ShareConsumer("127.0.0.1:9092", "g", **settings)  # type: ignore[arg-type]
    with pytest.raises(KgroupError, match="bootstrap servers"):
        ShareConsumer("nonsense", "g")
    with pytest.raises(KgroupError, match="group_id"):
        ShareConsumer("127.0.0.1:9092", "")


def test_calls_before_start_and_an_unreachable_broker() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def scenario() -> None:
        consumer = ShareConsumer(f"127.0.0.1:{port}", "g")
        with pytest.raises(ShareConsumerStateError, match="not started"):
            await consumer.poll(0)
        with pytest.raises(KgroupError, match=r"give AcknowledgeType\.ACCEPT, RELEASE or REJECT"):
            consumer.acknowledge(ShareRecord("t", 0, 0, 0, None, None, (), 1), 4)  # type: ignore[arg-type]
        with pytest.raises(ClientError, match="no broker reachable"):
            await consumer.start()
        await consumer.close()
        with pytest.raises(ShareConsumerStateError, match="already been closed"):
            consumer.subscribe(["t"])

    asyncio.run(asyncio.wait_for(scenario(), 30))
