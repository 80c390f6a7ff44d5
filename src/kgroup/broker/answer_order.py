"""The order of a Produce, ListOffsets or Metadata answer, as Kafka 4.4.0's broker lists it.

**Produce.**
``KafkaApis.handleProduceRequest`` keys each partition entry by its ``TopicIdPartition`` and answers
from maps, not from the request's list:

1. Entries it answers itself go into three Scala ``mutable.HashMap``\\ s, in the request's order:
   *unauthorized* (TOPIC_AUTHORIZATION_FAILED), *non-existing* (UNKNOWN_TOPIC_ID first, from the pass
   that resolves topic ids, then UNKNOWN_TOPIC_OR_PARTITION) and *invalid* (the records' shape:
   ``ProduceRequest.validateRecords``). The rest go into ``authorizedRequestInfo`` — one entry per
   partition, so a partition named twice has the later entry's records.
2. ``ReplicaManager`` answers those: the transaction verification's refusals first (an
   ``immutable.Map``), then the appends' answers, which reach it through ``.map`` of
   ``authorizedRequestInfo`` (a ``mutable.HashMap`` sized for them) copied into a ``java.util.HashMap``.
3. ``responseStatus ++ unauthorized ++ nonExisting ++ invalid``: an ``immutable.Map``, so up to four
   partitions are answered in the order they were added and five or more in its hash trie's order
   (:mod:`kgroup.scalacompat`); a partition in two of them is answered by the later one.
4. ``ProduceResponse`` groups that order by topic, each topic where its first partition comes.

The transaction verification's refusals are taken in the request's order: Kafka's order for them
comes from its transaction coordinator's answer map, which only matters when they and the appends
together are four or fewer partitions. A ``java.util.HashMap`` bucket of eight or more partitions
(a request of 48 or more) that Java turns into a tree orders equal hashes by identity, which no one
can reproduce: such ties keep their arrival order here.

**ListOffsets.** ``ReplicaManager.fetchOffset`` puts each partition's answer into a
``mutable.HashMap[TopicPartition, …]`` and answers ``groupBy(topic)`` of it: an ``immutable.HashMap``
(a hash trie, whatever its size) of the topics' names, each holding a ``mutable.HashMap`` of its
partitions grown put by put; ``KafkaApis`` then adds the unauthorized topics' entries, in the
request's order (:func:`list_offsets_order`).

**Metadata.** :func:`metadata_name_groups`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from numpy import float32

from kgroup.javacompat import JavaHashMap, hashmap_keys_order, int32, java_string_hash
from kgroup.scalacompat import (
    ImmutableMapOrder,
    ImmutableSetOrder,
    champ_order,
    mutable_hashmap_order,
    mutable_table_after_puts,
    mutable_table_for_size,
)

__all__ = [
    "AsideAnswers",
    "MetadataNames",
    "PartitionKey",
    "all_topics_order",
    "answer_order",
    "appended_table",
    "by_coordinator_partition",
    "list_offsets_order",
    "metadata_name_groups",
    "topic_id_partition_hash",
    "topic_partition_hash",
    "txn_partition_errors_order",
]

#: a ``TopicIdPartition``: (topic id, topic name, partition)
PartitionKey = tuple[uuid.UUID, str, int]

_MASK32 = 0xFFFFFFFF


@lru_cache(maxsize=65536)  # a broker answers the same partitions request after request
def topic_id_partition_hash(key: PartitionKey) -> int:
    """``TopicIdPartition.hashCode``: its ``Uuid``'s hash and its ``TopicPartition``'s."""
    topic_id, topic, partition = key
    bits = topic_id.int
    folded = (bits >> 64) ^ (bits & 0xFFFFFFFFFFFFFFFF)
    uuid_hash = int32((folded >> 32) ^ (folded & _MASK32))
    partition_hash = 31 * (31 + partition) + java_string_hash(topic)
    return int32(31 * (31 + uuid_hash) + partition_hash)


class AsideAnswers:
    """One of ``KafkaApis``' ``mutable.Map``\\ s of answers given before the replica manager: the
    partitions in the order they were first put, each with its last answer, and the size the map had
    at each put (which decides its table, and so its order)."""

    __slots__ = ("_sizes", "answers")

    def __init__(self) -> None:
        self.answers: dict[PartitionKey, int] = {}
        self._sizes: list[int] = []

    def put(self, key: PartitionKey, error_code: int) -> None:
        self._sizes.append(len(self.answers))
        self.answers[key] = error_code

    def order(self) -> list[PartitionKey]:
        keys = list(self.answers)
        hashes = [topic_id_partition_hash(k) for k in keys]
        return mutable_hashmap_order(keys, hashes, mutable_table_after_puts(self._sizes))


def appended_table(
    appended: int, *, acks_valid: bool, any_refused: bool, authorized_puts: Sequence[int]
) -> int:
    """The table size of the ``mutable.HashMap`` whose order the appended partitions' answers are
    copied in: ``.map`` of the entries (sized for them) when ``acks`` is valid; otherwise the entries
    themselves (``sendInvalidRequiredAcksResponse``): ``authorizedRequestInfo`` as its puts grew it
    (``authorized_puts``: its size at each), or its ``filter`` without the verification's refusals."""
    if acks_valid:
        return mutable_table_for_size(appended)
    if any_refused:
        return mutable_table_after_puts(range(appended))
    return mutable_table_after_puts(authorized_puts)


