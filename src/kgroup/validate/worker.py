"""One real consumer process of a validation run (``python -m kgroup.validate.worker CONFIG_JSON``).

A confluent-kafka (librdkafka) consumer (the classic protocol, or KIP-848's with
``group.protocol=consumer``; for a share group, KIP-932, confluent-kafka's ``ShareConsumer``: see
:func:`share_main`) subscribes, polls and "processes" what it gets at the
scenario's ``consume_per_consumer_per_s`` (a batch of ``n`` records takes ``n / rate`` seconds, as
the simulator's application loop does), and reports on stdout, one JSON object per line, with
wall-clock epoch milliseconds:

* ``{"t", "e": "assigned" | "revoked" | "lost", "p": ["topic-p", …]}`` – its rebalance callbacks;
* ``{"t", "e": "batch", "b": [["topic-p", first, last], …]}`` – the records one batch processed;
* ``{"t", "e": "member", "id": …}`` – its member id, once known;
* ``{"t", "e": "closed"}`` – after a graceful ``close()``.

The process starts idle: it reports ``{"t", "e": "ready"}`` once its imports are done and creates
its consumer only when the driver sends ``go`` (so a scenario's start times are not shifted by the
second or two a Python process takes to start on a loaded machine). Then commands on stdin, one per
line: ``stall MS`` (the application loop stops calling ``poll()`` for
MS; librdkafka's background thread keeps heartbeating, so past ``max.poll.interval.ms`` the member
leaves the group) and ``stop`` (graceful close: commit, revoke, LeaveGroup unless static). A crash
is the driver's ``SIGKILL``. The process gives up by itself after ``max_run_s``.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time
from typing import Any

__all__ = ["consumer_config", "main", "share_consumer_config", "share_main"]

#: librdkafka's names for the assignors a scenario names (Java's names are the simulator's)
LIBRDKAFKA_ASSIGNORS = {
    "range": "range",
    "roundrobin": "roundrobin",
    "cooperative-sticky": "cooperative-sticky",
}
_POLL_S = 0.05


def consumer_config(spec: dict[str, Any]) -> dict[str, Any]:
    """The librdkafka configuration of one scenario consumer (``spec`` as the driver writes it)."""
    conf: dict[str, Any] = {
        "bootstrap.servers": spec["bootstrap"],
        "group.id": spec["group"],
        "client.id": spec["id"],
        "max.poll.interval.ms": spec["max_poll_interval_ms"],
        "enable.auto.commit": spec["enable_auto_commit"],
        "auto.commit.interval.ms": spec["auto_commit_interval_ms"],
        "auto.offset.reset": spec["auto_offset_reset"],
        "log_level": 2,
    }
    if spec.get("protocol", "classic") == "consumer":
        # KIP-848: the coordinator assigns and owns the session and heartbeat settings (the broker's
        # group.consumer.*); librdkafka refuses the classic protocol's properties with it
        conf["group.protocol"] = "consumer"
        if spec.get("server_assignor"):
            conf["group.remote.assignor"] = spec["server_assignor"]
    else:
        conf["partition.assignment.strategy"] = ",".join(LIBRDKAFKA_ASSIGNORS[a] for a in spec["assignors"])
        conf["session.timeout.ms"] = spec["session_timeout_ms"]
        conf["heartbeat.interval.ms"] = spec["heartbeat_interval_ms"]
    if spec.get("static"):
        conf["group.instance.id"] = spec["id"]
    return conf


def share_consumer_config(spec: dict[str, Any]) -> dict[str, Any]:
    """The librdkafka configuration of one share consumer: explicit acknowledgement (each record is
    acknowledged ACCEPT once processed, and the acknowledgements go with the next poll, as the
    simulator's share consumer sends them with its next ShareFetch). The coordinator owns the
    session, the heartbeat and the assignment; the lock and ``share.auto.offset.reset`` are the
    group's (set on the broker)."""
    return {
        "bootstrap.servers": spec["bootstrap"],
        "group.id": spec["group"],
        "client.id": spec["id"],
        "share.acknowledgement.mode": "explicit",
        "max.poll.interval.ms": spec["max_poll_interval_ms"],
        "log_level": 2,
    }


def _emit(kind: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"t": int(time.time() * 1000), "e": kind, **fields}) + "\n")
    sys.stdout.flush()


def _names(parts: list[Any]) -> list[str]:
    return sorted(f"{p.topic}-{p.partition}" for p in parts)


def _commands() -> list[str]:
    out: list[str] = []
    while select.select([sys.stdin], [], [], 0)[0]:
        line = sys.stdin.readline()
        if not line:  # the driver went away: stop as if told to
            return [*out, "stop"]
        out.append(line.strip())
    return out


