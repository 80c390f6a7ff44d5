"""The broker process, the composition root of :mod:`kgroup.broker`: it serves ``config.brokers``
broker nodes (one listener each) and wires the parts together — the cluster state, the logs, the
coordinator host, the parked-fetch waiters, the connections and the dispatch. No module of the
package imports this one: each part is handed what it uses (the handlers see the
:class:`~kgroup.broker.services.BrokerServices` protocol, which :class:`Broker` provides).

Connections are served on one asyncio loop: ``kgroup serve`` runs it in the main thread,
``kgroup.testing.KafkaBroker`` in a background thread. The group coordinators run on a thread and loop
of their own (:mod:`kgroup.broker.coordinator_runtime`); large frames are decoded and encoded in a
codec thread.
"""

from __future__ import annotations

import asyncio
import faulthandler
import functools
import logging
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from kgroup.broker.cluster import OFFSETS_TOPIC, OFFSETS_TOPIC_CONFIGS, Cluster, topic_name_error
from kgroup.broker.config import BrokerConfig
from kgroup.broker.connection import (
    CloseConnection,
    CloseLog,
    Connection,
    ConnectionLimits,
    Peer,
    Response,
    serve_connection,
)
from kgroup.broker.control import ControlChannel
from kgroup.broker.coordinator_runtime import CoordinatorRuntime
from kgroup.broker.coordinator_tasks import task_runners
from kgroup.broker.dispatch import dispatch, supports
from kgroup.broker.logapi import LogManagerLike
from kgroup.broker.share_host import ShareHost, ShareHostConfig
from kgroup.broker.txn_host import TransactionHost, thread_safe
from kgroup.broker.waiters import AppendWatchers, FetchWaiter
from kgroup.broker.warmup import warm_codec_in_background, warm_in_background
from kgroup.collector import relaxed_collector
from kgroup.group import CoordinatorConfig
from kgroup.group.share.heartbeat import InitializeShareState
from kgroup.log.manager import remove_directories
from kgroup.model import KgroupError
from kgroup.security.acl import AclOperation, ResourceType
from kgroup.security.listeners import Listener
from kgroup.security.runtime import SecurityRuntime
from kgroup.security.session import BrokerHooks, Session
from kgroup.switching import quick_thread_switches
from kgroup.wire.framing import BufferPool, Frame

__all__ = ["Broker", "open_logs", "run_broker", "serve", "wall_clock_ms"]

log = logging.getLogger("kgroup.broker")
P = ParamSpec("P")
T = TypeVar("T")


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


#: rounds :func:`end_connection_tasks` makes at most (each ends the tasks that started meanwhile)
END_CONNECTION_ROUNDS = 10


async def end_connection_tasks(tasks: set[asyncio.Task[Any]]) -> None:
    """Cancel every connection's task and wait for them, in rounds: a connection accepted just before
    the listeners closed starts its task (and adds it to ``tasks``) a turn of the loop later, while
    the first round is being waited for, and was left pending when the loop closed."""
    for _ in range(END_CONNECTION_ROUNDS):
        await asyncio.sleep(0)  # a task created meanwhile takes its first step and adds itself
        pending = [task for task in tasks if not task.done()]
        if not pending:
            return
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


