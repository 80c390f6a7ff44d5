"""Kafka's ``Utils.murmur2`` in a JVM of its own, timed one pass at a time beside kgroup's.

``Murmur2Bench.java`` (the Kafka harness, compiled against the pinned Kafka jars) loads the very keys
kgroup hashes, one ``byte[]`` per key, and times one pass of
``Utils.toPositive(Utils.murmur2(key)) % partitions`` over all of them per request, so a benchmark can
alternate kgroup's runs and Java's and both see the same machine load. Every answer carries the sum of
the partitions, which the caller checks against its own.
"""

from __future__ import annotations

import os
import select
import signal
import struct
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

import numpy as np

from kgroup.bench.java_harness import harness_jar
from kgroup.model import KgroupError

__all__ = ["JavaMurmur2", "JavaPass"]

#: the longest one request may take (a pass over a million keys takes milliseconds)
CALL_TIMEOUT_S = 120.0


class JavaPass(tuple[int, int, int]):
    """One Java pass: wall ns, the JVM thread's CPU ns, the sum of the partitions."""

    @property
    def wall_ns(self) -> int:
        return self[0]

    @property
    def cpu_ns(self) -> int:
        return self[1]

    @property
    def partition_sum(self) -> int:
        return self[2]


class JavaMurmur2:
    """``with JavaMurmur2(data, offsets, partitions) as java: java.run()`` — one timed Java pass."""

    def __init__(self, data: np.ndarray, offsets: np.ndarray, partitions: int) -> None:
        self._data = np.ascontiguousarray(data, dtype=np.uint8)
        self._offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self._partitions = partitions
        self._work: tempfile.TemporaryDirectory[str] | None = None
        self._process: subprocess.Popen[str] | None = None
        self.keys = 0

    def __enter__(self) -> JavaMurmur2:
        jar, libs = harness_jar(
            "Murmur2Bench.java", "kgroup-murmur2-bench", "java: Kafka's murmur2 cannot be measured here"
        )
        self._work = tempfile.TemporaryDirectory(prefix="kgroup-murmur2-bench-")
        keys_file = Path(self._work.name) / "keys.bin"
        count = self._offsets.size - 1
        relative = (self._offsets - self._offsets[0]).astype(">i4")
        body = self._data[int(self._offsets[0]):int(self._offsets[-1])]
        keys_file.write_bytes(struct.pack(">i", count) + relative.tobytes() + body.tobytes())
        self._process = subprocess.Popen(
            [libs.java, "-Xmx2g", "-cp", os.pathsep.join([str(jar), libs.classpath]), "Murmur2Bench",
             str(keys_file), str(self._partitions)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            start_new_session=True,
        )
        try:
            hello = self._line()
        except BaseException:
            self._stop()
            raise
        if not hello.startswith("ready "):
            self._stop()
            raise KgroupError(f"java: the murmur2 harness did not start ({hello!r})")
        self.keys = int(hello.split()[1])
        return self

    def _line(self) -> str:
        process = self._process
        assert process is not None and process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], CALL_TIMEOUT_S)
        if not ready:
            raise KgroupError(f"java: the murmur2 harness did not answer within {CALL_TIMEOUT_S:g} s")
        line = process.stdout.readline()
        if not line:
            raise KgroupError(f"java: the murmur2 harness exited (status {process.poll()})")
        return line.strip()

    def run(self) -> JavaPass:
        """One timed pass over every key in the JVM."""
        process = self._process
        if process is None or process.stdin is None:
            raise KgroupError("JavaMurmur2: not started; use it as a context manager")
        process.stdin.write("run\n")
        process.stdin.flush()
        wall, cpu, total = (int(x) for x in self._line().split())
        return JavaPass((wall, cpu, total))

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            try:
                if process.stdin is not None:
                    process.stdin.write("quit\n")
                    process.stdin.close()
                process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        if self._work is not None:
            self._work.cleanup()
            self._work = None

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop()