def _obey_commands(consumer: Any) -> bool:
    """The driver's commands since the last poll: ``stall MS`` sleeps; ``stop`` closes the consumer and
    says so (``True``: the worker is done)."""
    for command in _commands():
        if command == "stop":
            consumer.close()
            _emit("closed")
            return True
        if command.startswith("stall "):
            time.sleep(int(command.split()[1]) / 1000)
    return False


def _wait_go(spec: dict[str, Any]) -> bool:
    _emit("ready")
    waited = select.select([sys.stdin], [], [], float(spec["max_run_s"]))[0]
    return bool(waited) and sys.stdin.readline().strip() == "go"


def main(argv: list[str]) -> int:
    from confluent_kafka import Consumer

    spec = json.loads(argv[0])
    if spec.get("protocol") == "share":
        return share_main(spec)
    if not _wait_go(spec):
        return 0
    consumer = Consumer(consumer_config(spec))
    rate = float(spec["consume_per_consumer_per_s"])
    batch_size = int(spec["max_poll_records"])
    member_seen = ""

    def on_assign(_c: Any, parts: list[Any]) -> None:
        _emit("assigned", p=_names(parts))

    def on_revoke(_c: Any, parts: list[Any]) -> None:
        _emit("revoked", p=_names(parts))

    def on_lost(_c: Any, parts: list[Any]) -> None:
        _emit("lost", p=_names(parts))

    consumer.subscribe(list(spec["topics"]), on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    deadline = time.monotonic() + float(spec["max_run_s"])
    try:
        while time.monotonic() < deadline:
            if _obey_commands(consumer):
                return 0
            messages = consumer.consume(num_messages=batch_size, timeout=_POLL_S)
            member = consumer.memberid() or ""
            if member and member != member_seen:
                member_seen = member
                _emit("member", id=member)
            spans: dict[str, list[int]] = {}
            for message in messages:
                offset = message.offset()
                if message.error() is not None or offset is None:
                    continue
                name = f"{message.topic()}-{message.partition()}"
                span = spans.setdefault(name, [offset, offset])
                span[0], span[1] = min(span[0], offset), max(span[1], offset)
            if spans:
                _emit("batch", b=[[p, lo, hi] for p, (lo, hi) in sorted(spans.items())])
                time.sleep(len(messages) / rate)
    finally:
        sys.stdout.flush()
    consumer.close()
    _emit("closed")
    return 0


def _runs(records: list[tuple[str, int, int]]) -> list[list[Any]]:
    """(partition, offset, delivery count) records as ``[partition, first, last, count]`` runs of
    consecutive offsets at one delivery count."""
    out: list[list[Any]] = []
    for name, offset, count in sorted(records):
        last = out[-1] if out else None
        if last is not None and last[0] == name and last[2] + 1 == offset and last[3] == count:
            last[2] = offset
        else:
            out.append([name, offset, offset, count])
    return out


def share_main(spec: dict[str, Any]) -> int:
    """A share consumer (KIP-932): polls, reports what it got (``{"t", "e": "got", "r": [[partition,
    first, last, delivery count], …]}``) at once, "processes" the batch at the scenario's rate, then
    reports ``{"t", "e": "done", "n"}`` and acknowledges every record ACCEPT (sent with the next
    poll). ``stop`` is ``close()`` (the acknowledgements pending are committed, the group left); a
    ``kill -9`` leaves the records it holds acquired until the broker sees its connection close."""
    from confluent_kafka import AcknowledgeType, ShareConsumer

    if not _wait_go(spec):
        return 0
    consumer = ShareConsumer(share_consumer_config(spec))
    rate = float(spec["consume_per_consumer_per_s"])
    consumer.subscribe(list(spec["topics"]))
    deadline = time.monotonic() + float(spec["max_run_s"])
    try:
        while time.monotonic() < deadline:
            if _obey_commands(consumer):
                return 0
            messages = [m for m in consumer.poll(_POLL_S) if m.error() is None]
            if not messages:
                continue
            got = [
                (f"{m.topic()}-{m.partition()}", int(m.offset() or 0), int(m.delivery_count() or 1))
                for m in messages
            ]
            _emit("got", r=_runs(got))
            time.sleep(len(messages) / rate)
            _emit("done", n=len(messages))
            for message in messages:
                consumer.acknowledge(message, AcknowledgeType.ACCEPT)
    finally:
        sys.stdout.flush()
    consumer.close()
    _emit("closed")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main(sys.argv[1:]))
