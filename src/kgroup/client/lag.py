"""A consumer group's lag as ``kafka-consumer-groups.sh --describe --group G`` shows it.

Per topic-partition: the committed offset (CURRENT-OFFSET), the log end offset (LOG-END-OFFSET),
their difference (LAG) and the member that owns the partition (CONSUMER-ID, HOST, CLIENT-ID). The
rows are Kafka's ``ConsumerGroupCommand.collectGroupOffsets``:

* first the members that own partitions, most partitions first (ties keep the coordinator's member
  order), each member's partitions sorted by topic and partition;
* then the partitions with a committed offset that no member owns, with ``None`` (Kafka's ``-``)
  for the owner;
* the lag is ``None`` where no offset is committed or no log end offset is known.

Owners come from the coordinator: ConsumerGroupDescribe (KIP-848) for a consumer-protocol group,
DescribeGroups for a classic one (its members' assignments are only given while the group is
Stable, so a rebalancing or empty classic group shows no owners), as Kafka's Admin client asks.
Committed offsets come from OffsetFetch, log end offsets from ListOffsets (latest,
read_uncommitted) at each partition's leader.

:func:`lag_rows` is the pure part; :func:`describe_group_lag` asks a cluster.

A share group (KIP-932) has no committed offsets: its lag is ``kafka-share-groups.sh --describe
--offsets``' — per partition the group has share state for, the share-partition start offset
(START-OFFSET) and the lag DescribeShareGroupOffsets v1 answers (the records not yet delivered to
completion: end offset − start offset − records completed beyond it), sorted by topic and partition
(:func:`share_lag_rows`, :class:`ShareGroupLag`). ``describe_group_lag`` finds one when the consumer
and classic describes do not know the group and ShareGroupDescribe does.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from kio.index import load_request_schema

from kgroup.client.connection import BrokerConnection, ConnectionLost
from kgroup.client.consumer import parse_bootstrap
from kgroup.client.probe import check_listener
from kgroup.client.security import ClientSecurity, SaslAuthenticationError
from kgroup.client.translate import from_wire, to_wire
from kgroup.client.versions import broker_ranges, negotiate, offsets_version
from kgroup.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from kgroup.model import ErrorCode, KgroupError, PeerError, TopicPartition
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.codec import build, error_from_wire

#: FindCoordinator answers while the offsets topic is being made or loaded: asked again
_COORDINATOR_NOT_READY = (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
#: ``retry.backoff.ms``: Kafka's admin client's default
_RETRY_BACKOFF_S = 0.1

__all__ = [
    "GroupLag",
    "LagRow",
    "MemberOwnership",
    "ShareGroupLag",
    "ShareLagRow",
    "describe_group_lag",
    "lag_rows",
    "share_lag_rows",
]

LATEST = -1  # ListOffsets' timestamp for the log end offset


@dataclass(frozen=True, slots=True)
class MemberOwnership:
    """One member as the coordinator describes it, with the partitions it owns."""

    member_id: str
    client_id: str
    host: str
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class LagRow:
    """One line of ``kafka-consumer-groups.sh --describe`` (``None`` where Kafka prints ``-``)."""

    topic: str
    partition: int
    current_offset: int | None
    log_end_offset: int | None
    lag: int | None
    consumer_id: str | None
    host: str | None
    client_id: str | None


@dataclass(frozen=True, slots=True)
class GroupLag:
    group_id: str
    #: Kafka's state name: Empty, Stable, PreparingRebalance, CompletingRebalance (classic);
    #: Empty, Assigning, Reconciling, Stable (consumer)
    state: str
    #: ``classic`` or ``consumer`` (the group's protocol)
    group_type: str
    rows: tuple[LagRow, ...]

    def to_json(self) -> dict[str, Any]:
        return _lag_json(self.group_id, self.state, self.group_type, self.rows)


@dataclass(frozen=True, slots=True)
class ShareLagRow:
    """One line of ``kafka-share-groups.sh --describe --offsets`` (``None`` where Kafka prints ``-``)."""

    topic: str
    partition: int
    start_offset: int | None
    leader_epoch: int | None
    lag: int | None


@dataclass(frozen=True, slots=True)
class ShareGroupLag:
    """A share group's offsets as ``kafka-share-groups.sh --describe --offsets`` shows them."""

    group_id: str
    #: Kafka's state name: Empty, Stable
    state: str
    rows: tuple[ShareLagRow, ...]
    group_type: str = "share"

    def to_json(self) -> dict[str, Any]:
        return _lag_json(self.group_id, self.state, self.group_type, self.rows)


