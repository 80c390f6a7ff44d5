"""Replica placement at topic creation: Kafka 4.4.0's rule, the ZooKeeper era's, and the seeds'.

* :func:`assign_replicas_striped` — Kafka 4.4.0's: a KRaft controller's ``StripedReplicaPlacer``
  (:mod:`kgroup.partitioning.striped`) with a seeded ``java.util.Random``: racks striped, fenced
  brokers last.
* :func:`assign_replicas` — the ZooKeeper era's ``AdminUtils.assignReplicasToBrokers``
  (``org.apache.kafka.admin.AdminUtils`` in Kafka 4.0's ``server-common``, the same algorithm as the
  old Scala ``kafka.admin.AdminUtils``; Kafka 4.4.0 no longer has it): rack-unaware round robin from a
  start index with an increasing follower shift, or, when every broker has a rack, the same over a
  rack-alternated broker list with followers steered onto racks not yet used.
* :func:`assign_replicas_seed_rule` — the rule the seed articles describe: sort the brokers, partition
  ``i`` leads on broker ``i mod n`` and its replica ``j`` sits on broker ``(i + j) mod n``.

Pure: every random draw comes from an injected generator (a seeded :class:`JavaRandom` for Kafka
4.4.0's rule, a :class:`Random` for ``AdminUtils``' start index).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from random import Random

from kgroup.javacompat import JavaRandom, java_string_key
from kgroup.model import KgroupError
from kgroup.partitioning.striped import StripedReplicaPlacer, UsableBroker, controller_broker_order

__all__ = [
    "Broker",
    "Placement",
    "assign_replicas",
    "assign_replicas_seed_rule",
    "assign_replicas_striped",
    "rack_alternated_brokers",
]


@dataclass(frozen=True, slots=True)
class Broker:
    """A broker id and, optionally, its rack (``broker.rack``)."""

    id: int
    rack: str | None = None


#: Java's Integer.MAX_VALUE: broker ids and partition counts are ints in Kafka
JAVA_INT_MAX = 2**31 - 1

#: partition id -> replica broker ids; the first replica is the preferred leader.
Placement = dict[int, list[int]]


def _brokers(brokers: Iterable[Broker | int]) -> list[Broker]:
    out = [b if isinstance(b, Broker) else Broker(int(b)) for b in brokers]
    for b in out:
        # a KRaft broker's node.id is a Java int and must be 0 or more (KafkaConfig refuses a negative one)
        if not 0 <= b.id <= JAVA_INT_MAX:
            raise KgroupError(
                f"brokers: broker id {b.id} is not a Kafka node id; give ids from 0 to {JAVA_INT_MAX:,}"
            )
    seen: set[int] = set()
    repeated: set[int] = set()
    for b in out:
        (repeated if b.id in seen else seen).add(b.id)
    duplicates = sorted(repeated)
    if duplicates:
        listed = ", ".join(str(d) for d in duplicates)
        raise KgroupError(f"brokers: broker id {listed} listed more than once; list each broker once")
    return out


def _validate_counts(brokers: Sequence[Broker], partitions: int) -> None:
    """At least one broker, and a partition count Java's int holds that is above 0."""
    if not brokers:
        raise KgroupError("brokers: none given; list at least one broker id")
    if partitions <= 0:
        raise KgroupError(f"partitions: {partitions}; the number of partitions must be larger than 0")
    if partitions > JAVA_INT_MAX:
        raise KgroupError(f"partitions: {partitions} does not fit Java's int; give at most {JAVA_INT_MAX:,}")


def _validate(brokers: Sequence[Broker], partitions: int, replication_factor: int) -> None:
    # Same checks, same order as AdminUtils.assignReplicasToBrokers.
    _validate_counts(brokers, partitions)
    if replication_factor <= 0:
        raise KgroupError(
            f"replication_factor: {replication_factor}; the replication factor must be larger than 0"
        )
    if replication_factor > len(brokers):
        raise KgroupError(
            f"replication_factor: {replication_factor} larger than available brokers: {len(brokers)}; "
            f"lower the replication factor or add brokers"
        )


