"""Broker tests: a fresh in-process broker per test (kgroup.testing), real clients over loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kgroup.testing import KafkaBroker


@pytest.fixture
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(topics={"orders": 3}) as kafka:
        yield kafka


from kafka_python_sockets import _collect_refused_client_sockets  # noqa: E402

__all__ = ["_collect_refused_client_sockets", "broker"]