def _lag_json(
    group_id: str, state: str, group_type: str, rows: Sequence[LagRow | ShareLagRow]
) -> dict[str, Any]:
    """``kgroup lag --json``'s form of a group's lag, whatever its type: its rows as their fields."""
    return {
        "group": group_id,
        "state": state,
        "type": group_type,
        "partitions": [asdict(row) for row in rows],
    }


def share_lag_rows(partitions: Sequence[tuple[str, int, int, int, int]]) -> list[ShareLagRow]:
    """Kafka's rows from DescribeShareGroupOffsets' (topic, partition, start offset, leader epoch,
    lag): sorted by topic then partition; a partition with no start offset (negative) is all ``-``
    (the Admin client's ``ListShareGroupOffsetsHandler`` maps it to ``null``), a negative leader
    epoch or lag is ``-``."""
    rows = []
    for topic, partition, start, leader_epoch, lag in partitions:
        if start < 0:
            rows.append(ShareLagRow(topic, partition, None, None, None))
        else:
            rows.append(
                ShareLagRow(
                    topic,
                    partition,
                    start,
                    leader_epoch if leader_epoch >= 0 else None,
                    lag if lag >= 0 else None,
                )
            )
    return sorted(rows, key=lambda r: (r.topic, r.partition))


def lag_rows(
    members: Sequence[MemberOwnership],
    committed: Mapping[TopicPartition, int],
    log_end: Mapping[TopicPartition, int | None],
) -> list[LagRow]:
    """Kafka's rows: owned partitions by member (most first), then committed partitions nobody owns."""

    def row(tp: TopicPartition, owner: MemberOwnership | None) -> LagRow:
        offset = committed.get(tp)
        end = log_end.get(tp)
        lag = end - offset if offset is not None and offset != -1 and end is not None else None
        return LagRow(
            tp.topic,
            tp.partition,
            offset,
            end,
            lag,
            owner.member_id if owner else None,
            owner.host if owner else None,
            owner.client_id if owner else None,
        )

    rows: list[LagRow] = []
    owned: set[TopicPartition] = set()
    # Java's List.sort is stable: equal sizes keep the describe order
    for member in sorted((m for m in members if m.partitions), key=lambda m: -len(m.partitions)):
        owned.update(member.partitions)
        rows.extend(row(tp, member) for tp in sorted(set(member.partitions)))
    rows.extend(row(tp, None) for tp in sorted(tp for tp in committed if tp not in owned))
    return rows


# --- asking a cluster ------------------------------------------------------------------------------


async def _connect(
    host: str, port: int, timeout_s: float, security: ClientSecurity
) -> tuple[BrokerConnection, dict[int, int]]:
    connection = BrokerConnection(host, port, client_id="kgroup-lag", security=security)
    try:
        await asyncio.wait_for(connection.open(timeout_s), timeout_s)
        return connection, await negotiate(connection, timeout_s)
    except BaseException:
        connection.close()
        raise


def _version(versions: Mapping[int, int], api_key: int, name: str, where: str) -> int:
    version = versions.get(api_key)
    if version is None:
        raise KgroupError(
            f"bootstrap servers: the broker at {where} supports no {name} version kgroup speaks"
        )
    return version


async def _metadata(connection: BrokerConnection, versions: Mapping[int, int], timeout_s: float) -> Any:
    version = _version(versions, ApiKey.METADATA, "Metadata", f"{connection.host}:{connection.port}")
    return await connection.request(metadata_request(version), timeout_s=timeout_s)


# the requests, one description for every version: build() drops the fields a version does not have


def metadata_request(version: int) -> Any:
    """Metadata of every topic, creating none."""
    return build(
        load_request_schema(ApiKey.METADATA, version),
        {
            "topics": None,
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,  # v8-v10
            "include_topic_authorized_operations": False,
        },
    )


def describe_groups_request(version: int, group_id: str) -> Any:
    return build(
        load_request_schema(ApiKey.DESCRIBE_GROUPS, version),
        {"groups": (group_id,), "include_authorized_operations": False},
    )


