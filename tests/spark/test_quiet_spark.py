"""Spark commands say only what kgroup says: no JDK warning, no log lines, no Java stack — on a
failure one ``kgroup: error:`` line, on success (``--json``) nothing at all on stderr.

Each test starts its own ``kgroup`` process (a fresh JVM), because what is checked is what that
JVM prints to the process's stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

KGROUP = [sys.executable, "-m", "kgroup"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KGROUP, *args], capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.spark_own_process
def test_a_corrupt_parquet_file_is_one_clean_line(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"PAR1 this is not parquet at all PAR1")
    result = _run("partition", "-p", "6", "--input", str(corrupt), "--master", "local[1]")
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"kgroup: error: input: Spark could not read {corrupt} as parquet ([")
    assert "Could not read footer" in lines[0]
    assert lines[0].endswith("); check the file or pass --format")


@pytest.mark.spark_own_process
def test_a_spark_run_with_json_prints_nothing_on_stderr(tmp_path: Path) -> None:
    data = tmp_path / "keys.csv"
    data.write_text("key,n\nfoobar,1\n,2\n")  # the empty key is a keyless record
    result = _run("partition", "-p", "6", "--input", str(data), "--master", "local[1]", "--json")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # in particular no "WARNING: Using incubator modules"
    summary = json.loads(result.stdout)
    assert summary["records"] == 2 and summary["keyed_records"] == 1


def test_watch_tasks_reports_the_running_stage(spark: Any) -> None:
    """What the `simulate --compare` progress bar reads: completed and total tasks of the stage."""
    from kgroup.spark.progress import watch_tasks

    def _slow_identity(x: int) -> int:  # nested: pickled by value for Spark's Python workers
        import time

        time.sleep(1.0)
        return x

    seen: list[tuple[int, int]] = []
    # 8 one-second tasks on local[2]: four waves, so completed tasks are visible while the stage runs
    with watch_tasks(spark, lambda done, total: seen.append((done, total)), interval_s=0.1):
        assert spark.sparkContext.parallelize(range(8), 8).map(_slow_identity).collect() == list(range(8))
    assert seen, "no progress was reported while the job ran"
    assert {total for _, total in seen} == {8}
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)  # never goes back
    assert max(done for done, _ in seen) >= 1
