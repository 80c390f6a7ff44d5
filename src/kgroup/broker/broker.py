"""The broker process: listeners (one per broker id), the cluster state, the logs and the waiters.

Everything runs on one asyncio loop. ``kgroup serve`` runs it in the main thread;
``kgroup.testing.KafkaBroker`` runs it in a background thread with its own loop.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, ParamSpec, TypeVar

from kgroup.broker.cluster import Cluster, topic_name_error
from kgroup.broker.config import BrokerConfig
from kgroup.broker.logapi import LogManagerLike
from kgroup.broker.waiters import AppendWatchers, FetchWaiter
from kgroup.model import KgroupError
from kgroup.security.listeners import Listener
from kgroup.security.runtime import SecurityRuntime

__all__ = ["Broker", "wall_clock_ms"]

log = logging.getLogger("kgroup.broker")
P = ParamSpec("P")
T = TypeVar("T")


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class Broker:
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
        self.connections: dict[int, set[asyncio.StreamWriter]] = {b: set() for b in self.cluster.broker_ids}
        self._servers: dict[int, list[asyncio.Server]] = {}
        # a PLAIN password is salted and hashed (some ms) away from the loop, one at a time
        self._auth_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgroup-auth")
        self.security = SecurityRuntime(config.security, clock_s=time.monotonic, run_blocking=self._run_auth)
        self.fetch_waiters = AppendWatchers()
        self._next_producer_id = (wall_clock_ms() << 12) & ((1 << 62) - 1)
        self._tick_task: asyncio.Task[None] | None = None
        self._connection_tasks: set[asyncio.Task[Any]] = set()
        # one thread for decoding and encoding large requests and responses (pure functions of bytes
        # and immutable values: no broker state is touched there)
        self._codec = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgroup-codec")
        from kgroup.broker.connection import CloseLog

        self.close_log = CloseLog()
        from kgroup.broker.groups import GroupAdapter  # a late import: groups import the broker's types

        self.groups = GroupAdapter(self)
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
        self.groups.start()
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
        from kgroup.broker.connection import serve_connection

        name = "" if listener is None else listener.name
        host = self.config.host if listener is None else listener.host
        base = self.config.port if listener is None else listener.port
        ports = self.listener_ports.setdefault(name, {})
        port = ports.get(broker_id)
        if port is None:
            port = 0 if base == 0 else base + broker_id

        async def on_connect(
            listener: Listener | None, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
        ) -> None:
            task = asyncio.current_task()
            if task is not None:
                self._connection_tasks.add(task)
            try:
                await serve_connection(self, broker_id, reader, writer, listener)
            except asyncio.CancelledError:
                # shutdown: end quietly (asyncio's server callback would log a cancelled task)
                return
            finally:
                if task is not None:
                    self._connection_tasks.discard(task)

        tls = self.security.ssl_context() if listener is not None and listener.tls else None
        try:
            server = await asyncio.start_server(
                partial(on_connect, listener), host, port, reuse_address=True, ssl=tls
            )
        except OSError as exc:
            where = "--port" if listener is None else f"--listener {listener}"
            raise KgroupError(
                f"port: cannot listen on {host}:{port} ({exc.strerror}); "
                f"pick another with {where} (0 picks a free one)"
            ) from None
        ports[broker_id] = server.sockets[0].getsockname()[1]
        return server

    def advertised(self, listener: str) -> tuple[str, dict[int, int]]:
        """The host and per-broker ports a client that came through ``listener`` is told of (Kafka
        advertises the listener the request arrived on)."""
        for candidate in self.config.security.listeners:
            if candidate.name == listener:
                return candidate.host, self.listener_ports.get(listener, {})
        return self.config.host, self.ports

    async def stop_listener(self, broker_id: int) -> None:
        """Take one broker down: stop listening, drop its connections, move its leaderships."""
        servers = self._servers.pop(broker_id, [])
        self.cluster.broker_stopped(broker_id)
        for server in servers:
            server.close()
        for writer in list(self.connections[broker_id]):
            writer.close()
        for server in servers:
            await server.wait_closed()
        self.groups.on_brokers_changed()

    async def restart_listener(self, broker_id: int) -> None:
        await self.start_listener(broker_id)
        self.groups.on_brokers_changed()

    async def close(self) -> None:
        if self._tick_task is not None:
            self._tick_task.cancel()
            await asyncio.gather(self._tick_task, return_exceptions=True)
        for broker_id in list(self._servers):
            servers = self._servers.pop(broker_id)
            for server in servers:
                server.close()
            for writer in list(self.connections[broker_id]):
                writer.close()
            for server in servers:
                await server.wait_closed()
        tasks = list(self._connection_tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.groups.close()
        self.close_log.flush()
        self._codec.shutdown(wait=True, cancel_futures=True)
        self._auth_thread.shutdown(wait=True, cancel_futures=True)
        self.logs.flush()
        self.logs.close()

    async def _tick(self) -> None:
        interval_ms = self.config.leader_imbalance_check_interval_s * 1000
        next_election_ms = self.clock_ms() + interval_ms
        while True:
            await asyncio.sleep(1.0)
            try:
                self.logs.tick(self.clock_ms())
            except OSError:
                log.exception("log maintenance failed")
            if self.config.auto_leader_rebalance_enable and self.clock_ms() >= next_election_ms:
                # KRaft's periodic electPreferred task (see kgroup.broker.cluster)
                next_election_ms = self.clock_ms() + interval_ms
                if self.cluster.elect_preferred_leaders():
                    self.groups.on_brokers_changed()

    @property
    def bootstrap_servers(self) -> str:
        """Of the first listener."""
        listeners = self.config.security.listeners
        return self.listener_bootstrap_servers(listeners[0].name if listeners else "")

    def listener_bootstrap_servers(self, listener: str) -> str:
        host, ports = self.advertised(listener)
        return ",".join(f"{host}:{ports[b]}" for b in sorted(ports))

    # --- shared services for handlers ------------------------------------------------------------

    async def off_loop(self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``function(*args, **kwargs)`` in the codec thread: a pure function of its arguments only."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._codec, functools.partial(function, *args, **kwargs))

    async def _run_auth(self, function: Callable[[bytes], bytes], token: bytes) -> bytes:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._auth_thread, function, token)

    def allocate_producer_id(self) -> int:
        # Unique across restarts without a persisted counter: the start time in ms, shifted.
        self._next_producer_id += 1
        return self._next_producer_id

    def watch_appends(self, waiter: FetchWaiter) -> None:
        """Park a fetch: ``waiter`` hears of every append to its partitions until unwatched."""
        self.fetch_waiters.watch(waiter)

    def unwatch_appends(self, waiter: FetchWaiter) -> None:
        self.fetch_waiters.unwatch(waiter)

    def notify_appended(self, topic: str, partition: int, size: int) -> None:
        """A batch of ``size`` bytes was appended to ``topic``-``partition``: tell its parked fetches."""
        self.fetch_waiters.appended(topic, partition, size)