def answer_order(
    verification_refused: Sequence[PartitionKey],
    appended: Sequence[PartitionKey],
    aside: Sequence[AsideAnswers],
    *,
    any_authorized: bool,
    appended_table: int,
) -> list[PartitionKey]:
    """Every answered partition once, in Kafka's order: ``verification_refused`` and ``appended`` are
    the partitions of ``authorizedRequestInfo`` (each in the order first put) refused by the
    transaction verification and handed to ``appendRecords`` (answered by the append, or all
    INVALID_REQUIRED_ACKS); ``aside`` the unauthorized, non-existing and invalid maps, in that order;
    ``any_authorized`` whether ``authorizedRequestInfo`` had a partition; ``appended_table`` the table
    size of the ``mutable.HashMap`` the appended partitions' answers are copied from
    (:func:`appended_table`)."""
    merged: ImmutableMapOrder[PartitionKey] = ImmutableMapOrder()
    if any_authorized:
        for key in verification_refused:
            merged.add(key, topic_id_partition_hash(key))
        hashes = [topic_id_partition_hash(k) for k in appended]
        status = mutable_hashmap_order(appended, hashes, appended_table)
        for key in hashmap_keys_order(status, topic_id_partition_hash):
            merged.add(key, topic_id_partition_hash(key))
    for answers in aside:
        for key in answers.order():
            merged.add(key, topic_id_partition_hash(key))
    return merged.order()


def topic_partition_hash(topic: str, partition: int) -> int:
    """``TopicPartition.hashCode``."""
    return int32(31 * (31 + partition) + java_string_hash(topic))


def txn_partition_errors_order(partitions: Sequence[tuple[str, int]]) -> list[tuple[str, list[int]]]:
    """An AddPartitionsToTxn answer refused partition by partition (an unauthorized or unknown topic):
    ``KafkaApis`` puts the errors in a Scala ``mutable.HashMap`` (``++`` of its maps: sized for them all
    up front) that ``AddPartitionsToTxnResponse.topicCollectionForErrors`` walks into a
    ``java.util.HashMap`` by topic name; ``partitions`` distinct, in the request's order."""
    hashes = [topic_partition_hash(t, p) for t, p in partitions]
    walked = mutable_hashmap_order(list(partitions), hashes, mutable_table_for_size(len(partitions)))
    by_topic: dict[str, list[int]] = {}
    for topic, partition in walked:
        by_topic.setdefault(topic, []).append(partition)
    return [(topic, by_topic[topic]) for topic in hashmap_keys_order(list(by_topic), java_string_hash)]


