"""docs/testing.md holds: its pytest example runs as shown (in a pytest of its own, through the
installed plugin's ``kafka_broker`` fixture), and what it says about confluent-kafka's partitioner is
what a real producer does against kgroup's broker."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import kgroup
from kgroup.testing import KafkaBroker

ROOT = Path(__file__).parents[1]
PAGE = ROOT / "docs" / "testing.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def test_the_pages_pytest_example_passes(tmp_path: Path) -> None:
    examples = [b for b in BLOCK.findall(PAGE.read_text(encoding="utf-8")) if "def test_" in b]
    assert len(examples) == 1
    (tmp_path / "test_page_example.py").write_text(examples[0], encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "1 passed" in done.stdout


def _partitions(bootstrap: str, topic: str, config: dict[str, str]) -> dict[bytes, int]:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, **config})
    where: dict[bytes, int] = {}

    def delivered(err: object, msg: object) -> None:
        assert err is None, err
        where[msg.key()] = msg.partition()  # type: ignore[attr-defined]

    for n in range(1000):
        producer.produce(topic, key=f"key-{n}".encode(), value=b"v", on_delivery=delivered)
    assert producer.flush(30) == 0
    assert len(where) == 1000
    return where


def test_murmur2_random_puts_keys_where_java_does_and_the_default_does_not() -> None:
    with KafkaBroker(topics={"keys": 12}) as kafka:
        java_like = _partitions(kafka.bootstrap_servers, "keys", {"partitioner": "murmur2_random"})
        default = _partitions(kafka.bootstrap_servers, "keys", {})
    assert all(p == kgroup.partition_for_key(k, 12) for k, p in java_like.items())
    agree = sum(p == kgroup.partition_for_key(k, 12) for k, p in default.items())
    assert agree < 200, agree  # CRC32: about one key in twelve lands where Java puts it
