"""The ZooKeeper-era consumer assignors of Kafka 0.8.2 (``kafka.consumer.PartitionAssignor``).

Before the group coordinator existed, each high-level consumer registered in ZooKeeper a stream
count per topic (its ``topicCountMap``). A consumer ``c`` with ``n`` streams for a topic owns the
*consumer threads* ``c-0 .. c-(n-1)`` for it, and partitions are assigned to threads, not consumers.
Threads are ordered by the **string** order of their ids (so ``c-10`` sorts before ``c-2``).

* ``legacy-range``: per topic, the sorted threads of every consumer of the topic split the sorted
  partitions into contiguous ranges, the first ``P % T`` threads one partition more (a thread may get
  none; Kafka only logs a warning).
* ``legacy-roundrobin``: allowed only when every consumer subscribes to the same topics with the same
  stream count for each (otherwise a :class:`~kgroup.model.KgroupError` names the topic and the
  consumer); all partitions, sorted by the Java ``String.hashCode`` of ``"[topic,partition]"``, are
  dealt one by one to the sorted threads.

How stream counts are passed: give the assignor a :class:`LegacyAssignmentRequest`, an
:class:`~kgroup.assignors.api.AssignmentRequest` with an extra ``streams`` mapping
``member id -> {topic: count}``. Topics a member subscribes to without a count get one stream, and
a plain ``AssignmentRequest`` means one stream everywhere. :meth:`LegacyAssignor.assign` returns
partitions per consumer (the :class:`~kgroup.assignors.api.Assignor` contract);
:meth:`LegacyAssignor.assign_threads` returns them per thread id.

Where kgroup goes beyond Kafka 0.8.2: Kafka's RoundRobin sort is stable over the iteration order of
a Scala ``HashMap``, which only matters when two ``"[topic,partition]"`` strings have equal hash
codes; kgroup breaks such ties by topic (Java order), then partition. Topics missing from the
metadata are skipped, like the modern assignors do.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kgroup.assignors.api import AssignmentRequest, Assignor
from kgroup.assignors.common import check_unique_member_ids, topic_partitions
from kgroup.javacompat import java_string_hash, java_string_key
from kgroup.model import Assignment, KgroupError, RebalanceProtocol, TopicPartition

__all__ = [
    "LegacyAssignmentRequest",
    "LegacyAssignor",
    "LegacyRangeAssignor",
    "LegacyRoundRobinAssignor",
    "ThreadAssignment",
    "thread_id",
]


@dataclass(frozen=True, slots=True)
class LegacyAssignmentRequest(AssignmentRequest):
    """An assignment request with the ZooKeeper-era stream counts: ``streams[member][topic]``."""

    streams: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


def thread_id(consumer: str, index: int) -> str:
    """Kafka 0.8.2's ``ConsumerThreadId.toString``: ``"<consumer>-<index>"``."""
    return f"{consumer}-{index}"


@dataclass(frozen=True, slots=True)
class ThreadAssignment:
    """Partitions per consumer thread. Every thread of every member is present (maybe empty);
    ``owner`` maps each thread id to its consumer."""

    threads: dict[str, list[TopicPartition]]
    owner: dict[str, str]
    members: tuple[str, ...]

    def per_consumer(self) -> Assignment:
        """Fold the threads into their consumers (every member present, partitions sorted)."""
        out: Assignment = {m: [] for m in self.members}
        for thread, partitions in self.threads.items():
            out[self.owner[thread]].extend(partitions)
        for partitions in out.values():
            partitions.sort(key=TopicPartition.java_key)
        return out

    def idle_threads(self) -> list[str]:
        """Threads that received nothing (Kafka 0.8.2 logs a warning for each)."""
        return [t for t, ps in self.threads.items() if not ps]


def _stream_counts(request: AssignmentRequest) -> dict[str, dict[str, int]]:
    """member -> topic -> stream count, defaulting to 1 per subscribed topic; validated."""
    given: Mapping[str, Mapping[str, int]] = getattr(request, "streams", {}) or {}
    members = {m.member_id: m for m in request.members}
    for member_id in given:
        if member_id not in members:
            raise KgroupError(
                f"streams: member {member_id!r} is not in the group; remove it or add the member"
            )
    counts: dict[str, dict[str, int]] = {}
    for member in request.members:
        mine = given.get(member.member_id, {})
        for topic, count in mine.items():
            if topic not in member.topics:
                raise KgroupError(
                    f"streams[{member.member_id!r}]: topic {topic!r} is not subscribed; "
                    "add it to the member's topics"
                )
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise KgroupError(
                    f"streams[{member.member_id!r}][{topic!r}]: is {count!r}; "
                    "a stream count must be 1 or more"
                )
        counts[member.member_id] = {t: mine.get(t, 1) for t in dict.fromkeys(member.topics)}
    return counts