def assign_replicas_seed_rule(
    brokers: Iterable[Broker | int], partitions: int, replication_factor: int
) -> Placement:
    """The seeds' rule: brokers sorted by id; partition ``i`` → broker ``i mod n``; replica ``j`` of
    partition ``i`` → broker ``(i + j) mod n``. Racks play no part."""
    broker_list = _brokers(brokers)
    _validate(broker_list, partitions, replication_factor)
    ids = sorted(b.id for b in broker_list)
    n = len(ids)
    return {i: [ids[(i + j) % n] for j in range(replication_factor)] for i in range(partitions)}


def assign_replicas_striped(
    brokers: Iterable[Broker | int],
    partitions: int,
    replication_factor: int,
    *,
    fenced: Iterable[int] = (),
    seed: int = 0,
    random: JavaRandom | None = None,
) -> Placement:
    """Kafka 4.4.0's placement of a new topic: ``StripedReplicaPlacer.place`` as a KRaft controller
    calls it, with a ``java.util.Random(seed)`` (or the given ``random``, to go on from earlier topics as
    a controller's one generator does).

    ``brokers`` are taken in the order they registered with the controller (its ``ClusterDescriber``
    lists them in ``HashMap`` order: ascending ids for small clusters); a broker without a rack is in
    the "no rack" rack, which may sit beside named ones. ``fenced`` brokers get replicas only when the
    unfenced ones do not suffice, and never a leader. Kafka's controller draws its seed at random
    (``new Random()``); a seed here makes the answer repeatable.

    Raises :class:`KgroupError` for no brokers, duplicate ids, ``partitions <= 0``, a fenced id that is
    not a broker, and (:class:`~kgroup.partitioning.striped.InvalidReplicationFactor`, Kafka's message)
    a replication factor that is not positive or above the broker count, or every broker fenced.
    """
    broker_list = _brokers(brokers)
    _validate_counts(broker_list, partitions)
    fenced_ids = set(fenced)
    unknown = sorted(fenced_ids - {b.id for b in broker_list})
    if unknown:
        raise KgroupError(f"fenced: broker {unknown[0]} is not one of the brokers; fence only listed brokers")
    usable = controller_broker_order(UsableBroker(b.id, b.rack, b.id in fenced_ids) for b in broker_list)
    placer = StripedReplicaPlacer(JavaRandom(seed) if random is None else random)
    return dict(enumerate(placer.place(usable, partitions, replication_factor)))


def _replica_index(first_replica_index: int, second_replica_shift: int, replica_index: int, n: int) -> int:
    shift = 1 + (second_replica_shift + replica_index) % (n - 1)
    return (first_replica_index + shift) % n


def rack_alternated_brokers(broker_racks: Mapping[int, str]) -> list[int]:
    """``AdminUtils.getRackAlternatedBrokerList``: racks in Java string order, brokers of a rack by
    id, then one broker from each rack in turn (racks that run out are skipped)."""
    by_rack: dict[str, list[int]] = {}
    for broker_id, rack in broker_racks.items():
        by_rack.setdefault(rack, []).append(broker_id)
    racks = sorted(by_rack, key=java_string_key)
    queues = [sorted(by_rack[r]) for r in racks]
    result: list[int] = []
    depth = 0
    while len(result) < len(broker_racks):
        for queue in queues:
            if depth < len(queue):
                result.append(queue[depth])
        depth += 1
    return result


