"""Ending the child processes kgroup's tools start (brokers, JVMs, proxies, workers) within a bound."""

from __future__ import annotations

import signal
import subprocess
from typing import Any

__all__ = ["stop_process", "wait_or_kill"]


def wait_or_kill(process: subprocess.Popen[Any], timeout_s: float, kill_wait_s: float = 10.0) -> None:
    """Wait up to ``timeout_s`` for ``process`` (asked to end) to exit; past that, SIGKILL it and wait up
    to ``kill_wait_s`` more."""
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=kill_wait_s)


def stop_process(
    process: subprocess.Popen[Any],
    grace_s: float,
    *,
    signal_number: int = signal.SIGTERM,
    kill_wait_s: float = 10.0,
) -> None:
    """Send ``signal_number`` to ``process`` unless it has exited, then :func:`wait_or_kill` it."""
    if process.poll() is not None:
        return
    process.send_signal(signal_number)
    wait_or_kill(process, grace_s, kill_wait_s)
