"""One Java client driver's JVM as a process handle: :class:`JavaClientProcess`.

It runs ``ClientDriver.java`` (beside this module) against the pinned ``kafka-clients`` jar, reads the
JSON line of each event the driver prints into ``events`` in a thread, sends commands on stdin, waits
for events with a bound (:class:`JavaClientTimeout`, :class:`JavaClientDied`) and shuts the JVM down.
The client APIs over it are :mod:`.java_consumer`, :mod:`.java_producer`, :mod:`.java_eos_worker`
and :mod:`.java_share`; :mod:`.java_client` gathers them.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from kgroup.javatools import cache_root, class_data_archive, compile_jar
from kgroup.model import KgroupError
from kgroup.testing.apache_kafka.distribution import KafkaLibs, kafka_libs, log4j2_file_config
from kgroup.testing.event_process import EventProcess

__all__ = [
    "DEFAULT_WAIT_S",
    "JavaClientDied",
    "JavaClientError",
    "JavaClientProcess",
    "JavaClientTimeout",
    "client_driver_jar",
    "close_all",
    "start_all",
]

_SOURCE = Path(__file__).with_name("java") / "ClientDriver.java"
_MAIN = "kgroup.testing.ClientDriver"
_JVM_OPTIONS = (
    "-Xmx256m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Djava.awt.headless=true",
    "-Xshare:auto",
    "-Xlog:disable",  # the JVM's own log (e.g. a stale class-data archive's warning) must not reach stdout
)
#: a JVM start plus the client's first metadata round trip
DEFAULT_WAIT_S = 60.0
#: how long close() waits for the JVM after the client's own close timeout
_EXIT_GRACE_S = 15.0
_names = itertools.count(1)
#: whether this process already has a JVM writing the class-data archive
_dumping = threading.Lock()


def _class_data_archive(java: str, classpath: str) -> Path:
    """Where the driver's class-data sharing archive lives: a JVM starts in about half the time with
    it (~1 s instead of ~1.8 s measured). It is keyed by the ``java`` and the class path it was made
    with; the JVM ignores an archive that does not match."""
    return class_data_archive("kgroup-client-driver", java, classpath)


class JavaClientError(KgroupError):
    """A Java client driven by kgroup failed (the message is one line)."""


class JavaClientDied(JavaClientError):
    """The client's JVM exited while it was expected to run."""


class JavaClientTimeout(JavaClientError):
    """An awaited event did not come within the bound."""


def client_driver_jar(libs: KafkaLibs | None = None) -> Path:
    """The compiled driver (cached in ``~/.cache/kgroup/java``; compiled with javac on first use)."""
    libs = libs or kafka_libs()
    classpath = [
        libs.jar("kafka-clients"),
        libs.jar("jackson-databind"),
        libs.jar("jackson-core"),
        libs.jar("jackson-annotations"),
    ]
    return compile_jar([_SOURCE], classpath, cache_root() / "java", "kgroup-client-driver")


