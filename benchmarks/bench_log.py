"""Benchmark (not a test): kgroup.log append, read and recovery throughput on real files.

Run:  PYTHONPATH=. .venv/bin/python benchmarks/bench_log.py [--mb 200] [--records-per-batch 16]

* batches of ``--records-per-batch`` 1 KiB records (uncompressed, built once by kio's writer and
  appended again and again, as a producer's retries would be without an id), one partition,
  1 GiB segments; append MB/s (validation, offset stamping, write(2)) and read MB/s (whole batches,
  1 MiB per read);
* recovery: open the partition after an unclean shutdown (the last segment re-read, CRC-checked and
  re-indexed) in MB/s;
* wall-clock medians are not taken: one pass each, printed with the load average.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from tests.log.batches import kio_batch

from kgroup.log import FsyncPolicy, PartitionLog, PartitionSettings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--records-per-batch", type=int, default=16)
    parser.add_argument("--fsync", choices=[p.value for p in FsyncPolicy], default="never")
    args = parser.parse_args()
    settings = PartitionSettings(
        segment_bytes=1 << 30, index_interval_bytes=4096, max_message_bytes=1 << 24, log_append_time=False,
        retention_bytes=None, retention_ms=None, fsync=FsyncPolicy(args.fsync),
    )  # fmt: skip
    batch = kio_batch([os.urandom(1024) for _ in range(args.records_per_batch)])
    count = args.mb * (1 << 20) // len(batch)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "t-0"
        log = PartitionLog(directory, settings, recover_tail=False)
        start = time.perf_counter()
        for _ in range(count):
            log.append(batch, now_ms=0)
        append_s = time.perf_counter() - start
        total = log.size_bytes
        start = time.perf_counter()
        offset = 0
        while offset < log.log_end_offset:
            data = log.read(offset, 1 << 20)
            offset += len(data) // len(batch) * args.records_per_batch
        read_s = time.perf_counter() - start
        log.close()
        start = time.perf_counter()
        reopened = PartitionLog(directory, settings, recover_tail=True)
        recover_s = time.perf_counter() - start
        assert reopened.log_end_offset == count * args.records_per_batch
        reopened.close()
    mb = total / (1 << 20)
    print(f"load average {os.getloadavg()[0]:.2f}; {count} batches of {len(batch)} bytes, {mb:.0f} MiB")
    print(f"append  {mb / append_s:8.1f} MiB/s  ({count / append_s:,.0f} batches/s, fsync={args.fsync})")
    print(f"read    {mb / read_s:8.1f} MiB/s")
    print(f"recover {mb / recover_s:8.1f} MiB/s  (unclean open: full CRC scan and re-index)")


if __name__ == "__main__":
    main()
