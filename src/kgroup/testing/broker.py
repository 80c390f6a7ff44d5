"""``KafkaBroker``: an in-process ``kgroup serve`` for tests and scripts.

The broker runs on its own asyncio loop in a background thread, bound to 127.0.0.1 on free ports, so
any Kafka client in the calling process (or a subprocess) can use ``.bootstrap_servers``. Nothing
process-wide is touched: no signal handlers, no logging configuration.
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import tempfile
import threading
from collections.abc import Coroutine, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from kgroup.model import KgroupError
from kgroup.testing.lifecycle import Started

__all__ = ["KafkaBroker"]

T = TypeVar("T")
START_TIMEOUT_S = 30.0


class KafkaBroker(Started):
    """A broker (or a cluster of ``brokers`` in one process) for tests.

    >>> with KafkaBroker(topics={"orders": 3}) as kafka:  # doctest: +SKIP
    ...     producer = confluent_kafka.Producer({"bootstrap.servers": kafka.bootstrap_servers})

    ``data_dir=None`` keeps the data in a temporary directory removed at :meth:`stop`; give a path
    to keep it (and to restart a broker on the same data).

    The group settings are Kafka's broker settings (``group.initial.rebalance.delay.ms`` is 0 here,
    Kafka's default 3000 elsewhere); ``group_min_session_timeout_ms`` (Kafka's
    ``group.min.session.timeout.ms``, default 6000) lowers the floor a classic member's
    ``session.timeout.ms`` must clear, so a test can watch a real session expire in 1–2 s.
    """

    def __init__(
        self,
        topics: Mapping[str, int] | None = None,
        data_dir: str | Path | None = None,
        brokers: int = 1,
        *,
        num_partitions: int = 1,
        auto_create_topics: bool = True,
        group_initial_rebalance_delay_ms: int = 0,
        transaction_abort_timed_out_interval_ms: int = 10_000,
        group_min_session_timeout_ms: int = 6000,
        group_consumer_heartbeat_interval_ms: int = 5000,
        group_consumer_session_timeout_ms: int = 45_000,
        group_consumer_min_heartbeat_interval_ms: int = 5000,
        group_consumer_max_heartbeat_interval_ms: int = 15_000,
        group_consumer_min_session_timeout_ms: int = 45_000,
        group_consumer_max_session_timeout_ms: int = 60_000,
        group_consumer_assignment_interval_ms: int = 1000,
        group_share_max_size: int = 200,
        group_share_session_timeout_ms: int = 45_000,
        group_share_heartbeat_interval_ms: int = 5000,
        group_share_assignment_interval_ms: int = 1000,
        group_share_record_lock_duration_ms: int = 30_000,
        group_share_delivery_count_limit: int = 5,
        share_auto_offset_reset: str = "latest",
        leader_imbalance_check_interval_s: int = 300,
        replica_placement_seed: int = 0,
        fsync: str = "never",
        record_dir: str | Path | None = None,
        max_connections: int = 1000,
        max_request_bytes: int = 100 * 1024 * 1024,
        max_request_elements: int = 100_000,
        max_open_files: int | None = None,
        listeners: Sequence[str] = (),
        listener_security_protocol_map: str = "",
        advertised_listeners: Sequence[str] = (),
        ssl_certfile: str | Path | None = None,
        ssl_keyfile: str | Path | None = None,
        ssl_cafile: str | Path | None = None,
        ssl_client_auth: str = "none",
        sasl_mechanisms: Sequence[str] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
        sasl_users: Mapping[str, str] | None = None,
        authorizer: bool = False,
        super_users: Sequence[str] = (),
        allow_everyone_if_no_acl_found: bool = False,
        connections_max_reauth_ms: int = 0,
        failed_authentication_delay_ms: int = 100,
    ) -> None:
        """The security arguments are ``kgroup serve``'s flags of the same names (docs/security.md):
        e.g. ``listeners=["SASL_PLAINTEXT://127.0.0.1:0"], sasl_users={"alice": "alice-secret"}``
        (port 0 picks a free port; :meth:`listener_bootstrap_servers` names it).
        ``advertised_listeners`` is ``--advertised-listeners`` (Kafka's ``advertised.listeners``):
        e.g. ``["PLAINTEXT://127.0.0.1:19092"]`` to send clients through a proxy on that port;
        :attr:`bootstrap_servers` stays the bound address."""
        from kgroup.broker.config import BrokerConfig
        from kgroup.security.listeners import build_security_config

        self._config = BrokerConfig(
            port=0,
            brokers=brokers,
            num_partitions=num_partitions,
            auto_create_topics=auto_create_topics,
            group_initial_rebalance_delay_ms=group_initial_rebalance_delay_ms,
            transaction_abort_timed_out_interval_ms=transaction_abort_timed_out_interval_ms,
            group_min_session_timeout_ms=group_min_session_timeout_ms,
            group_consumer_heartbeat_interval_ms=group_consumer_heartbeat_interval_ms,
            group_consumer_session_timeout_ms=group_consumer_session_timeout_ms,
            group_consumer_min_heartbeat_interval_ms=group_consumer_min_heartbeat_interval_ms,
            group_consumer_max_heartbeat_interval_ms=group_consumer_max_heartbeat_interval_ms,
            group_consumer_min_session_timeout_ms=group_consumer_min_session_timeout_ms,
            group_consumer_max_session_timeout_ms=group_consumer_max_session_timeout_ms,
            group_consumer_assignment_interval_ms=group_consumer_assignment_interval_ms,
            group_share_max_size=group_share_max_size,
            group_share_session_timeout_ms=group_share_session_timeout_ms,
            group_share_heartbeat_interval_ms=group_share_heartbeat_interval_ms,
            group_share_assignment_interval_ms=group_share_assignment_interval_ms,
            group_share_record_lock_duration_ms=group_share_record_lock_duration_ms,
            group_share_delivery_count_limit=group_share_delivery_count_limit,
            share_auto_offset_reset=share_auto_offset_reset,
            leader_imbalance_check_interval_s=leader_imbalance_check_interval_s,
            replica_placement_seed=replica_placement_seed,
            topics=tuple((topics or {}).items()),
            max_connections=max_connections,
            max_request_bytes=max_request_bytes,
            max_request_elements=max_request_elements,
        )
        self._owns_dir = data_dir is None
        self.data_dir = (
            Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="kgroup-broker-"))
        )
        try:
            security = build_security_config(
                listeners=tuple(listeners),
                listener_security_protocol_map=listener_security_protocol_map,
                advertised_listeners=tuple(advertised_listeners),
                ssl_certfile=ssl_certfile,
                ssl_keyfile=ssl_keyfile,
                ssl_cafile=ssl_cafile,
                ssl_client_auth=ssl_client_auth,
                sasl_mechanisms=tuple(sasl_mechanisms),
                sasl_users=tuple((sasl_users or {}).items()),
                authorizer=authorizer,
                super_users=tuple(super_users),
                allow_everyone_if_no_acl_found=allow_everyone_if_no_acl_found,
                connections_max_reauth_ms=connections_max_reauth_ms,
                failed_authentication_delay_ms=failed_authentication_delay_ms,
                state_dir=self.data_dir,
            )
        except BaseException:
            self._cleanup_dir()
            raise
        self._config = dataclasses.replace(self._config, security=security)
        self._fsync = fsync
        self._max_open_files = max_open_files
        self._record_dir = Path(record_dir) if record_dir is not None else None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None
        self._broker: Any = None
        self._recorder: Any = None

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self) -> KafkaBroker:
        if self._thread is not None:
            raise KgroupError("KafkaBroker: already started; call stop() first")
        from kgroup.broker.broker import Broker, open_logs

        started: Future[None] = Future()
        logs = open_logs(self.data_dir, self._fsync, self._max_open_files)

        async def main() -> None:
            self._stop = asyncio.Event()
            try:
                self._broker = Broker(self._config, logs)
                if self._record_dir is not None:
                    from kgroup.broker.recorder import GroupRecorder

                    self._recorder = GroupRecorder(self._record_dir)
                    self._broker.coordinators.set_recorder(self._recorder)
                    self._broker.shares.observer = self._recorder.share_event
                await self._broker.start()
                # a test's first request finds its groups (a real client would retry
                # COORDINATOR_LOAD_IN_PROGRESS while the log is replayed)
                await self._broker.coordinators.wait_loaded()
            except BaseException as exc:
                logs.close()
                started.set_exception(exc)
                return
            started.set_result(None)
            try:
                await self._stop.wait()
            finally:
                await self._broker.close()
                if self._recorder is not None:
                    self._recorder.close()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(main())
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="kgroup-broker", daemon=True)
        self._thread.start()
        try:
            started.result(timeout=START_TIMEOUT_S)
        except BaseException:
            self._thread.join(timeout=START_TIMEOUT_S)
            self._thread = None
            self._cleanup_dir()
            raise
        return self

    def stop(self) -> None:
        """Stop every broker, flush and close the logs, remove the temporary data directory."""
        thread, loop, stop = self._thread, self._loop, self._stop
        if thread is None or loop is None or stop is None:
            return
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=START_TIMEOUT_S)
        self._thread = None
        self._cleanup_dir()

    def _cleanup_dir(self) -> None:
        if self._owns_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    # --- use -------------------------------------------------------------------------------------

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._loop is None or self._thread is None:
            coro.close()
            raise KgroupError("KafkaBroker: not running; use it inside `with KafkaBroker() as kafka:`")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=START_TIMEOUT_S)

    def run_in_loop(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the broker's loop and wait for its result (for tests of the broker)."""
        return self._call(coro)

    @property
    def broker(self) -> Any:
        """The running :class:`kgroup.broker.broker.Broker` (for tests of the broker itself)."""
        if self._broker is None:
            raise KgroupError("KafkaBroker: not running; use it inside `with KafkaBroker() as kafka:`")
        return self._broker

    @property
    def bootstrap_servers(self) -> str:
        """``host:port[,host:port…]`` the live brokers are bound to, for ``bootstrap.servers``."""
        if self._broker is None:
            raise KgroupError("KafkaBroker: not running; use it inside `with KafkaBroker() as kafka:`")
        text: str = self._broker.bootstrap_servers
        return text

    def listener_bootstrap_servers(self, listener: str) -> str:
        """``bootstrap.servers`` of one listener by name (e.g. ``"SASL_SSL"``)."""
        if self._broker is None:
            raise KgroupError("KafkaBroker: not running; use it inside `with KafkaBroker() as kafka:`")
        text: str = self._broker.listener_bootstrap_servers(listener)
        return text

    def port(self, broker_id: int = 0) -> int:
        port: int = self._broker.ports[broker_id]
        return port

    def create_topic(self, name: str, partitions: int = 1) -> None:
        """Create a topic (as CreateTopics would); :class:`KgroupError` if it exists or is invalid."""
        from kgroup.broker.cluster import topic_name_error

        async def create() -> None:
            error = topic_name_error(name)
            if error is not None:
                raise KgroupError(f"name: {error}")
            if partitions < 1:
                raise KgroupError(f"partitions: {partitions}; use at least 1")
            cluster = self._broker.cluster
            if name in cluster.topics:
                raise KgroupError(f"name: topic {name!r} already exists")
            cluster.create_topic(name, partitions, self._broker.config.replication_factor, {})

        self._call(create())

    def group(self, group_id: str) -> Any:
        """The coordinator's view of a group (:class:`kgroup.group.GroupView`: state, generation,
        members, offsets), or ``None`` if no broker coordinates such a group."""

        from kgroup.group import ClassicGroups

        def view(host: Any) -> Any:
            coordinator = host.coordinators.get(host.placement.coordinator_for(group_id))
            if coordinator is None or not coordinator.has_group(group_id):
                return None
            return coordinator.kind(ClassicGroups).group(group_id)

        return self._call(self._broker.coordinators.inspect(view))

    def stop_broker(self, broker_id: int) -> None:
        """Take broker ``broker_id`` down (its leaderships and groups move to the other brokers)."""
        self._check_broker(broker_id)
        self._call(self._broker.stop_listener(broker_id))

    def start_broker(self, broker_id: int) -> None:
        """Bring a stopped broker back on its old port."""
        self._check_broker(broker_id)
        self._call(self._broker.restart_listener(broker_id))

    def _check_broker(self, broker_id: int) -> None:
        if self._broker is None:
            raise KgroupError("KafkaBroker: not running; use it inside `with KafkaBroker() as kafka:`")
        if broker_id not in self._broker.cluster.broker_ids:
            raise KgroupError(f"broker_id: {broker_id} is not one of {list(self._broker.cluster.broker_ids)}")
