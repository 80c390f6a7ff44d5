"""Plays a scenario with real consumers against a real broker and collects what they saw.

Each scenario consumer is a process of its own (:mod:`kgroup.validate.worker`), so a crash is a real
``kill -9`` and a stalled application loop stalls only that consumer; a producer thread here writes
``produce_per_partition_per_s`` records into every partition. The scenario's events are carried out
on the wall clock from the moment the consumers start (``t = 0``, as in the simulator):

* ``start`` / ``stop`` (graceful ``close()``) / ``crash`` (``SIGKILL``);
* ``restart`` (stop or crash, then a new process after ``downtime_ms``) and ``rolling_restart``;
* ``scale`` (``+n`` new consumers named as the simulator names them, ``-n`` stops the newest);
* ``slow_poll`` (the consumer's loop stops polling for ``duration_ms``).

What comes back (:class:`RealRun`): every consumer's partitions over time from its own rebalance
callbacks (a killed process owns nothing from the kill on), the batches it processed, and the time
the run took. The other scenario events (``add_partitions``, ``subscribe``, ``network_partition``)
are refused with an error naming the event: the driver cannot play them (network faults are
``kgroup.testing.faults``' job).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from kgroup.child_process import wait_or_kill
from kgroup.model import KgroupError
from kgroup.sim.scenario import ConsumerSpec, EventSpec, Scenario, scaled_ids
from kgroup.validate.metrics import Batch, Delivery, Interval

__all__ = ["SUPPORTED_EVENTS", "RealRun", "check_playable", "play"]

SUPPORTED_EVENTS = ("start", "stop", "crash", "restart", "rolling_restart", "scale", "slow_poll")
#: a worker gives up by itself this long after the scenario should have ended
_WORKER_SLACK_S = 60.0
_PRODUCE_TICK_S = 0.1
_STOP_WAIT_S = 15.0
#: how long the consumer processes may take to start (idle, before the run)
_READY_S = 60.0


@dataclass
class RealRun:
    """What the real consumers of one run saw (times in ms from the start of the consumers)."""

    partitions: list[str]
    intervals: list[Interval]
    batches: list[Batch]
    end_ms: int
    consumer_log: list[dict[str, Any]] = field(default_factory=list)
    #: share groups: what each share consumer got (at poll time, with delivery counts), the records
    #: processed to the end of their batch, and each consumer's running spans (consumer, start, end)
    deliveries: list[Delivery] = field(default_factory=list)
    processed: int = 0
    spans: list[tuple[str, int, int]] = field(default_factory=list)


def check_playable(scenario: Scenario) -> None:
    """:class:`KgroupError` naming the first event the driver cannot play with real clients."""
    for i, event in enumerate(scenario.events):
        if event.kind not in SUPPORTED_EVENTS:
            raise KgroupError(
                f"{scenario.name}: events[{i}].kind: {event.kind!r} cannot be played with real clients; "
                f"use one of {', '.join(SUPPORTED_EVENTS)}"
            )


@dataclass
class _Process:
    consumer: str
    popen: subprocess.Popen[str]
    reader: threading.Thread
    ready: threading.Event
    stderr: IO[bytes]

    def failure(self) -> str | None:
        """Why the process ended by itself with an error (its last stderr line), or ``None``."""
        code = self.popen.poll()
        if code is None or code == 0:
            return None
        self.stderr.seek(0)
        lines = [line for line in self.stderr.read().decode("utf-8", "replace").splitlines() if line.strip()]
        return f"exit status {code}: {lines[-1] if lines else 'no message'}"

    def end(self, *, kill: bool) -> None:
        """Kill the process (or wait for it to exit), then close its pipes once its reports are read."""
        if kill:
            self.popen.kill()
        wait_or_kill(self.popen, _STOP_WAIT_S, kill_wait_s=5)
        self.reader.join(5)
        for stream in (self.popen.stdin, self.popen.stdout, self.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


class _Players:
    """The running worker processes and everything they reported."""

    def __init__(
        self, scenario: Scenario, bootstrap: str, group: str, topic_names: Mapping[str, str]
    ) -> None:
        self.scenario = scenario
        self.bootstrap, self.group = bootstrap, group
        self.topic_names = dict(topic_names)  # scenario topic -> real topic
        self.back = {real: name for name, real in topic_names.items()}
        self.specs: dict[str, ConsumerSpec] = {c.id: c for c in scenario.consumers}
        self.created: list[str] = [c.id for c in scenario.consumers]
        self.running: dict[str, _Process] = {}
        self.idle: dict[str, list[_Process]] = {}  # processes started ahead, waiting for "go"
        self.scaled: dict[int, list[str]] = {}  # id(scale event) -> the consumers it starts
        self.failures: list[str] = []
        self.lock = threading.Lock()
        self.lines: list[tuple[str, dict[str, Any]]] = []  # (consumer, report)
        self.t0_ms = 0

    # --- processes ------------------------------------------------------------------------------------

    def _worker_spec(self, spec: ConsumerSpec) -> dict[str, Any]:
        g, w = self.scenario.group, self.scenario.workload
        return {
            "bootstrap": self.bootstrap,
            "group": self.group,
            "id": spec.id,
            "topics": [self.topic_names[t] for t in spec.topics],
            "protocol": g.protocol,
            "server_assignor": g.server_assignor,
            "assignors": list(spec.assignors or g.assignors),
            "static": spec.static,
            "session_timeout_ms": g.session_timeout_ms,
            "heartbeat_interval_ms": g.heartbeat_interval_ms,
            "max_poll_interval_ms": g.max_poll_interval_ms,
            "enable_auto_commit": g.enable_auto_commit,
            "auto_commit_interval_ms": g.auto_commit_interval_ms,
            "auto_offset_reset": w.auto_offset_reset,
            "consume_per_consumer_per_s": w.consume_per_consumer_per_s,
            "max_poll_records": w.max_poll_records,
            "max_run_s": self.scenario.duration_ms / 1000 + _WORKER_SLACK_S,
        }

    def spawn(self, consumer: str) -> None:
        """Start an idle process for the next start of ``consumer`` (it waits for ``go``)."""
        src = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
        spec = json.dumps(self._worker_spec(self.specs[consumer]))
        errors = tempfile.TemporaryFile()  # noqa: SIM115 (closed in _Process.end)
        popen = subprocess.Popen(
            [sys.executable, "-m", "kgroup.validate.worker", spec],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            env=env,
        )
        assert popen.stdout is not None
        ready = threading.Event()
        reader = threading.Thread(target=self._read, args=(consumer, popen.stdout, ready), daemon=True)
        reader.start()
        self.idle.setdefault(consumer, []).append(_Process(consumer, popen, reader, ready, errors))

    def wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        for processes in self.idle.values():
            for process in processes:
                if not process.ready.wait(max(0.0, deadline - time.monotonic())):
                    raise KgroupError(
                        f"consumer {process.consumer}: its process did not start in {timeout_s:.0f} s"
                    )

    def start(self, consumer: str) -> None:
        if consumer in self.running:
            return
        spare = self.idle.get(consumer)
        if not spare:  # not foreseen (e.g. a start after an unplanned exit): a process started now
            self.spawn(consumer)
            spare = self.idle[consumer]
        process = spare.pop(0)
        self.running[consumer] = process
        self._note(consumer, "started")
        self._send(consumer, "go")

    def _read(self, consumer: str, stream: IO[str], ready: threading.Event) -> None:
        for line in stream:
            try:
                report = json.loads(line)
            except json.JSONDecodeError:
                continue
            if report.get("e") == "ready":
                ready.set()
                continue
            with self.lock:
                self.lines.append((consumer, report))

    def _note(self, consumer: str, kind: str) -> None:
        with self.lock:
            self.lines.append((consumer, {"t": int(time.time() * 1000), "e": kind}))

    def _send(self, consumer: str, command: str) -> None:
        process = self.running.get(consumer)
        if process is None or process.popen.stdin is None:
            return
        try:
            process.popen.stdin.write(command + "\n")
            process.popen.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def stop(self, consumer: str) -> None:
        process = self.running.get(consumer)
        if process is None:
            return
        self._check(process)
        self._send(consumer, "stop")
        process.end(kill=False)
        del self.running[consumer]
        self._note(consumer, "exited")

    def crash(self, consumer: str) -> None:
        process = self.running.pop(consumer, None)
        if process is None:
            return
        self._check(process)
        process.popen.send_signal(signal.SIGKILL)
        self._note(consumer, "killed")
        process.end(kill=False)

    def stall(self, consumer: str, duration_ms: int) -> None:
        self._send(consumer, f"stall {duration_ms}")

    def add(self, event: EventSpec) -> list[str]:
        """``scale +n``: new consumers named as the simulator names them (prefix + first free numbers)."""
        names = scaled_ids(event, self.specs)
        for name in names:
            self.specs[name] = ConsumerSpec(
                id=name,
                topics=tuple(event.topics or ()),
                static=event.static,
                rack=event.rack,
                assignors=event.assignors,
            )
            self.created.append(name)
        return names

    def _check(self, process: _Process) -> None:
        """Note a process that ended by itself with an error before the driver ended it."""
        failure = process.failure()
        if failure is not None:
            self.failures.append(f"consumer {process.consumer}: its process ended on its own ({failure})")

    def kill_all(self) -> None:
        for consumer in list(self.running):
            self.crash(consumer)
        for processes in self.idle.values():
            for process in processes:
                process.end(kill=True)
        self.idle.clear()

    # --- what they saw ----------------------------------------------------------------------------------

    def partition_name(self, real: str) -> str:
        topic, _, number = real.rpartition("-")
        return f"{self.back.get(topic, topic)}-{number}"

    def result(self, end_ms: int) -> RealRun:
        with self.lock:
            lines = sorted(self.lines, key=lambda item: item[1]["t"])
        owned: dict[str, dict[str, int]] = {}  # consumer -> partition -> since
        intervals: list[Interval] = []
        batches: list[Batch] = []
        deliveries: list[Delivery] = []
        processed = 0
        running: dict[str, int] = {}  # consumer -> started at
        spans: list[tuple[str, int, int]] = []
        log: list[dict[str, Any]] = []

        def release(consumer: str, parts: list[str], t: int) -> None:
            held = owned.setdefault(consumer, {})
            for p in parts:
                since = held.pop(p, None)
                if since is not None:
                    intervals.append((p, consumer, since, t))

        for consumer, report in lines:
            t = min(end_ms, max(0, report["t"] - self.t0_ms))
            kind = report["e"]
            parts = [self.partition_name(p) for p in report.get("p", ())]
            if kind == "assigned":
                held = owned.setdefault(consumer, {})
                for p in parts:
                    held.setdefault(p, t)
            elif kind in ("revoked", "lost"):
                release(consumer, parts, t)
            elif kind in ("killed", "exited"):
                release(consumer, list(owned.get(consumer, {})), t)
            elif kind == "batch":
                for p, first, last in report["b"]:
                    batches.append(Batch(t, self.partition_name(p), int(first), int(last)))
                continue
            elif kind in ("got", "done") and report["t"] - self.t0_ms > end_ms:
                continue  # after the run's end (the simulated run stops there)
            elif kind == "got":
                for p, first, last, count in report["r"]:
                    deliveries.append(
                        Delivery(t, consumer, self.partition_name(p), int(first), int(last), int(count))
                    )
                continue
            elif kind == "done":
                processed += int(report["n"])
                continue
            if kind == "started":
                running[consumer] = t
            elif kind in ("killed", "exited") and consumer in running:
                spans.append((consumer, running.pop(consumer), t))
            log.append(
                {"t_ms": t, "consumer": consumer, "kind": kind, **({"partitions": parts} if parts else {})}
            )
        for consumer, held in owned.items():
            for p, since in held.items():
                intervals.append((p, consumer, since, end_ms))
        spans.extend((consumer, since, end_ms) for consumer, since in running.items())
        partitions = [f"{topic}-{i}" for topic, count in self.scenario.topics for i in range(count)]
        return RealRun(
            partitions,
            sorted(intervals, key=lambda iv: (iv[2], iv[0])),
            batches,
            end_ms,
            log,
            deliveries,
            processed,
            sorted(spans, key=lambda span: (span[1], span[0])),
        )


class _Producer:
    """``produce_per_partition_per_s`` records into every partition, in 100 ms ticks, on a thread."""

    def __init__(self, bootstrap: str, partitions: list[tuple[str, int]], rate: int) -> None:
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "log_level": 2})
        self.partitions, self.rate = partitions, rate
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        start = time.monotonic()
        sent = 0
        while not self.done.is_set():
            due = int((time.monotonic() - start) * self.rate)
            for _ in range(max(0, due - sent)):
                for topic, partition in self.partitions:
                    try:
                        self.producer.produce(topic, b"x", partition=partition)
                    except BufferError:
                        self.producer.poll(0.05)
            sent = max(sent, due)
            self.producer.poll(0)
            self.done.wait(_PRODUCE_TICK_S)
        self.producer.flush(10)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.done.set()
        if self.thread.ident is not None:  # started
            self.thread.join(30)


def _timeline(scenario: Scenario) -> list[tuple[int, str, EventSpec]]:
    """The scenario's events as (at ms, action, event), restarts and rolling restarts unrolled."""
    out: list[tuple[int, str, EventSpec]] = []
    for event in scenario.events:
        if event.kind == "rolling_restart":
            names = (
                list(event.consumers)
                if event.consumers
                else [c.id for c in scenario.consumers if c.autostart]
            )
            for i, name in enumerate(names):
                at = event.at_ms + i * event.gap_ms
                one = EventSpec(
                    at_ms=at,
                    kind="restart",
                    consumer=name,
                    downtime_ms=event.downtime_ms,
                    graceful=event.graceful,
                )
                out.append((at, "down", one))
                out.append((at + event.downtime_ms, "up", one))
        elif event.kind == "restart":
            out.append((event.at_ms, "down", event))
            out.append((event.at_ms + event.downtime_ms, "up", event))
        else:
            out.append((event.at_ms, event.kind, event))
    return sorted(out, key=lambda item: item[0])


