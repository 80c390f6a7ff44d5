"""One-off group requests outside a running member: commit offsets as a given member, describe a
consumer group (KIP-848's ConsumerGroupDescribe).

Kafka's coordinator checks an OffsetCommit by member id and generation, not by connection, so any
process that knows a member's id and generation can commit for it (the Spark source's query
listener commits a finished batch this way). A stale generation is refused by the coordinator
(``ILLEGAL_GENERATION`` / ``UNKNOWN_MEMBER_ID``) and nothing is stored.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

from kgroup.client.connection import BrokerConnection
from kgroup.client.consumer import parse_bootstrap
from kgroup.client.security import ClientSecurity
from kgroup.client.translate import from_wire, to_wire
from kgroup.client.versions import negotiate, offsets_version
from kgroup.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedConsumerGroup,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
)
from kgroup.model import ErrorCode, TopicPartition

__all__ = ["commit_as_member", "describe_consumer_group"]

#: FindCoordinator's answers while the offsets topic is being made or loaded
_NOT_READY = (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)


async def _open(
    host: str, port: int, timeout_s: float, security: ClientSecurity | None
) -> tuple[BrokerConnection, dict[int, int]]:
    connection = BrokerConnection(host, port, client_id="kgroup-committer", security=security)
    await connection.open(timeout_s)
    try:
        return connection, await negotiate(connection, timeout_s)
    except BaseException:
        connection.close()
        raise


async def _open_coordinator(
    bootstrap: str, group_id: str, timeout_s: float, security: ClientSecurity | None
) -> tuple[BrokerConnection, dict[int, int]] | None:
    """A connection to ``group_id``'s coordinator (found through the first bootstrap broker), or
    ``None`` when FindCoordinator answers an error."""
    host, port = parse_bootstrap(bootstrap)[0]
    connection, versions = await asyncio.wait_for(_open(host, port, timeout_s, security), timeout_s)
    try:
        find = FindCoordinatorRequest(group_id)
        deadline = time.monotonic() + timeout_s
        while True:
            raw = await connection.request(to_wire(find, versions[10]), timeout_s=timeout_s)
            found = from_wire(find, raw)
            assert isinstance(found, FindCoordinatorResponse)
            # a cluster's first FindCoordinator makes its offsets topic (COORDINATOR_NOT_AVAILABLE):
            # asked again after Kafka's retry.backoff.ms
            if found.error_code not in _NOT_READY or time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.1)
        if found.error_code is not ErrorCode.NONE:
            return None
    finally:
        connection.close()
    return await asyncio.wait_for(_open(found.host, found.port, timeout_s, security), timeout_s)


async def describe_consumer_group(
    bootstrap: str, group_id: str, timeout_s: float = 30.0, *, security: ClientSecurity | None = None
) -> DescribedConsumerGroup:
    """ConsumerGroupDescribe of one group at its coordinator (``COORDINATOR_NOT_AVAILABLE`` in the
    answer when no coordinator was found)."""
    opened = await _open_coordinator(bootstrap, group_id, timeout_s, security)
    if opened is None:
        return DescribedConsumerGroup(ErrorCode.COORDINATOR_NOT_AVAILABLE, group_id)
    coordinator, versions = opened
    try:
        request = ConsumerGroupDescribeRequest((group_id,))
        raw = await coordinator.request(to_wire(request, versions[69]), timeout_s=timeout_s)
        answer = from_wire(request, raw)
        assert isinstance(answer, ConsumerGroupDescribeResponse)
        return answer.groups[0]
    finally:
        coordinator.close()


async def commit_as_member(
    bootstrap: str,
    group_id: str,
    member_id: str,
    generation: int,
    group_instance_id: str | None,
    offsets: Mapping[TopicPartition, int],
    timeout_s: float = 30.0,
    *,
    security: ClientSecurity | None = None,
) -> bool:
    """Commit ``offsets`` for ``member_id`` of ``generation``; True when every partition was stored."""
    opened = await _open_coordinator(bootstrap, group_id, timeout_s, security)
    if opened is None:
        return False
    coordinator, versions = opened
    try:
        request = OffsetCommitRequest(
            group_id=group_id,
            generation_id=generation,
            member_id=member_id,
            offsets=tuple(OffsetCommitPartition(tp, off) for tp, off in sorted(offsets.items())),
            group_instance_id=group_instance_id,
        )
        # names its topics (v9 at most), as a classic consumer does
        version = offsets_version(versions[8], (), None)
        raw = await coordinator.request(to_wire(request, version), timeout_s=timeout_s)
        answer = from_wire(request, raw)
        assert isinstance(answer, OffsetCommitResponse)
        return all(error is ErrorCode.NONE for _, error in answer.results)
    finally:
        coordinator.close()
