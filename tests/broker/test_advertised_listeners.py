"""``--advertised-listeners`` (Kafka's ``advertised.listeners``): Metadata and FindCoordinator tell a
client the address its listener advertises, not the one the broker is bound to. The same on Apache
Kafka: tests/faults/test_faults_apache.py (its proxies sit behind advertised listeners)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.apache_kafka.wire import Raw
from tests.broker.procs import BrokerProcess

from kgroup.model import KgroupError
from kgroup.testing import KafkaBroker


def _advertised(bootstrap: str, group: str) -> tuple[list[str], str]:
    """(the brokers Metadata names, the coordinator FindCoordinator names) as ``host:port``."""
    with Raw(bootstrap) as raw:
        brokers = raw.call(
            "Metadata",
            12,
            {"topics": [], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False},
        )["brokers"]
        for _ in range(50):  # the first FindCoordinator makes the offsets topic and is asked again
            (found,) = raw.call("FindCoordinator", 4, {"key_type": 0, "coordinator_keys": [group]})[
                "coordinators"
            ]
            if found["error_code"] != 15:  # COORDINATOR_NOT_AVAILABLE
                break
            time.sleep(0.1)
    assert found["error_code"] == 0, found
    return sorted(f"{b['host']}:{b['port']}" for b in brokers), f"{found['host']}:{found['port']}"


def test_the_default_listener_advertises_another_address() -> None:
    with KafkaBroker(brokers=2, advertised_listeners=["PLAINTEXT://proxy.invalid:19092"]) as kafka:
        first = kafka.bootstrap_servers.split(",")[0]
        brokers, coordinator = _advertised(first, "g")
        assert brokers == ["proxy.invalid:19092", "proxy.invalid:19093"]
        assert coordinator in brokers


def test_each_listener_advertises_its_own_entry_and_port_0_is_the_bound_port() -> None:
    with KafkaBroker(
        listeners=["PLAINTEXT://127.0.0.1:0", "C0://127.0.0.1:0", "C1://127.0.0.1:0"],
        listener_security_protocol_map="C0:PLAINTEXT,C1:PLAINTEXT",
        advertised_listeners=["C0://127.0.0.1:0,C1://proxy.invalid:20001", "PLAINTEXT://127.0.0.1:0"],
    ) as kafka:
        c0 = kafka.listener_bootstrap_servers("C0")
        assert _advertised(c0, "g") == ([c0], c0)
        assert _advertised(kafka.listener_bootstrap_servers("C1"), "g") == (
            ["proxy.invalid:20001"],
            "proxy.invalid:20001",
        )


def test_a_listener_left_out_of_advertised_listeners_is_not_advertised() -> None:
    # Kafka advertises only the listeners advertised.listeners names once it is set
    with KafkaBroker(
        listeners=["PLAINTEXT://127.0.0.1:0", "HIDDEN://127.0.0.1:0"],
        listener_security_protocol_map="HIDDEN:PLAINTEXT",
        advertised_listeners=["PLAINTEXT://127.0.0.1:0"],
    ) as kafka:
        with Raw(kafka.listener_bootstrap_servers("HIDDEN")) as raw:
            answer = raw.call(
                "Metadata",
                12,
                {
                    "topics": [],
                    "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": False,
                },
            )
            (found,) = raw.call("FindCoordinator", 4, {"key_type": 0, "coordinator_keys": ["g"]})[
                "coordinators"
            ]
        assert answer["brokers"] == []
        assert found["error_code"] == 15  # COORDINATOR_NOT_AVAILABLE


@pytest.mark.parametrize(
    ("advertised", "message"),
    [
        (["OTHER://127.0.0.1:1"], "advertised.listeners: OTHER is not a listener"),
        (["PLAINTEXT://0.0.0.0:9092"], "nonroutable meta-address 0.0.0.0"),
        (["PLAINTEXT://:9092"], "has no host"),
        (["PLAINTEXT://h:1,PLAINTEXT://h:2"], "each listener name may appear once"),
        (["PLAINTEXT://h:x"], "'x' is not a port"),
    ],
)
def test_bad_advertised_listeners_are_refused_with_the_field(advertised: list[str], message: str) -> None:
    with pytest.raises(KgroupError, match=message):
        KafkaBroker(advertised_listeners=advertised)


def test_serve_refuses_an_unknown_advertised_listener_in_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kgroup", "serve", "--port", "0", "--advertised-listeners", "X://h:1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert "advertised.listeners: X is not a listener; advertise one of PLAINTEXT" in done.stderr


def test_serve_advertises_the_given_host_with_the_bound_port(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path, "--advertised-listeners", "PLAINTEXT://proxy.invalid:0")
    try:
        port = broker.bootstrap_servers.rpartition(":")[2]
        assert _advertised(broker.bootstrap_servers, "g") == (
            [f"proxy.invalid:{port}"],
            f"proxy.invalid:{port}",
        )
    finally:
        assert broker.terminate() == 0