def play(
    scenario: Scenario,
    bootstrap: str,
    create_topic: Callable[[str, int], None],
    run_id: str,
    on_progress: Callable[[str], None] = lambda text: None,
) -> RealRun:
    """Play ``scenario`` with real consumers against the broker at ``bootstrap`` (group and topics named
    after ``run_id``, so runs never share them); returns what the consumers saw."""
    check_playable(scenario)
    players, producer = _set_up(scenario, bootstrap, create_topic, run_id)
    if scenario.group.share_protocol:
        warm_topic = f"kgroup-validate-warm-up-{run_id}"
        create_topic(warm_topic, 1)
        _warm_up_share(bootstrap, warm_topic, f"kgroup-validate-warm-up-share-{run_id}")
    timeline = _timeline(scenario)
    try:
        for spec in scenario.consumers:
            if spec.autostart:
                players.spawn(spec.id)
        for _at, action, event in timeline:
            if action in ("start", "up") and event.consumer:
                players.spawn(event.consumer)
            elif action == "scale" and event.count > 0:
                players.scaled[id(event)] = players.add(event)
                for name in players.scaled[id(event)]:
                    players.spawn(name)
        players.wait_ready(_READY_S)
        end_ms = _play_timeline(
            scenario,
            timeline,
            players,
            producer,
            players.start,
            lambda action, event: _act(players, action, event),
            _describe,
            on_progress,
        )
    finally:
        players.kill_all()
        producer.stop()
    if players.failures:
        raise KgroupError(f"{scenario.name}: " + "; ".join(players.failures[:3]))
    return players.result(min(end_ms, scenario.duration_ms))


