"""Fixtures of the log tests: a partition log on real files in tmp_path."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kgroup.log import FsyncPolicy, PartitionLog, PartitionSettings


def partition_settings(**overrides: object) -> PartitionSettings:
    values: dict[str, object] = {
        "segment_bytes": 1 << 30,
        "index_interval_bytes": 4096,
        "max_message_bytes": 1024 * 1024 + 12,
        "log_append_time": False,
        "retention_bytes": None,
        "retention_ms": None,
        "fsync": FsyncPolicy.NEVER,
    }
    values.update(overrides)
    return PartitionSettings(**values)  # type: ignore[arg-type]


OpenLog = Callable[..., PartitionLog]


@pytest.fixture
def open_log(tmp_path: Path) -> Iterator[OpenLog]:
    """Open the partition in ``tmp_path/t-0`` (closing the previous one), with settings overrides."""
    opened: list[PartitionLog] = []

    def _open(*, recover_tail: bool = True, **overrides: object) -> PartitionLog:
        for log in opened:
            log.close()
        opened.clear()
        log = PartitionLog(tmp_path / "t-0", partition_settings(**overrides), recover_tail=recover_tail)
        opened.append(log)
        return log

    yield _open
    for log in opened:
        log.close()