def list_offsets_request(version: int, partitions: Mapping[str, Sequence[int]]) -> Any:
    """The log end offsets of ``partitions`` (topic -> partition numbers)."""
    return build(
        load_request_schema(ApiKey.LIST_OFFSETS, version),
        {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": p, "timestamp": LATEST, "current_leader_epoch": -1} for p in ps
                    ],
                }
                for topic, ps in partitions.items()
            ],
            "timeout": datetime.timedelta(seconds=30),  # v10+
        },
    )


async def _describe_classic(
    coordinator: BrokerConnection, versions: Mapping[int, int], group_id: str, timeout_s: float
) -> tuple[str, list[MemberOwnership]] | None:
    """DescribeGroups: the state and (while Stable) each member's decoded assignment; ``None`` when
    the group does not exist."""
    from kgroup.wire.consumer_protocol import decode_assignment
    from kgroup.wire.guard import check_body

    where = f"{coordinator.host}:{coordinator.port}"
    version = _version(versions, ApiKey.DESCRIBE_GROUPS, "DescribeGroups", where)
    body = describe_groups_request(version, group_id)
    response = await coordinator.request(body, timeout_s=timeout_s)
    group = response.groups[0]
    error = error_from_wire(group.error_code)
    if error is ErrorCode.GROUP_ID_NOT_FOUND or (error is ErrorCode.NONE and group.group_state == "Dead"):
        return None
    if error is not ErrorCode.NONE:
        raise KgroupError(f"group: DescribeGroups of {group_id!r} answered {error.name}; try again")
    members: list[MemberOwnership] = []
    for m in group.members:
        partitions: tuple[TopicPartition, ...] = ()
        data = bytes(m.member_assignment)
        if group.protocol_type == "consumer" and data:
            from kio.schema.consumer_protocol_assignment.v3.data import ConsumerProtocolAssignment

            try:
                check_body(ConsumerProtocolAssignment, data, 2)
                partitions = tuple(decode_assignment(data).partitions)
            except PeerError:
                partitions = ()  # bytes a consumer cannot read: no owner shown, as Kafka's admin skips it
        members.append(MemberOwnership(m.member_id, m.client_id, m.client_host, partitions))
    return str(group.group_state), members


async def _describe_consumer(
    coordinator: BrokerConnection, versions: Mapping[int, int], group_id: str, timeout_s: float
) -> tuple[str, list[MemberOwnership]] | None:
    """ConsumerGroupDescribe: ``None`` when it is not a consumer-protocol group (or the broker does
    not speak KIP-848), as Kafka's Admin client then falls back to DescribeGroups."""
    if ApiKey.CONSUMER_GROUP_DESCRIBE not in versions:
        return None
    request = ConsumerGroupDescribeRequest((group_id,))
    body = to_wire(request, versions[ApiKey.CONSUMER_GROUP_DESCRIBE])
    answer = from_wire(request, await coordinator.request(body, timeout_s=timeout_s))
    assert isinstance(answer, ConsumerGroupDescribeResponse)
    group = answer.groups[0]
    if group.error_code is ErrorCode.GROUP_ID_NOT_FOUND:
        return None
    if group.error_code is not ErrorCode.NONE:
        raise KgroupError(
            f"group: ConsumerGroupDescribe of {group_id!r} answered {group.error_code.name}; try again"
        )
    members = [
        MemberOwnership(
            m.member_id,
            m.client_id,
            m.client_host,
            tuple(TopicPartition(t.topic_name, p) for t in m.assignment for p in t.partitions),
        )
        for m in group.members
    ]
    return group.group_state, members


#: the share-group APIs kgroup lag speaks: ShareGroupDescribe v1, DescribeShareGroupOffsets v0-v1
_SHARE_RANGES = {ApiKey.SHARE_GROUP_DESCRIBE: (1, 1), ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: (0, 1)}


async def _share_versions(coordinator: BrokerConnection, timeout_s: float) -> dict[int, int] | None:
    """The versions of the share-group APIs both sides speak, or ``None`` when the broker serves
    neither ShareGroupDescribe nor DescribeShareGroupOffsets at a version kgroup speaks (no share
    groups there)."""
    ranges = await broker_ranges(coordinator, timeout_s)
    chosen: dict[int, int] = {}
    for api, (low, high) in _SHARE_RANGES.items():
        theirs = ranges.get(api)
        if theirs is None or theirs[1] < low or theirs[0] > high:
            return None
        chosen[api] = min(high, theirs[1])
    return chosen


