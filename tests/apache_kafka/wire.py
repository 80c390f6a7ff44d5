"""Raw requests for the differential suite: any API, any version, built from plain data, and answers
turned back into plain data (dicts, lists, ints, strings) so two brokers' answers compare with ``==``.

A client library cannot send most wrong requests (a made-up member id, a stale generation, an empty
group id); this sends exactly what the test says, over one TCP connection, one request at a time.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from tests.broker.rawclient import RawClient

from kgroup.wire.codec import build, decode_response, encode_request, request_class, response_class

__all__ = ["Raw", "plain"]

API = {
    "Produce": 0,
    "Fetch": 1,
    "ListOffsets": 2,
    "Metadata": 3,
    "OffsetCommit": 8,
    "OffsetFetch": 9,
    "FindCoordinator": 10,
    "JoinGroup": 11,
    "Heartbeat": 12,
    "LeaveGroup": 13,
    "SyncGroup": 14,
    "DescribeGroups": 15,
    "ListGroups": 16,
    "SaslHandshake": 17,
    "ApiVersions": 18,
    "CreateTopics": 19,
    "DeleteTopics": 20,
    "InitProducerId": 22,
    "AddPartitionsToTxn": 24,
    "AddOffsetsToTxn": 25,
    "EndTxn": 26,
    "TxnOffsetCommit": 28,
    "DescribeConfigs": 32,
    "DeleteGroups": 42,
    "IncrementalAlterConfigs": 44,
    "SaslAuthenticate": 36,
    "CreatePartitions": 37,
    "DescribeTransactions": 65,
    "ListTransactions": 66,
    "ConsumerGroupHeartbeat": 68,
    "ConsumerGroupDescribe": 69,
    "ShareGroupHeartbeat": 76,
    "ShareGroupDescribe": 77,
    "ShareFetch": 78,
    "ShareAcknowledge": 79,
}


def plain(value: Any) -> Any:
    """A kio entity as plain data: error codes as ints, durations as ms, UUIDs as text, bytes kept."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list | frozenset):
        return [plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return int(value.value)
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bool | str | bytes | None):
        return value
    if isinstance(value, int):
        return int(value)
    return value


class Raw:
    """One connection; :meth:`call` sends ``api`` at ``version`` with ``fields`` and returns plain data."""

    def __init__(self, bootstrap: str, timeout_s: float = 15.0) -> None:
        self.client = RawClient(bootstrap, timeout_s)
        self._pending: tuple[int, int] | None = None

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Raw:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, api: str, version: int, fields: Mapping[str, Any] | None = None) -> Any:
        self.send(api, version, fields)
        return self.receive()

    def send(self, api: str, version: int, fields: Mapping[str, Any] | None = None) -> None:
        """Write a request without waiting (a JoinGroup that the coordinator holds, say)."""
        cls = request_class(API[api], version)
        assert cls is not None, f"kio has no {api} v{version}"
        assert self._pending is None, "one request at a time on a Raw connection"
        self.client.correlation += 1
        self.client.send_frame(encode_request(build(cls, dict(fields or {})), self.client.correlation))
        self._pending = (API[api], version)

    def receive(self) -> Any:
        """The answer to the request :meth:`send` wrote, as plain data."""
        assert self._pending is not None
        rtype = response_class(*self._pending)
        self._pending = None
        correlation, body = decode_response(self.client.read_frame(), rtype)
        assert correlation == self.client.correlation
        return plain(body)


def find_coordinator(bootstrap: str, group_id: str, timeout_s: float = 30.0) -> str:
    """``host:port`` of the group's coordinator (Apache Kafka creates its offsets topic on the first
    FindCoordinator and answers COORDINATOR_NOT_AVAILABLE until it has: asked again, bounded)."""
    deadline = time.monotonic() + timeout_s
    with Raw(bootstrap) as raw:
        while True:
            answer = raw.call("FindCoordinator", 4, {"key_type": 0, "coordinator_keys": [group_id]})
            (found,) = answer["coordinators"]
            if found["error_code"] == 0:
                return f"{found['host']}:{found['port']}"
            assert found["error_code"] in (14, 15), found  # loading / not available yet
            assert time.monotonic() < deadline, f"no coordinator for {group_id!r} after {timeout_s} s"
            time.sleep(0.2)


# --- the classic group protocol, one request at a time ------------------------------------------

