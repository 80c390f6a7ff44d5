"""Kafka 4.4.0 message versions that kio 0.6.5 (kgroup's codec) does not have, in kio's entity form.

kio's schemas stop at ApiVersions v4 and DeleteGroups v2; Kafka 4.4.0 serves ApiVersions v5 and
DeleteGroups v3. These classes are written as kio generates its own (frozen dataclasses with the
``kafka_type`` of each field), from the layouts of Kafka 4.4.0's generated ``*Data`` classes
(``SCHEMA_5`` / ``SCHEMA_3`` of ``kafka-clients-4.4.0.jar``), so kio's native reader and writer read
and write them like any other version. :mod:`kgroup.wire.codec` looks a version up here when kio's
index does not have it. ``tests/apache_kafka/test_diff_versions.py`` sends both versions to Apache
Kafka 4.4.0 and reads its answers with them (a v5 request with a cluster id and node id Kafka reads
as meant: the right ones answered, another cluster or node ``REBOOTSTRAP_REQUIRED``);
``tests/broker/test_api_registry.py`` round-trips random requests of every version.

* **ApiVersions v5** (KIP-1242): the request adds ``cluster_id`` (nullable string) and ``node_id``
  (int32, -1 for none) as ordinary fields after the client software name and version: the cluster and
  node the client means to reach. Both or neither must be set (``INVALID_REQUEST`` otherwise), and a
  broker of another cluster or with another node id answers ``REBOOTSTRAP_REQUIRED``. The response is
  v4's.
* **DeleteGroups v3**: the request is v2's; each result adds ``error_message`` (nullable string).
* **TxnOffsetCommit v6** (KIP-1319): v5's request and response with each topic named by its id
  (``topic_id``, a uuid) instead of its name.
"""

# no ``from __future__ import annotations``: kio reads the fields' types as objects, as in its
# own generated modules
import dataclasses
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.schema.types import GroupId, ProducerId, TransactionalId
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i32Timedelta, i64

__all__ = ["entities_of", "schema_class"]

C = TypeVar("C", bound=type)


def _entity(
    api_key: int, version: int, header: type[Any], kind: EntityType = EntityType.nested
) -> Callable[[C], C]:
    """The class attributes kio's generated entities carry (``__type__``, ``__version__``,
    ``__flexible__``, ``__api_key__``, ``__header_schema__``), set on the class before
    :func:`dataclasses.dataclass` makes it one: every version here is flexible."""

    attributes = {
        "__type__": kind,
        "__version__": i16(version),
        "__flexible__": True,
        "__api_key__": i16(api_key),
        "__header_schema__": header,
    }

    def mark(cls: C) -> C:
        for name, value in attributes.items():
            setattr(cls, name, value)
        return cls

    return mark


# --- ApiVersions v5 -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(18, 5, RequestHeader, EntityType.request)
class ApiVersionsRequest:
    client_software_name: str = field(metadata={"kafka_type": "string"})
    """The name of the client."""
    client_software_version: str = field(metadata={"kafka_type": "string"})
    """The version of the client."""
    cluster_id: str | None = field(metadata={"kafka_type": "string"}, default=None)
    """The cluster ID the client intends to connect to. Provide both ClusterId and NodeId, if known."""
    node_id: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    """The node ID the client intends to connect to. Provide both ClusterId and NodeId, if known."""


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(18, 5, ResponseHeaderV0)
class ApiVersion:
    api_key: i16 = field(metadata={"kafka_type": "int16"})
    min_version: i16 = field(metadata={"kafka_type": "int16"})
    max_version: i16 = field(metadata={"kafka_type": "int16"})


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(18, 5, ResponseHeaderV0)
class SupportedFeatureKey:
    name: str = field(metadata={"kafka_type": "string"})
    min_version: i16 = field(metadata={"kafka_type": "int16"})
    max_version: i16 = field(metadata={"kafka_type": "int16"})


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(18, 5, ResponseHeaderV0)
class FinalizedFeatureKey:
    name: str = field(metadata={"kafka_type": "string"})
    max_version_level: i16 = field(metadata={"kafka_type": "int16"})
    min_version_level: i16 = field(metadata={"kafka_type": "int16"})


