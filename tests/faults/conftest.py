"""One toxiproxy server per test module (the beds' proxies live on it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kgroup.testing.faults import Toxiproxy, require_toxiproxy


@pytest.fixture(scope="module")
def toxiproxy() -> Iterator[Toxiproxy]:
    binary = require_toxiproxy()
    with Toxiproxy(binary) as server:
        yield server
