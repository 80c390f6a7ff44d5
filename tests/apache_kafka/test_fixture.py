"""The Apache Kafka fixture itself: it serves real clients, survives a node crash, leaves no JVM, and
says in one line what is missing when it cannot run."""

from __future__ import annotations

import os
import signal
import stat
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from kgroup.testing.apache_kafka import (
    KAFKA_VERSION,
    ApacheKafka,
    KafkaNodeDied,
    KafkaUnavailable,
    kafka_libs,
    require_apache_kafka,
)
from kgroup.testing.apache_kafka.cluster import _jvms_under


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_one_node_serves_produce_consume_and_a_group(apache_kafka: ApacheKafka) -> None:
    apache_kafka.create_topic("fixture-roundtrip", 3)
    producer = Producer(
        {"bootstrap.servers": apache_kafka.bootstrap_servers, "partitioner": "murmur2_random"}
    )
    for i in range(30):
        producer.produce("fixture-roundtrip", key=f"k{i}".encode(), value=f"v{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": apache_kafka.bootstrap_servers,
            "group.id": "fixture-group",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe(["fixture-roundtrip"])
        seen: dict[bytes, int] = {}
        deadline = time.monotonic() + 60
        while len(seen) < 30 and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                seen[message.key()] = message.partition()
        from kgroup.partitioning import partition_for_key

        assert seen == {f"k{i}".encode(): partition_for_key(f"k{i}".encode(), 3) for i in range(30)}
        assert {tp.partition for tp in consumer.assignment()} == {0, 1, 2}
    finally:
        consumer.close()


@pytest.mark.slow
def test_three_nodes_a_crash_a_restart_and_no_jvm_left() -> None:
    require_apache_kafka()
    kafka = ApacheKafka(nodes=3)
    kafka.start()
    try:
        pids = {node: kafka.pid(node) for node in kafka.node_ids}
        assert all(pid is not None and _alive(pid) for pid in pids.values())
        assert len(kafka.bootstrap_servers.split(",")) == 3
        kafka.create_topic("fixture-replicated", 6, replication_factor=3)
        kafka.stop_node(2, graceful=False)
        assert kafka.pid(2) is None and not _alive(pids[2] or 0)
        kafka.check_alive()  # a node stopped on purpose is not a node that died
        kafka.start_node(2)
        assert kafka.pid(2) is not None
        kafka.check_alive()
        work = kafka._work
        assert work is not None and sorted(_jvms_under(work)) == sorted(
            pid for pid in (kafka.pid(n) for n in kafka.node_ids) if pid is not None
        )
    finally:
        kafka.stop()
    assert kafka.node_ids == []
    assert not any(_alive(pid or 0) for pid in pids.values())
    assert work is not None and not work.exists() and _jvms_under(work) == []


@pytest.mark.slow
def test_a_node_that_dies_is_reported_in_one_line() -> None:
    require_apache_kafka()
    with ApacheKafka() as kafka:
        pid = kafka.pid(1)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while kafka.pid(1) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(
            KafkaNodeDied, match=r"^Apache Kafka node 1 \(pid \d+\) exited with code -9: "
        ) as info:
            kafka.check_alive()
        assert "\n" not in str(info.value)


def test_without_java_the_reason_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(KafkaUnavailable, match=r"^Apache Kafka needs a JDK 17: no java on JAVA_HOME or PATH"):
        kafka_libs()


def _fake_tool(directory: Path, name: str, script: str) -> None:
    tool = directory / name
    tool.write_text("#!/bin/sh\n" + script)
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)


def test_without_maven_the_reason_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    java = kafka_libs(resolve=False).java if _resolved() else None
    if java is None:
        pytest.skip("needs a java to get past the JDK check")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(java, bin_dir / "java")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("KGROUP_KAFKA_HOME", str(tmp_path / "home"))
    with pytest.raises(
        KafkaUnavailable, match=f"^Apache Kafka {KAFKA_VERSION} needs Maven to fetch its jars"
    ):
        kafka_libs()


def test_an_unreachable_registry_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if not _resolved():
        pytest.skip("needs a java to get past the JDK check")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(kafka_libs(resolve=False).java, bin_dir / "java")
    # what mvn prints when Maven Central cannot be reached, shortened
    _fake_tool(
        bin_dir,
        "mvn",
        "echo '[INFO] Scanning for projects...'\n"
        "echo '[ERROR] Failed to execute goal on project apache-kafka: Could not resolve dependencies: "
        "Could not transfer artifact org.apache.kafka:kafka_2.13:jar:4.4.0: Network is unreachable'\n"
        "exit 1\n",
    )
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("KGROUP_KAFKA_HOME", str(tmp_path / "home"))
    with pytest.raises(KafkaUnavailable) as info:
        kafka_libs()
    message = str(info.value)
    assert message.startswith(
        f"mvn could not resolve Apache Kafka {KAFKA_VERSION}'s jars (Failed to execute goal"
    )
    assert "Network is unreachable" in message and message.endswith("check that Maven Central can be reached")
    assert "\n" not in message
    assert not (tmp_path / "home" / "libs").exists()


def test_not_resolved_and_not_allowed_to_resolve(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if not _resolved():
        pytest.skip("needs a java to get past the JDK check")
    monkeypatch.setenv("KGROUP_KAFKA_HOME", str(tmp_path / "empty"))
    with pytest.raises(KafkaUnavailable, match="is not resolved yet: run `make kafka`"):
        kafka_libs(resolve=False)


def _resolved() -> bool:
    try:
        kafka_libs(resolve=False)
    except KafkaUnavailable:
        return False
    return True


def test_a_cluster_id_never_starts_with_a_dash() -> None:
    """Kafka's StorageTool reads ``-t -abc…`` as an option; Kafka's ``Uuid.randomUuid`` never makes
    such an id, and neither does the fixture (2,000 draws: about 31 would start with ``-`` otherwise)."""
    import base64

    from kgroup.testing.apache_kafka.cluster import _cluster_id

    ids = [_cluster_id() for _ in range(2000)]
    assert not any(i.startswith("-") for i in ids)
    assert all(len(base64.urlsafe_b64decode(i + "==")) == 16 for i in ids)
