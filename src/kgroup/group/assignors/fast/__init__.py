"""The server assignors' fast paths: the same answers as the step-by-step builders, over integer arrays.

``RangeAssignor.assign``, ``UniformAssignor.assign`` (both of its builders) and
``SimpleAssignor.assign`` (its homogeneous builder) run these; each class's ``assign_reference`` is
Kafka's algorithm over Python objects, the readable spec the fast path is tested against
(``tests/group/server_assignors/test_fast_paths.py``, ``test_simple_fast.py``) besides Kafka's own
classes (``tests/apache_kafka/test_server_assignors.py``, ``test_simple_assignor.py``). Topics become
dense indices, members positions, equal subscriptions one class; the loops are numba kernels
(compiled once, cached on disk, warmed by ``python -m kgroup.kernels``); Java's ``HashMap``/``HashSet``
iteration order — which Kafka's answer and the coordinator's next round depend on — is computed by
:mod:`~kgroup.group.assignors.fast.javamaps`. Imported only when an assignor runs (numba is a heavy
import).
"""

from typing import Any

__all__ = ["hold_until_warm", "kernels_ready", "release", "warm"]

_held = False


def kernels_ready() -> bool:
    """Whether ``RangeAssignor.assign``, ``UniformAssignor.assign`` and ``SimpleAssignor.assign`` may run
    these kernels. True
    unless a broker is warming them in a thread of its own (:mod:`kgroup.broker.warmup`): compiled
    cold, the uniform kernels take about 40 s of CPU, which on the coordinators' thread would hold
    every group's heartbeats for as long; until they are ready the assignors answer with their
    step-by-step builders — the same answer."""
    return not _held


def hold_until_warm() -> None:
    """The assignors use their step-by-step builders until :func:`release`."""
    global _held
    _held = True


def release() -> None:
    global _held
    _held = False


def warm() -> None:
    """Run every kernel of ``range``, ``uniform`` (as homogeneous and as heterogeneous groups: both
    uniform builders) and ``simple`` (its homogeneous builder) on a small group — a new one, then one
    member joining it (the replay of changed members' maps; without and with the coordinator's
    inverted target assignment), with a chain long enough to resize a small table — so numba compiles
    them, or reads them from its cache. The fast paths are called directly: the assignors' ``assign``
    steps aside from them while they are held."""
    from kgroup.group.assignors.api import (
        InvertedTarget,
        MemberSpec,
        SubscriptionType,
        TopicDescriber,
        TopicId,
        group_spec,
    )
    from kgroup.group.assignors.fast.range_fast import assign_range
    from kgroup.group.assignors.fast.reuse import SeenMaps
    from kgroup.group.assignors.fast.uniform_fast import assign_uniform_homogeneous
    from kgroup.group.assignors.fast.uniform_heterogeneous_fast import assign_uniform_heterogeneous

    topics = {TopicId(0, i): 3 + i for i in range(12)}
    describer = TopicDescriber(topics)
    subscription = tuple(topics)
    seen = SeenMaps()  # the homogeneous builder's later calls read the maps an earlier one saw

    def uniform_homogeneous(group: Any, describer: Any) -> Any:
        return assign_uniform_homogeneous(group, describer, seen)

    for kind in SubscriptionType:
        homogeneous = kind is SubscriptionType.HOMOGENEOUS
        uniform = uniform_homogeneous if homogeneous else assign_uniform_heterogeneous
        for fast in (assign_range, uniform):
            first = group_spec([(f"m{i}", MemberSpec(subscription)) for i in range(3)], kind)
            result = fast(first, describer) or {}
            members = [(m, MemberSpec(subscription, result.get(m, {}))) for m in first.members]
            fast(group_spec([*members, ("m3", MemberSpec(subscription))], kind), describer)
            # with the coordinator's inverted target assignment (its per-topic bytes)
            inverted = InvertedTarget()
            for member_id, assignment in result.items():
                inverted.move(member_id, {}, assignment)
            fast(group_spec([*members, ("m3", MemberSpec(subscription))], kind, inverted), describer)
    # the remembered maps found by position, and by id (past MAX_EDITS members in or out)
    import numpy as np

    from kgroup.group.assignors.fast.reuse import aligned_rows, seen_rows

    ids, starts, sizes = np.arange(3, dtype=np.int64), np.arange(4, dtype=np.int64), np.ones(3, np.int64)
    aligned_rows(ids, ids, starts, sizes, 1)
    seen_rows(ids, ids, starts, ids, ids, sizes)
    # simple (share groups): members outnumbering the partitions, then one joining; then a member
    # holding too much (the revocations)
    from kgroup.group.assignors.fast.simple_fast import assign_simple_homogeneous

    few = {TopicId(0, 100): 4}
    shared = tuple(few)
    for members_now in (9, 10):
        specs = [(f"s{i}", MemberSpec(shared)) for i in range(members_now)]
        if members_now == 10:
            specs[0] = ("s0", MemberSpec(shared, {TopicId(0, 100): (0, 1, 2, 3)}))
        assign_simple_homogeneous(group_spec(specs, SubscriptionType.HOMOGENEOUS), TopicDescriber(few))