def assign_replicas(
    brokers: Iterable[Broker | int],
    partitions: int,
    replication_factor: int,
    *,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rng: Random | None = None,
) -> Placement:
    """``AdminUtils.assignReplicasToBrokers(brokers, partitions, rf, fixedStartIndex, startPartitionId)``.

    Brokers are taken in the given order (Kafka does not sort them on the rack-unaware path). When
    ``fixed_start_index < 0`` the start index and the follower shift are each drawn as
    ``rng.randrange(number of brokers)`` (Kafka uses ``Random.nextInt``); pass a seeded ``rng`` for a
    repeatable answer. Partition ids start at ``max(0, start_partition_id)``.

    Raises :class:`KgroupError` for no brokers, duplicate ids, ``partitions <= 0``,
    ``replication_factor <= 0`` or above the broker count, and brokers mixing racks and no racks
    (Kafka: ``AdminOperationException``).
    """
    broker_list = _brokers(brokers)
    _validate(broker_list, partitions, replication_factor)
    if fixed_start_index < 0 and rng is None:
        raise KgroupError(
            "fixed_start_index: negative means a random start; pass rng=Random(seed) or a start >= 0"
        )
    with_rack = [b for b in broker_list if b.rack is not None]
    if with_rack and len(with_rack) != len(broker_list):
        missing = ", ".join(str(b.id) for b in broker_list if b.rack is None)
        raise KgroupError(
            f"brokers: not all brokers have rack information (no rack: {missing}); "
            f"give every broker a rack or none of them"
        )
    slots = _leader_slots(len(broker_list), partitions, fixed_start_index, start_partition_id, rng)
    if not with_rack:
        return _rack_unaware([b.id for b in broker_list], slots, replication_factor)
    racks = {b.id: b.rack for b in broker_list if b.rack is not None}
    return _rack_aware(racks, slots, replication_factor)


def _start(fixed_start_index: int, n: int, rng: Random | None) -> int:
    if fixed_start_index >= 0:
        return fixed_start_index
    assert rng is not None
    return rng.randrange(n)


def _leader_slots(
    n: int, partitions: int, fixed_start_index: int, start_partition_id: int, rng: Random | None
) -> list[tuple[int, int, int]]:
    """Each new partition's id, its leader's index in the broker list and the follower shift, as both of
    Kafka's ``AdminUtils`` placements walk them: the start index and the first shift fixed or drawn (in
    that order, before anything else), the leaders round the list from the start index, the shift
    growing each time they wrap around it."""
    start_index = _start(fixed_start_index, n, rng)
    shift = _start(fixed_start_index, n, rng)
    slots: list[tuple[int, int, int]] = []
    for partition_id in range(max(0, start_partition_id), max(0, start_partition_id) + partitions):
        if partition_id > 0 and partition_id % n == 0:
            shift += 1
        slots.append((partition_id, (partition_id + start_index) % n, shift))
    return slots


def _rack_unaware(ids: list[int], slots: list[tuple[int, int, int]], replication_factor: int) -> Placement:
    n = len(ids)
    out: Placement = {}
    for partition_id, first, shift in slots:
        replicas = [ids[first]]
        replicas.extend(ids[_replica_index(first, shift, j, n)] for j in range(replication_factor - 1))
        out[partition_id] = replicas
    return out


def _rack_aware(
    racks: dict[int, str], slots: list[tuple[int, int, int]], replication_factor: int
) -> Placement:
    num_racks = len(set(racks.values()))
    arranged = rack_alternated_brokers(racks)
    n = len(arranged)
    out: Placement = {}
    for partition_id, first, shift in slots:
        leader = arranged[first]
        replicas = [leader]
        racks_used = {racks[leader]}
        brokers_used = {leader}
        k = 0
        for _j in range(replication_factor - 1):
            while True:
                broker = arranged[_replica_index(first, shift * num_racks, k, n)]
                rack = racks[broker]
                k += 1
                # Take it unless its rack already holds a replica while some rack holds none, or
                # the broker itself already holds one while some broker holds none.
                if (rack not in racks_used or len(racks_used) == num_racks) and (
                    broker not in brokers_used or len(brokers_used) == n
                ):
                    replicas.append(broker)
                    racks_used.add(rack)
                    brokers_used.add(broker)
                    break
        out[partition_id] = replicas
    return out
