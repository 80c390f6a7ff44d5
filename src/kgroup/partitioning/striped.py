"""Kafka 4.4.0's replica placement: the KRaft controller's ``StripedReplicaPlacer``.

A Kafka 4 controller places a new topic's replicas with
``org.apache.kafka.metadata.placement.StripedReplicaPlacer``, given the usable brokers as its
``ClusterDescriber`` lists them and one ``java.util.Random`` that lives as long as the controller.
This module is that placer, draw for draw, over :class:`~kgroup.javacompat.JavaRandom`:

* the brokers are grouped by rack (no rack is a rack of its own); each rack keeps its unfenced and its
  fenced brokers in two lists, each sorted by id and given a random start offset; racks are sorted
  (no rack first, then Java string order) and the rack list gets a random start offset;
* each partition takes its leader from the first rack (from the rack offset on) that still has an
  unfenced broker, then its followers from the racks in turn, unfenced before fenced — the "stripes";
  the rack offset moves on by one per partition, and each list its start offset by one per partition
  that asks it;
* once as many partitions as there are unfenced brokers were placed, the racks and each rack's lists
  are shuffled (``Collections.shuffle`` with the same ``Random``) and the count starts again.

The random draws happen in Kafka's order, including the ones a refused placement makes before it
fails, so a placer fed the same topics as a controller stays in step with it. Pure: no clock and no
randomness but the injected generator.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kgroup.javacompat import JavaHashMap, JavaRandom, java_integer_hash, java_shuffle, java_string_hash
from kgroup.javacompat import java_string_key as _java_string_key
from kgroup.model import KgroupError

__all__ = [
    "InvalidReplicationFactor",
    "StripedReplicaPlacer",
    "UsableBroker",
    "controller_broker_order",
]

#: what a list answers when it has no broker left in this epoch (Kafka's -1)
_NO_BROKER = -1


class InvalidReplicationFactor(KgroupError):
    """Kafka's ``InvalidReplicationFactorException``: the message is Kafka 4.4.0's own."""


@dataclass(frozen=True, slots=True)
class UsableBroker:
    """``org.apache.kafka.metadata.placement.UsableBroker``: a broker a replica may go to."""

    id: int
    rack: str | None = None
    fenced: bool = False


def controller_broker_order(brokers: Iterable[UsableBroker]) -> list[UsableBroker]:
    """The order in which a 4.4.0 controller's ``ClusterDescriber`` lists the brokers, given them in
    the order they registered: ``BrokerHeartbeatManager`` keeps them in a ``HashMap<Integer, …>``
    (ascending ids while they are below its bucket count, 16 for up to 12 brokers)."""
    table: JavaHashMap[int, UsableBroker] = JavaHashMap(java_integer_hash)
    for broker in brokers:
        table.put(broker.id, broker)
    return [broker for _, broker in table.items()]


class _BrokerList:
    """``StripedReplicaPlacer.BrokerList``: brokers handed out once per iteration epoch from an offset
    that moves on by one each time the list is asked in a new epoch."""

    __slots__ = ("brokers", "epoch", "index", "offset")

    def __init__(self) -> None:
        self.brokers: list[int] = []
        self.index = 0
        self.offset = 0
        self.epoch = 0

    def initialize(self, random: JavaRandom) -> None:
        if self.brokers:
            self.brokers.sort()
            self.offset = random.next_int(len(self.brokers))

    def next(self, epoch: int) -> int:
        size = len(self.brokers)
        if not size:
            return _NO_BROKER
        if self.epoch != epoch:
            self.epoch = epoch
            self.index = 0
            self.offset = (self.offset + 1) % size
        if self.index >= size:
            return _NO_BROKER
        broker = self.brokers[(self.index + self.offset) % size]
        self.index += 1
        return broker


class _Rack:
    __slots__ = ("fenced", "unfenced")

    def __init__(self) -> None:
        self.fenced = _BrokerList()
        self.unfenced = _BrokerList()

    def initialize(self, random: JavaRandom) -> None:
        self.fenced.initialize(random)  # Kafka's order: the fenced list draws first
        self.unfenced.initialize(random)

    def shuffle(self, random: JavaRandom) -> None:
        java_shuffle(self.fenced.brokers, random)
        java_shuffle(self.unfenced.brokers, random)

    def next(self, epoch: int) -> int:
        broker = self.unfenced.next(epoch)
        return broker if broker >= 0 else self.fenced.next(epoch)


def _rack_hash(rack: str | None) -> int:
    return 0 if rack is None else java_string_hash(rack)  # Optional.hashCode


def _rack_order(rack: str | None) -> tuple[int, bytes]:
    return (0, b"") if rack is None else (1, _java_string_key(rack))  # OptionalStringComparator


class _RackList:
    """``StripedReplicaPlacer.RackList``, built from the usable brokers for one ``place`` call."""

    def __init__(self, random: JavaRandom, brokers: Iterable[UsableBroker]) -> None:
        self.random = random
        # a HashMap<Optional<String>, Rack>: its iteration order decides which rack draws first
        self.racks: JavaHashMap[str | None, _Rack] = JavaHashMap(_rack_hash)
        names: list[str | None] = []
        total = unfenced = 0
        for broker in brokers:
            rack = self.racks.get(broker.rack)
            if rack is None:
                names.append(broker.rack)
                rack = _Rack()
                self.racks.put(broker.rack, rack)
            if broker.fenced:
                rack.fenced.brokers.append(broker.id)
            else:
                unfenced += 1
                rack.unfenced.brokers.append(broker.id)
            total += 1
        for _, rack in self.racks.items():
            rack.initialize(random)
        names.sort(key=_rack_order)
        self.names = names
        self.total = total
        self.unfenced = unfenced
        self.epoch = 0
        self.offset = random.next_int(len(names)) if names else 0

    def shuffle(self) -> None:
        java_shuffle(self.names, self.random)
        for _, rack in self.racks.items():
            rack.shuffle(self.random)

    def place(self, replication_factor: int) -> list[int]:
        if self.epoch == self.unfenced and self.unfenced > 1:
            self.shuffle()
            self.epoch = 0
        names = self.names
        count = len(names)
        if self.offset == count:
            self.offset = 0
        first = self.offset
        leader = _NO_BROKER
        for _ in range(count):  # an unfenced broker exists, so some rack still has one this epoch
            leader = self.racks[names[first]].unfenced.next(self.epoch)
            if leader >= 0:
                break
            first = first + 1 if first + 1 < count else 0
        if leader < 0:
            raise AssertionError("StripedReplicaPlacer: no unfenced broker left in this epoch")
        brokers = [leader]
        index = self.offset
        for _ in range(1, replication_factor):
            broker = _NO_BROKER
            # one round of the racks (and the leader's skip) finds a broker if any is left; Kafka loops
            # unbounded, kgroup stops with an error rather than hang
            for _attempt in range(count + 1):
                if index == first:
                    first = -1  # the leader's rack is skipped once, the first time round
                else:
                    broker = self.racks[names[index]].next(self.epoch)
                index = index + 1 if index + 1 < count else 0
                if broker >= 0:
                    break
            if broker < 0:
                raise AssertionError("StripedReplicaPlacer: fewer brokers than the replication factor")
            brokers.append(broker)
        self.epoch += 1
        self.offset += 1
        return brokers


class StripedReplicaPlacer:
    """``new StripedReplicaPlacer(random)``: one placer, one ``Random`` for every topic it places (as a
    controller keeps one for its lifetime)."""

    def __init__(self, random: JavaRandom) -> None:
        self.random = random

    def place(
        self, brokers: Sequence[UsableBroker], partitions: int, replication_factor: int
    ) -> list[list[int]]:
        """The replicas of partitions ``0 .. partitions - 1`` (the leader first), from the usable
        ``brokers`` in the order the controller's ``ClusterDescriber`` lists them.

        Raises :class:`InvalidReplicationFactor` with Kafka's message when the replication factor is
        not positive, every broker is fenced, or there are fewer brokers than replicas — after the
        random draws Kafka makes before it checks."""
        racks = _RackList(self.random, brokers)
        if replication_factor <= 0:
            raise InvalidReplicationFactor(
                f"Invalid replication factor {replication_factor}: the replication factor must be positive."
            )
        if racks.unfenced == 0:
            raise InvalidReplicationFactor(
                "All brokers are currently fenced, or have all their log directories cordoned."
            )
        if replication_factor > racks.total:
            raise InvalidReplicationFactor(
                f"The target replication factor of {replication_factor} cannot be reached because only "
                f"{racks.total} broker(s) are registered or some brokers have all their log directories "
                "cordoned."
            )
        return [racks.place(replication_factor) for _ in range(partitions)]