def list_offsets_order(partitions: Sequence[tuple[str, int]]) -> list[tuple[str, list[int]]]:
    """The answered partitions (distinct, in the order first put) by topic, in the order
    ``groupBy(topic)`` of Kafka's ``mutable.HashMap`` of them lists them."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    names = list(by_topic)
    out = []
    for name in champ_order(names, [java_string_hash(n) for n in names]):
        indexes = by_topic[name]
        hashes = [topic_partition_hash(name, p) for p in indexes]
        table = mutable_table_after_puts(range(len(indexes)))
        out.append((name, mutable_hashmap_order(indexes, hashes, table)))
    return out


def java_hash_set_order(
    names: Sequence[str], keep: Callable[[str], bool], *, sized: bool = True
) -> list[str]:
    """The ``names`` that ``keep`` keeps, in the order of a ``java.util.HashSet`` made of them (``new
    HashSet<>(names)``, sized for them, when ``sized``; else a ``new HashMap<>()`` put in turn) from
    which the others were removed."""
    capacity = max(int(float32(len(names)) / float32(0.75)) + 1, 16) if sized else None
    copied: JavaHashMap[str, None] = JavaHashMap(java_string_hash, capacity)
    for name in names:
        copied.put(name, None)
    return [n for n in copied.keys_in_order() if keep(n)]


@dataclass(frozen=True, slots=True)
class MetadataNames:
    """A Metadata request's named topics in the groups and order Kafka 4.4.0 answers them."""

    found: list[str]  # existing topics the principal may describe
    missing: list[str]  # not existing and not created (invalid names, or auto-creation off)
    created: list[str]  # handed to auto-creation (answered UNKNOWN_TOPIC_OR_PARTITION)
    not_creatable: list[str]  # not existing, and the principal may not create them
    denied: list[str]  # the principal may not describe them (not disclosed whether they exist)


def metadata_name_groups(
    names: Sequence[str],
    describable: Mapping[str, bool],
    exists: Mapping[str, bool],
    creatable: Mapping[str, bool] | None,
    may_create: Mapping[str, bool] | None,
) -> MetadataNames:
    """``KafkaApis.handleTopicMetadataRequest`` for named topics: the names as a Scala ``Set`` (a name
    asked twice answered once, more than four in their hashes' order); the existing topics in that
    order, the others in the order of a ``java.util.HashSet`` copied from it (``getTopicMetadata``),
    and, when auto-creating (``creatable``: per name whether it may be created at all), the names
    that cannot be created first, then the others in the order of the ``java.util.HashMap``
    ``AutoTopicCreationManager`` collects them in. ``may_create``: per name whether the principal may
    create it, when it may not create on the cluster. Pure: a broker runs it off its loop for a big
    request."""
    asked = ImmutableSetOrder.of(names, java_string_hash)
    authorized = asked.filter(describable.__getitem__)
    denied = asked.filter(lambda n: not describable[n])
    not_creatable = authorized.filter(lambda n: False)
    if creatable is not None:
        wanted = authorized.filter(lambda n: not exists[n])
        if len(wanted) and may_create is not None:
            not_creatable = wanted.filter(lambda n: not may_create[n])
            authorized = authorized.filter(lambda n: n not in not_creatable)
    order = authorized.order()
    absent = java_hash_set_order(order, lambda n: not exists[n])
    missing, created = absent, []
    if creatable is not None:
        missing = [n for n in absent if not creatable[n]]
        created = java_hash_set_order([n for n in absent if creatable[n]], lambda n: True, sized=False)
    return MetadataNames(
        found=[n for n in order if exists[n]],
        missing=missing,
        created=created,
        not_creatable=not_creatable.order(),
        denied=denied.order(),
    )


def by_coordinator_partition(
    group_ids: Sequence[str], partition_of: Callable[[str], int], topic: str
) -> list[int]:
    """The positions of ``group_ids`` in the order ``GroupCoordinatorService`` answers a batch of
    groups (DescribeGroups, DeleteGroups): grouped by their coordinator partition, the partitions in
    the order of the ``java.util.HashMap<TopicPartition, List<String>>`` they are collected in, each
    partition's groups as the request named them. (Kafka's own order of the partitions varies from
    run to run — it was seen to answer the same request in two orders; this is its most frequent.)"""
    partitions: JavaHashMap[int, None] = JavaHashMap(lambda p: topic_partition_hash(topic, p))
    positions: dict[int, list[int]] = {}
    for i, group_id in enumerate(group_ids):
        partition = partition_of(group_id)
        if partition not in positions:
            partitions.put(partition, None)
            positions[partition] = []
        positions[partition].append(i)
    return [i for p in partitions.keys_in_order() for i in positions[p]]


def all_topics_order(names: Sequence[str]) -> list[str]:
    """A Metadata request for every topic, answered in Kafka 4.4.0's order: the metadata image's
    topic names (a persistent hash map iterating by ``String.hashCode``) ``partition``-ed by
    authorization into a Scala ``mutable.HashSet`` grown name by name, whose order this is."""
    hashes = {n: java_string_hash(n) for n in names}
    came = sorted(names, key=hashes.__getitem__)
    return mutable_hashmap_order(came, [hashes[n] for n in came], mutable_table_after_puts(range(len(came))))
