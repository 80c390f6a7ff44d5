"""The group leader's whole path: the members' subscription bytes in, their assignment bytes out.

A consumer group's leader gets every member's ``ConsumerProtocolSubscription`` bytes from JoinGroup,
runs the assignor and sends each member its ``ConsumerProtocolAssignment`` bytes in SyncGroup (Kafka's
``ConsumerCoordinator.onLeaderElected``: ``deserializeSubscription``, ``assign``,
``serializeAssignment``). This module is that path, built so that nothing is made per partition when
the answer is only encoded:

* :func:`members_from_subscriptions` decodes each distinct subscription once — members of a group
  usually send the very same bytes, and then share one decoded value (and one topic tuple, which the
  fast assignors notice by identity);
* :func:`encode_assignments` encodes a fast assignor's unread answers (flat partition numbers) in one
  numba kernel (:mod:`kgroup.assignors.fast.assignment_bytes`), and large plain lists too, after
  turning them into (topic, number) arrays at C speed; small ones go through
  :func:`~kgroup.wire.consumer_protocol.encode_assignment` — the same bytes every way;
* :func:`assign_subscriptions` is the three steps together. kgroup's member
  (:mod:`kgroup.member.leader`) runs the same steps, with Kafka's checks between them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from operator import itemgetter

import numpy as np

from kgroup.assignors.api import AssignmentRequest, Assignor
from kgroup.assignors.fast.partition_list import FlatPartitionList, TopicTable
from kgroup.javacompat import hashmap_iteration_order
from kgroup.messages import ConsumerAssignment, ConsumerSubscription
from kgroup.model import Member, TopicMetadata, TopicPartition
from kgroup.wire.consumer_protocol import (
    ASSIGNMENT_VERSION,
    _check_encode_version,
    decode_subscription_sharing,
    encode_assignment,
)

__all__ = [
    "VECTOR_MIN_PARTITIONS",
    "assign_subscriptions",
    "encode_assignments",
    "members_from_subscriptions",
]

_topic_of = itemgetter(0)
_partition_of = itemgetter(1)


def members_from_subscriptions(
    subscriptions: Iterable[tuple[str, bytes]],
    group_instance_ids: Mapping[str, str | None] | None = None,
) -> list[Member]:
    """``(member id, subscription bytes)`` pairs, in JoinGroup response order, as the assignor's
    members; equal bytes are decoded once, small ones through the codec's memo and each topic name
    of larger ones once for the whole group
    (:func:`~kgroup.wire.consumer_protocol.decode_subscription_sharing`; :class:`~kgroup.model.PeerError`
    on bytes that are not a consumer subscription)."""
    decoded: dict[bytes, ConsumerSubscription] = {}
    names: dict[bytes, str] = {}  # topic names, decoded once for the whole group
    out: list[Member] = []
    for member_id, data in subscriptions:
        data = bytes(data)
        sub = decoded.get(data)
        if sub is None:
            sub = decoded[data] = decode_subscription_sharing(data, names)
        out.append(
            Member(
                member_id=member_id,
                topics=tuple(sub.topics),
                owned=tuple(sub.owned_partitions),
                generation=sub.generation_id,
                group_instance_id=group_instance_ids.get(member_id) if group_instance_ids else None,
                rack_id=sub.rack_id,
                user_data=sub.user_data,
            )
        )
    return out


#: from this many partitions in plain lists on, they are encoded by the kernel too (below it the
#: object path is as fast and needs no numba)
VECTOR_MIN_PARTITIONS = 5_000
_JAVA_INT_MIN, _JAVA_INT_MAX = -(2**31), 2**31 - 1


def _ranked(lists: Sequence[Sequence[TopicPartition]]) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
    """Plain lists of ``TopicPartition`` as (topic rank, number) arrays over their distinct topics,
    each pass over the partitions at C speed; ``None`` when anything is unusual (not exactly
    ``TopicPartition``s of a ``str`` and an ``int`` in Java's range): the object path decides then."""
    every = list(chain.from_iterable(lists))
    if set(map(type, every)) != {TopicPartition}:
        return None
    topics = list(map(_topic_of, every))
    numbers_list = list(map(_partition_of, every))
    if set(map(type, topics)) != {str} or set(map(type, numbers_list)) != {int}:
        return None
    if min(numbers_list) < _JAVA_INT_MIN or max(numbers_list) > _JAVA_INT_MAX:
        return None
    names = list(dict.fromkeys(topics))
    rank = {name: i for i, name in enumerate(names)}
    ranks = np.fromiter(map(rank.__getitem__, topics), dtype=np.int64, count=len(topics))
    numbers = np.array(numbers_list, dtype=np.int64)
    return ranks, numbers, names


def encode_assignments(
    result: Mapping[str, Sequence[TopicPartition]],
    member_ids: Sequence[str],
    version: int = ASSIGNMENT_VERSION,
) -> list[bytes]:
    """The ``ConsumerProtocolAssignment`` bytes (no user data) of each of ``member_ids``' partitions in
    ``result``: exactly ``encode_assignment(ConsumerAssignment(tuple(result[m])), version)``, without
    building the objects of a fast assignor's unread lists, and — from
    :data:`VECTOR_MIN_PARTITIONS` on — encoding plain lists of partitions in one kernel as well."""
    version = _check_encode_version(version, ASSIGNMENT_VERSION, "assignment")
    out: list[bytes | None] = [None] * len(member_ids)
    # unread flat lists, grouped by their topic table (one per assignment)
    by_table: dict[int, tuple[TopicTable, list[int], list[np.ndarray]]] = {}
    plain: list[int] = []
    for i, member_id in enumerate(member_ids):
        partitions = result[member_id]
        unread = partitions.unread() if isinstance(partitions, FlatPartitionList) else None
        if unread is None:
            plain.append(i)
            continue
        flat, table = unread
        entry = by_table.setdefault(id(table), (table, [], []))
        entry[1].append(i)
        entry[2].append(flat)
    if by_table:
        from kgroup.assignors.fast.assignment_bytes import encode_flat_assignments

        for table, positions, flats in by_table.values():
            starts = np.zeros(len(flats) + 1, dtype=np.int64)
            np.cumsum([f.size for f in flats], out=starts[1:])
            flat = np.concatenate(flats)
            encoded = encode_flat_assignments(flat, starts, table.names, table.bases, version)
            for position, data in zip(positions, encoded, strict=True):
                out[position] = data
    lists = [result[member_ids[i]] for i in plain]
    ranked = _ranked(lists) if sum(map(len, lists)) >= VECTOR_MIN_PARTITIONS else None
    if ranked is not None:
        from kgroup.assignors.fast.assignment_bytes import encode_ranked_assignments

        ranks, numbers, names = ranked
        starts = np.zeros(len(lists) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, lists), dtype=np.int64, count=len(lists)), out=starts[1:])
        for position, data in zip(plain, encode_ranked_assignments(ranks, numbers, starts, names, version),
                                  strict=True):
            out[position] = data
    else:
        for position, partitions in zip(plain, lists, strict=True):
            out[position] = encode_assignment(ConsumerAssignment(partitions=tuple(partitions)), version)
    return [data for data in out if data is not None]


def assign_subscriptions(
    assignor: Assignor,
    subscriptions: Sequence[tuple[str, bytes]],
    topics: Mapping[str, TopicMetadata],
    *,
    prefer_rack_aware_logic: bool = False,
    version: int = ASSIGNMENT_VERSION,
) -> list[tuple[str, bytes]]:
    """The leader's whole path: every member's assignment bytes, in Kafka's ``HashMap`` order (the
    order ``onLeaderElected`` puts them into SyncGroup), from ``(member id, subscription bytes)``
    in JoinGroup response order."""
    members = members_from_subscriptions(subscriptions)
    result = assignor.assign(
        AssignmentRequest(members=members, topics=topics, prefer_rack_aware_logic=prefer_rack_aware_logic)
    )
    order = hashmap_iteration_order(result.keys())
    return list(zip(order, encode_assignments(result, order, version), strict=True))
