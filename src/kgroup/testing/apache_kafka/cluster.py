"""``ApacheKafka``: the real Apache Kafka (KRaft, one node or several) on 127.0.0.1, for tests.

Each node is one JVM running ``kafka.Kafka`` in combined mode (broker and controller, as Kafka's
quickstart runs it), with its own listener and controller ports, its storage formatted by Kafka's own
``StorageTool`` in a temporary directory, and its log in ``<node dir>/server.log``. :meth:`start`
returns once every node is in the cluster's metadata; :meth:`stop` ends every JVM by its pid
(SIGTERM, then SIGKILL after a bound) and proves that none is left.

    >>> with ApacheKafka(configs={"group.initial.rebalance.delay.ms": 3000}) as kafka:  # doctest: +SKIP
    ...     consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "g"})
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kgroup.child_process import wait_or_kill
from kgroup.javatools import class_data_archive
from kgroup.model import KgroupError
from kgroup.testing.apache_kafka.distribution import KAFKA_VERSION, KafkaLibs, kafka_libs, log4j2_file_config
from kgroup.testing.lifecycle import Started

__all__ = ["DEFAULT_CONFIGS", "ApacheKafka", "KafkaNodeDied"]

#: broker settings kgroup's fixture starts with (a test overrides any of them through ``configs``);
#: the rest are Kafka's own defaults. The initial rebalance delay is 0, as in kgroup's KafkaBroker.
DEFAULT_CONFIGS: Mapping[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    "num.partitions": "1",
    "auto.create.topics.enable": "true",
    "log.segment.bytes": str(64 * 1024 * 1024),
}
START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 30.0
STOP_ALL_TIMEOUT_S = 10.0
_FORMAT_TIMEOUT_S = 60.0
_BIND_FAILURE = "Socket server failed to bind"
#: the JVM options of Kafka's ``kafka-run-class.sh`` (its default ``KAFKA_JVM_PERFORMANCE_OPTS``)
_JVM_OPTIONS = (
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-Djava.awt.headless=true",
)


def jvm_performance_options() -> list[str]:
    """The nodes' JVM options: ``KAFKA_JVM_PERFORMANCE_OPTS`` when it is set, as Kafka's
    ``kafka-run-class.sh`` takes it (kgroup's test suite sets a lean profile there: C1 only and the
    serial collector, for small and short-lived nodes), else the script's defaults."""
    given = os.environ.get("KAFKA_JVM_PERFORMANCE_OPTS", "").split()
    return given or list(_JVM_OPTIONS)


#: a JVM that cannot map the archive (another Java) starts as before, without saying so
_QUIET_CDS = ("-Xshare:auto", "-Xlog:cds=off", "-Xlog:cds+dynamic=off")


def node_class_data_archive(java: str, classpath: str) -> Path:
    """The nodes' class-data-sharing archive (keyed by the ``java`` and the class path it was made with):
    a node's JVMs — its storage format and the node itself — map Kafka's classes from it, parsed and
    verified, instead of loading them from the jars at each start."""
    return class_data_archive("kafka-node", java, classpath)


def build_node_class_data_archive() -> Path | None:
    """Start one node that writes the archive as it exits (unless it exists); where it is, or ``None``."""
    libs = kafka_libs()
    archive = node_class_data_archive(libs.java, libs.classpath)
    if archive.is_file():
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    made = archive.with_suffix(f".{os.getpid()}.tmp")
    kafka = ApacheKafka(topics={"warm": 3})
    kafka._dump_archive_to = made
    with kafka:
        pass
    if not made.is_file():
        return None
    os.replace(made, archive)  # atomic: a JVM never maps a half-written archive
    return archive


class KafkaNodeDied(KgroupError):
    """An Apache Kafka node's JVM exited when it should be serving."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _parse_address(name: str, address: str) -> tuple[str, int]:
    host, colon, port = address.rpartition(":")
    if not name or name == "CONTROLLER" or not name.replace("_", "").isalnum():
        raise KgroupError(
            f"ApacheKafka: advertised_listeners: {name!r} is not a listener name; use letters, digits, "
            "_ (not CONTROLLER)"
        )
    if not colon or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise KgroupError(
            f"ApacheKafka: advertised_listeners[{name!r}]: {address!r}; write HOST:PORT, e.g. 127.0.0.1:19092"
        )
    return host, int(port)


def _cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (as Kafka's Uuid prints).
    Like Kafka's ``Uuid.randomUuid`` it never starts with ``-``: the storage tool would read such an id
    as an option ("--cluster-id expected one argument", seen once in a test run)."""
    while True:
        text = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _last_lines(path: Path, count: int = 3) -> str:
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    interesting = [line for line in lines if " ERROR " in line or "Exception" in line] or lines
    return " | ".join(interesting[-count:])[:600] or "empty log"


