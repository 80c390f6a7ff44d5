"""A group ETL chain: `kgroup serve` and Apache Kafka 4.4.0 side by side, one run (benchmark, not a test).

The shape of a Go client's own integration test (issue 37): ``--records`` (100,000) keyed records are
produced to a source topic, then run through a chain of consumer groups, one stage after another.
Each stage is one group reading the previous stage's topic and writing the next: its members consume
a batch, produce every record onward (same key and value; ``partitioner=murmur2_random``, Kafka's
default), wait until the batch is acknowledged and commit their positions (synchronously: at least
once). The group churns the way the Go test's does: ``--members`` (3) members run at once, and each
leaves after it has handled its share (``records / (2 × members)``) and a new one takes its place,
so every stage goes through several rebalances while records flow. A stage is done when every source
record has been handled and committed (counted once per offset: a record handled twice, after a
rebalance, counts once).

The stages (``--stages``, default all), librdkafka (confluent-kafka) members:

* ``range`` — classic protocol, ``partition.assignment.strategy=range`` (eager);
* ``cooperative-sticky`` — classic protocol, incremental cooperative rebalancing;
* ``static`` — classic ``range`` with ``group.instance.id`` (a replacement member takes the leaver's
  instance id, as a restarted static member does: no rebalance, no LeaveGroup);
* ``consumer-range`` / ``consumer-uniform`` — KIP-848 (``group.protocol=consumer``) with the server
  assignor ``range`` / ``uniform``;
* ``java-<stage>`` — any of the above with Kafka's own Java clients (4.4.0's ``KafkaConsumer`` and
  ``KafkaProducer``, idempotent, the default partitioner) in one JVM per stage
  (``kgroup.bench.java_etl``, ``EtlStage.java``): the JVM starts before the clock does, the stage is
  timed inside it.

Both brokers run for the whole benchmark (each in its own process: ``kgroup serve`` and a KRaft JVM,
Kafka's default group delay of 3 s on both); every run creates new topics and groups on each, the
peers taking turns. Printed: per stage and in total, the median over ``--runs`` of each peer, their
ratio, every run's figure, the broker's CPU seconds over the stages (``cpu``; ``/proc``, so Linux
only) and the load average before and after.

    .venv/bin/python benchmarks/bench_etl_chain.py [--records 100000] [--partitions 20] [--members 3]
        [--runs 3] [--stages range,cooperative-sticky,static,consumer-range] [--peer kgroup --peer apache]
        [--client-log DIR] [--json]

``--client-log DIR`` keeps each stage's client log (``PEER-runN-STAGE.log``: librdkafka's
``debug=cgrp,protocol``, the Java clients' requests and responses at DEBUG), which
``benchmarks/etl_client_log.py`` reads: where the stage's time went (docs/performance.md).

``--franz-go KGO_TEST`` also runs, in each run on each peer, the Go test itself: franz-go's
``TestGroupETL`` from its compiled test binary (``go test -c`` in franz-go's ``pkg/kgo``; a Go
toolchain and franz-go's source, neither a dependency of kgroup), ``KGO_TEST_RECORDS=--records``,
replication factor 1; its sub-tests (range, cooperative-sticky, KIP-848 and static groups, each a
chain of three groups, four at a time) are printed as ``go/<name>``.

Needs Apache Kafka's jars (``make kafka``) for the ``apache`` peer.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgroup.bench.broker_peers import PeerUnavailable, RunningPeer, start_peer

LIBRDKAFKA_STAGES = ("range", "cooperative-sticky", "static", "consumer-range", "consumer-uniform")
#: the same stages with Kafka's Java clients (one JVM per stage: kgroup.bench.java_etl)
JAVA_STAGES = tuple(f"java-{kind}" for kind in LIBRDKAFKA_STAGES)
STAGES = LIBRDKAFKA_STAGES + JAVA_STAGES
DEFAULT_STAGES = ("range", "cooperative-sticky", "static", "consumer-range")
STAGE_TIMEOUT_S = 300.0
BATCH = 500
POLL_S = 0.1
VALUE = b"v" * 64


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _consumer_config(kind: str, bootstrap: str, group: str, slot: int, debug: bool = False) -> dict[str, Any]:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    if debug:  # --client-log: every request and response, the group's steps (librdkafka's own log)
        config["debug"] = "cgrp,protocol"
        config["client.id"] = f"{group}-{slot}"
    if kind.startswith("consumer-"):
        config["group.protocol"] = "consumer"
        config["group.remote.assignor"] = kind.removeprefix("consumer-")
    elif kind == "cooperative-sticky":
        config["partition.assignment.strategy"] = "cooperative-sticky"
    else:
        config["partition.assignment.strategy"] = "range"
        if kind == "static":
            config["group.instance.id"] = f"{group}-member-{slot}"
    return config


@dataclass
class _Stage:
    """One stage's shared state: what its members have handled and committed."""

    records: int
    debug: bool = False
    done: set[tuple[int, int]] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    finished: threading.Event = field(default_factory=threading.Event)
    members: int = 0
    failed_commits: int = 0
    errors: list[str] = field(default_factory=list)

    def committed(self, batch: list[tuple[int, int]]) -> None:
        with self.lock:
            self.done.update(batch)
            if len(self.done) >= self.records:
                self.finished.set()


