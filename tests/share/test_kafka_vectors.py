"""The Kafka answers the share tests hold kgroup to are Kafka 4.4.0's: each Java program in this folder
runs again against the release jars and prints exactly the file the other tests read."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from kgroup.testing.apache_kafka.skips import require_apache_kafka

HERE = Path(__file__).parent
KAFKA_LINE = re.compile(r"^(script|acquired|ok|error) ")


def _run(program: str, stdin: str = "") -> list[str]:
    libs = require_apache_kafka()
    done = subprocess.run(
        [libs.java, "-cp", libs.classpath, program],
        cwd=HERE,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return done.stdout.splitlines()


@pytest.mark.apache_kafka
def test_share_partition_scripts_are_kafkas_answers() -> None:
    out = _run("SharePartitionScripts.java", (HERE / "share_partition_scripts.txt").read_text())
    assert [line for line in out if KAFKA_LINE.match(line)] == (
        (HERE / "share_partition_kafka.txt").read_text().splitlines()
    )


@pytest.mark.apache_kafka
@pytest.mark.parametrize(
    ("program", "vectors"),
    [
        ("ShareStateRecords.java", "share_state_records.txt"),
        ("ShareStateCombiner.java", "share_state_combiner.txt"),
    ],
)
def test_share_coordinator_vectors_are_kafkas(program: str, vectors: str) -> None:
    assert _run(program) == (HERE / vectors).read_text().splitlines()