# always the v0 header: a client reads it before it knows which versions the broker has
@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(18, 5, ResponseHeaderV0, EntityType.response)
class ApiVersionsResponse:
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    api_keys: tuple[ApiVersion, ...]
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    supported_features: tuple[SupportedFeatureKey, ...] = field(metadata={"tag": 0}, default=())
    finalized_features_epoch: i64 = field(metadata={"kafka_type": "int64", "tag": 1}, default=i64(-1))
    finalized_features: tuple[FinalizedFeatureKey, ...] = field(metadata={"tag": 2}, default=())
    zk_migration_ready: bool = field(metadata={"kafka_type": "bool", "tag": 3}, default=False)


# --- DeleteGroups v3 ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(42, 3, RequestHeader, EntityType.request)
class DeleteGroupsRequest:
    groups_names: tuple[GroupId, ...] = field(metadata={"kafka_type": "string"}, default=())


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(42, 3, ResponseHeaderV1)
class DeletableGroupResult:
    group_id: GroupId = field(metadata={"kafka_type": "string"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    error_message: str | None = field(metadata={"kafka_type": "string"}, default=None)
    """The error message, or null if there was no error."""


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(42, 3, ResponseHeaderV1, EntityType.response)
class DeleteGroupsResponse:
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    results: tuple[DeletableGroupResult, ...]


# --- TxnOffsetCommit v6 ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(28, 6, RequestHeader)
class TxnOffsetCommitRequestPartition:
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    committed_offset: i64 = field(metadata={"kafka_type": "int64"})
    committed_leader_epoch: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    committed_metadata: str | None = field(metadata={"kafka_type": "string"})


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(28, 6, RequestHeader)
class TxnOffsetCommitRequestTopic:
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    partitions: tuple[TxnOffsetCommitRequestPartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(28, 6, RequestHeader, EntityType.request)
class TxnOffsetCommitRequest:
    transactional_id: TransactionalId = field(metadata={"kafka_type": "string"})
    group_id: GroupId = field(metadata={"kafka_type": "string"})
    producer_id: ProducerId = field(metadata={"kafka_type": "int64"})
    producer_epoch: i16 = field(metadata={"kafka_type": "int16"})
    generation_id: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    member_id: str = field(metadata={"kafka_type": "string"}, default="")
    group_instance_id: str | None = field(metadata={"kafka_type": "string"}, default=None)
    topics: tuple[TxnOffsetCommitRequestTopic, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(28, 6, ResponseHeaderV1)
class TxnOffsetCommitResponsePartition:
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(28, 6, ResponseHeaderV1)
class TxnOffsetCommitResponseTopic:
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    partitions: tuple[TxnOffsetCommitResponsePartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(28, 6, ResponseHeaderV1, EntityType.response)
class TxnOffsetCommitResponse:
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    topics: tuple[TxnOffsetCommitResponseTopic, ...]


#: (kio's name of the API, version) -> (request class, response class)
_SCHEMAS: dict[tuple[str, int], tuple[type[Any], type[Any]]] = {
    ("api_versions", 5): (ApiVersionsRequest, ApiVersionsResponse),
    ("delete_groups", 3): (DeleteGroupsRequest, DeleteGroupsResponse),
    ("txn_offset_commit", 6): (TxnOffsetCommitRequest, TxnOffsetCommitResponse),
}


def schema_class(name: str, version: int, kind: EntityType) -> type[Any] | None:
    """The request or response entity of API ``name`` (kio's name: ``api_versions``) at ``version``,
    if this module has it."""
    pair = _SCHEMAS.get((name, version))
    if pair is None or kind not in (EntityType.request, EntityType.response):
        return None
    return pair[0] if kind == EntityType.request else pair[1]


def entities_of(name: str, kind: str) -> Iterator[type[Any]]:
    """Every entity (top level and nested) of API ``name``'s ``kind`` ("request" / "response")
    defined here: what :func:`kgroup.wire.codec.build` counts as fields some version has."""
    for (api, _version), pair in _SCHEMAS.items():
        if api != name:
            continue
        top = pair[0] if kind == "request" else pair[1]
        stack: list[type[Any]] = [top]
        while stack:
            cls = stack.pop()
            yield cls
            for entry in dataclasses.fields(cls):
                inner = getattr(entry.type, "__args__", None)
                for candidate in inner or ():
                    if isinstance(candidate, type) and dataclasses.is_dataclass(candidate):
                        stack.append(candidate)