async def _describe_share(
    coordinator: BrokerConnection, versions: Mapping[int, int], group_id: str, timeout_s: float
) -> str | None:
    """ShareGroupDescribe: the share group's state, or ``None`` when there is no share group of
    that id (another kind's group, or none)."""
    body = build(
        load_request_schema(ApiKey.SHARE_GROUP_DESCRIBE, versions[ApiKey.SHARE_GROUP_DESCRIBE]),
        {"group_ids": (group_id,), "include_authorized_operations": False},
    )
    response = await coordinator.request(body, timeout_s=timeout_s)
    group = response.groups[0]
    error = error_from_wire(group.error_code)
    if error is ErrorCode.GROUP_ID_NOT_FOUND:
        return None
    if error is not ErrorCode.NONE:
        raise KgroupError(f"group: ShareGroupDescribe of {group_id!r} answered {error.name}; try again")
    return str(group.group_state)


async def _share_offsets(
    coordinator: BrokerConnection, versions: Mapping[int, int], group_id: str, timeout_s: float
) -> list[tuple[str, int, int, int, int]]:
    """DescribeShareGroupOffsets of every partition the group has share state for (no topics named,
    as the Admin client's ``listShareGroupOffsets`` asks): (topic, partition, start offset, leader
    epoch, lag — −1 before v1)."""
    body = build(
        load_request_schema(
            ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, versions[ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS]
        ),
        {"groups": [{"group_id": group_id, "topics": None}]},
    )
    response = await coordinator.request(body, timeout_s=timeout_s)
    group = response.groups[0]
    error = error_from_wire(group.error_code)
    if error is not ErrorCode.NONE:
        raise KgroupError(
            f"group: DescribeShareGroupOffsets of {group_id!r} answered {error.name}; try again"
        )
    out = []
    for topic in group.topics:
        for p in topic.partitions:
            if error_from_wire(p.error_code) is not ErrorCode.NONE:
                out.append((str(topic.topic_name), int(p.partition_index), -1, -1, -1))
                continue
            lag = int(getattr(p, "lag", -1))
            out.append(
                (str(topic.topic_name), int(p.partition_index), int(p.start_offset), int(p.leader_epoch), lag)
            )
    return out


async def _log_end_offsets(
    metadata: Any, partitions: Sequence[TopicPartition], timeout_s: float, security: ClientSecurity
) -> dict[TopicPartition, int | None]:
    """ListOffsets (latest) of each partition at its leader; ``None`` where it has no leader or the
    answer is an error (Kafka prints ``-``)."""
    addresses = {int(b.node_id): (b.host, int(b.port)) for b in metadata.brokers}
    leaders: dict[TopicPartition, int] = {}
    for topic in metadata.topics:
        for p in topic.partitions:
            leaders[TopicPartition(topic.name, int(p.partition_index))] = int(p.leader_id)
    by_leader: dict[int, list[TopicPartition]] = {}
    for tp in partitions:
        leader = leaders.get(tp, -1)
        if leader in addresses:
            by_leader.setdefault(leader, []).append(tp)
    ends: dict[TopicPartition, int | None] = dict.fromkeys(partitions)
    for leader, tps in sorted(by_leader.items()):
        host, port = addresses[leader]
        connection, versions = await _connect(host, port, timeout_s, security)
        try:
            where = f"{connection.host}:{connection.port}"
            version = _version(versions, ApiKey.LIST_OFFSETS, "ListOffsets", where)
            grouped: dict[str, list[int]] = {}
            for tp in sorted(tps):
                grouped.setdefault(tp.topic, []).append(tp.partition)
            body = list_offsets_request(version, grouped)
            response = await connection.request(body, timeout_s=timeout_s)
        finally:
            connection.close()
        for topic in response.topics:
            for p in topic.partitions:
                if int(p.error_code) == ErrorCode.NONE:
                    ends[TopicPartition(topic.name, int(p.partition_index))] = int(p.offset)
    return ends


async def _share_lag(coordinator: BrokerConnection, group_id: str, timeout_s: float) -> ShareGroupLag | None:
    """The share group's offsets, or ``None`` when the broker has no share group ``group_id``."""
    versions = await _share_versions(coordinator, timeout_s)
    if versions is None:
        return None
    state = await _describe_share(coordinator, versions, group_id, timeout_s)
    if state is None:
        return None
    partitions = await _share_offsets(coordinator, versions, group_id, timeout_s)
    return ShareGroupLag(group_id, state, tuple(share_lag_rows(partitions)))