RANGE = [{"name": "range", "metadata": b"\x00\x01"}]
_MEMBER_ID = re.compile(r"^(?P<prefix>.*)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_NOT_READY = (14, 15, 16)  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


def member_id_shape(member_id: str) -> str:
    """``<client id or instance id>-<uuid>`` with the random UUID replaced by ``<uuid>`` (both brokers
    make member ids so, with a fresh random UUID each time: the only part that may differ)."""
    found = _MEMBER_ID.match(member_id)
    return f"{found['prefix']}-<uuid>" if found else member_id


def join(
    raw: Raw,
    group_id: str,
    member_id: str = "",
    *,
    instance_id: str | None = None,
    protocol_type: str = "consumer",
    protocols: list[dict[str, Any]] = RANGE,
    session_timeout_ms: int = 10_000,
) -> Any:
    return raw.call(
        "JoinGroup",
        9,
        {
            "group_id": group_id,
            "session_timeout": session_timeout_ms,
            "rebalance_timeout": 10_000,
            "member_id": member_id,
            "group_instance_id": instance_id,
            "protocol_type": protocol_type,
            "protocols": protocols,
            "reason": None,
        },
    )


def sync(
    raw: Raw,
    group_id: str,
    generation: int,
    member_id: str,
    *,
    instance_id: str | None = None,
    protocol_type: str = "consumer",
    protocol_name: str = "range",
    assignments: list[dict[str, Any]] | None = None,
) -> Any:
    return raw.call(
        "SyncGroup",
        5,
        {
            "group_id": group_id,
            "generation_id": generation,
            "member_id": member_id,
            "group_instance_id": instance_id,
            "protocol_type": protocol_type,
            "protocol_name": protocol_name,
            "assignments": assignments or [],
        },
    )


def heartbeat(
    raw: Raw, group_id: str, generation: int, member_id: str, instance_id: str | None = None
) -> int:
    answer = raw.call(
        "Heartbeat",
        4,
        {
            "group_id": group_id,
            "generation_id": generation,
            "member_id": member_id,
            "group_instance_id": instance_id,
        },
    )
    return int(answer["error_code"])


def commit(
    raw: Raw,
    group_id: str,
    generation: int,
    member_id: str,
    offsets: Mapping[tuple[str, int], tuple[int, str | None]],
    instance_id: str | None = None,
) -> dict[tuple[str, int], int]:
    """OffsetCommit v9 of ``{(topic, partition): (offset, metadata)}``; the error code per partition."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), (offset, metadata) in offsets.items():
        topics.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "committed_offset": offset,
                "committed_leader_epoch": -1,
                "committed_metadata": metadata,
            }
        )
    answer = raw.call(
        "OffsetCommit",
        9,
        {
            "group_id": group_id,
            "generation_id_or_member_epoch": generation,
            "member_id": member_id,
            "group_instance_id": instance_id,
            "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
        },
    )
    return {
        (t["name"], p["partition_index"]): p["error_code"] for t in answer["topics"] for p in t["partitions"]
    }


def leave(raw: Raw, group_id: str, member_id: str, instance_id: str | None = None) -> Any:
    members = [{"member_id": member_id, "group_instance_id": instance_id, "reason": None}]
    return raw.call("LeaveGroup", 5, {"group_id": group_id, "members": members})


def describe(raw: Raw, group_id: str) -> Any:
    answer = raw.call("DescribeGroups", 5, {"groups": [group_id], "include_authorized_operations": False})
    (group,) = answer["groups"]
    for member in group["members"]:
        member["member_id"] = member_id_shape(member["member_id"])
    return group


def stable_member(
    raw: Raw, group_id: str, instance_id: str | None = None, timeout_s: float = 30.0
) -> tuple[str, int]:
    """Join (v9: the first JoinGroup answers MEMBER_ID_REQUIRED with the id to use) and sync as the
    only member; (member id, generation). Asks again while the coordinator is not ready, bounded."""
    deadline = time.monotonic() + timeout_s
    while True:
        joined = join(raw, group_id, instance_id=instance_id)
        if joined["error_code"] not in _NOT_READY:
            break
        assert time.monotonic() < deadline, f"the coordinator of {group_id!r} is not ready: {joined}"
        time.sleep(0.2)
    if joined["error_code"] == 79:  # MEMBER_ID_REQUIRED
        joined = join(raw, group_id, joined["member_id"], instance_id=instance_id)
    assert joined["error_code"] == 0, joined
    member, generation = joined["member_id"], joined["generation_id"]
    synced = sync(
        raw,
        group_id,
        generation,
        member,
        instance_id=instance_id,
        assignments=[{"member_id": member, "assignment": b""}],
    )
    assert synced["error_code"] == 0, synced
    return member, generation


def create_topic(raw: Raw, name: str, partitions: int, configs: Mapping[str, str] | None = None) -> None:
    """CreateTopics v7 on this connection's broker, then wait (bounded) until every partition serves."""
    answer = raw.call(
        "CreateTopics",
        7,
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
                }
            ],
            "timeout": 30_000,
            "validate_only": False,
        },
    )
    assert answer["topics"][0]["error_code"] == 0, answer
    deadline = time.monotonic() + 30
    while True:
        topics = metadata(raw, [name], auto_create=False)["topics"]
        if topics[0]["error_code"] == 0 and all(p["leader_id"] >= 0 for p in topics[0]["partitions"]):
            # Kafka's metadata can name the leader before the leader has the partition's log: wait
            # until ListOffsets answers for every partition (NOT_LEADER_OR_FOLLOWER until then)
            answer = raw.call(
                "ListOffsets",
                9,
                {
                    "replica_id": -1,
                    "isolation_level": 0,
                    "topics": [
                        {
                            "name": name,
                            "partitions": [
                                {"partition_index": index, "current_leader_epoch": -1, "timestamp": -1}
                                for index in range(partitions)
                            ],
                        }
                    ],
                },
            )
            if all(p["error_code"] == 0 for p in answer["topics"][0]["partitions"]):
                return
        assert time.monotonic() < deadline, f"topic {name} has no leaders after 30 s"
        time.sleep(0.1)


