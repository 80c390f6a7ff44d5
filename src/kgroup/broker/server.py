"""Starting and stopping a broker: the logs for a data directory, the listeners, graceful shutdown."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from kgroup.broker.broker import Broker
from kgroup.broker.config import BrokerConfig
from kgroup.broker.logapi import LogManagerLike

__all__ = ["open_logs", "run_broker", "serve"]

log = logging.getLogger("kgroup.broker")


#: ``log.message.timestamp.after.max.ms``: one hour in Kafka 4 (4.4.0 checked), unbounded before
TIMESTAMP_AFTER_MAX_MS = 3_600_000


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
    from kgroup.broker.control import ControlChannel

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
                loop.add_signal_handler(sig, stop.set)
        await serve(Broker(config, logs), stop, on_started, control_dir)

    asyncio.run(main())