class JavaClientProcess(EventProcess):
    """One driver JVM: start, events (:class:`EventProcess`), commands, bounded waits, shutdown."""

    kind = ""
    default_wait_s = DEFAULT_WAIT_S
    _error_type = JavaClientError
    _timeout_type = JavaClientTimeout

    def __init__(
        self,
        config: Mapping[str, Any],
        *,
        name: str | None,
        libs: KafkaLibs | None,
        log_dir: str | Path | None,
        log_level: str,
    ) -> None:
        super().__init__()
        self.name = name or f"java-{self.kind}-{next(_names)}"
        self._config = dict(config)
        self._libs = libs
        self._owns_dir = log_dir is None
        self.log_dir = Path(log_dir) if log_dir is not None else Path(tempfile.mkdtemp(prefix="kgroup-java-"))
        self._log_level = log_level
        self._send_lock = threading.Lock()  # commands come from the test and from the reader thread
        self._stderr: Any = None
        self._archive: tuple[Path, Path] | None = None
        self._close_mark: int | None = None

    # --- lifecycle ---------------------------------------------------------------------------------

    @property
    def log_file(self) -> Path:
        """The client's own log (log4j 2, ``log_level``)."""
        return self.log_dir / f"{self.name}.log"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None and self._process.poll() is None else None

    def start(self) -> Self:
        """Start the JVM and wait until the client is constructed (its ``started`` event)."""
        self.launch()
        try:
            self.wait_for(lambda e: e["event"] == "started", what="the client to start")
        except BaseException:
            self.kill()
            raise
        return self

    def launch(self) -> None:
        """Start the JVM without waiting for it (see :func:`start_all`)."""
        if self._process is not None:
            raise JavaClientError(f"{self.name}: already started")
        libs = self._libs or kafka_libs()
        jar = client_driver_jar(libs)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log4j = self.log_dir / f"{self.name}.log4j2.properties"
        log4j.write_text(log4j2_file_config(self.log_file, self._log_level))
        self._stderr = open(self.log_dir / f"{self.name}.stderr", "wb")  # noqa: SIM115 (closed in _cleanup)
        classpath = os.pathsep.join([str(jar), libs.classpath])
        archive = _class_data_archive(libs.java, classpath)
        if archive.is_file():
            sharing = [f"-XX:SharedArchiveFile={archive}"]
        elif self.kind == "consumer" and _dumping.acquire(blocking=False):
            # the first consumer of this process writes the archive as it exits (to a name of its
            # own, moved into place once it is whole)
            self._archive = (archive.with_suffix(f".{os.getpid()}.tmp"), archive)
            sharing = [f"-XX:ArchiveClassesAtExit={self._archive[0]}"]
        else:
            sharing = []
        command = [
            libs.java,
            *_JVM_OPTIONS,
            *sharing,
            f"-Dlog4j2.configurationFile={log4j}",
            "-cp",
            classpath,
            _MAIN,
            self.kind,
            json.dumps(self._config),
        ]
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr
        )
        self._start_reading()

    def __enter__(self) -> Self:
        return self.start() if self._process is None else self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.pid is not None:
            if exc_type is None:
                self.close()
            else:
                self.kill()
        self._cleanup()

    def close(self, timeout_s: float = 30.0) -> None:
        """Close the client (``close()`` with this timeout), then wait for its JVM to exit."""
        self._finish_close(self._request_close(timeout_s), timeout_s)

    def _request_close(self, timeout_s: float) -> int | None:
        """Send ``close``; the event index to wait from, or ``None`` when the JVM is not running."""
        process = self._process
        if process is None or process.poll() is not None or self._close_mark is not None:
            return self._close_mark
        self._close_mark = len(self._events)
        self.send({"cmd": "close", "timeout_ms": int(timeout_s * 1000)})
        return self._close_mark

    def _finish_close(self, mark: int | None, timeout_s: float) -> None:
        process = self._process
        if mark is None or process is None:
            self._cleanup()
            return
        try:
            closed = self.wait_for(
                lambda e: e["event"] == "closed",
                since=mark,
                timeout_s=timeout_s + _EXIT_GRACE_S,
                what="the client to close",
            )
            process.wait(timeout=_EXIT_GRACE_S)
        except (JavaClientError, subprocess.TimeoutExpired):
            self.kill()
            raise
        finally:
            self._cleanup()
        if closed.get("error"):
            error = closed["error"]
            raise JavaClientError(f"{self.name}: close() failed: {error['type']}: {error['message']}")
        self.remove_logs()  # a clean close leaves nothing to look at (a log_dir given is kept)

    def kill(self) -> None:
        """SIGKILL the JVM (a crash: no LeaveGroup, no commit) and wait for it."""
        process = self._process
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        self._cleanup()

    def _cleanup(self) -> None:
        self._end_process()
        process = self._process
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        if self._archive is not None:
            staged, final = self._archive
            self._archive = None
            with contextlib.suppress(OSError):
                if staged.is_file() and process is not None and process.returncode == 0:
                    os.replace(staged, final)
                staged.unlink(missing_ok=True)
            _dumping.release()

    def remove_logs(self) -> None:
        """Remove the log directory if the handle created it (done by a clean :meth:`close`)."""
        if self._owns_dir:
            shutil.rmtree(self.log_dir, ignore_errors=True)

    # --- events and commands -----------------------------------------------------------------------

    def send(self, command: Mapping[str, Any]) -> None:
        process = self._process
        if process is None or process.stdin is None:
            raise JavaClientError(f"{self.name}: not started")
        try:
            with self._send_lock:
                process.stdin.write(json.dumps(command).encode() + b"\n")
                process.stdin.flush()
        except (OSError, ValueError):  # ValueError: the handle closed the pipe (the JVM is gone)
            raise self._died() from None

    def _died(self, what: str = "") -> JavaClientDied:
        process = self._process
        code = process.poll() if process is not None else None
        last = [e for e in self._events if e["event"] in ("fatal", "error")]
        if last:
            reason = f"{last[-1].get('type')}: {last[-1].get('message')}"
        else:
            reason = _last_error_line(self.log_file) or _last_error_line(self.log_dir / f"{self.name}.stderr")
        return JavaClientDied(
            f"{self.name} (JVM pid {process.pid if process else '?'}) exited with code "
            f"{code}: {reason or 'no error logged'}"[:800]
        )


def start_all(*clients: JavaClientProcess) -> None:
    """Start several clients' JVMs side by side and wait until each is constructed.

    A consumer made with ``subscribe=True`` subscribes as soon as it is constructed, so the order in
    which such consumers join is left to chance; pass ``subscribe=False`` where it matters.
    """
    try:
        for client in clients:
            client.launch()
        for client in clients:
            client.wait_for(lambda e: e["event"] == "started", what="the client to start")
    except BaseException:
        for client in clients:
            client.kill()
        raise


def close_all(*clients: JavaClientProcess, timeout_s: float = 30.0) -> None:
    """Close several clients side by side (each as :meth:`close` would); the first failure is raised
    once every client is closed or killed."""
    marks = []
    failure: BaseException | None = None
    for client in clients:
        try:
            marks.append(client._request_close(timeout_s))
        except JavaClientError as exc:
            marks.append(None)
            failure = failure or exc
    for client, mark in zip(clients, marks, strict=True):
        try:
            client._finish_close(mark, timeout_s)
        except JavaClientError as exc:
            failure = failure or exc
    if failure is not None:
        raise failure


def _last_error_line(path: Path) -> str:
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    picked = [line for line in lines if " ERROR " in line or "Exception" in line or "Error" in line] or lines
    return picked[-1][:400] if picked else ""


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
