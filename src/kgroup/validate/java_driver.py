"""The real runs with Apache Kafka's Java ``KafkaConsumer`` (``kgroup validate --client java``).

Each scenario consumer is a JVM of its own running ``kgroup.testing.apache_kafka``'s client driver
(:class:`~kgroup.testing.apache_kafka.java_client.JavaConsumer`, the pinned 4.4.0 ``kafka-clients``):
``group.protocol=classic`` with the scenario's assignors, session and heartbeat, or
``group.protocol=consumer`` with its server assignor (``group.remote.assignor``; the coordinator owns
the session and the heartbeat, and Java's consumer refuses the classic settings with that protocol).
The JVMs are started before ``t = 0`` without subscribing; a start is the ``subscribe`` command (so the
1–2 s a JVM takes to start does not shift the scenario). ``crash`` is ``SIGKILL`` of the JVM, ``stop``
is ``close()``. Ownership comes from the rebalance listener's calls (with the JVM's wall-clock time),
records from every record the consumer polled; the bookkeeping is the librdkafka driver's
(:class:`kgroup.validate.driver._Players`), so both clients' runs are reduced the same way.

The Java driver polls without the scenario's processing time (it reads as fast as it can), so a
scenario meant for it should consume much faster than it produces — the built-in ones do. The events
it plays: ``start``, ``stop``, ``crash`` and ``restart``; a share group is not played with it yet.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from kgroup.model import KgroupError
from kgroup.sim.scenario import ConsumerSpec, EventSpec, Scenario
from kgroup.validate.driver import RealRun, _play_timeline, _set_up, _timeline

__all__ = ["JAVA_EVENTS", "check_java_playable", "play_java"]

JAVA_EVENTS = ("start", "stop", "crash", "restart")


def check_java_playable(scenario: Scenario) -> None:
    """:class:`KgroupError` naming what the Java driver cannot play."""
    if scenario.group.share_protocol:
        raise KgroupError(
            f"{scenario.name}: group.protocol: share is not played with --client java yet; "
            "use --client librdkafka"
        )
    for i, event in enumerate(scenario.events):
        if event.kind not in JAVA_EVENTS:
            raise KgroupError(
                f"{scenario.name}: events[{i}].kind: {event.kind!r} is not played with --client java yet; "
                f"use one of {', '.join(JAVA_EVENTS)} or --client librdkafka"
            )


def _consumer(scenario: Scenario, spec: ConsumerSpec, bootstrap: str, group: str, topics: list[str]) -> Any:
    from kgroup.testing.apache_kafka.java_client import JavaConsumer

    g = scenario.group
    config: dict[str, object] = {"auto.commit.interval.ms": g.auto_commit_interval_ms}
    settings: dict[str, Any] = {}
    if g.consumer_protocol:
        config["group.protocol"] = "consumer"
        if g.server_assignor:
            config["group.remote.assignor"] = g.server_assignor
    else:
        settings = {
            "assignment_strategy": list(spec.assignors or g.assignors),
            "session_timeout_ms": g.session_timeout_ms,
            "heartbeat_interval_ms": g.heartbeat_interval_ms,
        }
    return JavaConsumer(
        bootstrap,
        group,
        topics,
        group_instance_id=spec.id if spec.static else None,
        max_poll_interval_ms=g.max_poll_interval_ms,
        client_id=spec.id,
        auto_offset_reset=scenario.workload.auto_offset_reset,
        enable_auto_commit=g.enable_auto_commit,
        config=config,
        subscribe=False,
        name=f"validate-{group}-{spec.id}",
        log_level="WARN",
        **settings,
    )


def play_java(
    scenario: Scenario,
    bootstrap: str,
    create_topic: Callable[[str, int], None],
    run_id: str,
    on_progress: Callable[[str], None] = lambda text: None,
) -> RealRun:
    """Play ``scenario`` with Java consumers against the broker at ``bootstrap``; what they saw."""
    from kgroup.testing.apache_kafka.java_client import JavaClientError, start_all

    check_java_playable(scenario)
    players, producer = _set_up(scenario, bootstrap, create_topic, run_id)
    group, topic_names = players.group, players.topic_names
    timeline = _timeline(scenario)
    # one JVM per start of a consumer, made ahead: (consumer, handle), in the order they start
    idle: dict[str, list[Any]] = {}
    every: list[tuple[str, Any]] = []

    def make(name: str) -> None:
        spec = players.specs[name]
        handle = _consumer(scenario, spec, bootstrap, group, [topic_names[t] for t in spec.topics])
        idle.setdefault(name, []).append(handle)
        every.append((name, handle))

    running: dict[str, Any] = {}

    def start(name: str) -> None:
        if name in running:
            return
        if not idle.get(name):
            raise KgroupError(f"{scenario.name}: consumer {name} starts again, which was not foreseen")
        handle = idle[name].pop(0)
        running[name] = handle
        players._note(name, "started")
        handle.send({"cmd": "subscribe"})

    def crash(name: str) -> None:
        handle = running.pop(name, None)
        if handle is not None:
            handle.kill()
            players._note(name, "killed")

    def stop(name: str) -> None:
        handle = running.pop(name, None)
        if handle is not None:
            handle.close()
            players._note(name, "exited")

    try:
        for spec in scenario.consumers:
            if spec.autostart:
                make(spec.id)
        for _at, action, event in timeline:
            if action in ("start", "up") and event.consumer:
                make(event.consumer)
        on_progress(f"{scenario.name}: starting {len(every)} Java consumers")
        start_all(*(handle for _name, handle in every))
        end_ms = _play_timeline(
            scenario,
            timeline,
            players,
            producer,
            start,
            lambda action, event: _act(action, event, start, stop, crash),
            lambda action, event: f"{action} {event.consumer or ''}",
            on_progress,
        )
    finally:
        for name in list(running):
            crash(name)
        for _name, handle in every:
            with contextlib.suppress(JavaClientError):
                handle.kill()
        producer.stop()
    for name, handle in every:
        for line in _reports(handle.events):
            players.lines.append((name, line))
    failures = [
        f"consumer {name}: {e.get('type', '')}: {e.get('message', '')}"
        for name, handle in every
        for e in handle.events
        if e["event"] == "error" and e.get("fatal")
    ]
    if failures:
        raise KgroupError(f"{scenario.name}: " + "; ".join(failures[:3]))
    return players.result(min(end_ms, scenario.duration_ms))


def _reports(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Java driver's events in the worker's report format (``assigned``/``revoked``/``lost`` with
    ``p``; each polled record as a one-record ``batch``)."""
    out: list[dict[str, Any]] = []
    for e in events:
        kind = e["event"]
        if kind in ("assigned", "revoked", "lost"):
            out.append({"t": int(e["ts"]), "e": kind, "p": [f"{t}-{p}" for t, p in e["partitions"]]})
        elif kind == "record":
            tp = f"{e['topic']}-{e['partition']}"
            out.append({"t": int(e["ts"]), "e": "batch", "b": [[tp, int(e["offset"]), int(e["offset"])]]})
    return out


def _act(
    action: str,
    event: EventSpec,
    start: Callable[[str], None],
    stop: Callable[[str], None],
    crash: Callable[[str], None],
) -> None:
    name = event.consumer or ""
    if action in ("start", "up"):
        start(name)
    elif action == "stop":
        stop(name)
    elif action == "crash":
        crash(name)
    elif action == "down":
        (stop if event.graceful else crash)(name)
