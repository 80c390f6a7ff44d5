"""kgroup's share partition against Kafka 4.4.0's own ``SharePartition``: the scripts of
``share_partition_scripts.txt`` (random members acquiring from the next fetch offset, acknowledging
with every type, some of it stale, leaving, lock timeouts, the log start moving) run through kgroup
print, line for line, what ``SharePartitionScripts.java`` printed running them through Kafka's class
(``share_partition_kafka.txt``): every result, error, SPSO, SPEO, next fetch offset and cached state."""

from __future__ import annotations

from pathlib import Path

from tests.share.kafka_scripts import run_all, scripts

HERE = Path(__file__).parent


def test_the_scripts_are_the_generators() -> None:
    assert (HERE / "share_partition_scripts.txt").read_text().splitlines() == list(scripts())


def test_kgroup_answers_every_operation_as_kafka_does() -> None:
    lines = (HERE / "share_partition_scripts.txt").read_text().splitlines()
    kafka = (HERE / "share_partition_kafka.txt").read_text().splitlines()
    assert len(lines) == len(kafka) > 2000
    script = ""
    for line, theirs, ours in zip(lines, kafka, run_all(lines), strict=True):
        if line.startswith("script"):
            script = line
        assert ours == theirs, f"{script}: {line}"