def _member(kind: str, bootstrap: str, group: str, slot: int, source: str, sink: str, quota: int,
            stage: _Stage) -> None:
    """One member's life: consume, produce onward, flush, commit — until its share is handled."""
    from confluent_kafka import Consumer, KafkaException, Producer

    consumer = Consumer(_consumer_config(kind, bootstrap, group, slot, stage.debug))
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random",
                         "linger.ms": 5, "enable.idempotence": True})
    handled = 0
    try:
        consumer.subscribe([source])
        while handled < quota and not stage.finished.is_set():
            messages = consumer.consume(BATCH, POLL_S)
            batch: list[tuple[int, int]] = []
            for message in messages:
                partition, offset = message.partition(), message.offset()
                if message.error() is not None or partition is None or offset is None:
                    continue
                producer.produce(sink, key=message.key(), value=message.value())
                batch.append((partition, offset))
            if not batch:
                continue
            if producer.flush(60.0) != 0:
                stage.errors.append(f"{group}: produce not acknowledged within 60 s")
                return
            try:
                consumer.commit(asynchronous=False)
            except KafkaException:  # a rebalance meanwhile: the new owner handles these again
                with stage.lock:
                    stage.failed_commits += 1
                continue
            handled += len(batch)
            stage.committed(batch)
    except Exception as exc:  # reported with the figures (the stage then ends)
        stage.errors.append(f"{group} member {slot}: {type(exc).__name__}: {exc}")
    finally:
        consumer.close()


def _run_stage(kind: str, bootstrap: str, group: str, source: str, sink: str, records: int,
               members: int, client_log: Path | None = None) -> tuple[float, _Stage]:
    """Run one stage to its end; its wall time (first member started to every record committed).

    ``client_log``: librdkafka's debug log of the members (``cgrp,protocol``: each request sent and
    response received, timestamped) goes there — librdkafka writes it to the process's stderr, which
    is sent to that file for the stage's time."""
    if client_log is not None:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            with client_log.open("ab") as log:
                os.dup2(log.fileno(), 2)
            return _run_members(kind, bootstrap, group, source, sink, records, members, debug=True)
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
    return _run_members(kind, bootstrap, group, source, sink, records, members, debug=False)


def _run_members(kind: str, bootstrap: str, group: str, source: str, sink: str, records: int,
                 members: int, debug: bool) -> tuple[float, _Stage]:
    stage = _Stage(records, debug=debug)
    quota = max(1, records // (2 * members))
    threads: list[threading.Thread | None] = [None] * members
    start = time.monotonic()
    deadline = start + STAGE_TIMEOUT_S
    while not stage.finished.is_set() and time.monotonic() < deadline and not stage.errors:
        for slot, thread in enumerate(threads):
            if thread is None or not thread.is_alive():
                if thread is not None:
                    thread.join()
                stage.members += 1
                threads[slot] = threading.Thread(
                    target=_member, args=(kind, bootstrap, group, slot, source, sink, quota, stage),
                    name=f"etl-{group}-{slot}", daemon=True)
                threads[slot].start()  # type: ignore[union-attr]
        stage.finished.wait(0.05)
    elapsed = time.monotonic() - start
    for thread in threads:
        if thread is not None:
            thread.join(timeout=60.0)
    if not stage.finished.is_set():
        stage.errors.append(f"{group}: {len(stage.done)} of {records} records committed "
                            f"within {STAGE_TIMEOUT_S:g} s")
    return elapsed, stage


def _produce(bootstrap: str, topic: str, records: int) -> float:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random",
                         "linger.ms": 5, "enable.idempotence": True})
    start = time.monotonic()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, key=str(i).encode(), value=VALUE)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 10_000 == 0:
            producer.poll(0)
    left = producer.flush(120.0)
    if left:
        raise PeerUnavailable(f"{left} records not acknowledged within 120 s")
    return time.monotonic() - start


