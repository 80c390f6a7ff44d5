"""Cluster and topic state: which brokers are up, which topics exist, who leads each partition.

One process, one copy of the data: replica lists follow the placement rule (seed 000:
partition ``i`` on brokers ``i, i+1, …`` mod n) for the Metadata answer. Leadership follows KRaft's
controller (``ReplicationControlManager``):

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
list and the brokers' history: the current leader is kept per replica list. No data moves.
The offsets topic's leaders decide the group coordinators, so they move the same way.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kgroup.broker.config import BrokerConfig
from kgroup.broker.logapi import LogManagerLike, PartitionLogLike, TopicDeletionLike
from kgroup.group.discovery import coordinator_partition
from kgroup.partitioning.placement import assign_replicas_seed_rule

__all__ = ["OFFSETS_TOPIC", "Cluster", "TopicInfo", "topic_name_error"]

OFFSETS_TOPIC = "__consumer_offsets"
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
_TOPIC_ID_NAMESPACE = uuid.UUID("6b67726f-7570-4b61-666b-612d746f7069")


def topic_name_error(name: str) -> str | None:
    """Kafka's ``Topic.validate``: why ``name`` is not a legal topic name, or ``None``."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > 249:
        return f"Topic name is illegal, the length of '{name}' is longer than the max allowed length 249"
    if not _LEGAL.fullmatch(name):  # (not match with "$": that accepts a trailing newline)
        return (
            f"Topic name is illegal, '{name}' contains a character other than ASCII alphanumerics, "
            f"'.', '_' and '-'"
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


def topic_id_for(name: str) -> uuid.UUID:
    """A stable id per topic name (survives restarts without a metadata file)."""
    return uuid.uuid5(_TOPIC_ID_NAMESPACE, name)


class Cluster:
    """Topics and broker liveness over one log manager."""

    def __init__(self, config: BrokerConfig, logs: LogManagerLike) -> None:
        self.config = config
        self.logs = logs
        self.broker_ids: tuple[int, ...] = tuple(range(config.brokers))
        self.alive: set[int] = set(self.broker_ids)
        self.topics: dict[str, TopicInfo] = {}
        for name, count in logs.topics().items():
            self.topics[name] = self._info(name, count, logs.topic_configs(name))
        #: replica list -> its current leader, where that is not the preferred (first) replica
        self._moved: dict[tuple[int, ...], int] = {}
        #: grows with every topic created or deleted (the version of the consumer groups' metadata image)
        self.topics_version = 0
        self._topic_watchers: list[Callable[[], None]] = []
        self._by_id: dict[uuid.UUID, TopicInfo] = {}
        self._by_id_version = -1

    def watch_topics(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` after every topic creation or deletion."""
        self._topic_watchers.append(callback)

    def _topics_changed(self) -> None:
        self.topics_version += 1
        for callback in self._topic_watchers:
            callback()

    # --- placement -------------------------------------------------------------------------------

    def _placement(self, partitions: int, replication_factor: int) -> tuple[tuple[int, ...], ...]:
        placement = assign_replicas_seed_rule(self.broker_ids, partitions, replication_factor)
        return tuple(tuple(placement[p]) for p in range(partitions))

    def _info(self, name: str, partitions: int, configs: Mapping[str, str]) -> TopicInfo:
        return TopicInfo(
            name, topic_id_for(name), self._placement(partitions, self.config.replication_factor), configs
        )

    def leader(self, replicas: tuple[int, ...]) -> int:
        """The current leader of a partition with these replicas, or -1 (every replica is down)."""
        replicas = tuple(replicas)
        moved = self._moved.get(replicas)
        if moved is not None:
            return moved
        if not replicas:
            return -1
        if replicas[0] not in self.alive:  # first seen with its preferred replica down (a new topic)
            live = [b for b in replicas if b in self.alive]
            self._elect(replicas, live[0] if live else -1)
            return self._moved.get(replicas, replicas[0])
        return replicas[0]

    def _replica_lists(self) -> set[tuple[int, ...]]:
        lists = {r for info in self.topics.values() for r in info.replicas}
        lists.update(self._placement(self.config.offsets_topic_partitions, self.config.replication_factor))
        return lists

    def _elect(self, replicas: tuple[int, ...], leader: int) -> None:
        if replicas and leader == replicas[0]:
            self._moved.pop(replicas, None)
        else:
            self._moved[replicas] = leader

    def broker_stopped(self, broker: int) -> None:
        """A controlled shutdown: the broker's leaderships go to the next live replica of each list."""
        self.alive.discard(broker)
        for replicas in self._replica_lists():
            if self.leader(replicas) == broker:
                live = [b for b in replicas if b in self.alive]
                self._elect(replicas, live[0] if live else -1)

    def broker_started(self, broker: int) -> None:
        """The broker is back: it leads only the leaderless partitions it is a replica of."""
        self.alive.add(broker)
        for replicas in self._replica_lists():
            if broker in replicas and self.leader(replicas) == -1:
                self._elect(replicas, broker)

    def elect_preferred_leaders(self) -> bool:
        """The periodic preferred-leader election: True when a leader of the offsets topic moved
        (the group coordinators must follow)."""
        offsets = set(self._placement(self.config.offsets_topic_partitions, self.config.replication_factor))
        coordinators_moved = False
        for replicas in list(self._moved):
            if replicas and replicas[0] in self.alive:
                del self._moved[replicas]
                coordinators_moved = coordinators_moved or replicas in offsets
        return coordinators_moved

    def partition_leader(self, topic: str, partition: int) -> int:
        info = self.topics.get(topic)
        if info is None or not 0 <= partition < info.partitions:
            return -1
        return self.leader(info.replicas[partition])

    def offsets_leaders(self) -> tuple[int, ...]:
        """The leader of each partition of the offsets topic (-1: none): which broker coordinates the
        groups of each partition."""
        n = self.config.offsets_topic_partitions
        return tuple(self.leader(replicas) for replicas in self._placement(n, self.config.replication_factor))

    def coordinator_for(self, key: str) -> int:
        """The leader of ``abs(hashCode(key)) % offsets.topic.num.partitions`` of the offsets topic."""
        n = self.config.offsets_topic_partitions
        index = coordinator_partition(key, n)
        placement = self._placement(n, self.config.replication_factor)
        return self.leader(placement[index])

    # --- topics ----------------------------------------------------------------------------------

    def create_topic(
        self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str]
    ) -> TopicInfo:
        self.logs.create_topic(name, partitions, dict(configs))
        return self.register_topic(name, partitions, replication_factor, configs)

    def register_topic(
        self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str]
    ) -> TopicInfo:
        """The topic the logs now have (made by ``create_topic`` or a finished ``begin_topic``)."""
        info = TopicInfo(
            name, topic_id_for(name), self._placement(partitions, replication_factor), dict(configs)
        )
        self.topics[name] = info
        self._topics_changed()
        return info

    def delete_topic(self, name: str) -> TopicDeletionLike:
        """Delete the topic: gone from the cluster now; the caller steps its partitions' deletion
        (closed and renamed a few at a time) and removes the renamed directories."""
        deletion = self.logs.begin_deletion(name)
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
