"""``kgroup serve``'s control channel: stop and start one broker of a ``--brokers N`` cluster.

Every ``kgroup serve`` has one (a single broker answers ``status``, and refuses ``stop-node`` /
``start-node`` with one line saying they need ``--brokers N`` with N > 1).

Kafka runs one process per broker, so an operator stops one with ``kafka-server-stop.sh`` or a
signal. ``kgroup serve --brokers N`` runs all N in one process; to take one down (and bring it back
on its port and data) it listens on ``127.0.0.1`` (a free port) for one-line commands, and writes
``HOST:PORT`` of that listener to ``<data-dir>/serve-ctl.port`` (removed when the broker stops).
``kgroup serve-ctl --data-dir DIR stop-node N`` sends them.

Commands, one per connection, answered with one or more lines and the connection closed:

* ``stop-node N`` — a controlled shutdown of broker N (``Broker.stop_listener``: its listener and
  connections close, its partition leaderships and groups move to the other brokers);
* ``start-node N`` — broker N listens again on its port (``Broker.restart_listener``);
* ``status`` — one line per broker: ``broker N up HOST:PORT`` or ``broker N down``.

The first line of an answer is ``ok …`` or ``error …``. A bad command is answered with an error and
never stops the broker.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from kgroup.broker.cluster import Cluster
from kgroup.broker.config import BrokerConfig
from kgroup.control_file import CONTROL_FILE
from kgroup.model import KgroupError

__all__ = ["CONTROL_FILE", "ControlChannel", "run_command"]

log = logging.getLogger("kgroup.broker")
MAX_LINE = 256
READ_TIMEOUT_S = 10.0


class ControlledBroker(Protocol):
    """What the control channel uses of :class:`kgroup.broker.broker.Broker` (which provides it; this
    module does not import it, so the broker module stays the package's composition root)."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def cluster(self) -> Cluster: ...

    @property
    def ports(self) -> Mapping[int, int]: ...

    async def stop_listener(self, broker_id: int) -> None: ...

    async def restart_listener(self, broker_id: int) -> None: ...


async def run_command(broker: ControlledBroker, line: str) -> str:
    """The answer to one command line (``ok …`` / ``error …`` first)."""
    words = line.split()
    if words == ["status"]:
        lines = ["ok"]
        for node in broker.cluster.broker_ids:
            if node in broker.cluster.alive:
                lines.append(f"broker {node} up {broker.config.host}:{broker.ports[node]}")
            else:
                lines.append(f"broker {node} down")
        return "\n".join(lines)
    if len(words) != 2 or words[0] not in ("stop-node", "start-node"):
        return f"error: unknown command {line.strip()[:80]!r}; use stop-node N, start-node N or status"
    action, node_text = words
    ids = list(broker.cluster.broker_ids)
    if len(ids) == 1:
        return (
            f"error: {action}: this kgroup serve runs one broker; stopping and starting one broker "
            f"needs `kgroup serve --brokers N` with N > 1 (stop this one with Ctrl-C or SIGTERM)"
        )
    if not node_text.lstrip("-").isdigit() or int(node_text) not in ids:
        return f"error: node: {node_text[:20]!r} is not a broker of this cluster; give one of {ids}"
    node = int(node_text)
    alive = node in broker.cluster.alive
    if action == "stop-node":
        if not alive:
            return f"error: node: broker {node} is already stopped; start it with start-node {node}"
        await broker.stop_listener(node)
        log.info("broker %d stopped (serve-ctl)", node)
        return f"ok: broker {node} stopped"
    if alive:
        return f"error: node: broker {node} is already running"
    try:
        await broker.restart_listener(node)
    except KgroupError as exc:
        return f"error: {exc.message}"
    log.info("broker %d started (serve-ctl)", node)
    return f"ok: broker {node} listening on {broker.config.host}:{broker.ports[node]}"


class ControlChannel:
    """The control listener of one running broker, and its ``serve-ctl.port`` file."""

    def __init__(self, broker: ControlledBroker, data_dir: Path) -> None:
        self.broker = broker
        self.path = data_dir / CONTROL_FILE
        self._server: asyncio.Server | None = None
        self._lock = asyncio.Lock()  # one command at a time

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(f"127.0.0.1:{port}\n", encoding="utf-8")
        tmp.replace(self.path)

    async def close(self) -> None:
        self.path.unlink(missing_ok=True)
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                raw = await asyncio.wait_for(reader.readline(), READ_TIMEOUT_S)
            except (TimeoutError, ValueError, ConnectionError):
                return
            if len(raw) > MAX_LINE:
                answer = "error: command too long"
            else:
                async with self._lock:
                    try:
                        answer = await run_command(self.broker, raw.decode("utf-8", "replace"))
                    except Exception as exc:  # a bug: answer it, keep the broker serving
                        log.exception("serve-ctl command failed")
                        answer = f"error: internal error: {type(exc).__name__}: {exc}"
            writer.write((answer + "\n").encode("utf-8"))
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()
