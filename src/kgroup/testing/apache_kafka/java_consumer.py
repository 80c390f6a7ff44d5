"""Kafka's Java ``KafkaConsumer`` in a classic group as a process handle: :class:`JavaConsumer`."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgroup.model import TopicPartition
from kgroup.testing.apache_kafka.distribution import KafkaLibs
from kgroup.testing.apache_kafka.java_process import DEFAULT_WAIT_S, JavaClientError, JavaClientProcess, _text

__all__ = ["Commit", "JavaConsumer", "Rebalance"]


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


class JavaConsumer(JavaClientProcess):
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


_SHORT_NAMES = {
    "range": "org.apache.kafka.clients.consumer.RangeAssignor",
    "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "sticky": "org.apache.kafka.clients.consumer.StickyAssignor",
    "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
}


def _strategies(value: str | Sequence[str] | None) -> str | None:
    if value is None:
        return None
    names = value.split(",") if isinstance(value, str) else list(value)
    return ",".join(_SHORT_NAMES.get(n.strip(), n.strip()) for n in names)
