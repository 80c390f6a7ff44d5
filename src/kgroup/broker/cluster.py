"""Cluster and topic state: which brokers are up, which topics exist, who leads each partition.

One process, one copy of the data. A new topic's replicas are placed as a Kafka 4.4.0 controller places
them: ``StripedReplicaPlacer`` with one ``java.util.Random`` for the cluster's life (seeded by
``replica_placement_seed``; Kafka's is unseeded), over the brokers as its ``ClusterDescriber`` lists
them — every broker of the cluster, a stopped one fenced (after a controlled shutdown a KRaft broker
stays registered, fenced). Each topic gets a fresh random id, as ``Uuid.randomUuid`` gives one: a topic
deleted and created again is a new topic. The id and the replicas are kept with the topic in the data
directory. The replicas are reported in the Metadata answer. Leadership follows KRaft's controller
(``ReplicationControlManager``):

* at first a partition is led by its preferred replica (the first of its list);
* stopping a broker moves each leadership it held to the first other live replica of the list
  (``handleBrokerInControlledShutdown``), or to none (-1) when no replica is up;
* a broker that starts again takes only the leaderless partitions it is a replica of
  (``handleBrokerUnfenced``) — the partitions that moved away stay where they are;
* every ``leader.imbalance.check.interval.seconds`` (300 s) with ``auto.leader.rebalance.enable``
  the controller's ``electPreferred`` task gives each partition whose preferred replica is up back to
  it (``maybeBalancePartitionLeaders``; Kafka 4.4.0 has no
  ``leader.imbalance.per.broker.percentage``: it went with ZooKeeper).

Since there is one copy, every live replica is in sync, so the choice depends only on the replica
list and the brokers' history: the current leader is kept per partition. No data moves.
The offsets topic's leaders decide the group coordinators, so they move the same way.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgroup.broker.config import BrokerConfig
from kgroup.broker.logapi import LogManagerLike, PartitionLogLike, TopicCreationLike, TopicDeletionLike
from kgroup.group.discovery import coordinator_partition
from kgroup.javacompat import JavaRandom
from kgroup.log.manager import remove_directories
from kgroup.model import KgroupError
from kgroup.partitioning.placement import assign_replicas_seed_rule
from kgroup.partitioning.striped import (
    InvalidReplicationFactor,
    StripedReplicaPlacer,
    UsableBroker,
    controller_broker_order,
)

__all__ = [
    "INTERNAL_TOPICS",
    "OFFSETS_TOPIC",
    "OFFSETS_TOPIC_CONFIGS",
    "TRANSACTION_STATE_TOPIC",
    "Cluster",
    "PartitionCountError",
    "ReplicaAssignmentError",
    "TopicInfo",
    "TopicPlacement",
    "random_topic_id",
    "topic_name_error",
]

log = logging.getLogger("kgroup.broker")

OFFSETS_TOPIC = "__consumer_offsets"
#: the transaction coordinator's log (kgroup.broker.txn_host)
TRANSACTION_STATE_TOPIC = "__transaction_state"
#: the share coordinator's state (kgroup.broker.share_host)
SHARE_GROUP_STATE_TOPIC = "__share_group_state"
#: Kafka's internal topics (``Topic.isInternal``): Metadata marks them, clients cannot produce to them
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_GROUP_STATE_TOPIC})
#: a partition: (topic name, partition index)
PartitionKey = tuple[str, int]
#: the configs the offsets topic is made with (Kafka's: compacted)
OFFSETS_TOPIC_CONFIGS = {"cleanup.policy": "compact"}
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
_TOPIC_ID_NAMESPACE = uuid.UUID("6b67726f-7570-4b61-666b-612d746f7069")


def topic_name_error(name: str) -> str | None:
    """Kafka 4.4.0's ``Topic.validate``: why ``name`` is not a legal topic name (its message, which
    CreateTopics and DescribeConfigs answer), or ``None``."""
    if not name:
        return "Topic name is invalid: the empty string is not allowed"
    if name in (".", ".."):
        return f"Topic name is invalid: '{name}' is not allowed"
    if len(name) > 249:
        return f"Topic name is invalid: the length of '{name}' is longer than the max allowed length 249"
    if not _LEGAL.fullmatch(name):  # (not match with "$": that accepts a trailing newline)
        return (
            f"Topic name is invalid: '{name}' contains one or more characters other than ASCII "
            "alphanumerics, '.', '_' and '-'"
        )
    return None


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    replicas: tuple[tuple[int, ...], ...]  # per partition, preferred leader first
    configs: Mapping[str, str] = field(default_factory=dict)

    @property
    def partitions(self) -> int:
        return len(self.replicas)


@dataclass(frozen=True, slots=True)
class TopicPlacement:
    """What the controller decides for a new topic before its logs are made: its id and replicas."""

    topic_id: uuid.UUID
    replicas: tuple[tuple[int, ...], ...]

    def log_metadata(self) -> dict[str, Any]:
        """Kept with the topic in the data directory (``LogManager.topic_metadata`` gives it back)."""
        return {"topicId": str(self.topic_id), "replicas": [list(r) for r in self.replicas]}


class ReplicaAssignmentError(KgroupError):
    """A CreateTopics or CreatePartitions request's own replica assignment that Kafka refuses
    (INVALID_REPLICA_ASSIGNMENT)."""


class PartitionCountError(KgroupError):
    """A CreatePartitions count that is no increase (INVALID_PARTITIONS)."""


def legacy_topic_id(name: str) -> uuid.UUID:
    """The id kgroup derived from a topic's name before it kept ids: a topic made then keeps it."""
    return uuid.uuid5(_TOPIC_ID_NAMESPACE, name)


