"""KIP-848 server assignors at KIP-848's published scale, and the share groups' ``simple`` assignor at
a share group's maximum size: kgroup against Apache Kafka's own classes.

5,000 members × 10 partitions per member over 1,000 topics, and 10,000 members (the same 1,000 topics,
so 100 partitions each). For each case both sides get the same group (built as the coordinator builds
it); kgroup is timed around ``assign`` in this process, Kafka inside the oracle's JVM
(:meth:`KafkaOracle.server_assign` with ``repeat``) around ``assign()`` (after warm-up calls), and the
medians are printed, with a second kgroup figure: ``assign`` and then every member's assignment read
as the coordinator reads it (an answer built lazily pays for its members there). Each kgroup call
is on a fresh assignor instance; where one member joins, that instance first assigns the group as it
was (untimed: the coordinator's previous rebalance, with the same map objects, which the assignor may
remember — ``kgroup.group.assignors.fast.reuse``), and a third figure ("unseen") times the call on an
instance that has seen nothing. Each case also checks that the answers are equal.
Share groups (``--share-members``, default 200: ``group.share.max.size``) get ``SimpleAssignor`` on 50
partitions (members outnumber them: four share each) and on 2,000, new and with one member joining.
Benchmarks are not tests: nothing here asserts a time. ::

    python benchmarks/bench_server_assignors.py [--members 5000 10000] [--share-members 200]
                                                [--repeat 5] [--only TEXT] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from kgroup.group.assignors import (
    GroupAssignment,
    GroupSpec,
    InvertedTarget,
    ServerAssignor,
    SimpleAssignor,
    SubscriptionType,
    TopicDescriber,
    TopicId,
    create_server_assignor,
    subscription_type,
)
from kgroup.testing.apache_kafka import KafkaOracle, ServerMember, kgroup_group_spec

TOPICS = 1000
PARTITIONS_PER_MEMBER = 10
JOINER = "joiner"


@dataclass
class Case:
    name: str
    assignor: str
    members: int
    build: Callable[[KafkaOracle], tuple[dict[TopicId, int], list[ServerMember]]]


def _topics(members: int, rng: random.Random) -> dict[TopicId, int]:
    per_topic = members * PARTITIONS_PER_MEMBER // TOPICS
    return {TopicId.from_int(rng.getrandbits(128)): per_topic for _ in range(TOPICS)}


def _ids(count: int, rng: random.Random) -> list[str]:
    # client-chosen member ids of the consumer protocol are Uuid strings (base64 here)
    return [str(TopicId.from_int(rng.getrandbits(128))) for _ in range(count)]


def _homogeneous(members: int, seed: int) -> tuple[dict[TopicId, int], list[ServerMember]]:
    rng = random.Random(seed)
    topics = _topics(members, rng)
    subscription = tuple(topics)
    return topics, [ServerMember(m, subscription) for m in _ids(members, rng)]


def _heterogeneous(members: int, seed: int) -> tuple[dict[TopicId, int], list[ServerMember]]:
    # two overlapping halves: members subscribe to topics 0-599 or 400-999
    rng = random.Random(seed)
    topics = _topics(members, rng)
    ordered = list(topics)
    low, high = tuple(ordered[:600]), tuple(ordered[400:])
    return topics, [ServerMember(m, low if i % 2 else high) for i, m in enumerate(_ids(members, rng))]


def _fresh(
    kind: Callable[[int, int], tuple[dict[TopicId, int], list[ServerMember]]], members: int
) -> Callable[[KafkaOracle], tuple[dict[TopicId, int], list[ServerMember]]]:
    return lambda oracle: kind(members, 1)


def _one_joins(
    assignor: str, members: int
) -> Callable[[KafkaOracle], tuple[dict[TopicId, int], list[ServerMember]]]:
    """A stable homogeneous group (Kafka's target as the current assignment) that one member joins."""

    def build(oracle: KafkaOracle) -> tuple[dict[TopicId, int], list[ServerMember]]:
        topics, rows = _homogeneous(members, 2)
        previous = oracle.server_assign(assignor, topics, rows, SubscriptionType.HOMOGENEOUS)
        subscription = rows[0].topics
        stable = [
            ServerMember(r.member_id, subscription, previous.assignment.get(r.member_id, ())) for r in rows
        ]
        return topics, [*stable, ServerMember(JOINER, subscription)]

    return build


def _share(
    members: int, topics: int, per_topic: int, seed: int
) -> tuple[dict[TopicId, int], list[ServerMember]]:
    rng = random.Random(seed)
    counts = {TopicId.from_int(rng.getrandbits(128)): per_topic for _ in range(topics)}
    subscription = tuple(counts)
    return counts, [ServerMember(m, subscription) for m in _ids(members, rng)]


def _share_case(
    members: int, topics: int, per_topic: int, joins: bool
) -> Callable[[KafkaOracle], tuple[dict[TopicId, int], list[ServerMember]]]:
    def build(oracle: KafkaOracle) -> tuple[dict[TopicId, int], list[ServerMember]]:
        counts, rows = _share(members - 1 if joins else members, topics, per_topic, 3)
        if not joins:
            return counts, rows
        previous = oracle.server_assign("simple", counts, rows, SubscriptionType.HOMOGENEOUS)
        subscription = rows[0].topics
        stable = [
            ServerMember(r.member_id, subscription, previous.assignment.get(r.member_id, ())) for r in rows
        ]
        return counts, [*stable, ServerMember(JOINER, subscription)]

    return build


def share_cases(sizes: list[int]) -> list[Case]:
    found: list[Case] = []
    for members in sizes:
        for topics, per_topic in ((10, 5), (10, 200)):
            partitions = topics * per_topic
            found += [
                Case(
                    f"simple, new group, {partitions} partitions",
                    "simple",
                    members,
                    _share_case(members, topics, per_topic, False),
                ),
                Case(
                    f"simple, one joins, {partitions} partitions",
                    "simple",
                    members,
                    _share_case(members, topics, per_topic, True),
                ),
            ]
    return found


def _assignor(name: str) -> ServerAssignor:
    return SimpleAssignor() if name == "simple" else create_server_assignor(name)


def cases(sizes: list[int]) -> list[Case]:
    found: list[Case] = []
    for members in sizes:
        found += [
            Case("uniform homogeneous, new group", "uniform", members, _fresh(_homogeneous, members)),
            Case("uniform homogeneous, one member joins", "uniform", members, _one_joins("uniform", members)),
            Case("uniform heterogeneous, new group", "uniform", members, _fresh(_heterogeneous, members)),
            Case("range homogeneous", "range", members, _fresh(_homogeneous, members)),
            Case("range heterogeneous", "range", members, _fresh(_heterogeneous, members)),
        ]
    return found


def run(case: Case, oracle: KafkaOracle, repeat: int, warmup: int) -> dict[str, object]:
    topics, rows = case.build(oracle)
    kind = subscription_type([r.topics for r in rows])
    kafka = oracle.server_assign(case.assignor, topics, rows, kind, warmup=warmup, repeat=repeat)
    spec = kgroup_group_spec(rows, kind)
    # the coordinator hands the assignor its inverted target assignment (ConsumerGroup's
    # invertedTargetAssignment, kept up to date record by record), as the harness hands Kafka's its own
    inverted = InvertedTarget()
    for row in rows:
        inverted.move(row.member_id, {}, dict(row.record))
    spec = GroupSpec(spec.members, spec.subscription_type, inverted)
    # a group that one member joins had a rebalance before, with the same map objects the coordinator
    # keeps for every member that rebalance left alone: the assignor has seen them (fast.reuse)
    previous = (
        GroupSpec(
            {m: s for m, s in spec.members.items() if m != JOINER},
            spec.subscription_type,
            inverted,
        )
        if JOINER in spec.members
        else None
    )
    describer = TopicDescriber(topics)
    times = []
    read_times = []
    cold_times = []
    result: GroupAssignment = {}
    for _ in range(repeat):
        assignor = _assignor(case.assignor)  # a fresh instance: it has seen no call
        start = time.perf_counter()
        result = assignor.assign(spec, describer)
        cold_times.append(time.perf_counter() - start)
        for timed in (times, read_times):
            assignor = _assignor(case.assignor)
            if previous is not None:
                assignor.assign(previous, describer)
            start = time.perf_counter()
            result = assignor.assign(spec, describer)
            if timed is read_times:
                # what the coordinator does next (TargetAssignmentBuilder): every member's answer, read
                read(spec, result)
            timed.append(time.perf_counter() - start)
    exact = {m: tuple(a.items()) for m, a in result.items()} == kafka.assignment
    kgroup_ms = statistics.median(times) * 1e3
    read_ms = statistics.median(read_times) * 1e3
    cold_ms = statistics.median(cold_times) * 1e3
    kafka_ms = statistics.median(kafka.nanos) / 1e6
    return {
        "case": case.name,
        "members": case.members,
        "partitions": sum(topics.values()),
        "kgroup_ms": round(kgroup_ms, 1),
        "kgroup_read_ms": round(read_ms, 1),
        "kgroup_cold_ms": round(cold_ms, 1),
        "kafka_ms": round(kafka_ms, 1),
        "ratio": round(kgroup_ms / kafka_ms, 2) if kafka_ms else None,
        "read_ratio": round(read_ms / kafka_ms, 2) if kafka_ms else None,
        "exact": exact,
    }


def read(spec: GroupSpec, result: GroupAssignment) -> int:
    """Every member's assignment read as the coordinator reads it (``result.get(member_id, {})``, then
    each topic's partitions): an answer that builds a member's dict on first read pays for it here."""
    seen = 0
    for member_id in spec.members:
        for partitions in result.get(member_id, {}).values():
            seen += len(partitions)
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, nargs="*", default=[5000, 10000])
    parser.add_argument("--share-members", type=int, nargs="*", default=[200])
    parser.add_argument("--repeat", type=int, default=5, help="timed calls per side (median reported)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed JVM calls first (JIT)")
    parser.add_argument("--heap", default="4g", help="the Kafka JVM's -Xmx")
    parser.add_argument("--only", default="", help="run only the cases whose name contains this text")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if any(m < 1 for m in args.members) or any(m < 2 for m in args.share_members):
        raise SystemExit("--members / --share-members: give at least 1 member (share groups: 2, one joins)")
    rows = []
    # one case at 10,000 members is a few MB of JSON and tens of seconds of assign() calls in the JVM
    with KafkaOracle(call_timeout_s=600, heap=args.heap) as oracle:
        for case in [*cases(args.members), *share_cases(args.share_members)]:
            if args.only not in case.name:
                continue
            row = run(case, oracle, args.repeat, args.warmup)
            rows.append(row)
            if not args.json:
                print(
                    f"{row['case']:<40} {row['members']:>6} members {row['partitions']:>7} partitions  "
                    f"kgroup {row['kgroup_ms']:>8} ms (+ read {row['kgroup_read_ms']:>8} ms, "
                    f"unseen {row['kgroup_cold_ms']:>8} ms)  "
                    f"Kafka {row['kafka_ms']:>7} ms  ×{row['ratio']} (read ×{row['read_ratio']})  "
                    f"exact={row['exact']}",
                    flush=True,
                )
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
