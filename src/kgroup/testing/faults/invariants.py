"""What real clients saw in a fault run, and the invariants and metrics read from it (pure functions).

Every fact here is one a client reported: a rebalance callback (assign, revoke, lost) with the time,
the member's generation and member id at that moment; a commit the broker acknowledged; a record a
producer got acknowledged; a record a consumer polled; the group's committed offsets sampled by an
observer. Nothing is read from the broker's own state, so the same checks hold Apache Kafka and
``kgroup serve`` to the same standard.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

__all__ = [
    "Callback",
    "Commit",
    "Observations",
    "Report",
    "check",
    "ownership_intervals",
    "rebalances_after",
    "time_to_stable_s",
    "unowned_partition_s",
]


@dataclass(frozen=True, slots=True)
class Callback:
    """One rebalance callback: ``kind`` is ``assign`` (partitions added), ``revoke`` or ``lost``
    (partitions taken away); ``generation`` and ``member_id`` are the member's at that moment."""

    t: float
    consumer: str
    kind: str
    generation: int
    member_id: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Commit:
    """A commit the broker acknowledged for one partition (``offset``: the next record to read)."""

    t: float
    consumer: str
    partition: int
    offset: int


@dataclass(slots=True)
class Observations:
    partitions: int
    end_t: float
    callbacks: list[Callback] = field(default_factory=list)
    commits: list[Commit] = field(default_factory=list)
    #: (partition, offset) of every record the producer had acknowledged
    acked: set[tuple[int, int]] = field(default_factory=set)
    #: (partition, offset) of every record some consumer polled (repeats once)
    consumed: set[tuple[int, int]] = field(default_factory=set)
    #: how many records were polled in all, repeats included
    polled: int = 0
    #: (t, partition, committed offset) as an observer read the group's offsets, in time order
    sampled_offsets: list[tuple[float, int, int]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Report:
    """The invariants' verdict: each list empty when its invariant held."""

    #: (generation, partition, consumers) claimed by two consumers in one generation
    double_owned: list[tuple[int, int, tuple[str, ...]]]
    #: partition-seconds during which two consumers held a partition at once: a zombie (a member
    #: removed while it could not hear so) and the owner of a later generation. Kafka's classic
    #: protocol allows it (the simulator's ``zombie_overlap_ms``); measured, not an invariant
    zombie_overlap_s: float
    #: acknowledged records nobody polled (partition, offset), at most 20 listed
    lost: list[tuple[int, int]]
    lost_count: int
    #: (partition, earlier offset, later lower offset, who) for commits that went back
    commits_back: list[tuple[int, int, int, str]]

    def violations(self) -> list[str]:
        """One line per broken invariant; empty when all held."""
        found = [f"generation {g}: partition {p} owned by {', '.join(m)}" for g, p, m in self.double_owned]
        if self.lost_count:
            found.append(f"{self.lost_count} acknowledged records never consumed, e.g. {self.lost[:3]}")
        found += [f"partition {p}: committed {a} then {b} ({who})" for p, a, b, who in self.commits_back]
        return found


def ownership_intervals(obs: Observations) -> list[tuple[int, str, float, float]]:
    """(partition, consumer, start, end) of every stretch a consumer held a partition."""
    held: dict[tuple[str, int], float] = {}
    intervals = []
    for cb in sorted(obs.callbacks, key=lambda c: c.t):
        for partition in cb.partitions:
            key = (cb.consumer, partition)
            if cb.kind == "assign":
                held.setdefault(key, cb.t)
            elif key in held:
                intervals.append((partition, cb.consumer, held.pop(key), cb.t))
    intervals += [(p, consumer, start, obs.end_t) for (consumer, p), start in held.items()]
    return sorted(intervals)


def _generation_claims(obs: Observations) -> dict[tuple[int, int], set[str]]:
    """(generation, partition) -> consumers that held the partition while in that generation.

    A consumer is one client object for the whole run (librdkafka clears its member id when it
    loses its membership, so the member id cannot name it in a ``lost`` callback).

    A member's callback runs once it is in the callback's generation: what it held just before the
    callback and what it holds after were both held in that generation (an eager member revokes
    before it rejoins, so its revoke still carries the old generation)."""
    claims: dict[tuple[int, int], set[str]] = defaultdict(set)
    owned: dict[str, set[int]] = defaultdict(set)
    for cb in sorted(obs.callbacks, key=lambda c: c.t):
        mine = owned[cb.consumer]
        if cb.generation >= 0:
            for partition in mine:
                claims[(cb.generation, partition)].add(cb.consumer)
        if cb.kind == "assign":
            mine.update(cb.partitions)
        else:
            mine.difference_update(cb.partitions)
        if cb.generation >= 0:
            for partition in mine:
                claims[(cb.generation, partition)].add(cb.consumer)
    return claims


def _overlap_s(intervals: list[tuple[int, str, float, float]]) -> float:
    by_partition: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for partition, _consumer, start, end in intervals:
        by_partition[partition].append((start, end))
    total = 0.0
    for spans in by_partition.values():
        edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans], key=lambda x: (x[0], x[1]))
        depth, last = 0, 0.0
        for t, step in edges:
            if depth >= 2:
                total += t - last
            depth += step
            last = t
    return total


