"""Apache Kafka's Java clients as process handles: ``JavaConsumer`` and ``JavaProducer``.

Each handle runs ``ClientDriver.java`` (beside this module) in its own JVM against the pinned
``kafka-clients`` jar: the real ``KafkaConsumer`` (classic group protocol) or ``KafkaProducer``,
configured with Kafka's property names. The driver prints one JSON line per observable event
(partitions assigned, revoked or lost with the generation of ``consumer.groupMetadata()``, records,
commits and their result, errors) and takes commands on stdin; the handle reads the events in a
thread, keeps them all (``events``) and waits for the ones a test needs with a bound, raising
:class:`JavaClientTimeout` (what it waited for, what it saw last) or :class:`JavaClientDied` (the
exit code and the client's last error) in one line.

    >>> with JavaConsumer(kafka.bootstrap_servers, "g", ["orders"]) as consumer:  # doctest: +SKIP
    ...     assigned = consumer.wait_assigned()
    ...     print(assigned.generation, sorted(consumer.assignment))

The driver is compiled on first use with :func:`kgroup.javatools.compile_jar` against
``kafka-clients`` and Jackson, into kgroup's cache. Each JVM logs through log4j 2 into its own file
(``log_file``); nothing but the events reaches its stdout. The handles work for any broker, so a
user's test can drive Kafka's own clients against ``kgroup serve`` as kgroup's tests do.
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
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from kgroup.javatools import cache_root, class_data_archive, compile_jar
from kgroup.model import KgroupError, TopicPartition
from kgroup.testing.apache_kafka.distribution import KafkaLibs, kafka_libs, log4j2_file_config

__all__ = [
    "Commit",
    "JavaClientDied",
    "JavaClientError",
    "JavaClientTimeout",
    "JavaConsumer",
    "JavaExactlyOnceWorker",
    "JavaProducer",
    "Rebalance",
    "SentRecord",
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


def _partitions(rows: Iterable[Sequence[Any]]) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(str(row[0]), int(row[1])) for row in rows)


@dataclass(frozen=True, slots=True)
class Rebalance:
    """One call of the consumer's rebalance listener (``kind``: assigned, revoked or lost).

    ``partitions`` are the callback's; ``assignment`` is the consumer's whole assignment once the
    callback is done; ``generation`` and ``member_id`` are ``consumer.groupMetadata()``'s during it.
    """

    kind: str
    partitions: frozenset[TopicPartition]
    assignment: frozenset[TopicPartition]
    generation: int
    member_id: str
    ts_ms: int


@dataclass(frozen=True, slots=True)
class Commit:
    """A commit's outcome: ``error`` is ``None`` or the exception's class name (``error_message``)."""

    offsets: dict[TopicPartition, int | None]
    error: str | None
    error_message: str | None
    ts_ms: int


@dataclass(frozen=True, slots=True)
class SentRecord:
    key: str | None
    topic: str
    partition: int
    offset: int


def _rebalance(event: Mapping[str, Any]) -> Rebalance:
    return Rebalance(
        kind=event["event"],
        partitions=_partitions(event["partitions"]),
        assignment=_partitions(event["assignment"]),
        generation=int(event["generation"]),
        member_id=str(event["member_id"]),
        ts_ms=int(event["ts"]),
    )


def _offsets(rows: Iterable[Sequence[Any]] | None) -> dict[TopicPartition, int | None]:
    return {TopicPartition(str(r[0]), int(r[1])): (None if r[2] is None else int(r[2])) for r in rows or ()}


class _JavaClient:
    """One driver JVM: start, events, commands, bounded waits, shutdown."""

    kind = ""

    def __init__(
        self,
        config: Mapping[str, Any],
        *,
        name: str | None,
        libs: KafkaLibs | None,
        log_dir: str | Path | None,
        log_level: str,
    ) -> None:
        self.name = name or f"java-{self.kind}-{next(_names)}"
        self._config = dict(config)
        self._libs = libs
        self._owns_dir = log_dir is None
        self.log_dir = Path(log_dir) if log_dir is not None else Path(tempfile.mkdtemp(prefix="kgroup-java-"))
        self._log_level = log_level
        self._events: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        self._send_lock = threading.Lock()  # commands come from the test and from the reader thread
        self._process: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None
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

    def start(self) -> _JavaClient:
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
        self._reader = threading.Thread(target=self._read, name=f"{self.name}-events", daemon=True)
        self._reader.start()

    def __enter__(self) -> Any:
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
        process = self._process
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        if process is not None and process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        if self._reader is not None:
            self._reader.join(timeout=10)
        if process is not None and process.stdout is not None:
            process.stdout.close()
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

    def wait_for(
        self,
        predicate: Callable[[dict[str, Any]], bool],
        *,
        since: int = 0,
        timeout_s: float = DEFAULT_WAIT_S,
        what: str = "an event",
    ) -> dict[str, Any]:
        """The first event from index ``since`` on satisfying ``predicate``, waiting up to ``timeout_s``."""
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
                    raise JavaClientError(f"{self.name}: not started")
                if process.poll() is not None and (self._reader is None or not self._reader.is_alive()):
                    raise self._died()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    last = json.dumps(self._events[-1]) if self._events else "nothing"
                    raise JavaClientTimeout(
                        f"{self.name}: waited {timeout_s:.0f} s for {what} (last event: {last[:300]})"
                    )
                self._changed.wait(min(remaining, 0.5))

    def _died(self) -> JavaClientDied:
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


def start_all(*clients: _JavaClient) -> None:
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


def close_all(*clients: _JavaClient, timeout_s: float = 30.0) -> None:
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


class JavaConsumer(_JavaClient):
    """Kafka's Java ``KafkaConsumer`` in a classic group, subscribed to ``topics``.

    The named arguments are the usual settings (Kafka's defaults where ``None``);
    ``assignment_strategy`` takes Kafka's class names or the short names ``range``, ``roundrobin``,
    ``sticky``, ``cooperative-sticky`` (a list keeps its order: the first is preferred). ``config``
    adds or overrides any consumer property. Records are read as UTF-8 strings. ``subscribe=False``
    starts the JVM and the client but subscribes (and so joins the group) only at :meth:`subscribe`.

    ``on_rebalance`` is called (in the handle's reader thread) with each call of the rebalance listener,
    and the Java callback returns only once it has (the driver waits for the handle's ``ack``): what it
    records happens before the consumer goes on — before a revoked partition can go to another member,
    at ``close()`` before the LeaveGroup. An exception it raises is kept as an ``error`` event
    (``where``: ``on_rebalance``).
    """

    kind = "consumer"

    def __init__(
        self,
        bootstrap_servers: str,
        group_id: str,
        topics: Sequence[str],
        *,
        group_instance_id: str | None = None,
        assignment_strategy: str | Sequence[str] | None = None,
        session_timeout_ms: int | None = None,
        heartbeat_interval_ms: int | None = None,
        max_poll_interval_ms: int | None = None,
        client_id: str | None = None,
        auto_offset_reset: str = "earliest",
        enable_auto_commit: bool = False,
        config: Mapping[str, object] | None = None,
        poll_ms: int = 100,
        subscribe: bool = True,
        on_rebalance: Callable[[Rebalance], None] | None = None,
        name: str | None = None,
        libs: KafkaLibs | None = None,
        log_dir: str | Path | None = None,
        log_level: str = "INFO",
    ) -> None:
        properties: dict[str, object] = {
            "bootstrap.servers": bootstrap_servers,
            "group.id": group_id,
            "group.protocol": "classic",
            "auto.offset.reset": auto_offset_reset,
            "enable.auto.commit": enable_auto_commit,
        }
        optional = {
            "group.instance.id": group_instance_id,
            "partition.assignment.strategy": _strategies(assignment_strategy),
            "session.timeout.ms": session_timeout_ms,
            "heartbeat.interval.ms": heartbeat_interval_ms,
            "max.poll.interval.ms": max_poll_interval_ms,
            "client.id": client_id,
        }
        properties.update({k: v for k, v in optional.items() if v is not None})
        properties.update(config or {})
        super().__init__(
            {
                "properties": {k: _text(v) for k, v in properties.items()},
                "topics": list(topics),
                "poll_ms": poll_ms,
                "subscribe_on_command": not subscribe,
                "acknowledge_rebalances": on_rebalance is not None,
            },
            name=name or (client_id if client_id else None),
            libs=libs,
            log_dir=log_dir,
            log_level=log_level,
        )
        self.group_id = group_id
        self.topics = tuple(topics)
        self._on_rebalance = on_rebalance

    def _observe(self, event: dict[str, Any]) -> None:
        if self._on_rebalance is None or event["event"] not in ("assigned", "revoked", "lost"):
            return
        try:
            self._on_rebalance(_rebalance(event))
        except Exception as exc:  # kept as an event: the reader thread must go on
            error = {"event": "error", "where": "on_rebalance", "fatal": False, "ts": int(time.time() * 1000)}
            self._record({**error, "type": type(exc).__name__, "message": str(exc)})
        with contextlib.suppress(JavaClientError):  # the JVM has exited: nothing waits for the ack
            self.send({"cmd": "ack"})

    def start(self) -> JavaConsumer:
        super().start()
        return self

    def __enter__(self) -> JavaConsumer:
        return self.start() if self._process is None else self

    def subscribe(self, topics: Sequence[str] | None = None, *, timeout_s: float = 30.0) -> int:
        """Subscribe now (for a consumer made with ``subscribe=False``); the JVM's time of it (ms).

        With ``topics``, ``subscribe()`` to that list instead, also when already subscribed (Kafka's
        ``subscribe`` replaces the subscription; the member rejoins at its next ``poll()``). The
        command is taken between two ``poll()`` calls, never inside a rebalance callback."""
        mark = self.mark()
        command: dict[str, Any] = {"cmd": "subscribe"}
        if topics is not None:
            command["topics"] = list(topics)
            self.topics = tuple(topics)
        self.send(command)
        event = self.wait_for(
            lambda e: e["event"] == "subscribed", since=mark, timeout_s=timeout_s, what="the subscription"
        )
        return int(event["ts"])

    # --- what the listener saw ---------------------------------------------------------------------

    def rebalances(self, since: int = 0) -> list[Rebalance]:
        return [_rebalance(e) for e in self.events[since:] if e["event"] in ("assigned", "revoked", "lost")]

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        """The consumer's assignment as its rebalance listener last saw it (empty before the first)."""
        found = self.rebalances()
        return found[-1].assignment if found else frozenset()

    @property
    def generation(self) -> int:
        """The generation of the last rebalance callback (-1 before the first)."""
        found = self.rebalances()
        return found[-1].generation if found else -1

    @property
    def member_id(self) -> str:
        found = self.rebalances()
        return found[-1].member_id if found else ""

    def wait_assigned(
        self,
        *,
        since: int = 0,
        timeout_s: float = DEFAULT_WAIT_S,
        where: Callable[[Rebalance], bool] | None = None,
    ) -> Rebalance:
        """The first ``assigned`` callback from event ``since`` on (that satisfies ``where``)."""
        event = self.wait_for(
            lambda e: e["event"] == "assigned" and (where is None or where(_rebalance(e))),
            since=since,
            timeout_s=timeout_s,
            what="partitions to be assigned",
        )
        return _rebalance(event)

    def wait_error(self, *, since: int = 0, timeout_s: float = DEFAULT_WAIT_S) -> dict[str, Any]:
        """The first exception ``poll()`` threw from event ``since`` on (``type``, ``message``, ``fatal``)."""
        return self.wait_for(
            lambda e: e["event"] == "error", since=since, timeout_s=timeout_s, what="an error from poll()"
        )

    def errors(self, since: int = 0) -> list[dict[str, Any]]:
        return [e for e in self.events[since:] if e["event"] == "error"]

    # --- records -----------------------------------------------------------------------------------

    def records(self, since: int = 0) -> list[dict[str, Any]]:
        """Consumed records (``topic``, ``partition``, ``offset``, ``key``, ``value``) in order."""
        return [e for e in self.events[since:] if e["event"] == "record"]

    def wait_records(
        self, count: int, *, since: int = 0, timeout_s: float = DEFAULT_WAIT_S
    ) -> list[dict[str, Any]]:
        """Wait until at least ``count`` records were consumed from event ``since`` on; return them."""
        seen = [0]

        def enough(event: dict[str, Any]) -> bool:
            if event["event"] == "record":
                seen[0] += 1
            return seen[0] >= count

        if count > 0:
            self.wait_for(enough, since=since, timeout_s=timeout_s, what=f"{count} records")
        return self.records(since)

    # --- commands ----------------------------------------------------------------------------------

    def commit(
        self, offsets: Mapping[TopicPartition, int] | None = None, *, timeout_s: float = 30.0
    ) -> Commit:
        """``commitSync`` of ``offsets`` (default: the position of every assigned partition)."""
        mark = self.mark()
        command: dict[str, Any] = {"cmd": "commit", "timeout_ms": int(timeout_s * 1000)}
        if offsets is not None:
            command["offsets"] = [[tp.topic, tp.partition, offset] for tp, offset in offsets.items()]
        self.send(command)
        event = self.wait_for(
            lambda e: e["event"] == "commit", since=mark, timeout_s=timeout_s + 15, what="the commit's result"
        )
        error = event.get("error")
        return Commit(
            _offsets(event["offsets"]),
            error["type"] if error else None,
            error["message"] if error else None,
            int(event["ts"]),
        )

    def committed(
        self, partitions: Iterable[TopicPartition] | None = None, *, timeout_s: float = 30.0
    ) -> dict[TopicPartition, int | None]:
        """``consumer.committed(partitions)`` (default: the assigned ones); ``None`` for no offset."""
        mark = self.mark()
        command: dict[str, Any] = {"cmd": "committed", "timeout_ms": int(timeout_s * 1000)}
        if partitions is not None:
            command["partitions"] = [[tp.topic, tp.partition] for tp in partitions]
        self.send(command)
        event = self.wait_for(
            lambda e: e["event"] == "committed",
            since=mark,
            timeout_s=timeout_s + 15,
            what="committed offsets",
        )
        if event.get("error"):
            raise JavaClientError(
                f"{self.name}: committed() failed: {event['error']['type']}: {event['error']['message']}"
            )
        return _offsets(event["offsets"])

    def current_assignment(self, *, timeout_s: float = 30.0) -> tuple[frozenset[TopicPartition], int]:
        """Ask the consumer now: its ``assignment()`` and ``groupMetadata().generationId()``."""
        mark = self.mark()
        self.send({"cmd": "assignment"})
        event = self.wait_for(
            lambda e: e["event"] == "assignment", since=mark, timeout_s=timeout_s, what="the assignment"
        )
        return _partitions(event["assignment"]), int(event["generation"])

    def pause_polling(self, *, timeout_s: float = 30.0) -> None:
        """Stop calling ``poll()`` (a stuck application; heartbeats go on until max.poll.interval.ms).

        Returns once the driver has taken the command: it is then between two ``poll()`` calls and
        calls none until :meth:`resume_polling` (the command is read after the ``poll()`` under way
        returns, so without this wait a rejoin could still start in that one)."""
        self._set_polling(False, timeout_s)

    def resume_polling(self, *, timeout_s: float = 30.0) -> None:
        """Call ``poll()`` again; returns once the driver has taken the command."""
        self._set_polling(True, timeout_s)

    def _set_polling(self, on: bool, timeout_s: float) -> None:
        mark = self.mark()
        self.send({"cmd": "resume_polling" if on else "pause_polling"})
        self.wait_for(
            lambda e: e["event"] == "polling" and e.get("on") is on,
            since=mark,
            timeout_s=timeout_s,
            what="polling to be " + ("resumed" if on else "paused"),
        )


class JavaProducer(_JavaClient):
    """Kafka's Java ``KafkaProducer`` (Kafka's default partitioner; string values; keys as text, or as
    decimal text when ``key.serializer`` names Kafka's Long/Integer/ShortSerializer)."""

    kind = "producer"

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        config: Mapping[str, object] | None = None,
        name: str | None = None,
        libs: KafkaLibs | None = None,
        log_dir: str | Path | None = None,
        log_level: str = "INFO",
    ) -> None:
        properties: dict[str, object] = {"bootstrap.servers": bootstrap_servers, **(config or {})}
        super().__init__(
            {"properties": {k: _text(v) for k, v in properties.items()}},
            name=name,
            libs=libs,
            log_dir=log_dir,
            log_level=log_level,
        )

    def start(self) -> JavaProducer:
        super().start()
        return self

    def __enter__(self) -> JavaProducer:
        return self.start() if self._process is None else self

    def send_records(
        self,
        topic: str,
        records: Iterable[tuple[str | None, str | None]],
        *,
        partition: int | None = None,
        timeout_s: float = DEFAULT_WAIT_S,
    ) -> list[SentRecord]:
        """Send ``(key, value)`` records, flush, and return where each landed (in callback order).

        A record the producer could not send raises :class:`JavaClientError` with its error.
        """
        rows = [
            {"topic": topic, "key": key, "value": value, "partition": partition} for key, value in records
        ]
        mark = self.mark()
        self.send({"cmd": "send", "records": rows})
        flushed = self.wait_for(
            lambda e: e["event"] == "flushed", since=mark, timeout_s=timeout_s, what="the records to be sent"
        )
        events = self.events[mark:]
        failures = [e for e in events if e["event"] == "send_error"]
        if failures or flushed.get("failed"):
            first = failures[0]["error"] if failures else {"type": "?", "message": "?"}
            raise JavaClientError(
                f"{self.name}: {len(failures)} of {len(rows)} records were not sent "
                f"(first: {first['type']}: {first['message']})"
            )
        return [
            SentRecord(e["key"], e["topic"], int(e["partition"]), int(e["offset"]))
            for e in events
            if e["event"] == "sent"
        ]

    def transaction(
        self,
        op: str,
        *,
        offsets: Mapping[TopicPartition, int] | None = None,
        group: str | None = None,
        generation: int = -1,
        member_id: str = "",
        instance_id: str | None = None,
        timeout_s: float = DEFAULT_WAIT_S,
    ) -> dict[str, Any] | None:
        """One step of a transactional producer (``transactional.id`` in its config): ``init``,
        ``begin``, ``send_offsets`` (``offsets`` for ``group`` with its ``generation``, ``member_id``
        and ``instance_id``: a ``ConsumerGroupMetadata``), ``commit`` or ``abort``. The exception it
        threw (``{"type", "message", ...}``), or ``None`` when it succeeded."""
        if op not in ("init", "begin", "send_offsets", "commit", "abort"):
            raise JavaClientError(
                f"op: {op!r} is not a transaction step; give init, begin, send_offsets, commit or abort"
            )
        command: dict[str, Any] = {"cmd": "txn", "op": op}
        if op == "send_offsets":
            command |= {
                "offsets": [[tp.topic, tp.partition, offset] for tp, offset in (offsets or {}).items()],
                "group": group,
                "generation": generation,
                "member_id": member_id,
                "instance_id": instance_id,
            }
        mark = self.mark()
        self.send(command)
        done = self.wait_for(
            lambda e: e["event"] == "txn" and e["op"] == op, since=mark, timeout_s=timeout_s, what=f"txn {op}"
        )
        error: dict[str, Any] | None = done.get("error")
        return error


_SHORT_NAMES = {
    "range": "org.apache.kafka.clients.consumer.RangeAssignor",
    "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "sticky": "org.apache.kafka.clients.consumer.StickyAssignor",
    "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
}


class JavaExactlyOnceWorker(_JavaClient):
    """One worker of an exactly-once consume-transform-produce stage with Kafka's Java clients: a
    ``read_committed`` ``KafkaConsumer`` of ``input`` and a transactional ``KafkaProducer``
    (``transactional_id``) in one JVM; each poll's records go to ``output`` (same partition and key,
    ``suffix`` appended to the value) in one transaction with the consumer's offsets
    (``sendOffsetsToTransaction`` with ``consumer.groupMetadata()``). Events: ``started`` (after
    ``initTransactions``), ``assigned`` / ``revoked`` / ``lost``, ``committed`` (``count``),
    ``aborted``, ``fatal`` (fenced), ``closed``. :meth:`close` ends it cleanly (after the transaction
    in progress); :meth:`kill` is a crash, its transaction left open."""

    kind = "eos"

    def __init__(
        self,
        bootstrap_servers: str,
        group: str,
        input: str,
        output: str,
        transactional_id: str,
        *,
        suffix: str = "",
        consumer_config: Mapping[str, object] | None = None,
        producer_config: Mapping[str, object] | None = None,
        name: str | None = None,
        libs: KafkaLibs | None = None,
        log_dir: str | Path | None = None,
        log_level: str = "WARN",
    ) -> None:
        consumer = {"bootstrap.servers": bootstrap_servers, "group.id": group, **(consumer_config or {})}
        producer = {
            "bootstrap.servers": bootstrap_servers,
            "transactional.id": transactional_id,
            **(producer_config or {}),
        }
        super().__init__(
            {
                "consumer": {k: _text(v) for k, v in consumer.items()},
                "producer": {k: _text(v) for k, v in producer.items()},
                "input": input,
                "output": output,
                "suffix": suffix,
            },
            name=name,
            libs=libs,
            log_dir=log_dir,
            log_level=log_level,
        )

    def start(self) -> JavaExactlyOnceWorker:
        super().start()
        return self

    def __enter__(self) -> JavaExactlyOnceWorker:
        return self.start() if self._process is None else self

    @property
    def committed_records(self) -> int:
        """The records of the transactions it committed so far."""
        return sum(int(e["count"]) for e in self.events if e["event"] == "committed")


def _strategies(value: str | Sequence[str] | None) -> str | None:
    if value is None:
        return None
    names = value.split(",") if isinstance(value, str) else list(value)
    return ",".join(_SHORT_NAMES.get(n.strip(), n.strip()) for n in names)


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
