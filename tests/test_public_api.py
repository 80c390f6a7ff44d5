"""The top-level API: every name in ``kgroup.__all__`` resolves, and the keyed partitioner works."""

from __future__ import annotations

import subprocess
import sys

import kgroup


def test_every_exported_name_resolves() -> None:
    for name in kgroup.__all__:
        assert getattr(kgroup, name) is not None, name


def test_top_level_partitioning_matches_kafka() -> None:
    # UtilsTest.testMurmur2 / murmur2 vector: "foobar" -> -790332482
    assert kgroup.murmur2(b"foobar") == -790332482
    assert kgroup.partition_for_key(b"foobar", 3) == (-790332482 & 0x7FFFFFFF) % 3


def test_top_level_assignor_by_name() -> None:
    assignor = kgroup.create_assignor("range")
    members = [kgroup.Member("c1", ("t",)), kgroup.Member("c2", ("t",))]
    request = kgroup.AssignmentRequest(members, {"t": kgroup.TopicMetadata("t", 3)})
    result = assignor.assign(request)
    assert result == {
        "c1": [kgroup.TopicPartition("t", 0), kgroup.TopicPartition("t", 1)],
        "c2": [kgroup.TopicPartition("t", 2)],
    }


def test_import_stays_light() -> None:
    heavy = "('numba', 'pyarrow', 'pyspark', 'matplotlib')"
    code = f"import sys, kgroup; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"