def _cpu_seconds(peer: RunningPeer) -> float:
    """The broker process's CPU seconds so far (user + system, from /proc); NaN where unknown."""
    proc = getattr(peer, "_proc", None)
    kafka = getattr(peer, "_kafka", None)
    pid = proc.pid if proc is not None else (kafka.pid(1) if kafka is not None else None)
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except (OSError, TypeError):
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_chain(peer: RunningPeer, args: argparse.Namespace, stages: list[str],
              run: int = 0) -> dict[str, float]:
    """One run of the chain on ``peer``: seconds per stage (and ``produce``, ``total``, and the
    broker's CPU seconds over the stages, ``cpu``)."""
    tag = uuid.uuid4().hex[:8]
    topics = [f"etl-{tag}-{i}" for i in range(len(stages) + 1)]
    peer.create_topics(dict.fromkeys(topics, args.partitions), timeout_s=60.0)
    times: dict[str, float] = {"produce": _produce(peer.bootstrap_servers, topics[0], args.records)}
    _progress(f"  {peer.name}: produce {times['produce']:.2f} s")
    cpu_before = _cpu_seconds(peer)
    for index, kind in enumerate(stages):
        group = f"etl-{tag}-{kind}"
        client_log = (Path(args.client_log) / f"{peer.name}-run{run + 1}-{kind}.log"
                      if args.client_log else None)
        if kind in JAVA_STAGES:
            from kgroup.bench.java_etl import run_java_stage
            from kgroup.model import KgroupError

            try:
                java = run_java_stage(kind.removeprefix("java-"), peer.bootstrap_servers, group,
                                      topics[index], topics[index + 1], args.records, args.members,
                                      STAGE_TIMEOUT_S, client_log)
            except KgroupError as exc:
                raise PeerUnavailable(str(exc)) from None
            elapsed, members, refused = java.elapsed_s, java.members, java.refused_commits
        else:
            elapsed, stage = _run_stage(kind, peer.bootstrap_servers, group, topics[index],
                                        topics[index + 1], args.records, args.members, client_log)
            if stage.errors:
                raise PeerUnavailable(f"stage {kind}: {stage.errors[0]}")
            members, refused = stage.members, stage.failed_commits
        times[kind] = elapsed
        _progress(f"  {peer.name}: {kind} {elapsed:.2f} s ({members} members, {refused} commits refused)")
    times["total"] = sum(times[kind] for kind in stages)
    times["cpu"] = _cpu_seconds(peer) - cpu_before
    return times


_GO_SUBTEST = re.compile(r"--- (PASS|FAIL|SKIP): TestGroupETL(?:/(\S+))? \(([0-9.]+)s\)")