@dataclass(slots=True)
class _Node:
    node_id: int
    directory: Path
    port: int
    controller_port: int
    process: subprocess.Popen[bytes] | None = None
    stdout: object = field(default=None)
    #: the extra listeners (``advertised_listeners`` names other than PLAINTEXT): name -> bound port
    listener_ports: dict[str, int] = field(default_factory=dict)

    @property
    def log_file(self) -> Path:
        return self.directory / "server.log"

    @property
    def properties(self) -> Path:
        return self.directory / "server.properties"


class ApacheKafka(Started):
    """Apache Kafka ``KAFKA_VERSION`` in KRaft mode with ``nodes`` nodes on 127.0.0.1.

    ``configs`` are broker settings (Kafka's names, any value ``str()`` turns into the right text)
    applied to every node on top of :data:`DEFAULT_CONFIGS`; ``topics`` are created once it serves.
    ``heap`` is each JVM's ``-Xmx``.

    ``advertised_listeners`` (name -> ``HOST:PORT``) is Kafka's ``advertised.listeners``: a name
    other than PLAINTEXT gets a listener of its own (PLAINTEXT protocol, a free port on 127.0.0.1 per
    node, :meth:`listener_port`) that tells its clients of ``HOST:PORT``, e.g. a proxy in front of
    it; PLAINTEXT changes what the default listener advertises. Node ``n`` advertises
    ``PORT + n - 1`` (as ``kgroup serve``'s broker ``i`` advertises ``PORT + i``).
    """

    def __init__(
        self,
        nodes: int = 1,
        configs: Mapping[str, object] | None = None,
        *,
        topics: Mapping[str, int] | None = None,
        version: str = KAFKA_VERSION,
        heap: str = "768m",
        start_timeout_s: float = START_TIMEOUT_S,
        advertised_listeners: Mapping[str, str] | None = None,
    ) -> None:
        if not 1 <= nodes <= 9:
            raise KgroupError(f"ApacheKafka: nodes={nodes} is not between 1 and 9")
        self.advertised_listeners = {
            name: _parse_address(name, address) for name, address in (advertised_listeners or {}).items()
        }
        self.nodes = nodes
        self.version = version
        self.heap = heap
        self.start_timeout_s = start_timeout_s
        replication = str(min(nodes, 3))
        merged: dict[str, str] = {
            **DEFAULT_CONFIGS,
            "offsets.topic.replication.factor": replication,
            "transaction.state.log.replication.factor": replication,
            "transaction.state.log.min.isr": "1",
            # the share coordinator's state topic (KIP-932) asks for 3 replicas and 2 in sync
            "share.coordinator.state.topic.replication.factor": replication,
            "share.coordinator.state.topic.min.isr": "1",
            "default.replication.factor": "1",
        }
        merged.update({key: _config_text(value) for key, value in (configs or {}).items()})
        self.configs = merged
        self._topics = dict(topics or {})
        self._libs: KafkaLibs | None = None
        #: where a node writes its class-data archive as it exits (build_node_class_data_archive)
        self._dump_archive_to: Path | None = None
        self._work: Path | None = None
        self._nodes: dict[int, _Node] = {}
        self._cluster_id = ""

    # --- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> ApacheKafka:
        if self._work is not None:
            raise KgroupError("ApacheKafka: already started; call stop() first")
        self._libs = kafka_libs(self.version)
        for attempt in range(3):
            self._work = Path(tempfile.mkdtemp(prefix="kgroup-apache-kafka-"))
            self._cluster_id = _cluster_id()
            self._nodes = {
                node_id: _Node(
                    node_id,
                    self._work / f"node-{node_id}",
                    _free_port(),
                    _free_port(),
                    listener_ports={
                        name: _free_port() for name in self.advertised_listeners if name != "PLAINTEXT"
                    },
                )
                for node_id in range(1, self.nodes + 1)
            }
            try:
                self._format()
                for node in self._nodes.values():
                    self._launch(node)
                self._wait_until_serving(self.start_timeout_s)
                break
            except KafkaNodeDied as exc:
                bound = _BIND_FAILURE in str(exc)
                self.stop()
                if not bound or attempt == 2:
                    raise
            except BaseException:
                self.stop()
                raise
        if self._topics:
            for name, partitions in self._topics.items():
                self.create_topic(name, partitions)
        return self

    def stop(self) -> None:
        """Stop every node, prove none is left, remove the data.

        All nodes get SIGTERM at once (one by one, the last nodes would wait for a controller quorum
        that is gone); whatever still runs after :data:`STOP_ALL_TIMEOUT_S` gets SIGKILL.
        """
        live = [n.process for n in self._nodes.values() if n.process is not None and n.process.poll() is None]
        for process in live:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_ALL_TIMEOUT_S
        for process in live:
            wait_or_kill(process, max(0.1, deadline - time.monotonic()))
        for node in self._nodes.values():
            self._end(node, graceful=False)
        work, self._work = self._work, None
        if work is not None:
            stray = _jvms_under(work)
            for pid in stray:
                _kill_quietly(pid)
            shutil.rmtree(work, ignore_errors=True)
            if stray:
                raise KgroupError(f"ApacheKafka: JVMs {stray} were still running after stop and were killed")
        self._nodes = {}

    # --- what a test uses --------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{node.port}" for node in self._nodes.values())

    @property
    def node_ids(self) -> list[int]:
        return list(self._nodes)

    def port(self, node_id: int) -> int:
        return self._node(node_id).port

    def listener_port(self, name: str, node_id: int = 1) -> int:
        """The port node ``node_id``'s extra listener ``name`` is bound to (``advertised_listeners``)."""
        ports = self._node(node_id).listener_ports
        if name not in ports:
            raise KgroupError(
                f"ApacheKafka: no listener {name!r}; name it in advertised_listeners (have {sorted(ports)})"
            )
        return ports[name]

    def pid(self, node_id: int) -> int | None:
        process = self._node(node_id).process
        return process.pid if process is not None and process.poll() is None else None

    def log_file(self, node_id: int) -> Path:
        return self._node(node_id).log_file

    def check_alive(self) -> None:
        """Raise :class:`KafkaNodeDied` (one line, with its last log lines) if a started node exited."""
        for node in self._nodes.values():
            if node.process is not None and node.process.poll() is not None:
                raise self._died(node)

    def stop_node(self, node_id: int, *, graceful: bool = True) -> None:
        """Stop one node: a controlled shutdown (SIGTERM), or ``graceful=False`` for a crash (SIGKILL).

        A node stopped here is not "dead" to :meth:`check_alive` (only a node that exited on its own is).
        """
        node = self._node(node_id)
        self._end(node, graceful=graceful)
        node.process = None

    def start_node(self, node_id: int, timeout_s: float | None = None) -> None:
        """Start a stopped node again on its data and ports, and wait until it serves."""
        node = self._node(node_id)
        if node.process is not None and node.process.poll() is None:
            raise KgroupError(f"ApacheKafka: node {node_id} is running")
        self._launch(node)
        self._wait_until_serving(timeout_s or self.start_timeout_s, only=[node])

    def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int = 1,
        configs: Mapping[str, str] | None = None,
    ) -> None:
        """Create a topic through the admin API and wait until every node knows its partitions."""
        from confluent_kafka.admin import AdminClient
        from confluent_kafka.cimpl import NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 3})
        futures = admin.create_topics(
            [NewTopic(name, partitions, replication_factor, config=dict(configs or {}))], request_timeout=30
        )
        for future in futures.values():
            future.result(timeout=60)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            topic = admin.list_topics(name, timeout=10).topics.get(name)
            if (
                topic is not None
                and topic.error is None
                and len(topic.partitions) == partitions
                and all(p.leader >= 0 for p in topic.partitions.values())
            ):
                return
            time.sleep(0.1)
        raise KgroupError(f"ApacheKafka: topic {name!r} has no leader for every partition after 30 s")

    # --- the JVMs ----------------------------------------------------------------------------------

    def _node(self, node_id: int) -> _Node:
        try:
            return self._nodes[node_id]
        except KeyError:
            raise KgroupError(f"ApacheKafka: no node {node_id} (nodes are {list(self._nodes)})") from None

    def _write_config(self, node: _Node) -> None:
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self._nodes.values())
        extra = node.listener_ports
        listeners = [f"PLAINTEXT://127.0.0.1:{node.port}", f"CONTROLLER://127.0.0.1:{node.controller_port}"]
        listeners += [f"{name}://127.0.0.1:{port}" for name, port in extra.items()]
        advertised = {"PLAINTEXT": ("127.0.0.1", node.port)}
        for name, (host, port) in self.advertised_listeners.items():
            advertised[name] = (host, port + node.node_id - 1)
        protocols = ["CONTROLLER:PLAINTEXT", "PLAINTEXT:PLAINTEXT", *(f"{name}:PLAINTEXT" for name in extra)]
        settings = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.quorum.voters": voters,
            "listeners": ",".join(listeners),
            "advertised.listeners": ",".join(f"{n}://{h}:{p}" for n, (h, p) in advertised.items()),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": ",".join(protocols),
            "log.dirs": str(node.directory / "data"),
            **self.configs,
        }
        node.directory.mkdir(parents=True, exist_ok=True)
        node.properties.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
        (node.directory / "log4j2.properties").write_text(log4j2_file_config(node.log_file))

    def _java(self, node: _Node, main: str, *args: str) -> list[str]:
        assert self._libs is not None
        archive = node_class_data_archive(self._libs.java, self._libs.classpath)
        if main == "kafka.Kafka" and self._dump_archive_to is not None:
            sharing = [f"-XX:ArchiveClassesAtExit={self._dump_archive_to}", *_QUIET_CDS]
        elif archive.is_file():
            sharing = [f"-XX:SharedArchiveFile={archive}", *_QUIET_CDS]
        else:
            sharing = []
        return [
            self._libs.java,
            f"-Xmx{self.heap}",
            *jvm_performance_options(),
            *sharing,
            f"-Dlog4j2.configurationFile={node.directory / 'log4j2.properties'}",
            "-cp",
            self._libs.classpath,
            main,
            *args,
        ]

    def _format(self) -> None:
        """Format every node's storage with Kafka's StorageTool (in parallel: one JVM start each)."""
        running: list[tuple[_Node, subprocess.Popen[bytes]]] = []
        for node in self._nodes.values():
            self._write_config(node)
            command = self._java(
                node, "kafka.tools.StorageTool", "format", "-t", self._cluster_id, "-c", str(node.properties)
            )
            running.append(
                (
                    node,
                    subprocess.Popen(
                        command,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    ),
                )
            )
        for node, process in running:
            try:
                output, _ = process.communicate(timeout=_FORMAT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()
                raise KgroupError(
                    f"Apache Kafka's StorageTool did not format node {node.node_id} "
                    f"within {_FORMAT_TIMEOUT_S:.0f} s"
                ) from None
            if process.returncode != 0:
                text = output.decode(errors="replace").strip().splitlines()
                # the exception's own line says why (a refused setting, …), not the stack under it
                said = [line for line in text if "SLF4J" not in line and not line.lstrip().startswith("at ")]
                thrown = [line for line in said if "Exception" in line or "Error" in line]
                last = (thrown or said or ["no output"])[-1]
                raise KgroupError(
                    f"Apache Kafka's StorageTool could not format node {node.node_id}: {last[:300]}"
                )

    def _launch(self, node: _Node) -> None:
        stdout = open(node.directory / "stdout.log", "ab")  # noqa: SIM115 - closed in _end
        try:
            node.process = subprocess.Popen(
                self._java(node, "kafka.Kafka", str(node.properties)),
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            stdout.close()
            raise KgroupError(f"Apache Kafka node {node.node_id} did not start: {exc}") from None
        node.stdout = stdout

    def _died(self, node: _Node) -> KafkaNodeDied:
        assert node.process is not None
        code = node.process.returncode
        reason = _last_lines(node.log_file)
        if reason in ("no log", "empty log"):
            reason = _last_lines(node.directory / "stdout.log")
        return KafkaNodeDied(
            f"Apache Kafka node {node.node_id} (pid {node.process.pid}) exited with code {code}: {reason}"
        )

    def _wait_until_serving(self, timeout_s: float, only: list[_Node] | None = None) -> None:
        """Until each node's listener accepts and the cluster's metadata lists every node."""
        from confluent_kafka.admin import AdminClient

        waiting = only or list(self._nodes.values())
        deadline = time.monotonic() + timeout_s
        for node in waiting:
            while not _port_open(node.port):
                if node.process is not None and node.process.poll() is not None:
                    raise self._died(node)
                if time.monotonic() > deadline:
                    raise KgroupError(
                        f"Apache Kafka node {node.node_id} did not listen on 127.0.0.1:{node.port} "
                        f"within {timeout_s:.0f} s: {_last_lines(node.log_file)}"
                    )
                time.sleep(0.1)
        expected = {
            n.node_id for n in self._nodes.values() if n.process is not None and n.process.poll() is None
        }
        for node in waiting:
            admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{node.port}", "log_level": 3})
            while True:
                self.check_alive()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise KgroupError(
                        f"Apache Kafka node {node.node_id} did not see nodes {sorted(expected)} "
                        f"within {timeout_s:.0f} s: {_last_lines(node.log_file)}"
                    )
                try:
                    seen = set(admin.list_topics(timeout=min(5.0, remaining)).brokers)
                except Exception:
                    seen = set()
                if expected <= seen:
                    break
                time.sleep(0.2)

    def _end(self, node: _Node, *, graceful: bool) -> None:
        process = node.process
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM if graceful else signal.SIGKILL)
                wait_or_kill(process, STOP_TIMEOUT_S if graceful else 10)
        if process is not None:
            process.poll()
        stdout = node.stdout
        if stdout is not None and hasattr(stdout, "close"):
            stdout.close()
        node.stdout = None


def _config_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _jvms_under(work: Path) -> list[int]:
    """Pids of processes whose command line names ``work`` (this cluster's JVMs), from /proc."""
    needle = str(work).encode()
    found: list[int] = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found


def _kill_quietly(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