class Broker:
    """``config.brokers`` broker nodes in one process, sharing one cluster state and one set of logs."""

    def __init__(
        self,
        config: BrokerConfig,
        logs: LogManagerLike,
        *,
        clock_ms: Callable[[], int] = wall_clock_ms,
    ) -> None:
        self.config = config
        self.logs = logs
        self.clock_ms = clock_ms
        self.cluster = Cluster(config, logs)
        #: broker id -> port of its first listener
        self.ports: dict[int, int] = {}
        #: listener name -> broker id -> port ("" names the default PLAINTEXT listener)
        self.listener_ports: dict[str, dict[int, int]] = {}
        self.connections: dict[int, set[Connection]] = {b: set() for b in self.cluster.broker_ids}
        self._servers: dict[int, list[asyncio.Server]] = {}
        # a PLAIN password is salted and hashed (some ms) away from the loop, one at a time
        self._auth_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgroup-auth")
        self.security = SecurityRuntime(
            config.security,
            BrokerHooks(
                clock_s=time.monotonic,
                supported=supports,
                wall_clock_ms=clock_ms,
                run_blocking=self._run_auth,
            ),
        )
        self.fetch_waiters = AppendWatchers()
        self._next_producer_id = (wall_clock_ms() << 12) & ((1 << 62) - 1)
        # asked on the broker's loop (idempotent producers) and the transaction coordinator's thread
        self.allocate_producer_id = thread_safe(self._allocate_producer_id)
        self._tick_task: asyncio.Task[None] | None = None
        self._connection_tasks: set[asyncio.Task[Any]] = set()
        # one thread for decoding and encoding large requests and responses (pure functions of bytes
        # and immutable values: no broker state is touched there)
        self._codec = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgroup-codec")
        # the interval fsync of the partitions' files (``--fsync interval``), one at a time, so the loop
        # goes on appending while the disk syncs what was written before
        self._fsync_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgroup-fsync")
        # deleted topics' directories, removed in the background as Kafka removes renamed logs
        self._deletions = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgroup-deletions")
        # the offsets topic's partitions made off the loop (make_offsets_topic)
        self._topics_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgroup-topics")
        self._offsets_topic_made: asyncio.Future[None] | None = None
        self.close_log = CloseLog()
        # the share partitions (KIP-932): ShareFetch / ShareAcknowledge, __share_group_state
        self.shares = ShareHost(
            self.cluster,
            clock_ms=clock_ms,
            config=ShareHostConfig(
                record_lock_duration_ms=config.group_share_record_lock_duration_ms,
                delivery_count_limit=config.group_share_delivery_count_limit,
                auto_offset_reset=config.share_auto_offset_reset,
            ),
            notify_appended=self.notify_appended,
        )
        self.coordinators = CoordinatorRuntime(
            CoordinatorConfig(
                group_min_session_timeout_ms=config.group_min_session_timeout_ms,
                group_max_session_timeout_ms=config.group_max_session_timeout_ms,
                group_initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
                offsets_topic_num_partitions=config.offsets_topic_partitions,
                consumer_heartbeat_interval_ms=config.group_consumer_heartbeat_interval_ms,
                consumer_session_timeout_ms=config.group_consumer_session_timeout_ms,
                consumer_assignment_interval_ms=config.group_consumer_assignment_interval_ms,
                **config.share_coordinator_config(),  # type: ignore[arg-type]
            ),
            logs.coordinator_log(),
            clock_ms=clock_ms,
            cluster=self.cluster,
            off_loop=self.off_loop,
            checkpoint_min_bytes=config.coordinator_checkpoint_min_bytes,
            flush_interval_ms=logs.coordinator_fsync_interval_ms(),
            notify_appended=self.notify_appended,
            task_runners=task_runners(
                share_state=self._initialize_share_state,
                describable=self._describable if config.security.authorizer else None,
            ),
        )
        # the transaction coordinator (its calls on a thread of its own, its records in __transaction_state)
        self.transactions = TransactionHost(
            self.cluster,
            clock_ms=clock_ms,
            allocate_producer_id=self.allocate_producer_id,
            config=config.txn_coordinator_config(),
            notify_appended=self.notify_appended,
        )
        self.transactions.offsets_marker = self.coordinators.end_transaction
        self._limits = ConnectionLimits(config.max_connections, config.max_request_bytes)
        # large request frames' buffers, kept for the next ones (16 MiB at most, for every connection)
        self._frame_buffers = BufferPool()
        for name, partitions in config.topics:
            error = topic_name_error(name)
            if error is not None:
                raise KgroupError(f"topic: {error}")
            if name not in self.cluster.topics:
                self.cluster.create_topic(name, partitions, config.replication_factor, {})

    # --- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        for broker_id in self.cluster.broker_ids:
            await self.start_listener(broker_id)
        # the schemas of the APIs clients speak, read in a thread rather than by the first request
        warm_codec_in_background()
        # the numba kernels too: until the server assignors' are ready they answer step by step
        warm_in_background()
        self.coordinators.start()  # loads the groups on the coordinators' thread; serving starts now
        self.transactions.start()  # replays __transaction_state on its thread
        self.shares.start()  # replays __share_group_state on its thread
        self.remove_later(self.logs.leftover_deletions())  # what a crash left half removed
        self._tick_task = asyncio.get_running_loop().create_task(self._tick())

    async def start_listener(self, broker_id: int) -> None:
        listeners: tuple[Listener | None, ...] = self.config.security.listeners or (None,)
        servers: list[asyncio.Server] = []
        try:
            for listener in listeners:
                servers.append(await self._listen(broker_id, listener))
        except BaseException:
            for server in servers:
                server.close()
            raise
        self._servers[broker_id] = servers
        first = servers[0].sockets[0].getsockname()[1]
        self.ports[broker_id] = first
        self.cluster.broker_started(broker_id)

    async def _listen(self, broker_id: int, listener: Listener | None) -> asyncio.Server:
        name = "" if listener is None else listener.name
        host = self.config.host if listener is None else listener.host
        base = self.config.port if listener is None else listener.port
        ports = self.listener_ports.setdefault(name, {})
        port = ports.get(broker_id)
        if port is None:
            port = 0 if base == 0 else base + broker_id

        async def on_connect(listener: Listener | None, connection: Connection) -> None:
            task = asyncio.current_task()
            if task is not None:
                self._connection_tasks.add(task)
            try:
                # authentication state (SASL, the TLS peer's principal): it answers frames itself
                # until the connection is authenticated (kgroup.security.session)
                session = self.security.session(listener, connection.get_extra_info("ssl_object"))
                await serve_connection(
                    connection,
                    node_id=broker_id,
                    handle=partial(self._handle_frame, session),
                    limits=self._limits,
                    open_connections=self.connections[broker_id],
                    close_log=self.close_log,
                    on_closed=self.shares.on_connection_closed,
                )
            except asyncio.CancelledError:
                # shutdown: end quietly (asyncio's server callback would log a cancelled task)
                return
            finally:
                if task is not None:
                    self._connection_tasks.discard(task)

        def connection(listener: Listener | None) -> Connection:
            return Connection(
                partial(on_connect, listener),
                max_request_bytes=self._limits.max_request_bytes,
                pool=self._frame_buffers,
            )

        tls = self.security.ssl_context() if listener is not None and listener.tls else None
        try:
            server = await asyncio.get_running_loop().create_server(
                partial(connection, listener), host, port, reuse_address=True, ssl=tls
            )
        except OSError as exc:
            where = "--port" if listener is None else f"--listener {listener}"
            raise KgroupError(
                f"port: cannot listen on {host}:{port} ({exc.strerror}); "
                f"pick another with {where} (0 picks a free one)"
            ) from None
        ports[broker_id] = server.sockets[0].getsockname()[1]
        return server

    def bound(self, listener: str) -> tuple[str, dict[int, int]]:
        """The host and per-broker ports listener ``listener`` ("": the default one) is bound to."""
        for candidate in self.config.security.listeners:
            if candidate.name == listener:
                return candidate.host, self.listener_ports.get(listener, {})
        return self.config.host, self.ports

    def advertised(self, listener: str) -> tuple[str, dict[int, int]]:
        """The host and per-broker ports a client that came through ``listener`` is told of (Kafka
        advertises the listener the request arrived on): its ``advertised.listeners`` entry, or where
        it is bound when none are set; none (no brokers) when they are set and do not name it."""
        host, ports = self.bound(listener)
        security = self.config.security
        if not security.advertised_listeners:
            return host, ports
        entry = security.advertised_listener(listener)
        if entry is None:
            return "", {}
        if entry.port == 0:  # Kafka's BrokerServer: an ephemeral advertised port is the bound one
            return entry.host, dict(ports)
        return entry.host, {broker_id: entry.port + broker_id for broker_id in ports}

    async def stop_listener(self, broker_id: int) -> None:
        """Take one broker down: stop listening, drop its connections, move its leaderships."""
        self.cluster.broker_stopped(broker_id)
        await self._close_listener(broker_id)
        self.coordinators.brokers_changed()

    async def _close_listener(self, broker_id: int) -> None:
        """Stop one broker's servers listening and drop its connections."""
        servers = self._servers.pop(broker_id, [])
        for server in servers:
            server.close()
        for connection in list(self.connections[broker_id]):
            connection.close()
        for server in servers:
            await server.wait_closed()

    async def restart_listener(self, broker_id: int) -> None:
        await self.start_listener(broker_id)
        self.coordinators.brokers_changed()

    async def close(self) -> None:
        if self._tick_task is not None:
            self._tick_task.cancel()
            await asyncio.gather(self._tick_task, return_exceptions=True)
        for broker_id in list(self._servers):
            await self._close_listener(broker_id)
        await end_connection_tasks(self._connection_tasks)
        if self._offsets_topic_made is not None:
            await asyncio.gather(self._offsets_topic_made, return_exceptions=True)
        self._topics_thread.shutdown(wait=True)
        await self.coordinators.close()
        await self.transactions.close()
        await self.shares.close()
        self.close_log.flush()
        self._codec.shutdown(wait=True, cancel_futures=True)
        self._auth_thread.shutdown(wait=True, cancel_futures=True)
        # the removal under way ends; what is left is removed at the next start
        self._deletions.shutdown(wait=True, cancel_futures=True)
        self._fsync_thread.shutdown(wait=True)  # every fsync handed over is done before the last flush
        self.logs.flush()
        self.logs.close()

    async def _tick(self) -> None:
        interval_ms = self.config.leader_imbalance_check_interval_s * 1000
        next_election_ms = self.clock_ms() + interval_ms
        while True:
            await asyncio.sleep(1.0)
            try:
                # (the coordinator log is fsynced by its writer, on the coordinators' thread)
                self.logs.tick(self.clock_ms(), flush_later=self._flush_later, coordinator_logs=False)
            except OSError:
                log.exception("log maintenance failed")
            if self.config.auto_leader_rebalance_enable and self.clock_ms() >= next_election_ms:
                # KRaft's periodic electPreferred task (see kgroup.broker.cluster)
                next_election_ms = self.clock_ms() + interval_ms
                if self.cluster.elect_preferred_leaders():
                    self.coordinators.brokers_changed()

    def _flush_later(self, pending: Any) -> None:
        """Run a :class:`~kgroup.log.manager.PendingFlush` in the fsync thread; a failure is logged."""
        self._fsync_thread.submit(pending.run).add_done_callback(_log_flush_failure)

    async def _handle_frame(self, session: Session, frame: Frame, peer: Peer) -> Response | None:
        outcome = await session.on_frame(frame)
        if outcome is not None:  # the session answered it (SASL), or refused it
            if outcome.delay_s > 0:  # a failed authentication: only this connection waits
                await asyncio.sleep(outcome.delay_s)
            if outcome.close is not None:
                raise CloseConnection(outcome.close, reply=outcome.reply, kind="authentication")
            return outcome.reply
        return await dispatch(self, peer.node_id, frame, peer.connection_id, peer.client_host, session)

    @property
    def bootstrap_servers(self) -> str:
        """Of the first listener."""
        listeners = self.config.security.listeners
        return self.listener_bootstrap_servers(listeners[0].name if listeners else "")

    def listener_bootstrap_servers(self, listener: str) -> str:
        """Where ``listener`` is bound (what a client dials to reach the brokers directly)."""
        host, ports = self.bound(listener)
        return ",".join(f"{host}:{ports[b]}" for b in sorted(ports))

    # --- shared services for handlers ------------------------------------------------------------

    async def off_loop(self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``function(*args, **kwargs)`` in the codec thread: a pure function of its arguments only."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._codec, functools.partial(function, *args, **kwargs))

    async def _run_auth(self, function: Callable[[bytes], bytes], token: bytes) -> bytes:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._auth_thread, function, token)

    def _describable(self, principal: str, host: str, topic: str) -> bool:
        """May ``principal`` from ``host`` describe ``topic`` (the regex resolution's filter)."""
        return self.security.authorize(principal, host, AclOperation.DESCRIBE, ResourceType.TOPIC, topic)

    async def make_offsets_topic(self) -> None:
        """Make ``__consumer_offsets`` unless it exists, its directories in the topics thread (under a
        busy coordinators' thread each file call waits for the interpreter lock: seconds of a loop's
        time); concurrent callers wait for the one creation."""
        if OFFSETS_TOPIC in self.cluster.topics:
            return
        made = self._offsets_topic_made
        if made is None or made.done():
            made = self._offsets_topic_made = asyncio.ensure_future(self._make_offsets_topic())
        await asyncio.shield(made)

    async def _make_offsets_topic(self) -> None:
        begun = self.cluster.begin_offsets_topic()
        if begun is None:
            return
        creation, placement = begun
        try:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(self._topics_thread, creation.step, creation.partitions)
            creation.finish()
        except Exception as exc:  # a full disk: the next request tries again
            creation.abort()
            log.warning("cannot create %s: %s", OFFSETS_TOPIC, exc)
            return
        except BaseException:  # cancelled at close: nothing half made stays
            creation.abort()
            raise
        self.cluster.register_topic(OFFSETS_TOPIC, placement, OFFSETS_TOPIC_CONFIGS)

    def remove_later(self, directories: list[Path]) -> None:
        """Remove deleted partitions' directories in the deletions thread, a hundred at a time."""
        for start in range(0, len(directories), 100):
            self._deletions.submit(remove_directories, directories[start : start + 100])

    def _allocate_producer_id(self) -> int:
        # Unique across restarts without a persisted counter: the start time in ms, shifted.
        self._next_producer_id += 1
        return self._next_producer_id

    async def _initialize_share_state(self, task: InitializeShareState) -> bool:
        """The share group coordinator's ``InitializeShareGroupState``, answered by the share host."""
        return await self.shares.initialize_state(
            task.group_id,
            task.group_epoch,
            [(uuid.UUID(int=topic_id.to_int()), partitions) for topic_id, _, partitions in task.partitions],
        )

    def watch_appends(self, waiter: FetchWaiter) -> None:
        """Park a fetch: ``waiter`` hears of every append to its partitions until unwatched."""
        self.fetch_waiters.watch(waiter)

    def unwatch_appends(self, waiter: FetchWaiter) -> None:
        self.fetch_waiters.unwatch(waiter)

    def notify_appended(self, topic: str, partition: int, size: int) -> None:
        """A batch of ``size`` bytes was appended to ``topic``-``partition``: tell its parked fetches."""
        self.fetch_waiters.appended(topic, partition, size)