async def _coordinator_and_metadata(
    bootstrap_connection: BrokerConnection, versions: Mapping[int, int], group_id: str, timeout_s: float
) -> tuple[FindCoordinatorResponse, Any]:
    find = FindCoordinatorRequest(group_id)
    deadline = time.monotonic() + timeout_s
    while True:
        found = from_wire(
            find, await bootstrap_connection.request(to_wire(find, versions[10]), timeout_s=timeout_s)
        )
        assert isinstance(found, FindCoordinatorResponse)
        # a cluster's first FindCoordinator creates its offsets topic and is answered
        # COORDINATOR_NOT_AVAILABLE: asked again after retry.backoff.ms, as Kafka's admin client does
        if found.error_code not in _COORDINATOR_NOT_READY or time.monotonic() >= deadline:
            break
        await asyncio.sleep(_RETRY_BACKOFF_S)
    if found.error_code is not ErrorCode.NONE:
        raise KgroupError(f"group: no coordinator for {group_id!r} ({found.error_code.name}); try again")
    return found, await _metadata(bootstrap_connection, versions, timeout_s)


async def describe_group_lag(
    bootstrap: str, group_id: str, timeout_s: float = 30.0, *, security: ClientSecurity | None = None
) -> GroupLag | ShareGroupLag:
    """Ask the cluster behind ``bootstrap`` for ``group_id``'s lag (:class:`KgroupError` when the
    group does not exist, no coordinator answers or the broker refuses the authentication).

    A share group (KIP-932) is found when neither ConsumerGroupDescribe nor DescribeGroups knows the
    group and ShareGroupDescribe does: its rows are ``kafka-share-groups.sh --describe --offsets``'
    (:class:`ShareGroupLag`)."""
    security = security or ClientSecurity()
    if not group_id:
        raise KgroupError("group: empty; give the group.id of the consumer group")
    host, port = parse_bootstrap(bootstrap)[0]
    try:
        bootstrap_connection, versions = await _connect(host, port, timeout_s, security)
    except SaslAuthenticationError as exc:
        raise KgroupError(
            f"sasl.password: {host}:{port} refused the authentication ({exc}); check sasl.username, "
            "sasl.password and sasl.mechanism"
        ) from None
    except (OSError, TimeoutError) as exc:
        if isinstance(exc, ConnectionLost):  # it answered, then closed: TLS or SASL it was not given?
            await check_listener(host, port, security)
        raise KgroupError(
            f"bootstrap servers: cannot reach {host}:{port} ({exc or type(exc).__name__}); "
            "is the broker running?"
        ) from None
    try:
        found, metadata = await _coordinator_and_metadata(bootstrap_connection, versions, group_id, timeout_s)
    except ConnectionLost:
        bootstrap_connection.close()
        await check_listener(host, port, security)  # a SASL listener closes at the first request
        raise
    finally:
        bootstrap_connection.close()
    coordinator, coordinator_versions = await _connect(found.host, found.port, timeout_s, security)
    try:
        described = await _describe_consumer(coordinator, coordinator_versions, group_id, timeout_s)
        group_type = "consumer"
        if described is None:
            described = await _describe_classic(coordinator, coordinator_versions, group_id, timeout_s)
            group_type = "classic"
        if described is None:
            share = await _share_lag(coordinator, group_id, timeout_s)
            if share is not None:
                return share
            raise KgroupError(
                f"group: consumer group {group_id!r} does not exist (kgroup lag names only existing groups)"
            )
        state, members = described
        fetch = OffsetFetchRequest(group_id)
        version = offsets_version(coordinator_versions[9], (), None)  # by name (v9 at most)
        fetched = from_wire(fetch, await coordinator.request(to_wire(fetch, version), timeout_s=timeout_s))
        assert isinstance(fetched, OffsetFetchResponse)
        if fetched.error_code is not ErrorCode.NONE:
            raise KgroupError(
                f"group: OffsetFetch of {group_id!r} answered {fetched.error_code.name}; try again"
            )
    finally:
        coordinator.close()
    committed = {
        p.partition: p.committed_offset
        for p in fetched.partitions
        if p.error_code is ErrorCode.NONE and p.committed_offset >= 0
    }
    wanted = sorted({*committed, *(tp for m in members for tp in m.partitions)})
    log_end = await _log_end_offsets(metadata, wanted, timeout_s, security)
    return GroupLag(group_id, state, group_type, tuple(lag_rows(members, committed, log_end)))
