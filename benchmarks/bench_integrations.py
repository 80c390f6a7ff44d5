"""kafka-python's own sticky assignors vs kgroup's kafka-python plug-in, side by side, on Kafka's large cases.

Each cell (case x phase x implementation) runs in its own child process, which builds the inputs a
kafka-python leader's coordinator hands its assignor — kafka-python's ``ClusterMetadata`` and
``JoinGroupResponseMember`` objects whose ``metadata`` kafka-python decoded from the bytes each member
sent (kafka-python's own user-data format for its assignor, Java's for kgroup's) — then times one
``assign(cluster, members)`` call (kgroup's plug-in: the median of 3 after a warm-up call) and reports the
peak resident memory of the call (the kernel's high-water mark, reset after the inputs were built).
The parent kills a cell that runs past ``--timeout`` seconds or grows past ``--memory-limit-mb`` and
reports it as "> N s" / "> N MiB".

The cases are ``kgroup bench assign``'s (``kgroup.bench.cases``, Kafka's AbstractStickyAssignorTest
large tests). One difference: Kafka's test forces rack-aware logic (``preferRackAwareLogic``), a switch
no client passes; here, as in a real group, the ``-rack`` cases run without it (every partition has
replicas on every rack, so Kafka's own rule does not use the rack-aware path).

    .venv/bin/python benchmarks/bench_integrations.py                     # all cases, sticky
    .venv/bin/python benchmarks/bench_integrations.py --case notimeout --assignor cooperative-sticky
    .venv/bin/python benchmarks/bench_integrations.py --timeout 60 --json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kgroup.bench.cases import CASES, Phase, build_request, build_topics, case_by_name
from kgroup.messages import ConsumerSubscription
from kgroup.model import Member, TopicMetadata
from kgroup.wire.consumer_protocol import encode_subscription

IMPLS = ("kafka-python", "kgroup-plugin")
ASSIGNORS = ("sticky", "cooperative-sticky")


# --- the child: build one cell's inputs, time the call ------------------------------------------


def _cluster(topics: dict[str, TopicMetadata]) -> Any:
    """kafka-python's ``ClusterMetadata``, its tables filled directly.

    ``update_metadata`` would build one response object per partition (a million here, minutes of
    set-up); the assignors read only ``partitions_for_topic`` and, for racks, each partition's replica
    ids and the brokers' racks, so partitions with the same replicas share one metadata object.
    """
    from kafka.cluster import ClusterMetadata

    from kgroup.bench.cases import BROKERS, REPLICATION_FACTOR, broker_rack

    cluster = ClusterMetadata()
    cluster._brokers = {b: SimpleNamespace(nodeId=b, rack=broker_rack(b)) for b in range(BROKERS)}
    shared = {
        start: SimpleNamespace(replica_nodes=[(start + j) % BROKERS for j in range(REPLICATION_FACTOR)])
        for start in range(BROKERS)
    }
    cluster._partitions = {
        name: {p: shared[(p + k) % BROKERS] for p in range(meta.partitions)}
        for k, (name, meta) in enumerate(topics.items())
    }
    return cluster


def _kafka_python_sent(member: Member, assignor: str) -> bytes:
    """What a kafka-python member with kafka-python's own assignor sends (its own user-data format)."""
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from kafka.structs import TopicPartition

    own = [TopicPartition(tp.topic, tp.partition) for tp in member.owned]
    if assignor == "sticky":
        owned = own if member.owned or member.generation >= 0 else None
        sent = StickyPartitionAssignor._metadata(member.topics, owned, member.generation)
    else:
        coop = CooperativeStickyAssignor()
        coop.member_assignment = own or None
        sent = coop.metadata(set(member.topics))
    return bytes(sent.encode())


def _kgroup_sent(member: Member, assignor: str) -> bytes:
    """What a kafka-python member with kgroup's plug-in sends: Java's ConsumerProtocolSubscription v3
    (owned partitions only under the cooperative protocol: an eager member revoked them before joining)."""
    return encode_subscription(
        ConsumerSubscription(
            topics=member.topics,
            user_data=member.user_data,
            owned_partitions=member.owned if assignor == "cooperative-sticky" else (),
            generation_id=member.generation,
            rack_id=member.rack_id,
        ),
        3,
    )


