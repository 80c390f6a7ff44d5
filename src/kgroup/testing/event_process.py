"""A child process that reports what happens as JSON events, one a line on its stdout (the Java clients'
driver JVMs, the Python exactly-once workers): its events, read on a thread of their own, and bounded
waits for one."""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

from kgroup.model import KgroupError

__all__ = ["EventProcess"]


class EventProcess:
    """The events of :attr:`_process` (set by the subclass, then :meth:`_start_reading`), in order."""

    name: str
    #: what :meth:`wait_for` waits at the most when not told
    default_wait_s = 60.0
    #: what a wait raises when the process was never started, and when it ran out of time
    _error_type: type[KgroupError] = KgroupError
    _timeout_type: type[KgroupError] = KgroupError

    def __init__(self) -> None:
        self._events: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        self._process: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None

    def _start_reading(self) -> None:
        self._reader = threading.Thread(target=self._read, name=f"{self.name}-events", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        process = self._process
        assert process is not None and process.stdout is not None
        for raw in process.stdout:
            line = raw.decode("utf-8", errors="replace").strip()
            if not line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                event = {"event": "garbage", "line": line[:300], "ts": int(time.time() * 1000)}
            self._record(event)
            self._observe(event)
        with self._changed:
            self._changed.notify_all()

    def _observe(self, event: dict[str, Any]) -> None:
        """Called by the reader thread for each event, once it is in :attr:`events`."""

    def _record(self, event: dict[str, Any]) -> None:
        with self._changed:
            self._events.append(event)
            self._changed.notify_all()

    @property
    def events(self) -> list[dict[str, Any]]:
        """Every event so far, in order (a copy)."""
        with self._changed:
            return list(self._events)

    def mark(self) -> int:
        """The number of events so far: pass it as ``since`` to wait for a later event only."""
        with self._changed:
            return len(self._events)

    def wait_for(
        self,
        predicate: Callable[[dict[str, Any]], bool],
        *,
        since: int = 0,
        timeout_s: float | None = None,
        what: str = "an event",
    ) -> dict[str, Any]:
        """The first event from index ``since`` on satisfying ``predicate``, waiting up to ``timeout_s``
        (:attr:`default_wait_s`); :meth:`_died` when the process ended without one."""
        timeout_s = self.default_wait_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        index = since
        with self._changed:
            while True:
                while index < len(self._events):
                    event = self._events[index]
                    index += 1
                    if predicate(event):
                        return event
                process = self._process
                if process is None:
                    raise self._error_type(f"{self.name}: not started")
                if process.poll() is not None and (self._reader is None or not self._reader.is_alive()):
                    raise self._died(what)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    last = json.dumps(self._events[-1]) if self._events else "nothing"
                    raise self._timeout_type(
                        f"{self.name}: waited {timeout_s:.0f} s for {what} (last event: {last[:300]})"
                    )
                self._changed.wait(min(remaining, 0.5))

    def _died(self, what: str) -> KgroupError:
        """The error of a process that ended while a wait for ``what`` went on."""
        code = self._process.returncode if self._process is not None else None
        return self._error_type(f"{self.name}: exited with code {code} waiting for {what}")

    def _end_process(self) -> None:
        """SIGKILL the process if it still runs, then close its pipes once its events are read."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        if self._reader is not None:
            self._reader.join(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