def _set_up(
    scenario: Scenario, bootstrap: str, create_topic: Callable[[str, int], None], run_id: str
) -> tuple[_Players, _Producer]:
    """What every run of ``scenario`` begins with, whichever client plays it: its topics created
    (named after ``run_id``), its players (group named after ``run_id``), its producer (not started
    yet), and the broker warmed up (:func:`_warm_up`)."""
    topic_names = {name: f"{name}-{run_id}" for name, _ in scenario.topics}
    for name, count in scenario.topics:
        create_topic(topic_names[name], count)
    players = _Players(scenario, bootstrap, f"{scenario.group.group_id}-{run_id}", topic_names)
    producer = _Producer(
        bootstrap,
        [(topic_names[name], p) for name, count in scenario.topics for p in range(count)],
        scenario.workload.produce_per_partition_per_s,
    )
    _warm_up(bootstrap, topic_names[scenario.topics[0][0]], f"kgroup-validate-warm-up-{run_id}")
    return players, producer


def _play_timeline(
    scenario: Scenario,
    timeline: list[tuple[int, str, EventSpec]],
    players: _Players,
    producer: _Producer,
    start: Callable[[str], None],
    act: Callable[[str, EventSpec], None],
    describe: Callable[[str, EventSpec], str],
    on_progress: Callable[[str], None],
) -> int:
    """The scenario's clock, once every consumer is ready: time zero is now (``players.t0_ms``); the
    producer and the consumers that start at once (``start``) go, then each event of ``timeline`` is
    acted on (``act``) at its time, after a progress line (``describe``'s words and the time); then the
    rest of the scenario's duration is waited out. The run's end, in ms from time zero."""
    players.t0_ms = int(time.time() * 1000)
    begin = time.monotonic()
    producer.start()
    for spec in scenario.consumers:
        if spec.autostart:
            start(spec.id)
    for at_ms, action, event in timeline:
        wait = begin + at_ms / 1000 - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        on_progress(f"{scenario.name}: {describe(action, event)} at {at_ms / 1000:.1f} s")
        act(action, event)
    rest = begin + scenario.duration_ms / 1000 - time.monotonic()
    if rest > 0:
        time.sleep(rest)
    return int(time.time() * 1000) - players.t0_ms