def check(obs: Observations) -> Report:
    claims = _generation_claims(obs)
    double = sorted(
        (generation, partition, tuple(sorted(members)))
        for (generation, partition), members in claims.items()
        if len(members) > 1
    )
    lost = sorted(obs.acked - obs.consumed)
    back: list[tuple[int, int, int, str]] = []
    last: dict[int, int] = {}
    for commit in obs.commits:  # in the order the commits were acknowledged
        if commit.offset < last.get(commit.partition, -1):
            back.append((commit.partition, last[commit.partition], commit.offset, commit.consumer))
        last[commit.partition] = max(last.get(commit.partition, -1), commit.offset)
    sampled: dict[int, int] = {}
    for _t, partition, offset in obs.sampled_offsets:
        if offset < sampled.get(partition, -1):
            back.append((partition, sampled[partition], offset, "observer"))
        sampled[partition] = max(sampled.get(partition, -1), offset)
    return Report(double, _overlap_s(ownership_intervals(obs)), lost[:20], len(lost), back)


# --- the headline metrics, from ownership intervals (real runs and simulated ones alike) -------------


def unowned_partition_s(
    intervals: list[tuple[int, str, float, float]], partitions: int, start: float, end: float
) -> float:
    """Partition-seconds in ``[start, end)`` during which a partition had no owner."""
    total = 0.0
    for partition in range(partitions):
        spans = sorted((max(s, start), min(e, end)) for p, _c, s, e in intervals if p == partition)
        covered, reach = 0.0, start
        for s, e in spans:
            if e <= reach:
                continue
            covered += e - max(s, reach)
            reach = e
        total += (end - start) - covered
    return total


def rebalances_after(obs: Observations, t: float) -> int:
    """Generations the group went through after ``t``: the highest generation any member reported,
    minus the highest reported at or before ``t``."""
    before = [cb.generation for cb in obs.callbacks if cb.t <= t and cb.generation >= 0]
    after = [cb.generation for cb in obs.callbacks if cb.generation >= 0]
    if not after:
        return 0
    return max(after) - (max(before) if before else 0)


def time_to_stable_s(obs: Observations, t: float, consumers: int) -> float | None:
    """From ``t`` to the last callback of the run, if by then the ``consumers`` members shared one
    generation and every partition had exactly one owner; None if the run did not end settled."""
    later = [cb for cb in obs.callbacks if cb.t >= t]
    if not later:
        return 0.0
    intervals = [iv for iv in ownership_intervals(obs) if iv[3] >= obs.end_t]
    owners = defaultdict(set)
    for partition, consumer, _s, _e in intervals:
        owners[partition].add(consumer)
    if any(len(owners[p]) != 1 for p in range(obs.partitions)):
        return None
    last_generation: dict[str, int] = {}
    for cb in sorted(obs.callbacks, key=lambda c: c.t):
        if cb.generation >= 0:
            last_generation[cb.consumer] = cb.generation
    if len(last_generation) != consumers or len(set(last_generation.values())) != 1:
        return None
    return max(cb.t for cb in later) - t
