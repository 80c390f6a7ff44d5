"""Produce, Fetch and ListOffsets (as ``KafkaApis`` / ``ReplicaManager`` answer them).

Simplifications (documented in docs/broker.md): one copy of the data, so acks=-1 is acknowledged once
the leader's log has the batch (its fsync policy decides durability); fetch sessions are not kept —
every answer carries session id 0, which tells the client to send full fetches, as a Kafka broker
whose session cache is full does. Transactional batches are checked against their transaction
(:func:`kgroup.broker.handlers_txn.verify_transactional_batch`); ``read_committed`` reads up to the
last stable offset and is told the aborted transactions to skip.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import uuid
from collections.abc import Iterable
from typing import Any

from kgroup.broker.answer_order import (
    AsideAnswers,
    PartitionKey,
    answer_order,
    appended_table,
    list_offsets_order,
    topic_id_partition_hash,
)
from kgroup.broker.cluster import INTERNAL_TOPICS
from kgroup.broker.dispatch import CloseConnection, RequestContext, register
from kgroup.broker.handlers_txn import verify_transactional_batch
from kgroup.broker.logapi import PartitionLogLike
from kgroup.broker.waiters import FetchWaiter
from kgroup.javacompat import hashmap_keys_order
from kgroup.log.batch import (
    HEADER_SIZE,
    UnknownCodecBeforeV7,
    check_produce_records_shape,
    first_batch_is_transactional,
    parse_header,
)
from kgroup.log.errors import LogError, RecordErrors
from kgroup.model import ErrorCode, PeerError
from kgroup.security.acl import AclOperation, ResourceType
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.fetch_response import fetch_response
from kgroup.wire.produce_request import read_produce_request

log = logging.getLogger("kgroup.broker")

__all__: list[str] = []

ZERO_UUID = uuid.UUID(int=0)
NO_EPOCH = -1
INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0  # a fetch session's epochs: a full fetch …
FINAL_EPOCH = -1  # … or a session's close (and every fetch before v7)
#: partition errors ``KafkaApis`` answers before the replica manager reads (they end no wait)
_ANSWERED_ASIDE = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
)
LEADER_EPOCH = 0  # one copy, one leader epoch
LATEST = -1  # ListOffsets' latest timestamp


def leader_check(ctx: RequestContext, topic: str, partition: int) -> int:
    """UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER at a node that does not lead the
    partition, or none (0)."""
    cluster = ctx.services.cluster
    info = cluster.topics.get(topic)
    if info is None or not 0 <= partition < info.partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if cluster.partition_leader(topic, partition) != ctx.node_id:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return ErrorCode.NONE


def _epoch_check(current_leader_epoch: int) -> int:
    if current_leader_epoch in (NO_EPOCH, LEADER_EPOCH):
        return ErrorCode.NONE
    return (
        ErrorCode.UNKNOWN_LEADER_EPOCH
        if current_leader_epoch > LEADER_EPOCH
        else ErrorCode.FENCED_LEADER_EPOCH
    )


def _current_leader(ctx: RequestContext, topic: str, partition: int) -> dict[str, int]:
    return {
        "leader_id": ctx.services.cluster.partition_leader(topic, partition),
        "leader_epoch": LEADER_EPOCH,
    }


#: an uncompressed batch of more records than this is validated in the codec thread (its records are
#: walked in Python, about a microsecond each); fewer are validated on the loop, where handing the
#: batch to the thread and back costs more than the walk
_HEAVY_BATCH_RECORDS = 4096
_ATTRIBUTES_LOW_BYTE = 22  # the codec is attributes & 7
_RECORDS_COUNT = struct.Struct(">i")
_RECORDS_COUNT_AT = 57


def _heavy(records: bytes | memoryview) -> bool:
    """Whether validating ``records`` belongs in the codec thread: a compressed batch (inflating
    releases the GIL, so it runs beside the loop) or one of many records."""
    if len(records) <= _RECORDS_COUNT_AT + 4:
        return False  # too short for a header: refused at once
    if records[_ATTRIBUTES_LOW_BYTE] & 0x07 != 0:
        return True
    return bool(_RECORDS_COUNT.unpack_from(records, _RECORDS_COUNT_AT)[0] > _HEAVY_BATCH_RECORDS)


def _topic_name(ctx: RequestContext, topic: Any) -> str:
    """The topic a Produce (v13+) or Fetch (v13+) entry names by id, as ``KafkaApis`` resolves it: ""
    when the broker knows no such id (the entry's partitions are answered UNKNOWN_TOPIC_ID)."""
    name = getattr(topic, "name", None) if hasattr(topic, "name") else getattr(topic, "topic", None)
    if name is not None:
        return str(name)
    topic_id = topic.topic_id
    info = ctx.services.cluster.topic_by_id(topic_id) if topic_id is not None else None
    return "" if info is None else info.name


#: the heavy batches of one Produce request are handed to the codec thread together up to this size
_CHECKED_TOGETHER_BYTES = 1 << 20
#: a batch checked in the codec thread before the request's appends: the log it was checked against,
#: and what its ``validate`` returned (a validated batch) or raised (a ``PeerError`` or ``LogError``)
_Checked = tuple[PartitionLogLike, Any]


def _validate_each(batches: list[tuple[PartitionLogLike, bytes | memoryview]], now_ms: int) -> list[_Checked]:
    """Each batch's ``validate`` by its log (in the codec thread): its result or its error."""
    checked: list[_Checked] = []
    for plog, records in batches:
        try:
            checked.append((plog, plog.validate(records, now_ms=now_ms)))
        except (PeerError, LogError) as exc:
            checked.append((plog, exc))
    return checked


async def _check_heavy_batches(
    ctx: RequestContext, authorized: dict[PartitionKey, Any], now_ms: int
) -> dict[PartitionKey, _Checked]:
    """The heavy batches (:func:`_heavy`) of the partitions to append to that may be appended to,
    validated in the codec thread: a hand-over per :data:`_CHECKED_TOGETHER_BYTES` of batches rather
    than one per batch (a client's request often holds a small compressed batch for each of many
    partitions; a large one still goes alone, so other connections' work in that thread waits no
    longer than before)."""
    services = ctx.services
    keys: list[PartitionKey] = []
    batches: list[tuple[PartitionLogLike, bytes | memoryview]] = []
    for key, part in authorized.items():
        if ctx.pacer.due():
            await ctx.pacer.pause()
        _, name, index = key
        records = part.records
        if records is None or not _heavy(records) or name in INTERNAL_TOPICS:
            continue
        if leader_check(ctx, name, index) != ErrorCode.NONE:
            continue
        plog = services.cluster.partition_log(name, index)
        if plog is not None:
            keys.append(key)
            batches.append((plog, records))
    checked: list[_Checked] = []
    start, size = 0, 0
    for end, (_, records) in enumerate(batches, 1):
        size += len(records)
        if size >= _CHECKED_TOGETHER_BYTES or end == len(batches):
            checked += await services.off_loop(_validate_each, batches[start:end], now_ms)
            start, size = end, 0
    return dict(zip(keys, checked, strict=True))


def _partition_answer(index: int, error_code: int = ErrorCode.NONE) -> dict[str, Any]:
    return {
        "index": index,
        "error_code": error_code,
        "base_offset": -1,
        "log_append_time": None,
        "log_start_offset": -1,
        "record_errors": [],
        "error_message": None,
        "current_leader": {"leader_id": -1, "leader_epoch": -1},
    }


class _Sorted:
    """``KafkaApis``' sorting of a Produce request's partition entries before the replica manager: the
    answers it gives itself, and ``authorizedRequestInfo`` (one entry per partition, the last)."""

    def __init__(self) -> None:
        self.unauthorized = AsideAnswers()
        self.missing = AsideAnswers()  # KafkaApis' nonExistingTopicResponses
        self.invalid = AsideAnswers()
        self.invalid_messages: dict[PartitionKey, str] = {}
        self.authorized: dict[PartitionKey, Any] = {}
        self.authorized_puts: list[int] = []  # authorizedRequestInfo's size at each put


async def _sort_entries(ctx: RequestContext, request: Any) -> _Sorted:
    """``handleProduceRequest``'s two passes over the entries, in the request's order: topic ids
    resolved (an id the broker does not know is UNKNOWN_TOPIC_ID), then WRITE on the topic, the
    partition in the metadata, and the records' shape (:func:`check_produce_records_shape`)."""
    cluster = ctx.services.cluster
    sorted_ = _Sorted()
    resolved: list[tuple[PartitionKey, Any]] = []
    for topic in request.topic_data:
        name = _topic_name(ctx, topic)
        if topic.topic_id is not None:
            topic_id = topic.topic_id
        else:
            info = cluster.topics.get(name)
            topic_id = ZERO_UUID if info is None else info.topic_id
        for part in topic.partition_data:
            key = (topic_id, name, int(part.index))
            if not name and topic.name is None:  # an id the broker does not know (v13+)
                sorted_.missing.put(key, ErrorCode.UNKNOWN_TOPIC_ID)
            else:
                resolved.append((key, part))
    allowed: dict[str, bool] = {}
    for key, part in resolved:
        if ctx.pacer.due():
            await ctx.pacer.pause()
        _, name, index = key
        if name not in allowed:
            allowed[name] = ctx.authorized(AclOperation.WRITE, ResourceType.TOPIC, name)
        info = cluster.topics.get(name)
        if not allowed[name]:
            sorted_.unauthorized.put(key, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        elif info is None or not 0 <= index < info.partitions:
            sorted_.missing.put(key, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        else:
            try:
                if part.records is not None:
                    check_produce_records_shape(part.records, ctx.version)
            except UnknownCodecBeforeV7:
                raise
            except PeerError as exc:
                sorted_.invalid.put(key, exc.error_code)
                sorted_.invalid_messages[key] = exc.message
            else:
                sorted_.authorized_puts.append(len(sorted_.authorized))
                sorted_.authorized[key] = part
    return sorted_


def _whole_request_refusal(ctx: RequestContext, request: Any) -> PeerError | None:
    """What ``handleProduceRequest`` refuses the whole request with before looking at any partition:
    the first partition whose first batch is transactional (``RequestUtils.hasTransactionalRecords``,
    in the request's order) needs a transactional id the principal may WRITE; a batch length or magic
    Kafka's reader cannot read on the way there escapes as CORRUPT_MESSAGE (the whole request's
    answer, ``ProduceRequest.getErrorResponse``)."""
    for topic in request.topic_data:
        for part in topic.partition_data:
            if part.records is None:
                continue
            try:
                transactional = first_batch_is_transactional(part.records)
            except PeerError as exc:
                return exc
            if transactional:
                txn_id = request.transactional_id
                if txn_id is None or not ctx.authorized(
                    AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, txn_id
                ):
                    return PeerError("", ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
                return None
    return None


def _transactional_producers(parts: Iterable[Any]) -> set[tuple[int, int]]:
    """The (producer id, epoch) of every transactional batch among the partitions to append to (each
    holds one whole batch by now): ``handleProduceAppend`` refuses the request when there is more
    than one (``InvalidPidMappingException``), before anything is written."""
    producers: set[tuple[int, int]] = set()
    for part in parts:
        records = part.records
        if records is not None and len(records) >= HEADER_SIZE:
            header = parse_header(records)
            if header.is_transactional and header.has_producer_id:
                producers.add((header.producer_id, header.producer_epoch))
    return producers


def _refused_whole(request: Any, refusal: PeerError) -> list[dict[str, Any]]:
    """``ProduceRequest.getErrorResponse``: every partition the request names, once, with the error, in
    a ``java.util.HashMap``'s order of the request's own ``TopicIdPartition``\\ s (the topic id zero
    before v13, the name empty from v13)."""
    keys = list(
        dict.fromkeys(
            (topic.topic_id or ZERO_UUID, topic.name or "", int(part.index))
            for topic in request.topic_data
            for part in topic.partition_data
        )
    )
    order = hashmap_keys_order(keys, topic_id_partition_hash)
    topics: dict[tuple[str, uuid.UUID], list[dict[str, Any]]] = {}
    for topic_id, name, index in order:
        entry = _partition_answer(index, refusal.error_code)
        entry["error_message"] = refusal.message or None
        topics.setdefault((name, topic_id), []).append(entry)
    return [
        {"name": name, "topic_id": topic_id, "partition_responses": partitions}
        for (name, topic_id), partitions in topics.items()
    ]


# Kafka 4.0 removed v0-v2, but 4.x advertises v0 for old librdkafka (KAFKA-18659) and refuses
# v0-v2 when they come; v13 addresses topics by id. The records stay in the request's frame
# (kgroup.wire.produce_request): validated and written from there, never copied
@register(ApiKey.PRODUCE, versions=(3, 13), decoder=read_produce_request, advertised_min=0)
async def produce(ctx: RequestContext, request: Any) -> dict[str, Any] | None:
    """A partition named twice is answered once and written once, with its later entry's records
    (Kafka keys the request by partition); the answer lists the partitions in Kafka's order
    (:mod:`kgroup.broker.answer_order`). A transactional batch without a transactional id the
    principal may write, or a batch Kafka cannot read before it finds one, refuses the whole request
    (:func:`_whole_request_refusal`): nothing is written."""
    services = ctx.services
    acks = int(request.acks)
    refusal = _whole_request_refusal(ctx, request)
    if refusal is not None:
        if acks == 0:  # no answer to carry the error: Kafka closes the connection
            raise CloseConnection(f"acks=0 produce request refused: {refusal.message or refusal.error_code}")
        return {"responses": _refused_whole(request, refusal), "throttle_time": 0, "node_endpoints": []}
    now_ms = services.clock_ms()
    try:
        sorted_ = await _sort_entries(ctx, request)
    except UnknownCodecBeforeV7 as exc:  # out of handleProduceRequest: the whole request fails
        if acks == 0:
            raise CloseConnection(f"acks=0 produce request failed: {exc.message}") from None
        unknown = PeerError("", ErrorCode.UNKNOWN_SERVER_ERROR)  # (Kafka sends no message with it)
        return {"responses": _refused_whole(request, unknown), "throttle_time": 0, "node_endpoints": []}
    if len(_transactional_producers(sorted_.authorized.values())) > 1:  # ReplicaManager.handleProduceAppend
        if acks == 0:
            raise CloseConnection("acks=0 produce request failed: more than one transactional producer")
        mixed = PeerError(
            "Transactional records contained more than one producer ID", ErrorCode.INVALID_PRODUCER_ID_MAPPING
        )
        return {"responses": _refused_whole(request, mixed), "throttle_time": 0, "node_endpoints": []}
    answers: dict[PartitionKey, dict[str, Any]] = {}
    refused: set[PartitionKey] = set()  # by the transaction verification, before the append
    appended: list[tuple[str, int, int]] = []
    leaders: set[int] = set()
    checked = await _check_heavy_batches(ctx, sorted_.authorized, now_ms) if acks in (-1, 0, 1) else {}
    for key, part in sorted_.authorized.items():
        if ctx.pacer.due():
            await ctx.pacer.pause()
        _, name, index = key
        entry = _partition_answer(index)
        answers[key] = entry
        if acks not in (-1, 0, 1):
            entry["error_code"] = ErrorCode.INVALID_REQUIRED_ACKS
            continue
        if name in INTERNAL_TOPICS:  # Kafka: "Cannot append to internal topic"
            entry["error_code"] = ErrorCode.INVALID_TOPIC_EXCEPTION
            continue
        code = leader_check(ctx, name, index)
        if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
            entry["current_leader"] = _current_leader(ctx, name, index)
            leaders.add(entry["current_leader"]["leader_id"])
        if code != ErrorCode.NONE:
            entry["error_code"] = code
            continue
        plog = services.cluster.partition_log(name, index)
        assert plog is not None
        records = b"" if part.records is None else part.records
        code = await verify_transactional_batch(ctx, request.transactional_id, name, index, records, plog)
        if code != ErrorCode.NONE:
            entry["error_code"] = code
            refused.add(key)
            continue
        try:
            done = checked.get(key)
            if done is not None and done[0] is plog:  # checked in the codec thread already
                if isinstance(done[1], PeerError | LogError):
                    raise done[1]
                result = plog.append(done[1], now_ms=now_ms)
            elif _heavy(records):  # inflating and walking its records: off the event loop
                result = plog.append(
                    await services.off_loop(plog.validate, records, now_ms=now_ms), now_ms=now_ms
                )
            else:
                result = plog.append(records, now_ms=now_ms)
        except (PeerError, LogError) as exc:
            entry["error_code"] = exc.error_code
            # ReplicaManager answers a message only for a RecordValidationException (its record errors)
            entry["error_message"] = exc.message if isinstance(exc, RecordErrors) else None
            entry["record_errors"] = [
                {"batch_index": index_in_batch, "batch_index_error_message": message}
                for index_in_batch, message in getattr(exc, "record_errors", ())
            ]
            log.info("produce to %s-%d rejected: %s", name, index, exc.message)
        except OSError as exc:  # the disk write failed: Kafka's KafkaStorageException
            entry["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR  # (no message, as Kafka: the log has it)
            log.error("produce to %s-%d: write failed: %s", name, index, exc)
        else:
            if not result.duplicate:
                appended.append((name, index, result.valid_bytes))
            entry["base_offset"] = result.base_offset
            entry["log_start_offset"] = result.log_start_offset
            if result.log_append_time >= 0:
                entry["log_append_time"] = result.log_append_time
    for name, index, size in appended:
        services.notify_appended(name, index, size)
    # the answers KafkaApis gave itself override the replica manager's (a partition named twice may
    # be in both: its earlier entry's records appended, its later one refused)
    for aside in (sorted_.unauthorized, sorted_.missing, sorted_.invalid):
        for key, code in aside.answers.items():
            answers[key] = _partition_answer(key[2], code)
            if key in sorted_.invalid_messages and aside is sorted_.invalid:
                answers[key]["error_message"] = sorted_.invalid_messages[key]
    if acks == 0:
        if any(entry["error_code"] != ErrorCode.NONE for entry in answers.values()):
            # Kafka closes the connection so that an acks=0 producer notices and refreshes metadata
            raise CloseConnection("acks=0 produce request failed")
        return None
    passed = [key for key in sorted_.authorized if key not in refused]
    order = (
        list(answers)
        if len(answers) == 1
        else answer_order(
            [key for key in sorted_.authorized if key in refused],
            passed,
            (sorted_.unauthorized, sorted_.missing, sorted_.invalid),
            any_authorized=bool(sorted_.authorized),
            appended_table=appended_table(
                len(passed),
                acks_valid=acks in (-1, 0, 1),
                any_refused=bool(refused),
                authorized_puts=sorted_.authorized_puts,
            ),
        )
    )
    topics: dict[tuple[str, uuid.UUID], list[dict[str, Any]]] = {}
    for key in order:
        topic_id, name, _ = key
        topics.setdefault((name, topic_id), []).append(answers[key])
    responses = [
        {"name": name, "topic_id": topic_id, "partition_responses": partitions}
        for (name, topic_id), partitions in topics.items()
    ]
    # v10+: where the leaders named in current_leader are (KIP-951)
    return {"responses": responses, "throttle_time": 0, "node_endpoints": _node_endpoints(ctx, leaders)}


def _fetch_partition(
    ctx: RequestContext, topic: str, part: Any, read_committed: bool, budget: int
) -> tuple[dict[str, Any], int]:
    index = int(part.partition)
    entry: dict[str, Any] = {
        "partition_index": index,
        "high_watermark": -1,
        "last_stable_offset": -1,
        "log_start_offset": -1,
        "diverging_epoch": {"epoch": -1, "end_offset": -1},
        "current_leader": {"leader_id": -1, "leader_epoch": -1},
        "snapshot_id": {"end_offset": -1, "epoch": -1},
        "aborted_transactions": [] if read_committed else None,
        "preferred_read_replica": -1,
        "records": b"",
    }
    code: int
    if not topic:  # a topic id the broker does not know (v13+)
        code = ErrorCode.UNKNOWN_TOPIC_ID
    elif not ctx.authorized(AclOperation.READ, ResourceType.TOPIC, topic):
        code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    else:
        code = leader_check(ctx, topic, index)
    if code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID):
        # KafkaApis answers an unknown partition before the replica manager reads, with the
        # response's default (an empty aborted-transactions list, not null)
        entry["aborted_transactions"] = []
    if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
        entry["current_leader"] = _current_leader(ctx, topic, index)
    if code == ErrorCode.NONE:
        code = _epoch_check(int(getattr(part, "current_leader_epoch", NO_EPOCH)))
    if code != ErrorCode.NONE:
        entry["error_code"] = code
        return entry, 0
    plog = ctx.services.cluster.partition_log(topic, index)
    assert plog is not None
    hw = plog.high_watermark
    lso = plog.last_stable_offset
    offset = int(part.fetch_offset)
    if offset < plog.log_start_offset or offset > plog.log_end_offset:
        # as Kafka's failed read: no high watermark, stable offset or log start offset (-1)
        entry["error_code"] = ErrorCode.OFFSET_OUT_OF_RANGE
        return entry, 0
    entry.update(high_watermark=hw, last_stable_offset=lso, log_start_offset=plog.log_start_offset)
    entry["error_code"] = ErrorCode.NONE
    limit = lso if read_committed else hw
    if offset >= limit or budget <= 0:
        return entry, 0
    max_bytes = min(int(part.partition_max_bytes), budget)
    try:
        if limit < plog.log_end_offset:
            # read_committed below an open transaction: the batches before the last stable offset
            data: Any = _batches_below(plog.read(offset, max_bytes), limit)
        else:
            # large reads are regions of the segment file, sent with sendfile (the connection closes them)
            data = plog.read_slice(offset, max_bytes)
    except LogError as exc:  # damaged bytes (KAFKA_STORAGE_ERROR), a topic deleted meanwhile …
        log.error("fetch from %s-%d at %d: %s", topic, index, offset, exc.message)
        entry["error_code"] = exc.error_code
        return entry, 0
    except OSError as exc:
        log.error("fetch from %s-%d at %d: read failed: %s", topic, index, offset, exc)
        entry["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
        return entry, 0
    entry["records"] = data
    if read_committed:
        # the aborted transactions whose records this answer may hold (the client skips them)
        entry["aborted_transactions"] = [
            {"producer_id": a.producer_id, "first_offset": a.first_offset}
            for a in plog.transactions.aborted_between(offset, limit)
        ]
    return entry, len(data)


def _batches_below(data: bytes | memoryview, limit: int) -> bytes | memoryview:
    """The whole batches of ``data`` whose offsets are all below ``limit`` (the last stable offset)."""
    view = memoryview(data)
    end = 0
    while end + HEADER_SIZE <= len(view):
        header = parse_header(view, end)
        if header.base_offset >= limit or end + header.size > len(view):
            break
        end += header.size
    return view[:end]


_Answered = tuple[str, uuid.UUID, dict[str, Any]]


def _named_once(ctx: RequestContext, request: Any) -> list[tuple[str, uuid.UUID, Any]]:
    """The partitions a Fetch names, each once, with its topic's name (resolved now) and id.

    Kafka's ``FetchRequest.fetchData`` gathers the request's partitions into a ``LinkedHashMap`` keyed
    by topic id, topic name and partition, so a partition named twice (in one topic entry or in two)
    is read and answered once: in its first place, with its last entry's offset and limits."""
    named: dict[tuple[uuid.UUID, str, int], tuple[str, uuid.UUID, Any]] = {}
    for topic in request.topics:
        name = _topic_name(ctx, topic)
        topic_id = topic_id_of(topic)
        for part in topic.partitions:
            named[(topic_id, name, int(part.partition))] = (name, topic_id, part)
    return list(named.values())


async def _fetch_once(
    ctx: RequestContext,
    request: Any,
    named: list[tuple[str, uuid.UUID, Any]],
    answered_aside: dict[int, _Answered] | None = None,
) -> tuple[dict[str, Any], int, bool, dict[tuple[str, int], int], dict[int, _Answered]]:
    """One read of every partition: the answer, its bytes, whether a partition had an error reading
    its log, the bytes read per partition that was read — Kafka's "interesting" partitions, not
    those answered before the log is looked at (an unknown topic or partition, no READ on the topic:
    ``KafkaApis`` answers them aside, and they neither end nor count for a wait) — and those answered
    aside, by their place in the request.

    A parked fetch's second read (``answered_aside``: the first read's) reads only the partitions the
    first one read, as Kafka's ``DelayedFetch`` reads only its "interesting" partitions: one answered
    aside keeps that answer (a topic or partition created meanwhile is not read), and one read before
    stays among those read, in its place, whatever its read finds now."""
    read_committed = int(getattr(request, "isolation_level", 0)) == 1
    budget = int(getattr(request, "max_bytes", 0x7FFFFFFF))
    total = 0
    errors = False
    sizes: dict[tuple[str, int], int] = {}
    read: list[_Answered] = []
    aside: list[_Answered] = []
    aside_at: dict[int, _Answered] = {}
    pacer = ctx.pacer
    leaders: set[int] = set()
    for at, (name, topic_id, part) in enumerate(named):
        if answered_aside is not None and at in answered_aside:
            aside.append(answered_aside[at])
            continue
        # KIP-74: the first non-empty partition is returned even if larger than max_bytes
        entry, size = _fetch_partition(ctx, name, part, read_committed, budget if total else max(budget, 1))
        total += size
        budget -= size
        code = entry["error_code"]
        if code in _ANSWERED_ASIDE and answered_aside is None:
            aside.append((name, topic_id, entry))
            aside_at[at] = aside[-1]
            continue
        if code != ErrorCode.NONE:
            errors = True
            if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                leaders.add(entry["current_leader"]["leader_id"])
        sizes[(name, int(part.partition))] = size
        read.append((name, topic_id, entry))
        if pacer.due():
            await pacer.pause()
    answer = {
        "throttle_time": 0,
        "error_code": ErrorCode.NONE,
        "session_id": INVALID_SESSION_ID,
        # as KafkaApis answers: the partitions it read, then those answered aside, each in the
        # request's order, a topic's partitions together only where they follow one another
        "responses": _by_topic(read + aside),
        # v16+: where the leaders named in current_leader are (KIP-951), for the client's metadata
        "node_endpoints": _node_endpoints(ctx, leaders),
    }
    return answer, total, errors, sizes, aside_at


def _by_topic(entries: list[tuple[str, uuid.UUID, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The answer's topics: consecutive partitions of one topic share a topic entry (``FetchResponse``)."""
    responses: list[dict[str, Any]] = []
    for name, topic_id, entry in entries:
        last = responses[-1] if responses else None
        if last is not None and last["topic"] == name and last["topic_id"] == topic_id:
            last["partitions"].append(entry)
        else:
            responses.append({"topic": name, "topic_id": topic_id, "partitions": [entry]})
    return responses


def topic_id_of(topic: Any) -> uuid.UUID:
    """The id a request's topic entry names (v13+; the all-zero id before, or for none)."""
    return getattr(topic, "topic_id", None) or ZERO_UUID


def _node_endpoints(ctx: RequestContext, nodes: set[int]) -> list[dict[str, Any]]:
    """The endpoints of the brokers an answer names as leaders (Produce v10+, Fetch v16+)."""
    if not nodes:
        return []
    host, ports = ctx.services.advertised(ctx.listener)
    return [{"node_id": n, "host": host, "port": ports[n], "rack": None} for n in sorted(nodes) if n in ports]


# v13+ address topics by id; the answer is written around the stored batches, not copied by kio
@register(ApiKey.FETCH, versions=(4, 18), encoder=fetch_response)
async def fetch(ctx: RequestContext, request: Any) -> dict[str, Any]:
    """Answer at once when ``min_bytes`` are there (or a partition has an error), else park the fetch.

    A parked fetch is Kafka's ``DelayedFetch``: it does not read the log again until it completes. It
    starts from the bytes its first read found per partition and adds the size of each batch appended
    to one of its partitions afterwards (each partition counting up to its ``partition_max_bytes``);
    once ``min_bytes`` are reached, or ``max_wait`` has passed, the partitions are read once more and
    answered. So a fetch waiting for more bytes than will ever arrive costs nothing while it waits.
    """
    if int(getattr(request, "session_epoch", FINAL_EPOCH)) not in (INITIAL_EPOCH, FINAL_EPOCH):
        # An incremental fetch (epoch 1 and up) names a session, and none was ever handed out:
        # Kafka's FetchManager answers an unknown session so. A full fetch (epoch 0) or a session's
        # close (epoch -1, the last fetch of a closing consumer) is answered like any full fetch,
        # whatever session id it names (Kafka drops that session if it has it).
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
            "session_id": 0,
            "responses": [],
            "node_endpoints": [],
        }
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(0.0, request.max_wait.total_seconds())
    min_bytes = int(request.min_bytes)
    named = _named_once(ctx, request)
    answer, total, errors, sizes, answered_aside = await _fetch_once(ctx, request, named)
    # Kafka answers at once a fetch with no partition to read (``KafkaApis``: nothing "interesting",
    # e.g. the empty fetch a closing Java consumer sends to close its fetch session) — it does not
    # wait ``max_wait`` for bytes that cannot come
    if not sizes or total >= min_bytes or errors or loop.time() >= deadline:
        return answer
    _close_regions(answer)  # the answer is read again once the fetch completes
    caps = {
        key: int(part.partition_max_bytes)
        for name, _, part in named
        if (key := (name, int(part.partition))) in sizes
    }
    waiter = FetchWaiter(min_bytes, caps, sizes, loop.create_future())
    ctx.services.watch_appends(waiter)
    try:
        await asyncio.wait_for(asyncio.shield(waiter.done), timeout=deadline - loop.time())
    except TimeoutError:
        pass
    finally:
        ctx.services.unwatch_appends(waiter)
    return (await _fetch_once(ctx, request, named, answered_aside))[0]


def _close_regions(answer: dict[str, Any]) -> None:
    """Close the file regions (large reads) of an answer that will not be sent."""
    for topic in answer["responses"]:
        for entry in topic["partitions"]:
            records = entry["records"]
            if not isinstance(records, bytes | bytearray | memoryview):
                records.close()


# v10 adds a timeout (for reads from tiered storage, which kgroup has not); v11 the earliest
# pending-upload offset (-6), which without tiered storage is no offset (-1), as latest-tiered (-5)
#: the special timestamps ListOffsets takes and the version each came with (``ReplicaManager``'s
#: ``timestampMinSupportedVersion``): -1 latest, -2 earliest, -3 max timestamp, -4 earliest local,
#: -5 latest tiered, -6 earliest pending upload; any other negative one is UNSUPPORTED_VERSION
_SPECIAL_TIMESTAMPS_FROM = {-1: 1, -2: 1, -3: 7, -4: 8, -5: 9, -6: 11}


def _list_offsets_entry(index: int, code: int = ErrorCode.NONE) -> dict[str, Any]:
    return {"partition_index": index, "error_code": code, "timestamp": -1, "offset": -1, "leader_epoch": -1}


@register(ApiKey.LIST_OFFSETS, versions=(1, 11))
async def list_offsets(ctx: RequestContext, request: Any) -> dict[str, Any]:
    """As ``KafkaApis.handleListOffsetRequest`` and ``ReplicaManager.fetchOffset``: topic entries the
    principal may not describe are answered last, in the request's order; a partition named twice is
    INVALID_REQUEST (answered once), a special timestamp the version does not know UNSUPPORTED_VERSION;
    the others are answered in the order of Kafka's maps (:func:`list_offsets_order`)."""
    seen: set[tuple[str, int]] = set()
    duplicates: set[tuple[str, int]] = set()
    for topic in request.topics:
        for part in topic.partitions:
            key = (topic.name, int(part.partition_index))
            (duplicates if key in seen else seen).add(key)
    allowed: dict[str, bool] = {}
    for topic in request.topics:
        if topic.name not in allowed:
            allowed[topic.name] = ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name)
    answers: dict[tuple[str, int], dict[str, Any]] = {}
    for topic in request.topics:
        if not allowed[topic.name]:
            continue
        for part in topic.partitions:
            if ctx.pacer.due():
                await ctx.pacer.pause()
            index = int(part.partition_index)
            timestamp = int(part.timestamp)
            if (topic.name, index) in duplicates:
                answers[(topic.name, index)] = _list_offsets_entry(index, ErrorCode.INVALID_REQUEST)
            elif timestamp < 0 and ctx.version < _SPECIAL_TIMESTAMPS_FROM.get(timestamp, 1 << 15):
                answers[(topic.name, index)] = _list_offsets_entry(index, ErrorCode.UNSUPPORTED_VERSION)
            else:
                answers[(topic.name, index)] = _offset_for(ctx, request, topic.name, part)
    topics = [
        {"name": name, "partitions": [answers[(name, index)] for index in indexes]}
        for name, indexes in list_offsets_order(list(answers))
    ]
    topics.extend(
        {
            "name": topic.name,
            "partitions": [
                _list_offsets_entry(int(part.partition_index), ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                for part in topic.partitions
            ],
        }
        for topic in request.topics
        if not allowed[topic.name]
    )
    return {"throttle_time": 0, "topics": topics}


def _offset_for(ctx: RequestContext, request: Any, topic: str, part: Any) -> dict[str, Any]:
    """One partition's answer (``fetchOffsetForTimestamp``)."""
    index = int(part.partition_index)
    entry = _list_offsets_entry(index)
    code = leader_check(ctx, topic, index)
    if code == ErrorCode.NONE:
        code = _epoch_check(int(getattr(part, "current_leader_epoch", NO_EPOCH)))
    if code == ErrorCode.NONE:
        plog = ctx.services.cluster.partition_log(topic, index)
        assert plog is not None
        entry["leader_epoch"] = LEADER_EPOCH
        # -1 latest, -2 earliest, -3 max timestamp, -4 earliest local, -5 latest tiered, else
        # the first record at or after the timestamp (UnifiedLog.fetchOffsetByTimestamp)
        found: tuple[int, int] | None
        try:
            if int(part.timestamp) == LATEST and int(getattr(request, "isolation_level", 0)) == 1:
                # read_committed's latest offset is the last stable offset (Kafka's
                # fetchOffsetForTimestamp with READ_COMMITTED)
                found = (-1, plog.last_stable_offset)
            else:
                found = plog.offset_for_timestamp(int(part.timestamp))
        except LogError as exc:
            code, found = exc.error_code, None
        except OSError:
            code, found = ErrorCode.KAFKA_STORAGE_ERROR, None
        if found is not None:
            entry["timestamp"], entry["offset"] = found
        if code == ErrorCode.NONE and entry["offset"] < 0:
            entry["leader_epoch"] = NO_EPOCH  # no offset found: Kafka's answer has no epoch
    entry["error_code"] = code
    return entry