def _prepare(case: str, assignor: str, phase: str, impl: str, scale: float) -> tuple[Any, list[Any], Any]:
    from kafka.protocol.consumer.group import JoinGroupResponse
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

    from kgroup.assignors.registry import create_assignor

    shape = case_by_name(case).scaled(scale)
    topics = build_topics(shape)
    request = build_request(shape, assignor, Phase.INITIAL, topics=topics)
    if Phase(phase) is Phase.REASSIGN:
        initial = create_assignor(assignor).assign(request)
        request = build_request(shape, assignor, Phase.REASSIGN, topics=topics, initial=initial)
        del initial
    members = []
    for m in request.members:
        raw = _kafka_python_sent(m, assignor) if impl == "kafka-python" else _kgroup_sent(m, assignor)
        members.append(
            JoinGroupResponse.JoinGroupResponseMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                metadata=ConsumerProtocolSubscription.decode(raw),
            )
        )
    if impl == "kafka-python":
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
        from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

        factory: Any = StickyPartitionAssignor if assignor == "sticky" else CooperativeStickyAssignor
    else:
        from kgroup.integrations import kafka_python as plugin

        factory = plugin.Sticky if assignor == "sticky" else plugin.CooperativeSticky
    return _cluster(topics), members, factory


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _peak_mb(reset: bool) -> float:
    if reset:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(spec: dict[str, Any]) -> dict[str, Any]:
    cluster, members, factory = _prepare(
        spec["case"], spec["assignor"], spec["phase"], spec["impl"], spec["scale"]
    )
    if spec["impl"] != "kafka-python":  # a warm-up: imports and compiled kernels are not the call's
        factory().assign(cluster, members)
    runs = 1 if spec["impl"] == "kafka-python" else 3
    gc.collect()
    reset = _reset_peak()
    baseline = _rss_mb(os.getpid())
    times: list[float] = []
    for _ in range(runs):
        instance = factory()
        gc.collect()
        start = time.perf_counter()
        result = instance.assign(cluster, members)
        times.append(time.perf_counter() - start)
        del result, instance
    return {
        "seconds": statistics.median(times),
        # the call's own peak: the high-water mark above what the inputs already held
        "peak_mb": round(max(0.0, _peak_mb(reset) - baseline), 1),
        "inputs_mb": round(baseline, 1),
        "members": len(members),
    }


# --- the parent: one child per cell, bounded in time and memory --------------------------------


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run_cell(spec: dict[str, Any], timeout_s: float, limit_mb: float) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", json.dumps(spec)]
    started = time.monotonic()
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        outcome: dict[str, Any] | None = None
        peak = 0.0
        while proc.poll() is None:
            peak = max(peak, _rss_mb(proc.pid))
            elapsed = time.monotonic() - started
            if peak > limit_mb:
                outcome = {"error": f"> {limit_mb:.0f} MiB"}
            elif elapsed > timeout_s + spec.get("setup_allowance_s", 0):
                outcome = {"error": f"> {timeout_s:.0f} s"}
            if outcome is not None:
                proc.kill()
                proc.wait()
                return outcome
            time.sleep(0.1)
        out, err = proc.communicate()
    if proc.returncode != 0:
        return {"error": (err.strip().splitlines() or ["failed"])[-1][:200]}
    return dict(json.loads(out.strip().splitlines()[-1]))


def _fmt(cell: dict[str, Any]) -> tuple[str, str]:
    if "error" in cell:
        return cell["error"], "-"
    seconds = cell["seconds"]
    text = f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"
    return text, f"{cell['peak_mb']:.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--case", action="append", choices=list(CASES), help="a case (repeat; default all)")
    parser.add_argument("--phase", action="append", choices=[p.value for p in Phase], help="default both")
    parser.add_argument("--assignor", action="append", choices=ASSIGNORS, help="default sticky")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds one kafka-python call may take")
    parser.add_argument("--memory-limit-mb", type=float, default=4096.0, help="kill a cell above this RSS")
    parser.add_argument("--scale", type=float, default=1.0, help="shrink the cases (for a quick look)")
    parser.add_argument("--impl", action="append", choices=IMPLS, help="default both")
    parser.add_argument("--json", action="store_true", help="print the results as JSON only")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0
    cases = args.case or list(CASES)
    phases = args.phase or [p.value for p in Phase]
    assignors = args.assignor or ["sticky"]
    results: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    impls = args.impl or list(IMPLS)
    cells = [(a, c, p, i) for a in assignors for c in cases for p in phases for i in impls]
    for n, (assignor, case, phase, impl) in enumerate(cells, start=1):
        shape = case_by_name(case).scaled(args.scale)
        spec = {
            "case": case,
            "assignor": assignor,
            "phase": phase,
            "impl": impl,
            "scale": args.scale,
            # building a million-partition group (and, for reassign, its first assignment) takes a
            # while before the timed call starts; the timeout is the call's, so allow for it
            "setup_allowance_s": 30 + shape.total_partitions / 10_000,
        }
        if not args.json:
            print(f"[{n}/{len(cells)}] {assignor} {case} {phase} {impl} ...", file=sys.stderr, flush=True)
        results[(assignor, case, phase)][impl] = run_cell(spec, args.timeout, args.memory_limit_mb)
    load = os.getloadavg()
    if args.json:
        print(
            json.dumps(
                {
                    "load_average": load,
                    "cells": [
                        {"assignor": a, "case": c, "phase": p, **{i: cell.get(i) for i in IMPLS}}
                        for (a, c, p), cell in results.items()
                    ],
                },
                indent=2,
            )
        )
        return 0
    header = (
        "assignor",
        "case",
        "phase",
        "partitions x members",
        "kafka-python",
        "MiB",
        "kgroup plug-in",
        "MiB",
    )
    rows = [header]
    for (assignor, case, phase), cell in results.items():
        shape = case_by_name(case).scaled(args.scale)
        kp_time, kp_mb = _fmt(cell.get("kafka-python", {"error": "not run"}))
        kg_time, kg_mb = _fmt(cell.get("kgroup-plugin", {"error": "not run"}))
        size = f"{shape.total_partitions:,} x {shape.consumers:,}"
        rows.append((assignor, case, phase, size, kp_time, kp_mb, kg_time, kg_mb))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for row in rows:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))
    print(
        f"(peak RSS of the assign call; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on "
        f"{os.cpu_count()} cores; per-cell limits {args.timeout:.0f} s, {args.memory_limit_mb:.0f} MiB)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