def _describe(action: str, event: EventSpec) -> str:
    """What the driver is doing, for the progress line (``kill w1``, ``start 3 more``, …)."""
    if action == "down":
        action = "stop" if event.graceful else "kill"
    elif action == "up":
        action = "start"
    elif action == "crash":
        action = "kill"
    elif action == "slow_poll":
        return f"stall {event.consumer} for {event.duration_ms / 1000:g} s"
    elif action == "scale":
        return f"start {event.count} more" if event.count > 0 else f"stop the {-event.count} newest"
    return f"{action} {event.consumer or ''}".rstrip()


def _warm_up(bootstrap: str, topic: str, group: str) -> None:
    """Commit an offset for a throwaway group before the run: a fresh broker creates its
    ``__consumer_offsets`` at the first coordinator lookup (Apache Kafka: 50 partitions, seconds on a
    loaded machine), which must not fall inside the scenario's first rebalance."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 2})
    try:
        deadline = time.monotonic() + _READY_S
        while True:
            try:
                consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
                return
            except KafkaException as exc:
                if time.monotonic() > deadline:
                    raise KgroupError(
                        f"the broker at {bootstrap} does not take offset commits: {exc}"
                    ) from None
                time.sleep(0.2)
    finally:
        consumer.close()


def _warm_up_share(bootstrap: str, topic: str, group: str) -> None:
    """A throwaway share group reads a record of ``topic`` before the run: the broker's share-group
    state (Apache Kafka's ``__share_group_state`` topic, created at the first share group's first
    initialisation) must not be created inside the scenario's first seconds. A record is produced
    every half second until one is delivered (so ``share.auto.offset.reset=latest`` gets one too)."""
    from confluent_kafka import KafkaException, Producer, ShareConsumer

    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 2})
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 2})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + _READY_S
        while time.monotonic() < deadline:
            producer.produce(topic, b"warm-up", partition=0)
            producer.flush(5)
            try:
                if any(m.error() is None for m in consumer.poll(0.5)):
                    return
            except KafkaException:
                time.sleep(0.2)
        raise KgroupError(
            f"the broker at {bootstrap} delivered no record to a share group in {_READY_S:.0f} s"
        )
    finally:
        consumer.close()


def _act(players: _Players, action: str, event: EventSpec) -> None:
    consumer = event.consumer or ""
    if action == "start":
        players.start(consumer)
    elif action == "stop":
        players.stop(consumer)
    elif action == "crash":
        players.crash(consumer)
    elif action == "down":
        if event.graceful:
            players.stop(consumer)
        else:
            players.crash(consumer)
    elif action == "up":
        players.start(consumer)
    elif action == "slow_poll":
        players.stall(consumer, event.duration_ms)
    elif action == "scale":
        if event.count > 0:
            for name in players.scaled.get(id(event), []):
                players.start(name)
        else:
            newest = [c for c in reversed(players.created) if c in players.running][: -event.count]
            for name in newest:
                players.stop(name)
