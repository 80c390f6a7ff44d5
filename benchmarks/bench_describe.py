"""What a large ConsumerGroupDescribe costs the coordinator (issue 37, item 2).

The coordinator alone (no broker, no wire): a KIP-848 group of ``--members`` members on one topic of
``--partitions`` partitions, each member owning its share of the partitions, is built by replaying its
records (as a coordinator loading its log does), then one ConsumerGroupDescribe of it is handled
``--repeat`` times and the median printed. ``--reconciling`` members are left mid-reconciliation
(their target half their share, the other half pending revocation), as while the benchmark of
``bench_coordinator.py`` polls its describes; ``--changing`` replaces that many members' records
between two describes (a heartbeat's rewrite), as a held group does.

    .venv/bin/python benchmarks/bench_describe.py [--members 5000] [--partitions 5000] [--repeat 15]
        [--reconciling 500] [--changing 0] [--profile] [--json]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import pstats
import random
import statistics
import time
from random import Random

from kgroup.group import ConsumerGroups, CoordinatorConfig, GroupCoordinator, Record
from kgroup.group.metadata import MetadataImage, TopicImage
from kgroup.group.records.consumer import (
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    CurrentAssignmentValue,
    MemberAssignmentState,
    MemberMetadataValue,
    TargetAssignmentMetadataValue,
)
from kgroup.messages import ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, Envelope
from kgroup.model import TopicId
from kgroup.valuetypes import replace

GROUP = "bench-describe"
TOPIC = "bench-topic"


def _member_id(rng: random.Random) -> str:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    return "".join(rng.choice(alphabet) for _ in range(22))


def _shares(partitions: int, members: int) -> list[tuple[int, ...]]:
    return [tuple(range(i, partitions, members)) for i in range(members)]


def build(
    members: int, partitions: int, reconciling: int, seed: int = 1
) -> tuple[GroupCoordinator, list[str]]:
    """A coordinator holding one group of ``members`` (the first ``reconciling`` of them revoking half
    of what they own), built from its records; and the member ids."""
    rng = random.Random(seed)
    topic_id = TopicId.from_int(rng.getrandbits(63) | 1)
    coordinator = GroupCoordinator(CoordinatorConfig(), rng=Random(seed))
    coordinator.set_metadata(MetadataImage.of([TopicImage(topic_id, TOPIC, partitions, ())], 1))
    ids = [_member_id(rng) for _ in range(members)]
    shares = _shares(partitions, members)
    epoch = 10
    records: list[Record] = []
    for i, member_id in enumerate(ids):
        metadata = MemberMetadataValue(
            instance_id=None,
            rack_id=None,
            client_id=f"consumer-{GROUP}-{i % 32}",
            client_host=f"/127.0.0.1:{40000 + i % 32}",
            subscribed_topic_names=(TOPIC,),
            subscribed_topic_regex="",
            rebalance_timeout_ms=45000,
            server_assignor=None,
            classic_member_metadata=None,
        )
        records.append(ConsumerGroupMemberMetadata(GROUP, member_id, metadata))
    records.append(ConsumerGroupMetadata(GROUP, (epoch, 0)))
    for i, (member_id, share) in enumerate(zip(ids, shares, strict=True)):
        target = share[: len(share) // 2] if i < reconciling else share
        records.append(ConsumerGroupTargetAssignmentMember(GROUP, member_id, {topic_id: target}))
    records.append(ConsumerGroupTargetAssignmentMetadata(GROUP, TargetAssignmentMetadataValue(epoch, 0)))
    for i, (member_id, share) in enumerate(zip(ids, shares, strict=True)):
        if i < reconciling:  # its target is half its share: it revokes the other half
            half = len(share) // 2
            value = CurrentAssignmentValue(
                epoch - 1,
                epoch - 2,
                MemberAssignmentState.UNREVOKED_PARTITIONS,
                {topic_id: dict.fromkeys(share[:half], epoch - 1)},
                {topic_id: dict.fromkeys(share[half:], epoch - 1)},
            )
        else:
            owned = {topic_id: dict.fromkeys(share, epoch)}
            value = CurrentAssignmentValue(epoch, epoch - 1, MemberAssignmentState.STABLE, owned, {})
        records.append(ConsumerGroupCurrentMemberAssignment(GROUP, member_id, value))
    for record in records:
        coordinator.replay(record)
    return coordinator, ids


def describe(coordinator: GroupCoordinator, now_ms: int = 1000) -> ConsumerGroupDescribeResponse:
    env = Envelope("conn", 1, ConsumerGroupDescribeRequest((GROUP,), include_authorized_operations=False))
    result = coordinator.handle(now_ms, env)
    response = result.replies[0].body
    assert isinstance(response, ConsumerGroupDescribeResponse)
    return response


def _rewrite(coordinator: GroupCoordinator, ids: list[str], count: int, round_: int) -> None:
    """``count`` members' assignment records written again, their partitions in new maps (as a
    heartbeat's reconciliation or a replay from the log makes them)."""
    group = coordinator.kind(ConsumerGroups).ctx.groups[GROUP]
    start = round_ * count % len(ids)
    for member_id in (ids + ids)[start : start + count]:
        member = group.members[member_id]
        value = member.assignment_value()
        value = replace(
            value,
            assigned_partitions={t: dict(p) for t, p in value.assigned_partitions.items()},
            partitions_pending_revocation={
                t: dict(p) for t, p in value.partitions_pending_revocation.items()
            },
        )
        coordinator.replay(ConsumerGroupCurrentMemberAssignment(GROUP, member_id, value))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--members", type=int, default=5000)
    parser.add_argument("--partitions", type=int, default=5000)
    parser.add_argument("--reconciling", type=int, default=500)
    parser.add_argument("--changing", type=int, default=0, help="members rewritten between describes")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--profile", action="store_true", help="cProfile the describes, top 25 by own time")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    t0 = time.perf_counter()
    coordinator, ids = build(args.members, args.partitions, args.reconciling)
    built_s = time.perf_counter() - t0
    response = describe(coordinator)  # the first: whatever is built once
    first_ms: float
    t0 = time.perf_counter()
    describe(coordinator)
    first_ms = (time.perf_counter() - t0) * 1000
    profiler = cProfile.Profile() if args.profile else None
    times = []
    gc.collect()
    for round_ in range(args.repeat):
        if args.changing:
            _rewrite(coordinator, ids, args.changing, round_)
        if profiler is not None:
            profiler.enable()
        t0 = time.perf_counter()
        response = describe(coordinator)
        times.append((time.perf_counter() - t0) * 1000)
        if profiler is not None:
            profiler.disable()
    members = len(response.groups[0].members)
    figures = {
        "members": members,
        "partitions": args.partitions,
        "reconciling": args.reconciling,
        "changing": args.changing,
        "built_s": round(built_s, 2),
        "second_describe_ms": round(first_ms, 2),
        "median_ms": round(statistics.median(times), 2),
        "min_ms": round(min(times), 2),
        "max_ms": round(max(times), 2),
    }
    if args.json:
        print(json.dumps(figures))
    else:
        print(
            f"{members} members, {args.partitions} partitions, {args.reconciling} reconciling, "
            f"{args.changing} rewritten between describes: ConsumerGroupDescribe median "
            f"{figures['median_ms']} ms (min {figures['min_ms']}, max {figures['max_ms']}, "
            f"of {args.repeat}); built in {figures['built_s']} s"
        )
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