# --- running a broker (``kgroup serve``, ``kgroup.testing.KafkaBroker``) ----------------------------


#: ``log.message.timestamp.after.max.ms``: one hour in Kafka 4 (4.4.0 checked), unbounded before
TIMESTAMP_AFTER_MAX_MS = 3_600_000


def _log_flush_failure(future: Future[None]) -> None:
    failed = None if future.cancelled() else future.exception()
    if failed is not None:
        log.error("interval fsync of the log failed: %s", failed)


def open_logs(data_dir: Path, fsync: str = "interval", max_open_files: int | None = None) -> LogManagerLike:
    """The on-disk log manager for ``data_dir`` (recovering a torn tail left by a crash), with Kafka
    4's log defaults: a record more than an hour ahead of the broker's clock is INVALID_TIMESTAMP.
    ``max_open_files``: the segment files open at once (None: ``kgroup.log``'s default, 256)."""
    from kgroup.log import FsyncPolicy, LogConfig, LogManager
    from kgroup.log.handles import DEFAULT_MAX_OPEN_FILES

    policies = {"always": FsyncPolicy.ALWAYS, "interval": FsyncPolicy.INTERVAL, "never": FsyncPolicy.NEVER}
    config = LogConfig(
        fsync=policies[fsync],
        timestamp_after_max_ms=TIMESTAMP_AFTER_MAX_MS,
        max_open_files=DEFAULT_MAX_OPEN_FILES if max_open_files is None else max_open_files,
    )
    manager: LogManagerLike = LogManager(data_dir, config)
    return manager