class LegacyAssignor(Assignor):
    """Shared machinery of the two ZooKeeper-era assignors."""

    protocols = (RebalanceProtocol.EAGER,)

    def assign(self, request: AssignmentRequest) -> Assignment:
        return self.assign_threads(request).per_consumer()

    def assign_threads(self, request: AssignmentRequest) -> ThreadAssignment:
        check_unique_member_ids(request.members)
        counts = _stream_counts(request)
        threads_of_topic: dict[str, list[str]] = {}
        threads: dict[str, list[TopicPartition]] = {}
        owner: dict[str, str] = {}
        for member in request.members:
            for topic, count in counts[member.member_id].items():
                ids = [thread_id(member.member_id, i) for i in range(count)]
                threads_of_topic.setdefault(topic, []).extend(ids)
                for tid in ids:
                    threads.setdefault(tid, [])
                    owner[tid] = member.member_id
        for ids in threads_of_topic.values():
            ids.sort(key=java_string_key)
        self._deal(request, threads_of_topic, threads, owner)
        return ThreadAssignment(threads, owner, tuple(m.member_id for m in request.members))

    @abstractmethod
    def _deal(
        self,
        request: AssignmentRequest,
        threads_of_topic: dict[str, list[str]],
        threads: dict[str, list[TopicPartition]],
        owner: dict[str, str],
    ) -> None:
        """Give partitions to ``threads`` (each topic's thread ids are sorted in ``threads_of_topic``)."""


def _existing(request: AssignmentRequest, topics: Sequence[str]) -> list[str]:
    """Subscribed topics present in the metadata, in Java name order."""
    return sorted((t for t in topics if t in request.topics), key=java_string_key)


class LegacyRangeAssignor(LegacyAssignor):
    """Kafka 0.8.2's ``kafka.consumer.RangeAssignor``: contiguous ranges per topic over sorted threads."""

    name = "legacy-range"

    def _deal(
        self,
        request: AssignmentRequest,
        threads_of_topic: dict[str, list[str]],
        threads: dict[str, list[TopicPartition]],
        owner: dict[str, str],
    ) -> None:
        for topic in _existing(request, list(threads_of_topic)):
            ids = threads_of_topic[topic]
            partitions = topic_partitions(topic, request.topics[topic].partitions)
            per_thread, extra = divmod(len(partitions), len(ids))
            for k, tid in enumerate(ids):
                start = per_thread * k + min(k, extra)
                length = per_thread + (1 if k < extra else 0)
                threads[tid].extend(partitions[start : start + length])


class LegacyRoundRobinAssignor(LegacyAssignor):
    """Kafka 0.8.2's ``kafka.consumer.RoundRobinAssignor``: hash-ordered partitions dealt to threads."""

    name = "legacy-roundrobin"

    def _deal(
        self,
        request: AssignmentRequest,
        threads_of_topic: dict[str, list[str]],
        threads: dict[str, list[TopicPartition]],
        owner: dict[str, str],
    ) -> None:
        topics = sorted(threads_of_topic, key=java_string_key)
        if not topics:
            return
        head = topics[0]
        head_ids = threads_of_topic[head]
        for topic in topics[1:]:
            ids = threads_of_topic[topic]
            if ids != head_ids:
                differing = sorted(set(ids) ^ set(head_ids), key=java_string_key)
                raise KgroupError(
                    f"legacy-roundrobin: topic {topic!r} has consumer streams {ids} but topic {head!r} has "
                    f"{head_ids} (consumer {owner[differing[0]]!r} differs); "
                    "round-robin needs every consumer to subscribe to the same topics "
                    "with the same stream count, or use legacy-range"
                )
        all_partitions: list[TopicPartition] = []
        for topic in _existing(request, topics):
            all_partitions.extend(topic_partitions(topic, request.topics[topic].partitions))
        # Python's sort is stable, like Scala's sortWith: equal hash codes keep (topic, partition) order
        all_partitions.sort(key=lambda tp: java_string_hash(f"[{tp.topic},{tp.partition}]"))
        for k, tp in enumerate(all_partitions):
            threads[head_ids[k % len(head_ids)]].append(tp)
