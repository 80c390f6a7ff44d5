"""The order in which Kafka's Java producer lists a topic's partitions.

A Kafka 4.4.0 broker answers Metadata with a topic's partitions in ascending order (its metadata image
keeps them in a ``HashMap<Integer, …>``). The Java client does not keep that order: every answer is
merged into a ``MetadataSnapshot`` whose ``Cluster`` lists partitions in the iteration order of a
``HashMap<TopicPartition, …>`` — a partial answer (a producer's request for topics it has not seen
yet) first into a map sized for the answer, the partitions it keeps from before added after, then the
whole into a map sized for all. ``TopicPartition.hashCode`` is ``31 * (31 + partition) +
topic.hashCode()``, so the order depends on the topic's name and on how many partitions the producer
knows (seen on a 4.4.0 broker: ``[2, 3, 0, 1]``, ``[1, 2, 3, 0]``).

``RoundRobinPartitioner`` and the built-in partitioner walk that list
(``Cluster.availablePartitionsForTopic``), so a real producer's round robin starts where this order
says. :class:`JavaClientMetadata` replays the merges; :func:`java_client_partition_order` is the
common case, a producer's first answer for one topic. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kgroup.javacompat import JavaHashMap, int32, java_string_hash

__all__ = ["JavaClientMetadata", "java_client_partition_order", "topic_partition_hash"]


def topic_partition_hash(key: tuple[str, int]) -> int:
    """``TopicPartition.hashCode``: ``31 * (31 + partition) + topic.hashCode()``, a Java int."""
    topic, partition = key
    return int32(31 * (31 + partition) + java_string_hash(topic))


class JavaClientMetadata:
    """A Java client's ``Metadata``: which partitions it knows, in its ``Cluster``'s order.

    :meth:`update` takes each Metadata answer the client gets, its partitions in the order the
    broker lists them (ascending on Kafka 4.4.0 and on kgroup's broker)."""

    def __init__(self) -> None:
        self._known: list[tuple[str, int]] = []

    def update(self, partitions: Iterable[tuple[str, int]], *, partial: bool = True) -> None:
        """One answer. ``partial`` (a request for some topics, as a producer's for a topic it sends to
        for the first time): ``MetadataSnapshot.mergeWith`` keeps the other topics' partitions it
        knew; otherwise the answer replaces them all."""
        answered = list(dict.fromkeys(partitions))
        merged: Sequence[tuple[str, int]]
        if partial:
            topics = {topic for topic, _ in answered}
            first: JavaHashMap[tuple[str, int], None] = JavaHashMap(topic_partition_hash, len(answered))
            for key in answered:
                first.put(key, None)
            for key in self._known:  # putIfAbsent of what the snapshot kept of other topics
                if key[0] not in topics:
                    first.put(key, None)
            merged = first.keys_in_order()
        else:
            merged = answered
        snapshot: JavaHashMap[tuple[str, int], None] = JavaHashMap(topic_partition_hash, len(merged))
        for key in merged:
            snapshot.put(key, None)
        self._known = snapshot.keys_in_order()

    def partitions_for(self, topic: str) -> tuple[int, ...]:
        """``Cluster.partitionsForTopic(topic)``'s partition ids, in its order."""
        return tuple(partition for name, partition in self._known if name == topic)


def java_client_partition_order(topic: str, num_partitions: int) -> tuple[int, ...]:
    """How a Java producer lists ``topic``'s partitions after its first Metadata answer for it (no
    other topic known): the order its ``RoundRobinPartitioner`` walks."""
    metadata = JavaClientMetadata()
    metadata.update((topic, p) for p in range(num_partitions))
    return metadata.partitions_for(topic)