async def serve(
    broker: Broker,
    stop: asyncio.Event,
    on_started: Callable[[Broker], None] | None = None,
    control_dir: Path | None = None,
) -> None:
    """Run ``broker`` until ``stop`` is set, then close it (flush and close the logs). With
    ``control_dir``, the control channel of :mod:`kgroup.broker.control` is up (and its port file
    written there) before ``on_started`` runs."""
    await broker.start()
    control = ControlChannel(broker, control_dir) if control_dir is not None else None
    try:
        if control is not None:
            await control.start()
        if on_started is not None:
            on_started(broker)
        await stop.wait()
    finally:
        if control is not None:
            await control.close()
        await broker.close()


#: a ``kgroup serve`` still closing this long after its signal writes every thread's stack to stderr
STOP_TRACEBACK_AFTER_S = 15.0


def _stopping(stop: asyncio.Event) -> None:
    """SIGINT/SIGTERM: close; should the close take past :data:`STOP_TRACEBACK_AFTER_S`, every thread's
    stack goes to stderr (once) so that what it waits for is on record."""
    if not stop.is_set():
        faulthandler.dump_traceback_later(STOP_TRACEBACK_AFTER_S, repeat=False)
    stop.set()


def run_broker(
    config: BrokerConfig,
    logs: LogManagerLike,
    on_started: Callable[[Broker], None] | None = None,
    install_signal_handlers: bool = True,
    control_dir: Path | None = None,
) -> None:
    """Run a broker in this thread until SIGINT/SIGTERM (the ``kgroup serve`` process); with
    ``control_dir``, ``kgroup serve-ctl`` can stop and start its brokers."""
    import signal

    async def main() -> None:
        stop = asyncio.Event()
        if install_signal_handlers:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, partial(_stopping, stop))
        await serve(Broker(config, logs), stop, on_started, control_dir)

    # a broker holding thousands of members keeps millions of objects alive: with the default
    # thresholds every connection waited out a full collection every second or two (kgroup.collector);
    # its loops give the interpreter lock up at every system call and wait to take it back from a
    # busy thread (kgroup.switching)
    with relaxed_collector(), quick_thread_switches():
        try:
            asyncio.run(main())
        finally:
            faulthandler.cancel_dump_traceback_later()
