"""The cluster metadata a consumer-group coordinator reads (Kafka's ``CoordinatorMetadataImage``).

The KIP-848 coordinator computes assignments itself, so it must know the topics: their ids, names and
partition counts. The host (the broker, the simulator, a test) hands it a :class:`MetadataImage` and a
new one whenever topics are created, grown or deleted (Kafka's ``onMetadataUpdate``). The image is not
state the coordinator persists: replaying a log gives the same groups whatever image is set.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import repeat

from kgroup.model import TopicId

__all__ = ["EMPTY_IMAGE", "MetadataImage", "TopicImage"]


@dataclass(frozen=True, slots=True)
class TopicImage:
    topic_id: TopicId
    name: str
    partitions: int
    #: racks of each partition's replicas (empty: unknown, as for a broker without ``broker.rack``)
    racks: tuple[tuple[str, ...], ...] = ()

    def partition_racks(self, partition: int) -> tuple[str, ...]:
        return self.racks[partition] if partition < len(self.racks) else ()


@dataclass(frozen=True, slots=True)
class MetadataImage:
    """Topics by name and by id, and a version that grows with every change (Kafka's image offset)."""

    topics: Mapping[str, TopicImage] = field(default_factory=dict)
    version: int = 0
    by_id: Mapping[TopicId, TopicImage] = field(init=False, repr=False, compare=False)
    _counts: dict[TopicId, int] = field(init=False, repr=False, compare=False)
    _hashes: dict[str, int] = field(init=False, repr=False, compare=False)
    _group_hashes: dict[frozenset[str], int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_id", {t.topic_id: t for t in self.topics.values()})
        object.__setattr__(self, "_counts", {t.topic_id: t.partitions for t in self.topics.values()})
        object.__setattr__(self, "_hashes", {})
        object.__setattr__(self, "_group_hashes", {})

    @classmethod
    def of(cls, topics: Iterable[TopicImage], version: int = 0) -> MetadataImage:
        return cls({t.name: t for t in topics}, version)

    def topic(self, name: str) -> TopicImage | None:
        return self.topics.get(name)

    def topic_by_id(self, topic_id: TopicId) -> TopicImage | None:
        return self.by_id.get(topic_id)

    def num_partitions(self, topic_id: TopicId) -> int:
        """``SubscribedTopicDescriber.numPartitions``: -1 for a topic not in the image."""
        topic = self.by_id.get(topic_id)
        return -1 if topic is None else topic.partitions

    def partition_counts(self, topic_ids: Iterable[TopicId]) -> list[int]:
        """:meth:`num_partitions` of each topic, in one pass (the assignors' inputs use it)."""
        return list(map(self._counts.get, topic_ids, repeat(-1)))

    def racks_for_partition(self, topic_id: TopicId, partition: int) -> frozenset[str]:
        topic = self.by_id.get(topic_id)
        return frozenset() if topic is None else frozenset(topic.partition_racks(partition))

    def topic_hash(self, name: str) -> int:
        """A 64-bit hash of what an assignment depends on for one topic (id, name, partition count,
        each partition's sorted racks): Kafka's ``Utils.computeTopicHash`` inputs, 0 for an unknown
        topic. The function is kgroup's (BLAKE2b), not Kafka's XXH3: only its changes are observable."""
        cached = self._hashes.get(name)
        if cached is not None:
            return cached
        topic = self.topics.get(name)
        if topic is None:
            return 0
        digest = hashlib.blake2b(digest_size=8)
        digest.update(struct.pack(">qq", topic.topic_id.msb, topic.topic_id.lsb))
        digest.update(name.encode())
        digest.update(struct.pack(">i", topic.partitions))
        for partition in range(topic.partitions):
            digest.update(struct.pack(">i", partition))
            for rack in sorted(topic.partition_racks(partition)):
                encoded = rack.encode()
                digest.update(struct.pack(">i", len(encoded)) + encoded)
        value: int = struct.unpack(">q", digest.digest())[0]
        self._hashes[name] = value
        return value

    def group_hash(self, topic_names: Iterable[str]) -> int:
        """``ModernGroup.computeMetadataHash``: the hashes of the subscribed topics that exist, by name
        order, combined; 0 when none exists."""
        topics = self.topics
        key = frozenset(
            topics.keys() & topic_names
            if isinstance(topic_names, set | frozenset)
            else (name for name in topic_names if name in topics)
        )
        cached = self._group_hashes.get(key)
        if cached is not None:
            return cached
        result = 0
        if key:
            digest = hashlib.blake2b(digest_size=8)
            for name in sorted(key):
                digest.update(struct.pack(">q", self.topic_hash(name)))
            result = struct.unpack(">q", digest.digest())[0]
        if len(self._group_hashes) > 4096:
            self._group_hashes.clear()
        self._group_hashes[key] = result
        return result


EMPTY_IMAGE = MetadataImage()