def metadata(raw: Raw, topics: list[str] | None, *, auto_create: bool) -> Any:
    wanted = None if topics is None else [{"name": name, "topic_id": None} for name in topics]
    return raw.call(
        "Metadata",
        12,
        {
            "topics": wanted,
            "allow_auto_topic_creation": auto_create,
            "include_topic_authorized_operations": False,
        },
    )


def offset_fetch(
    raw: Raw, group_id: str, partitions: Mapping[str, list[int]] | None
) -> dict[tuple[str, int], tuple[int, str | None, int]]:
    """OffsetFetch v9 for one group: ``{(topic, partition): (offset, metadata, error code)}``."""
    topics = (
        None if partitions is None else [{"name": t, "partition_indexes": ps} for t, ps in partitions.items()]
    )
    answer = raw.call(
        "OffsetFetch",
        9,
        {
            "groups": [{"group_id": group_id, "member_id": None, "member_epoch": -1, "topics": topics}],
            "require_stable": False,
        },
    )
    (group,) = answer["groups"]
    assert group["error_code"] == 0, group
    return {
        (t["name"], p["partition_index"]): (p["committed_offset"], p["metadata"], p["error_code"])
        for t in group["topics"]
        for p in t["partitions"]
    }


def fetch_v12(
    entries: list[tuple[str, int]], *, wait_ms: int, session_id: int = 0, session_epoch: int = -1
) -> dict[str, Any]:
    """A Fetch v12 request's fields: each (topic, partition) from offset 0, a topic entry each,
    ``min_bytes`` 1, read_uncommitted."""
    return {
        "replica_id": -1,
        "max_wait": wait_ms,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": session_id,
        "session_epoch": session_epoch,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": partition,
                        "current_leader_epoch": -1,
                        "fetch_offset": 0,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
            for topic, partition in entries
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def create_partitions(
    raw: Raw,
    topics: Sequence[tuple[str, int] | tuple[str, int, list[list[int]] | None]],
    *,
    validate_only: bool = False,
    version: int = 3,
) -> list[tuple[str, int, str | None]]:
    """CreatePartitions of (topic, count[, assignments]); (name, error code, message) per result."""
    answer = raw.call(
        "CreatePartitions",
        version,
        {
            "topics": [
                {
                    "name": t[0],
                    "count": t[1],
                    "assignments": None
                    if len(t) < 3 or t[2] is None  # type: ignore[misc]
                    else [{"broker_ids": b} for b in t[2]],  # type: ignore[misc]
                }
                for t in topics
            ],
            "timeout": 30_000,
            "validate_only": validate_only,
        },
    )
    assert answer["throttle_time"] == 0
    return [(r["name"], r["error_code"], r["error_message"]) for r in answer["results"]]
