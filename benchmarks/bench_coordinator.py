"""The group coordinator under a big group: `kgroup serve` and Apache Kafka 4.4.0 side by side, one run.

A load generator (this process, asyncio, raw requests built with kgroup's codec over a few
connections — not thousands of client processes) plays every member of the groups:

* **KIP-848** (``ConsumerGroupHeartbeat`` v1): ``--members`` members (5,000) join one group, one
  after another (each join awaited: both brokers see the same order, so their answers can be
  compared), then heartbeat every ``heartbeat.interval.ms`` (5 s: 1,000 heartbeats/s), each at its
  own phase of the interval. A member does what Kafka's consumer does: it reconciles a new assignment
  at once and acknowledges it in an immediate heartbeat (the partitions it owns), a fenced or unknown
  member rejoins at epoch 0. Once every member is reconciled the load is **held** (``--hold-s``),
  then ``--churn`` members (100) join and as many leave, one after another; the figure is the time
  until every member has its target assignment: ``ConsumerGroupDescribe``, polled every 0.5 s from
  another connection, says when every member's assignment equals its target at the group's epoch,
  and the time is that of the last answer that gave a member its final epoch or assignment (each
  member keeps when it was last changed; the describe's own time, rounded up to its poll, is
  reported beside it).
* **classic** (``JoinGroup`` v9 / ``SyncGroup`` v5): ``--classic-members`` (1,000) members join at
  once, each on its own connection (a broker reads a connection's next request only after answering
  the one before: a parked JoinGroup holds its connection); the leader assigns with ``range``
  (kgroup's, exact to Kafka's); the figure is the time from the first JoinGroup to the last member's
  SyncGroup answer (the group is Stable).

Throughout, a **canary** (another client: a Metadata request and a heartbeat of a one-member group,
every 100 ms, on connections of their own) measures what a bystander waits. The broker's CPU
seconds are read from ``/proc/<pid>/stat``. The **differential check**: both brokers' target
assignments (member -> partitions) and epochs, described after the build-up and after the churn,
must be equal (the order is the same; kgroup is exact to Kafka 4.4.0).

    .venv/bin/python benchmarks/bench_coordinator.py [--members 5000] [--partitions 5000]
        [--churn 100] [--hold-s 20] [--classic-members 1000] [--peer kgroup --peer apache] [--json]

Needs Apache Kafka's jars (``make kafka``) for the ``apache`` peer. Linux only (it reads /proc).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import random
import resource
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgroup.bench.broker_peers import PeerUnavailable, RunningPeer, start_peer
from kgroup.client.connection import BrokerConnection
from kgroup.collector import relaxed_collector
from kgroup.wire.codec import build, request_class

TOPIC = "bench-coordinator"
GROUP = "bench-big"
CLASSIC_GROUP = "bench-classic"
CANARY_GROUP = "bench-canary"
CONNECTIONS = 32
REQUEST_TIMEOUT_S = 60.0
RECONCILE_TIMEOUT_S = 300.0
NONE = 0
#: COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
RETRIABLE = (14, 15, 16)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _peer_pid(peer: RunningPeer) -> int:
    proc = getattr(peer, "_proc", None)
    if proc is not None:
        return int(proc.pid)
    kafka = getattr(peer, "_kafka", None)
    pid = kafka.pid(1) if kafka is not None else None
    if pid is None:
        raise PeerUnavailable(f"{peer.name}: no process id to read its CPU from")
    return int(pid)


def _member_ids(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        base64.urlsafe_b64encode(uuid.UUID(int=rng.getrandbits(128)).bytes).decode().rstrip("=")
        for _ in range(count)
    ]


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _code(response: Any) -> int:
    return int(getattr(response.error_code, "value", response.error_code))


@dataclass
class Member:
    member_id: str
    epoch: int = 0
    owned: dict[uuid.UUID, tuple[int, ...]] = field(default_factory=dict)
    send_owned: bool = True  # the next heartbeat carries the owned partitions (a change to acknowledge)
    joined: bool = False
    leaving: bool = False
    next_at: float = 0.0
    changed_at: float = 0.0  # when an answer last gave it another epoch or assignment (monotonic)


class Pool:
    """A few connections to the broker, used in turn."""

    def __init__(self, conns: list[BrokerConnection]) -> None:
        self.conns = conns
        self._next = 0

    @classmethod
    def to(cls, host: str, port: int, size: int) -> Pool:
        return cls([BrokerConnection(host, port, client_id=f"bench-{i}") for i in range(size)])

    async def open(self) -> None:
        for conn in self.conns:
            await conn.open()

    def pick(self) -> BrokerConnection:
        self._next = (self._next + 1) % len(self.conns)
        return self.conns[self._next]

    def close(self) -> None:
        for conn in self.conns:
            conn.close()


HEARTBEAT = request_class(68, 1)
DESCRIBE = request_class(69, 0)
METADATA = request_class(3, 12)
JOIN = request_class(11, 9)
SYNC = request_class(14, 5)
FIND = request_class(10, 4)


class BigGroup:
    """The members of the KIP-848 group, their heartbeats and what they saw."""

    def __init__(self, pool: Pool, group: str, ids: list[str], interval_s: float) -> None:
        self.pool, self.group, self.interval_s = pool, group, interval_s
        self.members = {mid: Member(mid) for mid in ids}
        self.rtts_ms: list[float] = []
        self.errors: dict[int, int] = {}
        self.running = True
        self._loops: dict[str, asyncio.Task[None]] = {}

    def _request(self, m: Member, *, join: bool) -> Any:
        data: dict[str, Any] = {
            "group_id": self.group,
            "member_id": m.member_id,
            "member_epoch": -1 if m.leaving else m.epoch,
            "instance_id": None,
            "rack_id": None,
            "rebalance_timeout": 300_000 if join else -1,
            "subscribed_topic_names": [TOPIC] if join else None,
            "server_assignor": None,
            "topic_partitions": None,
        }
        if join or m.send_owned:
            data["topic_partitions"] = [
                {"topic_id": topic, "partitions": list(parts)} for topic, parts in sorted(m.owned.items())
            ]
        return build(HEARTBEAT, data)

    async def heartbeat(self, m: Member, *, join: bool = False) -> Any:
        request = self._request(m, join=join)
        sent_owned = m.send_owned or join
        started = time.perf_counter()
        response = await self.pool.pick().request(request, timeout_s=REQUEST_TIMEOUT_S)
        self.rtts_ms.append((time.perf_counter() - started) * 1000)
        code = _code(response)
        if code != NONE:
            self.errors[code] = self.errors.get(code, 0) + 1
            if code in (22, 25, 110):  # UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH: rejoin at epoch 0
                m.epoch, m.owned, m.joined, m.send_owned = 0, {}, False, True
            return response
        if m.leaving:
            m.joined = False
            return response
        m.joined = True
        if m.epoch != response.member_epoch:
            m.epoch = response.member_epoch
            m.changed_at = time.monotonic()
        if sent_owned:
            m.send_owned = False
        if response.assignment is not None:
            owned = {tp.topic_id: tuple(sorted(tp.partitions)) for tp in response.assignment.topic_partitions}
            if owned != m.owned:
                m.owned = owned
                m.send_owned = True
                m.changed_at = time.monotonic()
        self.interval_s = response.heartbeat_interval.total_seconds()
        return response

    async def join(self, m: Member, *, heartbeats: bool = True) -> None:
        """Join (retrying while the coordinator loads), acknowledge the assignment, then heartbeat
        on its own (``heartbeats``)."""
        for _ in range(100):  # the coordinator may still be loading its partition (bounded: 10 s)
            response = await self.heartbeat(m, join=True)
            if _code(response) not in RETRIABLE:
                break
            await asyncio.sleep(0.1)
        await self._settle(m)
        if heartbeats:
            self.start(m)

    async def _settle(self, m: Member) -> None:
        """Acknowledge what the member was just given, as a consumer does after reconciling."""
        for _ in range(4):
            if not (m.send_owned and m.joined):
                break
            await self.heartbeat(m)
        m.next_at = time.monotonic() + self.interval_s * random.random()

    async def leave(self, m: Member) -> None:
        m.leaving = True
        task = self._loops.pop(m.member_id, None)
        if task is not None:
            task.cancel()
            await asyncio.wait([task])
        await self.heartbeat(m)
        del self.members[m.member_id]

    def start(self, m: Member) -> None:
        """The member heartbeats on its own from now on."""
        self._loops[m.member_id] = asyncio.ensure_future(self._member_loop(m))

    async def _member_loop(self, m: Member) -> None:
        """One heartbeat at a time: at the member's interval, or at once when it has something to
        acknowledge (as a consumer does after reconciling).

        The interval counts from when the heartbeat was sent, as Kafka's consumer counts it
        (``AbstractHeartbeatRequestManager`` resets its heartbeat timer when it makes the request;
        an answer resets it only when it names another interval): a slow answer delays that member's
        next heartbeat only if it came after the interval. (Counted from the answer, every member
        answered in one stall would heartbeat in one burst every interval from then on.)"""
        while self.running and not m.leaving:
            delay = m.next_at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            sent_at, interval_s = time.monotonic(), self.interval_s
            try:
                await self.heartbeat(m, join=not m.joined)
            except Exception:  # counted; the member tries again at its next interval
                self.errors[-1] = self.errors.get(-1, 0) + 1
            if m.send_owned and m.joined:
                m.next_at = time.monotonic()
            elif self.interval_s != interval_s:
                m.next_at = time.monotonic() + self.interval_s
            else:
                m.next_at = sent_at + interval_s

    async def stop(self) -> None:
        self.running = False
        tasks = list(self._loops.values())
        self._loops.clear()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=REQUEST_TIMEOUT_S)


async def describe(conn: BrokerConnection, group: str) -> dict[str, Any]:
    response = await conn.request(
        build(DESCRIBE, {"group_ids": [group], "include_authorized_operations": False}),
        timeout_s=REQUEST_TIMEOUT_S,
    )
    g = response.groups[0]

    def parts(assignment: Any) -> dict[str, tuple[int, ...]]:
        return {
            str(tp.topic_id): tuple(sorted(tp.partitions))
            for tp in assignment.topic_partitions
            if tp.partitions
        }

    return {
        "error": _code(g),
        "state": g.group_state,
        "epoch": g.group_epoch,
        "assignment_epoch": g.assignment_epoch,
        "members": {
            m.member_id: {
                "epoch": m.member_epoch,
                "assigned": parts(m.assignment),
                "target": parts(m.target_assignment),
            }
            for m in g.members
        },
    }


def reconciled(described: dict[str, Any], expected_members: int) -> bool:
    members = described["members"]
    return (
        len(members) == expected_members
        and described["epoch"] == described["assignment_epoch"]
        and all(m["epoch"] == described["epoch"] and m["assigned"] == m["target"] for m in members.values())
    )


async def wait_reconciled(admin: BrokerConnection, members: int, doing: str) -> float:
    """Describe the group every 0.5 s until every member has its target (bounded); returns when the
    describe saw it (monotonic)."""
    deadline = time.monotonic() + RECONCILE_TIMEOUT_S
    while not reconciled(await describe(admin, GROUP), members):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{doing}: not done within {RECONCILE_TIMEOUT_S:g} s")
        _progress(doing)
        await asyncio.sleep(0.5)
    return time.monotonic()


def last_change(group: BigGroup, since: float) -> float:
    """Seconds from ``since`` until the last member was given its final epoch and assignment (each
    member's own answers, so not rounded up to the describe's 0.5 s poll): once the describe has seen
    every member at its target, the last answer that changed a member is when that came true."""
    return max([since, *(m.changed_at for m in group.members.values())]) - since


def comparable(described: dict[str, Any], topic_names: dict[str, str]) -> dict[str, Any]:
    """What the differential check compares: epochs and each member's target, topics by name."""

    def named(parts: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
        return {topic_names.get(t, t): p for t, p in sorted(parts.items())}

    return {
        "epoch": described["epoch"],
        "assignment_epoch": described["assignment_epoch"],
        "targets": {mid: named(m["target"]) for mid, m in sorted(described["members"].items())},
        "member_epochs": {mid: m["epoch"] for mid, m in sorted(described["members"].items())},
    }


class Canary:
    """A bystander: a Metadata request and a heartbeat of a one-member group every 100 ms."""

    def __init__(self, host: str, port: int) -> None:
        self.meta = BrokerConnection(host, port, client_id="canary-meta")
        self.beat = BrokerConnection(host, port, client_id="canary-beat")
        self.rtts_ms: list[float] = []
        self.worst_ms = 0.0
        self.running = True

    async def run(self) -> None:
        await self.meta.open()
        await self.beat.open()
        member = Member(_member_ids(1, 99)[0])
        group = BigGroup(Pool([self.beat]), CANARY_GROUP, [member.member_id], 5.0)
        member = group.members[member.member_id]
        await group.join(member, heartbeats=False)  # this loop heartbeats it
        while self.running:
            started = time.perf_counter()
            await self.meta.request(
                build(
                    METADATA,
                    {
                        "topics": [{"name": TOPIC, "topic_id": None}],
                        "allow_auto_topic_creation": False,
                        "include_topic_authorized_operations": False,
                    },
                ),
                timeout_s=REQUEST_TIMEOUT_S,
            )
            await group.heartbeat(member)
            took = (time.perf_counter() - started) * 1000
            self.rtts_ms.append(took)
            self.worst_ms = max(self.worst_ms, took)
            await asyncio.sleep(0.1)

    def close(self) -> None:
        self.meta.close()
        self.beat.close()


async def find_coordinator(conn: BrokerConnection, groups: list[str]) -> None:
    """Ask until the groups' coordinator is known and loaded (the first FindCoordinator makes
    ``__consumer_offsets`` on a fresh cluster and is answered COORDINATOR_NOT_AVAILABLE until it is ready)."""
    deadline = time.monotonic() + 60
    while True:
        response = await conn.request(build(FIND, {"key_type": 0, "coordinator_keys": groups}))
        codes = {_code(c) for c in response.coordinators}
        if codes == {NONE}:
            # and until the groups' coordinator has loaded (Apache Kafka answers NOT_COORDINATOR and
            # COORDINATOR_LOAD_IN_PROGRESS for a while after a fresh start)
            described = await conn.request(
                build(DESCRIBE, {"group_ids": groups, "include_authorized_operations": False})
            )
            codes = {_code(g) for g in described.groups}
            if not codes & set(RETRIABLE):
                return
        if time.monotonic() > deadline:
            raise PeerUnavailable(f"FindCoordinator still answers {sorted(codes)} after 60 s")
        await asyncio.sleep(0.5)


async def topic_names(conn: BrokerConnection) -> dict[str, str]:
    response = await conn.request(
        build(
            METADATA,
            {
                "topics": [{"name": TOPIC, "topic_id": None}],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
    )
    return {str(t.topic_id): t.name for t in response.topics}


def _progress(text: str) -> None:
    if sys.stderr.isatty():
        print(f"\r{text:<100}", end="", file=sys.stderr, flush=True)


async def consumer_protocol(
    peer: RunningPeer, pid: int, members: int, churn: int, hold_s: float, seed: int
) -> dict[str, Any]:
    host, port = peer.bootstrap_servers.split(",")[0].rsplit(":", 1)
    pool = Pool.to(host, int(port), CONNECTIONS)
    await pool.open()
    admin = BrokerConnection(host, int(port), client_id="bench-describe")
    await admin.open()
    await find_coordinator(admin, [GROUP, CLASSIC_GROUP, CANARY_GROUP])
    ids = _member_ids(members + churn, seed)
    group = BigGroup(pool, GROUP, ids[:members], 5.0)
    canary = Canary(host, int(port))
    canary_task = asyncio.ensure_future(canary.run())
    out: dict[str, Any] = {}
    try:
        cpu0, t0 = _cpu_seconds(pid), time.monotonic()
        for i, mid in enumerate(ids[:members]):
            m = group.members[mid]
            await group.join(m)
            if i % 100 == 0:
                _progress(f"{peer.name}: {i + 1}/{members} members joined")
        out["join_s"] = time.monotonic() - t0
        seen = await wait_reconciled(admin, members, f"{peer.name}: reconciling the {members} members")
        out["build_up_s"] = last_change(group, t0)
        out["build_up_described_s"] = seen - t0
        out["build_up_cpu_s"] = _cpu_seconds(pid) - cpu0
        # hold the group: heartbeats only
        group.rtts_ms.clear()
        canary.rtts_ms.clear()
        canary.worst_ms = 0.0
        cpu1, t1 = _cpu_seconds(pid), time.monotonic()
        beats_before = len(group.rtts_ms)
        while time.monotonic() - t1 < hold_s:
            _progress(f"{peer.name}: holding {members} members, {time.monotonic() - t1:.0f}/{hold_s:g} s")
            await asyncio.sleep(1.0)
        held = time.monotonic() - t1
        out["hold"] = {
            "seconds": held,
            "heartbeats_per_s": (len(group.rtts_ms) - beats_before) / held,
            "rtt_p50_ms": _pct(group.rtts_ms, 0.5),
            "rtt_p99_ms": _pct(group.rtts_ms, 0.99),
            "cpu_s": _cpu_seconds(pid) - cpu1,
            "canary_p50_ms": _pct(canary.rtts_ms, 0.5),
            "canary_worst_ms": canary.worst_ms,
        }
        # churn: as many join as leave, one after another
        group.rtts_ms.clear()
        canary.rtts_ms.clear()
        canary.worst_ms = 0.0
        cpu2, t2 = _cpu_seconds(pid), time.monotonic()
        leavers = ids[:churn]
        for mid, newcomer in zip(leavers, ids[members:], strict=True):
            group.members[newcomer] = m = Member(newcomer)
            await group.join(m)
            await group.leave(group.members[mid])
        churned = time.monotonic() - t2
        doing = f"{peer.name}: reconciling after {churn} joined and {churn} left"
        seen = await wait_reconciled(admin, members, doing)
        out["churn"] = {
            "ops_s": churned,
            "reconciled_s": last_change(group, t2),
            "reconciled_described_s": seen - t2,
            "rtt_p50_ms": _pct(group.rtts_ms, 0.5),
            "rtt_p99_ms": _pct(group.rtts_ms, 0.99),
            "cpu_s": _cpu_seconds(pid) - cpu2,
            "canary_worst_ms": canary.worst_ms,
        }
        out["errors"] = {str(k): v for k, v in sorted(group.errors.items())}
        await group.stop()
    finally:
        await group.stop()
        canary.running = False
        await asyncio.wait([canary_task], timeout=5)
        canary.close()
        admin.close()
        pool.close()
    return out


async def differential(peer: RunningPeer, members: int, churn: int, seed: int) -> dict[str, Any]:
    """The same joins, acknowledgements and leaves in the same order, one at a time, nothing else
    (a member's own heartbeats would interleave differently on each broker: Kafka's member table
    grows on every put, an update's too, so its order follows the interleaving); described after the
    build-up and after the churn."""
    host, port = peer.bootstrap_servers.split(",")[0].rsplit(":", 1)
    pool = Pool.to(host, int(port), 1)
    await pool.open()
    admin = BrokerConnection(host, int(port), client_id="bench-describe")
    await admin.open()
    try:
        names = await topic_names(admin)
        await find_coordinator(admin, [GROUP])
        ids = _member_ids(members + churn, seed)
        group = BigGroup(pool, GROUP, ids[:members], 5.0)
        for mid in ids[:members]:
            await group.join(group.members[mid], heartbeats=False)
        out = {"after_build_up": comparable(await describe(admin, GROUP), names)}
        for mid, newcomer in zip(ids[:churn], ids[members:], strict=True):
            group.members[newcomer] = m = Member(newcomer)
            await group.join(m, heartbeats=False)
            await group.leave(group.members[mid])
        out["after_churn"] = comparable(await describe(admin, GROUP), names)
        return out
    finally:
        admin.close()
        pool.close()


async def classic(peer: RunningPeer, args: argparse.Namespace, pid: int) -> dict[str, Any]:
    from kgroup.assignors.api import AssignmentRequest
    from kgroup.assignors.registry import create_assignor
    from kgroup.messages import ConsumerAssignment, ConsumerSubscription
    from kgroup.model import Member as AssignorMember
    from kgroup.model import TopicMetadata
    from kgroup.wire.consumer_protocol import decode_subscription, encode_assignment, encode_subscription

    host, port = peer.bootstrap_servers.split(",")[0].rsplit(":", 1)
    count = args.classic_members
    conns = [BrokerConnection(host, int(port), client_id=f"classic-{i}") for i in range(count)]
    for conn in conns:
        await conn.open()
    metadata = encode_subscription(ConsumerSubscription(topics=(TOPIC,)))
    partitions = args.partitions

    def join_request(member_id: str) -> Any:
        return build(
            JOIN,
            {
                "group_id": CLASSIC_GROUP,
                "session_timeout": 45_000,
                "rebalance_timeout": 300_000,
                "member_id": member_id,
                "group_instance_id": None,
                "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": metadata}],
                "reason": None,
            },
        )

    async def one(i: int) -> tuple[str, Any]:
        conn = conns[i]
        answer = await conn.request(join_request(""), timeout_s=RECONCILE_TIMEOUT_S)
        if _code(answer) == 79:  # MEMBER_ID_REQUIRED: join again with the id given
            answer = await conn.request(join_request(answer.member_id), timeout_s=RECONCILE_TIMEOUT_S)
        if _code(answer) != NONE:
            raise RuntimeError(f"{peer.name}: JoinGroup answered error {_code(answer)}")
        assignments: list[dict[str, Any]] = []
        if answer.leader == answer.member_id:
            assignor = create_assignor("range")
            members = [
                AssignorMember(m.member_id, decode_subscription(m.metadata).topics) for m in answer.members
            ]
            request = AssignmentRequest(members, {TOPIC: TopicMetadata(TOPIC, partitions)})
            result = assignor.assign(request)
            assignments = [
                {"member_id": mid, "assignment": encode_assignment(ConsumerAssignment(tuple(parts)))}
                for mid, parts in result.items()
            ]
        synced = await conn.request(
            build(
                SYNC,
                {
                    "group_id": CLASSIC_GROUP,
                    "generation_id": answer.generation_id,
                    "member_id": answer.member_id,
                    "group_instance_id": None,
                    "protocol_type": "consumer",
                    "protocol_name": "range",
                    "assignments": assignments,
                },
            ),
            timeout_s=RECONCILE_TIMEOUT_S,
        )
        if _code(synced) != NONE:
            raise RuntimeError(f"{peer.name}: SyncGroup answered error {_code(synced)}")
        return answer.member_id, synced

    canary = Canary(host, int(port))
    canary_task = asyncio.ensure_future(canary.run())
    try:
        await asyncio.sleep(0.5)
        canary.worst_ms = 0.0
        cpu0, t0 = _cpu_seconds(pid), time.monotonic()
        results = await asyncio.gather(*(one(i) for i in range(count)))
        stable_s = time.monotonic() - t0
        cpu = _cpu_seconds(pid) - cpu0
        owned = sum(len(_partitions_of(s.assignment)) for _, s in results)
        if owned != partitions:
            raise RuntimeError(f"{peer.name}: the classic group owns {owned} partitions, not {partitions}")
        return {"members": count, "stable_s": stable_s, "cpu_s": cpu, "canary_worst_ms": canary.worst_ms}
    finally:
        canary.running = False
        await asyncio.wait([canary_task], timeout=5)
        canary.close()
        for conn in conns:
            conn.close()


def _partitions_of(data: bytes) -> list[int]:
    from kgroup.wire.consumer_protocol import decode_assignment

    if not data:
        return []
    return [p for tp in decode_assignment(data).partitions for p in [tp.partition]]


def run_peer(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """The measured run: the broker on its defaults (but for max.connections: kgroup serve's default
    is 1,000, Kafka's is unlimited, and the classic group needs a connection per member)."""
    peer = start_peer(name, {"max.connections": str(args.classic_members + 100)})
    try:
        peer.create_topics({TOPIC: args.partitions}, timeout_s=120)
        pid = _peer_pid(peer)
        result: dict[str, Any] = {"peer": name, "notes": list(peer.notes)}
        result["consumer"] = asyncio.run(
            consumer_protocol(peer, pid, args.members, args.churn, args.hold_s, args.seed)
        )
        if args.classic_members:
            result["classic"] = asyncio.run(classic(peer, args, pid))
        return result
    finally:
        peer.close()
        _progress("")


#: the differential check's brokers compute a target assignment at every group epoch (the default
#: interval of 1 s batches joins by timing, which two brokers cannot share)
CHECK_SETTINGS = {"group.consumer.assignment.interval.ms": "0"}


def run_check(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """The differential run: the same joins and leaves in the same order, every epoch assigned."""
    peer = start_peer(name, CHECK_SETTINGS)
    try:
        peer.create_topics({TOPIC: args.partitions}, timeout_s=120)
        return asyncio.run(differential(peer, args.check_members, args.check_churn, args.seed))
    finally:
        peer.close()
        _progress("")


def _differences(a: dict[str, Any], b: dict[str, Any]) -> str:
    targets = sum(a["targets"].get(m) != b["targets"].get(m) for m in set(a["targets"]) | set(b["targets"]))
    epochs = sum(
        a["member_epochs"].get(m) != b["member_epochs"].get(m)
        for m in set(a["member_epochs"]) | set(b["member_epochs"])
    )
    return (
        f"group epoch {a['epoch']} vs {b['epoch']}, assignment epoch {a['assignment_epoch']} vs "
        f"{b['assignment_epoch']}, {targets} members' targets and {epochs} members' epochs differ"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=5000)
    parser.add_argument("--partitions", type=int, default=5000)
    parser.add_argument("--churn", type=int, default=100)
    parser.add_argument("--hold-s", type=float, default=20.0)
    parser.add_argument("--classic-members", type=int, default=1000)
    parser.add_argument(
        "--check-members", type=int, default=300, help="the differential run's group (0: none)"
    )
    parser.add_argument("--check-churn", type=int, default=20)
    parser.add_argument("--seed", type=int, default=848)
    parser.add_argument("--peer", action="append", choices=["kgroup", "apache"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    for name in ("members", "partitions", "check_members"):
        if getattr(args, name) < (0 if name == "check_members" else 1):
            parser.error(f"--{name.replace('_', '-')}: {getattr(args, name)}; give a positive count")
    if not 0 <= args.churn <= args.members:
        parser.error(f"--churn: {args.churn}; give 0 to --members ({args.members})")
    if not 0 <= args.check_churn <= args.check_members:
        parser.error(f"--check-churn: {args.check_churn}; give 0 to --check-members ({args.check_members})")
    if args.classic_members < 0 or args.hold_s < 0:
        parser.error("--classic-members and --hold-s: give 0 or more")
    peers = args.peer or ["kgroup", "apache"]
    need = args.classic_members + 2 * CONNECTIONS + 64
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need, hard), hard))
    load_before = os.getloadavg()
    # the load generator's own full collections (every second or so, 50-150 ms, over the 5,000
    # members' state) held back every answer then in flight and sent the heartbeats due meanwhile
    # in one burst: they were the p99 of either broker (docs/performance.md)
    with relaxed_collector():
        results = [run_peer(name, args) for name in peers]
        load_after = os.getloadavg()
        check: dict[str, Any] = {}
        if args.check_members and len(peers) == 2:
            a, b = (run_check(name, args) for name in peers)
            check = {
                phase: {"equal": a[phase] == b[phase], "differences": _differences(a[phase], b[phase])}
                for phase in ("after_build_up", "after_churn")
            }
    if args.json:
        print(
            json.dumps(
                {"load_before": load_before, "load_after": load_after, "results": results, "check": check}
            )
        )
        sys.exit(0 if all(c["equal"] for c in check.values()) else 1)
    print(f"load average before {load_before[0]:.1f}, after {load_after[0]:.1f} (2 cores)")
    for r in results:
        c = r["consumer"]
        print(f"\n{r['peer']}: " + "; ".join(r["notes"]))
        print(
            f"  KIP-848, {args.members} members on {args.partitions} partitions: joined one by one in "
            f"{c['join_s']:.1f} s, every member at its target at {c['build_up_s']:.2f} s "
            f"(described at {c['build_up_described_s']:.1f} s), "
            f"broker CPU {c['build_up_cpu_s']:.1f} s"
        )
        h = c["hold"]
        print(
            f"  held {h['seconds']:.0f} s at {h['heartbeats_per_s']:.0f} heartbeats/s: round trip p50 "
            f"{h['rtt_p50_ms']:.1f} ms, p99 {h['rtt_p99_ms']:.1f} ms; "
            f"broker CPU {h['cpu_s'] / h['seconds']:.2f} s/s; "
            f"canary p50 {h['canary_p50_ms']:.1f} ms, worst {h['canary_worst_ms']:.0f} ms"
        )
        ch = c["churn"]
        print(
            f"  {args.churn} joined and {args.churn} left (in {ch['ops_s']:.1f} s): "
            f"every member at its target after {ch['reconciled_s']:.2f} s "
            f"(described after {ch['reconciled_described_s']:.1f} s); round trip p50 "
            f"{ch['rtt_p50_ms']:.1f} ms, p99 {ch['rtt_p99_ms']:.1f} ms; broker CPU {ch['cpu_s']:.1f} s; "
            f"canary worst {ch['canary_worst_ms']:.0f} ms"
        )
        print(f"  errors answered: {c['errors'] or 'none'}")
        if "classic" in r:
            k = r["classic"]
            print(
                f"  classic, {k['members']} members joining at once: Stable after {k['stable_s']:.1f} s, "
                f"broker CPU {k['cpu_s']:.1f} s, canary worst {k['canary_worst_ms']:.0f} ms"
            )
    for phase, outcome in check.items():
        verdict = "the same" if outcome["equal"] else "DIFFERENT: " + outcome["differences"]
        print(
            f"\ndifferential ({args.check_members} members, {args.check_churn} in and out, "
            f"every epoch assigned), {phase.replace('_', ' ')}: {verdict}"
        )
    if not all(c["equal"] for c in check.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
