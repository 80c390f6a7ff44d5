"""The fault scenarios of test_faults_kgroup.py on Apache Kafka, and its advertised listeners: each
consumer's listener tells it of its proxy (Metadata and FindCoordinator), as kgroup's does
(tests/broker/test_advertised_listeners.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.apache_kafka.wire import Raw, find_coordinator
from tests.faults.scenarios import CUT, assert_cut_seen, assert_invariants

from kgroup.testing.apache_kafka import require_apache_kafka
from kgroup.testing.faults import FaultBed, Toxiproxy, run_fault

pytestmark = pytest.mark.apache_kafka


@pytest.fixture(scope="module")
def bed(toxiproxy: Toxiproxy) -> Iterator[FaultBed]:
    require_apache_kafka()
    with FaultBed("apache", toxiproxy) as started:
        yield started
        started.check_alive()


def test_each_consumer_listener_advertises_its_proxy(bed: FaultBed) -> None:
    for proxy in bed.proxies:
        with Raw(proxy.listen) as raw:  # through the proxy, as the consumer connects
            answer = raw.call(
                "Metadata",
                12,
                {
                    "topics": [],
                    "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": False,
                },
            )
        assert [(b["host"], b["port"]) for b in answer["brokers"]] == [("127.0.0.1", proxy.port)]
        assert find_coordinator(proxy.listen, "advertised-g") == proxy.listen
    with Raw(bed.bootstrap_servers) as raw:  # the broker's own listener still advertises itself
        answer = raw.call(
            "Metadata",
            12,
            {"topics": [], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False},
        )
    assert [f"{b['host']}:{b['port']}" for b in answer["brokers"]] == [bed.bootstrap_servers]


def test_a_consumer_cut_off_past_its_session_timeout(bed: FaultBed) -> None:
    outcome = run_fault(bed, CUT)
    assert_invariants(outcome)
    assert_cut_seen(outcome)
