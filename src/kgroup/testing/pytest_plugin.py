"""The ``kafka_broker`` fixture, loaded by pytest through the ``pytest11`` entry point ``kgroup``.

Importing this module starts nothing; the broker starts when a test asks for the fixture.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

__all__ = ["kafka_broker", "kafka_broker_instance"]


@pytest.fixture
def kafka_broker_instance() -> Iterator[object]:
    """A running :class:`kgroup.testing.KafkaBroker` (one per test), stopped after the test."""
    from kgroup.testing.broker import KafkaBroker

    with KafkaBroker() as broker:
        yield broker


@pytest.fixture
def kafka_broker(kafka_broker_instance: object) -> str:
    """The ``bootstrap.servers`` string of a fresh in-process broker (topics are auto-created)."""
    from kgroup.testing.broker import KafkaBroker

    assert isinstance(kafka_broker_instance, KafkaBroker)
    return kafka_broker_instance.bootstrap_servers
