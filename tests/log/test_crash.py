"""kill -9 of a process appending in a loop: every append that returned is there after reopen."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.log.batches import decode

from kgroup.log import LogConfig, LogManager

ROOT = Path(__file__).resolve().parents[2]

WRITER = r"""
import sys
from pathlib import Path
from kgroup.log import FsyncPolicy, LogConfig, LogManager
from tests.log.batches import kio_batch

data_dir, start = Path(sys.argv[1]), int(sys.argv[2])
config = LogConfig(fsync=FsyncPolicy.NEVER, segment_bytes=4096, index_interval_bytes=256)
manager = LogManager(data_dir, config)
if "t" not in manager.topics():
    manager.create_topic("t", 1)
log = manager.partition("t", 0)
coordinator = manager.coordinator_log()
n = start
while True:
    result = log.append(kio_batch([b"value-%d" % n, b"x" * (n % 50)]), now_ms=1)
    coordinator.append([(b"committed", b"%d" % result.last_offset), (b"n-%d" % n, b"x")])
    print(n, result.base_offset, flush=True)  # printed only once both appends returned
    n += 1
"""


def run_and_kill(data_dir: Path, start: int, acks: int) -> list[tuple[int, int]]:
    """Run the writer until it has acknowledged ``acks`` appends (or 30 s), then SIGKILL it."""
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{ROOT}")
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(data_dir), str(start)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    acknowledged: list[tuple[int, int]] = []
    deadline = time.monotonic() + 30
    try:
        assert child.stdout is not None
        while len(acknowledged) < acks and time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line:
                break
            n, offset = line.split()
            acknowledged.append((int(n), int(offset)))
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=10)
    assert acknowledged, f"the writer acknowledged nothing (exit {child.returncode})"
    return acknowledged


def test_kill_9_loses_no_acknowledged_append(tmp_path: Path) -> None:
    acknowledged: list[tuple[int, int]] = []
    next_n = 0
    for _ in range(3):  # bounded: three crashes and restarts
        acknowledged += run_and_kill(tmp_path, next_n, acks=150)
        with LogManager(tmp_path, LogConfig(segment_bytes=4096, index_interval_bytes=256)) as manager:
            assert not manager.clean_start
            log = manager.partition("t", 0)
            records = []
            offset = 0
            while offset < log.log_end_offset:
                batch = decode(log.read(offset, 1 << 20))
                records.extend(batch)
                offset = batch[-1][0] + 1
            values = {rec[0]: rec[3] for rec in records}
            assert [rec[0] for rec in records] == list(range(log.log_end_offset))  # no hole, no duplicate
            for n, base_offset in acknowledged:
                assert values[base_offset] == b"value-%d" % n
            written = sorted(int(v.split(b"-")[1]) for v in values.values() if v and v.startswith(b"value-"))
            assert written == list(range(len(written)))  # in order, each once
            replayed = dict(manager.coordinator_log().replay())
            assert int(replayed[b"committed"]) >= acknowledged[-1][1]
            next_n = len(written)