def random_topic_id() -> uuid.UUID:
    """``Uuid.randomUuid()``: a random (version 4) UUID other than the zero and metadata-topic ids whose
    base64 form does not start with '-' (Kafka draws again in those cases)."""
    while True:
        drawn = uuid.uuid4()
        if drawn.int not in (0, 1) and drawn.int >> 122 != 62:  # 62: '-' in URL-safe base64
            return drawn


class Cluster:
    """Topics and broker liveness over one log manager."""

    def __init__(self, config: BrokerConfig, logs: LogManagerLike) -> None:
        self.config = config
        self.logs = logs
        self.broker_ids: tuple[int, ...] = tuple(range(config.brokers))
        self.alive: set[int] = set(self.broker_ids)
        #: the controller's replica placer and its one Random, for every topic the cluster creates
        self._placer = StripedReplicaPlacer(JavaRandom(config.replica_placement_seed))
        #: the offsets topic's replicas, placed at the first coordinator lookup (Kafka: at the first
        #: FindCoordinator), before the topic itself is made
        self._offsets_replicas: tuple[tuple[int, ...], ...] | None = None
        #: (topic, partition) -> its current leader, where that is not the preferred (first) replica
        self._moved: dict[PartitionKey, int] = {}
        #: grows with every change of a leader or of the brokers alive (what Metadata's partitions show)
        self.leadership_version = 0
        self.topics: dict[str, TopicInfo] = {}
        for name, count in sorted(logs.topics().items()):
            self.topics[name] = self._loaded(name, count, logs.topic_configs(name), logs.topic_metadata(name))
        #: grows with every topic created, grown or deleted (the version of the consumer groups' metadata
        #: image)
        self.topics_version = 0
        self._topic_watchers: list[Callable[[], None]] = []
        #: held by a request that grows or deletes a topic a few partitions at a time, giving other
        #: connections turns in between (CreatePartitions, DeleteTopics): one at a time, as Kafka's
        #: controller applies them
        self.topic_changes = asyncio.Lock()
        self._by_id: dict[uuid.UUID, TopicInfo] = {}
        self._by_id_version = -1

    def watch_topics(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` after every topic creation, growth (CreatePartitions) or deletion."""
        self._topic_watchers.append(callback)

    def _topics_changed(self) -> None:
        self.topics_version += 1
        for callback in self._topic_watchers:
            callback()

    # --- placement -------------------------------------------------------------------------------

    def usable_brokers(self) -> list[UsableBroker]:
        """The brokers as a 4.4.0 controller's ``ClusterDescriber`` lists them: all registered (they
        registered in id order), a stopped one fenced; kgroup's brokers have no rack."""
        return controller_broker_order(UsableBroker(b, None, b not in self.alive) for b in self.broker_ids)

    def place(self, partitions: int, replication_factor: int) -> TopicPlacement:
        """A new topic's id and replicas (``StripedReplicaPlacer.place``; raises its
        :class:`~kgroup.partitioning.striped.InvalidReplicationFactor` with Kafka's message). The
        placer's Random moves on even when it refuses, as Kafka's does."""
        placed = self._placer.place(self.usable_brokers(), partitions, replication_factor)
        return TopicPlacement(random_topic_id(), tuple(tuple(r) for r in placed))

    def place_manually(self, assignments: Sequence[tuple[int, Sequence[int]]]) -> TopicPlacement:
        """A CreateTopics request's own assignment (partition index, brokers), checked as Kafka's
        ``ReplicationControlManager`` checks it; :class:`ReplicaAssignmentError` with its message."""
        by_partition: dict[int, tuple[int, ...]] = {}
        replication_factor: int | None = None
        for index, brokers in assignments:
            if index in by_partition:
                raise ReplicaAssignmentError(
                    f"Found multiple manual partition assignments for partition {index}"
                )
            self._check_replicas(brokers, replication_factor)
            replication_factor = len(brokers)
            if not any(b in self.alive for b in brokers):
                raise ReplicaAssignmentError(
                    f"All brokers specified in the manual partition assignment for partition {index} are "
                    "fenced or in controlled shutdown."
                )
            by_partition[index] = tuple(brokers)
        if sorted(by_partition) != list(range(len(by_partition))):
            raise ReplicaAssignmentError("partitions should be a consecutive 0-based integer sequence")
        return TopicPlacement(random_topic_id(), tuple(by_partition[p] for p in range(len(by_partition))))

    def _check_replicas(self, brokers: Sequence[int], replication_factor: int | None) -> None:
        """``ReplicationControlManager.validateManualPartitionAssignment``: one partition's replicas
        of a request's own assignment, with ``replication_factor`` as many as the others'."""
        if not brokers:
            raise ReplicaAssignmentError("The manual partition assignment includes an empty replica list.")
        previous: int | None = None
        for broker in sorted(brokers):
            if broker not in self.broker_ids:
                raise ReplicaAssignmentError(
                    f"The manual partition assignment includes broker {broker}, but no such broker is "
                    "registered."
                )
            if broker == previous:
                raise ReplicaAssignmentError(
                    f"The manual partition assignment includes the broker {broker} more than once."
                )
            previous = broker
        if replication_factor is not None and len(brokers) != replication_factor:
            raise ReplicaAssignmentError(
                "The manual partition assignment includes a partition with "
                f"{len(brokers)} replica(s), but this is not consistent with previous partitions, "
                f"which have {replication_factor} replica(s)."
            )

    def place_added(
        self, info: TopicInfo, count: int, assignments: Sequence[Sequence[int]] | None
    ) -> TopicPlacement:
        """The topic's placement grown to ``count`` partitions (CreatePartitions), as Kafka 4.4.0's
        ``ReplicationControlManager.createPartitions`` decides it: the new partitions get the
        request's own ``assignments`` (one per new partition, checked as CreateTopics' are, each
        with the topic's replication factor: its first partition's replica count), or else the
        controller's placer places them with that replication factor (its Random moves on, as for
        a new topic). Raises :class:`PartitionCountError`, :class:`ReplicaAssignmentError` or
        :class:`~kgroup.partitioning.striped.InvalidReplicationFactor` with Kafka's messages."""
        current = info.partitions
        if count == current:
            raise PartitionCountError(f"Topic already has {current} partition(s).")
        if count < current:
            raise PartitionCountError(
                f"The topic {info.name} currently has {current} partition(s); {count} would not be an "
                "increase."
            )
        additional = count - current
        if assignments is not None and len(assignments) != additional:
            raise ReplicaAssignmentError(
                f"Attempted to add {additional} additional partition(s), but only {len(assignments)} "
                "assignment(s) were specified."
            )
        replication_factor = len(info.replicas[0])
        added: list[tuple[int, ...]] = []
        if assignments is not None:
            for offset, brokers in enumerate(assignments):
                self._check_replicas(brokers, replication_factor)
                if not any(b in self.alive for b in brokers):
                    raise ReplicaAssignmentError(
                        "All brokers specified in the manual partition assignment for partition "
                        f"{current + offset} are fenced or in controlled shutdown."
                    )
                added.append(tuple(brokers))
        else:
            placed = self._placer.place(self.usable_brokers(), additional, replication_factor)
            added = [tuple(r) for r in placed]
            if any(not any(b in self.alive for b in r) for r in added):
                raise InvalidReplicationFactor(
                    f"Unable to replicate the partition {replication_factor} time(s): All brokers are "
                    "currently fenced or in controlled shutdown."
                )
        return TopicPlacement(info.topic_id, info.replicas + tuple(added))

    def _offsets_placement(self) -> tuple[tuple[int, ...], ...]:
        info = self.topics.get(OFFSETS_TOPIC)
        if info is not None:
            return info.replicas
        if self._offsets_replicas is None:
            rf = min(self.config.replication_factor, len(self.broker_ids))
            self._offsets_replicas = self.place(self.config.offsets_topic_partitions, rf).replicas
        return self._offsets_replicas

    def _loaded(
        self, name: str, partitions: int, configs: Mapping[str, str], metadata: Mapping[str, Any]
    ) -> TopicInfo:
        """A topic the data directory holds, with the id and replicas kept with it. A topic made
        before kgroup kept them keeps the id derived from its name and the seeds' placement it had;
        one whose replicas name brokers this cluster does not have is placed again."""
        try:
            topic_id = uuid.UUID(str(metadata["topicId"]))
        except (KeyError, ValueError):
            topic_id = legacy_topic_id(name)
        kept = metadata.get("replicas")
        if not isinstance(kept, list):
            rf = min(self.config.replication_factor, len(self.broker_ids))
            seeds = assign_replicas_seed_rule(self.broker_ids, partitions, rf)
            return TopicInfo(name, topic_id, tuple(tuple(seeds[p]) for p in range(partitions)), configs)
        replicas = tuple(tuple(int(b) for b in r) for r in kept)
        if len(replicas) != partitions or any(not r or not set(r) <= set(self.broker_ids) for r in replicas):
            rf = min(max(len(r) for r in replicas) if replicas else 1, len(self.broker_ids))
            log.warning(
                "topic %s: its replicas name brokers this %d-broker cluster does not have; placed again",
                name,
                len(self.broker_ids),
            )
            replicas = self.place(partitions, rf).replicas
        return TopicInfo(name, topic_id, replicas, configs)

    def _leader(self, key: PartitionKey, replicas: tuple[int, ...]) -> int:
        """The current leader of partition ``key`` (with these replicas), or -1 (every replica down)."""
        moved = self._moved.get(key)
        if moved is not None:
            return moved
        if not replicas:
            return -1
        if replicas[0] not in self.alive:  # first seen with its preferred replica down
            live = [b for b in replicas if b in self.alive]
            self._elect(key, replicas, live[0] if live else -1)
            return self._moved.get(key, replicas[0])
        return replicas[0]

    def _partitions(self) -> Iterator[tuple[PartitionKey, tuple[int, ...]]]:
        """Every partition whose leader the controller keeps: the topics', and the offsets topic's
        (placed before the topic is made)."""
        for info in self.topics.values():
            for index, replicas in enumerate(info.replicas):
                yield (info.name, index), replicas
        if OFFSETS_TOPIC not in self.topics:
            for index, replicas in enumerate(self._offsets_placement()):
                yield (OFFSETS_TOPIC, index), replicas

    def _replicas_of(self, key: PartitionKey) -> tuple[int, ...]:
        info = self.topics.get(key[0])
        if info is not None:
            return info.replicas[key[1]] if key[1] < info.partitions else ()
        if key[0] == OFFSETS_TOPIC:
            return self._offsets_placement()[key[1]]
        return ()

    def _elect(self, key: PartitionKey, replicas: tuple[int, ...], leader: int) -> None:
        self.leadership_version += 1
        if replicas and leader == replicas[0]:
            self._moved.pop(key, None)
        else:
            self._moved[key] = leader

    def broker_stopped(self, broker: int) -> None:
        """A controlled shutdown: the broker's leaderships go to the next live replica of each partition."""
        self.alive.discard(broker)
        self.leadership_version += 1
        for key, replicas in self._partitions():
            if self._leader(key, replicas) == broker:
                live = [b for b in replicas if b in self.alive]
                self._elect(key, replicas, live[0] if live else -1)

    def broker_started(self, broker: int) -> None:
        """The broker is back: it leads only the leaderless partitions it is a replica of."""
        self.alive.add(broker)
        self.leadership_version += 1
        for key, replicas in self._partitions():
            if broker in replicas and self._leader(key, replicas) == -1:
                self._elect(key, replicas, broker)

    def elect_preferred_leaders(self) -> bool:
        """The periodic preferred-leader election: True when a leader of the offsets topic moved
        (the group coordinators must follow)."""
        coordinators_moved = False
        for key in list(self._moved):
            replicas = self._replicas_of(key)
            if replicas and replicas[0] in self.alive:
                del self._moved[key]
                self.leadership_version += 1
                coordinators_moved = coordinators_moved or key[0] == OFFSETS_TOPIC
        return coordinators_moved

    def partition_leader(self, topic: str, partition: int) -> int:
        info = self.topics.get(topic)
        if info is None or not 0 <= partition < info.partitions:
            return -1
        return self._leader((topic, partition), info.replicas[partition])

    def offsets_leaders(self) -> tuple[int, ...]:
        """The leader of each partition of the offsets topic: which broker coordinates the groups of
        each partition (-1 everywhere before the topic is made: no broker coordinates a group yet)."""
        if OFFSETS_TOPIC not in self.topics:
            return (-1,) * self.config.offsets_topic_partitions
        replicas = self.topics[OFFSETS_TOPIC].replicas
        return tuple(self._leader((OFFSETS_TOPIC, index), r) for index, r in enumerate(replicas))

    def coordinator_for(self, key: str) -> int:
        """The leader of ``abs(hashCode(key)) % offsets.topic.num.partitions`` of the offsets topic.
        A group request that comes before any FindCoordinator makes the topic (Kafka answers it
        NOT_COORDINATOR; kgroup serves it: docs/apache-kafka.md)."""
        if OFFSETS_TOPIC not in self.topics:
            self.ensure_offsets_topic()
        placement = self._offsets_placement()
        index = coordinator_partition(key, len(placement))
        return self._leader((OFFSETS_TOPIC, index), placement[index])

    def ensure_offsets_topic(self) -> bool:
        """Make ``__consumer_offsets`` at once unless it exists or is being made, as Kafka's first
        FindCoordinator for a group does (placed then by the controller's placer); True when it was
        made now. A failure to make it (a full disk) is logged: the next request tries again. The
        broker's requests make it with :meth:`begin_offsets_topic` instead, off its loop."""
        begun = self.begin_offsets_topic()
        if begun is None:
            return False
        creation, placement = begun
        try:
            creation.step(creation.partitions)
            creation.finish()
        except Exception as exc:
            creation.abort()
            log.warning("cannot create %s: %s", OFFSETS_TOPIC, exc)
            return False
        self.register_topic(OFFSETS_TOPIC, placement, OFFSETS_TOPIC_CONFIGS)
        return True

    def begin_offsets_topic(self) -> tuple[TopicCreationLike, TopicPlacement] | None:
        """``__consumer_offsets``' creation begun — its name reserved and its placement chosen (where
        its coordinators already are) — unless it exists or is being made (None). The caller makes
        its partitions (``step``: directories, so in a thread), then finishes the creation and
        registers the topic (:meth:`register_topic`), or aborts it."""
        if OFFSETS_TOPIC in self.topics or self.logs.is_creating(OFFSETS_TOPIC):
            return None
        placement = TopicPlacement(random_topic_id(), self._offsets_placement())
        creation = self.logs.begin_topic(
            OFFSETS_TOPIC,
            len(placement.replicas),
            dict(OFFSETS_TOPIC_CONFIGS),
            placement.log_metadata(),
        )
        return creation, placement

    # --- topics ----------------------------------------------------------------------------------

    def create_topic(
        self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str]
    ) -> TopicInfo:
        """Place the topic (:meth:`place`; the offsets topic where its coordinators already are), make
        its logs with its id and replicas, and register it."""
        if name == OFFSETS_TOPIC and partitions == len(self._offsets_placement()):
            placement = TopicPlacement(random_topic_id(), self._offsets_placement())
        else:
            placement = self.place(partitions, replication_factor)
        self.logs.create_topic(name, partitions, dict(configs), placement.log_metadata())
        return self.register_topic(name, placement, configs)

    def register_topic(self, name: str, placement: TopicPlacement, configs: Mapping[str, str]) -> TopicInfo:
        """The topic the logs now have (made by ``create_topic`` or a finished ``begin_topic`` given
        ``placement.log_metadata()``)."""
        info = TopicInfo(name, placement.topic_id, placement.replicas, dict(configs))
        self.topics[name] = info
        self._topics_changed()
        return info

    def alter_topic_configs(self, name: str, configs: Mapping[str, str]) -> TopicInfo:
        """Replace the topic's configs: in its logs (on disk, then every partition's settings) and here."""
        info = self.topics[name]
        self.logs.alter_topic_configs(name, configs)
        altered = TopicInfo(name, info.topic_id, info.replicas, dict(configs))
        self.topics[name] = altered
        return altered

    def register_partitions(self, name: str, placement: TopicPlacement) -> TopicInfo:
        """The topic grown to ``placement``'s partitions (the logs have them: a finished
        ``begin_partitions`` given ``placement.log_metadata()``); the groups' watchers are told."""
        info = self.topics[name]
        grown = TopicInfo(name, info.topic_id, placement.replicas, info.configs)
        self.topics[name] = grown
        self._topics_changed()
        return grown

    def delete_topic(self, name: str) -> None:
        """Delete the topic and its data at once."""
        deletion = self.begin_deletion(name)
        deletion.step(deletion.partitions)
        remove_directories(deletion.finish())

    def begin_deletion(self, name: str) -> TopicDeletionLike:
        """Delete the topic: gone from the cluster now; the caller steps its partitions' deletion
        (closed and renamed a few at a time: DeleteTopics) and removes the renamed directories."""
        deletion = self.logs.begin_deletion(name)
        for key in [k for k in self._moved if k[0] == name]:  # a topic made again starts afresh
            del self._moved[key]
        if self.topics.pop(name, None) is not None:
            self._topics_changed()
        return deletion

    def partition_log(self, topic: str, partition: int) -> PartitionLogLike | None:
        info = self.topics.get(topic)
        if info is None or not 0 <= partition < info.partitions:
            return None
        return self.logs.partition(topic, partition)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        # an index made again after each topic change: Produce v13 and Fetch v13+ name every topic
        # by id, and a scan of every topic per request would grow with the cluster
        if self._by_id_version != self.topics_version or len(self._by_id) != len(self.topics):
            self._by_id = {info.topic_id: info for info in self.topics.values()}
            self._by_id_version = self.topics_version
        return self._by_id.get(topic_id)
