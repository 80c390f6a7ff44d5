"""Broker and client subprocesses for crash tests (each bounded in time, each killed at the end)."""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
from pathlib import Path

START_TIMEOUT_S = 60.0


class BrokerProcess:
    """``kgroup serve`` in a subprocess on free ports; ``bootstrap_servers`` once it listens."""

    def __init__(self, data_dir: Path, *args: str) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kgroup",
                "serve",
                "--port",
                "0",
                "--data-dir",
                str(data_dir),
                "-q",
                *args,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
            env=env,
        )
        self.bootstrap_servers = self._wait_for_bootstrap()

    def _wait_for_bootstrap(self) -> str:
        assert self.proc.stdout is not None
        selector = selectors.DefaultSelector()
        selector.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + START_TIMEOUT_S
        seen = b""
        try:
            while time.monotonic() < deadline:
                if not selector.select(timeout=0.5):
                    if self.proc.poll() is not None:
                        raise RuntimeError(f"kgroup serve exited with {self.proc.returncode}")
                    continue
                chunk = os.read(self.proc.stdout.fileno(), 4096)  # unbuffered: select sees every byte
                if not chunk:
                    raise RuntimeError("kgroup serve closed its output before listening")
                seen += chunk
                for line in seen.decode().splitlines():
                    if line.startswith("bootstrap.servers=") and seen.endswith(b"\n"):
                        return line.split()[0].split("=", 1)[1]
        finally:
            selector.close()
        self.kill()
        raise RuntimeError("kgroup serve did not start in time")

    def kill(self) -> None:
        """``kill -9``: no flush, no close."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def terminate(self) -> int:
        """SIGTERM and wait: the graceful shutdown."""
        if self.proc.poll() is None:
            self.proc.terminate()
        code = self.proc.wait(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return code