def run_franz_go(peer: RunningPeer, args: argparse.Namespace) -> dict[str, float]:
    """One run of franz-go's own ``TestGroupETL`` (its compiled test binary, ``--franz-go``) against
    ``peer``: seconds per sub-test (``go/<name>``) and in all (``go/total``)."""
    binary = Path(args.franz_go).resolve()
    env = dict(os.environ, KGO_SEEDS=peer.bootstrap_servers, KGO_TEST_RF="1",
               KGO_TEST_RECORDS=str(args.records), KGO_LOG_LEVEL="none")
    cpu_before = _cpu_seconds(peer)
    done = subprocess.run([str(binary), "-test.run", "^TestGroupETL$", "-test.v", "-test.timeout", "600s"],
                          cwd=args.franz_go_dir or binary.parent, env=env, capture_output=True, text=True,
                          timeout=700, check=False)
    times: dict[str, float] = {}
    for status, name, seconds in _GO_SUBTEST.findall(done.stdout):
        if status == "FAIL" or done.returncode != 0:
            tail = " ".join(done.stdout.strip().splitlines()[-3:])
            raise PeerUnavailable(f"franz-go TestGroupETL failed (exit {done.returncode}): {tail}")
        if status == "PASS":
            times[f"go/{name or 'total'}"] = float(seconds)
    if "go/total" not in times:
        raise PeerUnavailable(f"franz-go TestGroupETL printed no result (exit {done.returncode})")
    times["go/cpu"] = _cpu_seconds(peer) - cpu_before
    _progress(f"  {peer.name}: franz-go TestGroupETL {times['go/total']:.2f} s")
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--members", type=int, default=3, help="members of each group at once")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--stages", default=",".join(DEFAULT_STAGES),
                        help=f"comma-separated, of {', '.join(STAGES)}")
    parser.add_argument("--peer", action="append", choices=["kgroup", "apache"])
    parser.add_argument("--franz-go", metavar="KGO_TEST",
                        help="also run franz-go's TestGroupETL: its compiled test binary "
                             "(cd franz-go/pkg/kgo && go test -c -o kgo.test .)")
    parser.add_argument("--franz-go-dir", metavar="DIR",
                        help="franz-go's pkg/kgo directory (the test's working directory; default: the "
                             "binary's)")
    parser.add_argument("--client-log", metavar="DIR",
                        help="keep each stage's client log in DIR (PEER-runN-STAGE.log): every request and "
                             "response with its time (librdkafka debug=cgrp,protocol; Java NetworkClient "
                             "and the consumer's internals at DEBUG) — it slows the clients a little")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    stages = [s for s in args.stages.split(",") if s]
    unknown = [s for s in stages if s not in STAGES]
    if unknown or not (stages or args.franz_go):
        print(f"--stages: unknown stage {unknown[0] if unknown else '(none)'}; choose from "
              f"{', '.join(STAGES)}", file=sys.stderr)
        return 2
    for name, value in (("--records", args.records), ("--partitions", args.partitions),
                        ("--members", args.members), ("--runs", args.runs)):
        if value < 1:
            print(f"{name}: must be at least 1, not {value}", file=sys.stderr)
            return 2
    if args.franz_go and not os.access(args.franz_go, os.X_OK):
        print(f"--franz-go: {args.franz_go} is not an executable file; build it with "
              f"`go test -c -o kgo.test .` in franz-go's pkg/kgo", file=sys.stderr)
        return 2
    if args.client_log:
        Path(args.client_log).mkdir(parents=True, exist_ok=True)
    names = args.peer or ["kgroup", "apache"]
    load_before = os.getloadavg()
    peers: list[RunningPeer] = []
    try:
        for name in names:
            _progress(f"starting {name} …")
            try:
                peers.append(start_peer(name))
            except PeerUnavailable as exc:
                print(f"{name}: unavailable: {exc.reason}", file=sys.stderr)
                return 1
        results: dict[str, list[dict[str, float]]] = {p.name: [] for p in peers}
        for run in range(args.runs):
            order = peers if run % 2 == 0 else peers[::-1]
            for peer in order:
                _progress(f"run {run + 1}/{args.runs} on {peer.name} (load {os.getloadavg()[0]:.2f})")
                try:
                    times = run_chain(peer, args, stages, run) if stages else {}
                    if args.franz_go:
                        times.update(run_franz_go(peer, args))
                    results[peer.name].append(times)
                except PeerUnavailable as exc:
                    print(f"{peer.name}: {exc.reason}", file=sys.stderr)
                    return 1
        notes = {p.name: list(p.notes) for p in peers}
    finally:
        for peer in peers:
            peer.close()
    load_after = os.getloadavg()
    _report(args, stages, results, notes, load_before, load_after)
    return 0


def _report(args: argparse.Namespace, stages: list[str], results: dict[str, list[dict[str, float]]],
            notes: dict[str, list[str]], load_before: tuple[float, float, float],
            load_after: tuple[float, float, float]) -> None:
    from confluent_kafka import libversion

    first = next(iter(results.values()))[0]
    rows = [row for row in ("produce", *stages, "total", "cpu") if row in first]
    rows += sorted(row for row in first if row.startswith("go/") and row not in ("go/total", "go/cpu"))
    rows += [row for row in ("go/total", "go/cpu") if row in first]
    if any(set(r) != set(first) for runs in results.values() for r in runs):  # a sub-test skipped somewhere
        rows = [row for row in rows if all(row in r for runs in results.values() for r in runs)]
    medians = {name: {row: statistics.median(r[row] for r in runs) for row in rows}
               for name, runs in results.items()}
    if args.json:
        print(json.dumps({"records": args.records, "partitions": args.partitions, "members": args.members,
                          "runs": results, "medians": medians, "notes": notes,
                          "librdkafka": libversion()[0], "load_before": load_before,
                          "load_after": load_after}))
        return
    names = list(results)
    fmt: Callable[[float], str] = lambda s: f"{s:8.2f}"  # noqa: E731
    print(f"group ETL chain: {args.records:,} records, {args.partitions} partitions, {args.members} members "
          f"per group at once, librdkafka {libversion()[0]}, {args.runs} run(s), medians in seconds")
    print(f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    header = f"{'stage':<30}" + "".join(f"{name:>10}" for name in names)
    if len(names) == 2:
        header += f"{names[0] + '/' + names[1]:>16}"
    print(header + "   runs")
    for row in rows:
        line = f"{row:<30}" + "".join(f"{fmt(medians[name][row]):>10}" for name in names)
        if len(names) == 2:
            a, b = (medians[name][row] for name in names)
            line += f"{(a / b if b else float('inf')):>15.2f}×"
        line += "   " + "; ".join(
            f"{name} " + " ".join(f"{r[row]:.1f}" for r in results[name]) for name in names)
        print(line)
    for name, lines in notes.items():
        for line in lines:
            print(f"{name}: {line}")


if __name__ == "__main__":
    sys.exit(main())
