"""``__consumer_offsets`` appears when Kafka makes it: at the first FindCoordinator (issue 35, item 8).

Apache Kafka 4.4.0 creates its offsets topic when a FindCoordinator for a group finds none, answers
that first request COORDINATOR_NOT_AVAILABLE, and lists the topic in Metadata (internal, 50
partitions) soon after. A client that waits for the topic before its first group (another Kafka
client's integration tests do, before a KIP-848 consumer whose regex the broker resolves) waited
forever on a fresh ``kgroup serve``, which made it with the first group record. The same requests go to
a fresh node of each broker.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from tests.apache_kafka.conftest import Cluster
from tests.apache_kafka.wire import Raw, metadata

pytestmark = pytest.mark.apache_kafka

OFFSETS = "__consumer_offsets"
COORDINATOR_NOT_AVAILABLE = 15


def _offsets_topic(raw: Raw) -> Any:
    listed = {t["name"]: t for t in metadata(raw, None, auto_create=False)["topics"]}
    return listed.get(OFFSETS)


def test_the_first_find_coordinator_creates_the_offsets_topic(kind: str, names: str) -> None:
    with Cluster(kind) as cluster, Raw(cluster.bootstrap_servers) as raw:
        before = _offsets_topic(raw)
        first = raw.call("FindCoordinator", 4, {"key_type": 0, "coordinator_keys": [f"{names}-g"]})
        codes = [first["coordinators"][0]["error_code"]]
        deadline = time.monotonic() + 30
        listed = None
        while listed is None or codes[-1] != 0:
            assert time.monotonic() < deadline, (codes, listed)
            time.sleep(0.2)
            listed = _offsets_topic(raw)
            answer = raw.call("FindCoordinator", 4, {"key_type": 0, "coordinator_keys": [f"{names}-g"]})
            codes.append(answer["coordinators"][0]["error_code"])
    assert before is None  # a fresh node has none
    assert codes[0] == COORDINATOR_NOT_AVAILABLE  # the request that made it says so
    assert codes[-1] == 0
    assert listed["is_internal"] is True
    assert len(listed["partitions"]) == 50
