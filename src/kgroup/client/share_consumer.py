"""``ShareConsumer``: a share-group consumer (KIP-932) over the wire, Kafka 4.4's ``KafkaShareConsumer``.

The membership is kgroup's pure :class:`~kgroup.member.share.ShareMember` (ShareGroupHeartbeat: join
at epoch 0 with a client-chosen id, the coordinator's assignment, heartbeats, fencing and rejoin,
leave with epoch -1); the share sessions are :class:`~kgroup.member.share_session.ShareSession`
(ShareFetch epoch 0 to open, incremental after, acknowledgements piggy-backed, epoch -1 to close).
This adapter moves their requests over TCP, keeps the clock and the cluster metadata, reads the
records (:mod:`kgroup.client.share_records`) and keeps the application's acknowledgements:

* ``acknowledgement_mode="implicit"`` (Kafka's default ``share.acknowledgement.mode``): every record
  the last :meth:`ShareConsumer.poll` returned is accepted by the next ``poll``, ``commit_sync``,
  ``commit_async`` or ``close``; :meth:`~ShareConsumer.acknowledge` is refused.
* ``"explicit"``: the application acknowledges each record (ACCEPT, RELEASE, REJECT); ``poll`` is
  refused until every record of the last one is acknowledged, as Kafka's is.

Acknowledgements go to each partition's leader with its next ShareFetch, or at once in a
ShareAcknowledge for ``commit_sync`` / ``commit_async``; their per-partition results go to the
acknowledgement commit callback and are what ``commit_sync`` returns.

Fetches run ahead of ``poll`` as Kafka's do (one ShareFetch in flight per leader, its records buffered
until the next ``poll``); group requests use a connection of their own (the coordinator's), so a
ShareFetch parked on a broker never delays a heartbeat.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgroup.client.bootstrap import ClientError, connect_first, parse_bootstrap
from kgroup.client.cluster import ClusterView, cluster_from_metadata
from kgroup.client.connection import BrokerConnection, ConnectionLost
from kgroup.client.security import ClientSecurity
from kgroup.client.share_records import acquired_records
from kgroup.client.translate import client_spec, from_wire, to_wire
from kgroup.client.versions import UnsupportedApi, broker_ranges
from kgroup.member.requests import OutboundRequest
from kgroup.member.share import SHARE_PROTOCOL_NOT_SUPPORTED, ShareMember, ShareMemberConfig
from kgroup.member.share_session import FetchPlan, ShareSession
from kgroup.model import ErrorCode, KgroupError, PeerError, TopicId, TopicPartition
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.codec import build, error_from_wire, request_class

__all__ = [
    "AcknowledgeType",
    "ShareAcknowledgementError",
    "ShareConsumer",
    "ShareConsumerStateError",
    "ShareRecord",
]

log = logging.getLogger("kgroup.client.share")

_COORDINATOR = "coordinator"
#: the versions kgroup's share consumer speaks (Kafka 4.4.0's client: ShareFetch / ShareAcknowledge v1-v2)
_RANGES: dict[ApiKey, tuple[int, int]] = {
    ApiKey.METADATA: (4, 13),
    ApiKey.FIND_COORDINATOR: (1, 6),
    ApiKey.SHARE_GROUP_HEARTBEAT: (1, 1),
    ApiKey.SHARE_FETCH: (1, 2),
    ApiKey.SHARE_ACKNOWLEDGE: (1, 2),
}
_MODES = ("implicit", "explicit")
#: errors of a partition that mean "its leader moved": refresh metadata (Kafka's ShareConsumeRequestManager)
_LEADER_ERRORS = frozenset(
    {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
)


class AcknowledgeType(enum.IntEnum):
    """Kafka's ``AcknowledgeType``: how a delivered record is acknowledged."""

    ACCEPT = 1  # processed: never delivered again
    RELEASE = 2  # not processed: delivered again (its delivery count grows)
    REJECT = 3  # unprocessable: archived, never delivered again


_GAP = 0


class ShareConsumerStateError(ClientError):
    """A call the consumer's state does not allow (Kafka's ``IllegalStateException``)."""


class ShareAcknowledgementError(ClientError):
    """A partition's acknowledgements failed (Kafka's per-partition ``KafkaException``)."""

    def __init__(self, topic_partition: TopicPartition, error: ErrorCode, message: str | None = None) -> None:
        self.topic_partition = topic_partition
        self.error = error
        detail = f": {message}" if message else ""
        super().__init__(f"acknowledging {topic_partition} failed: {error.name}{detail}")


@dataclass(frozen=True, slots=True)
class ShareRecord:
    """One record a poll returned: Kafka's ``ConsumerRecord`` of a share consumer (``delivery_count``
    is ``ConsumerRecord.deliveryCount()``: 1 the first time, more after a release or a lock timeout)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    delivery_count: int

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


AcknowledgementCommitCallback = Callable[[Mapping[TopicPartition, frozenset[int]], Exception | None], None]


@dataclass(slots=True)
class _Node:
    connection: BrokerConnection | None = None
    versions: dict[int, int] = field(default_factory=dict)
    opening: asyncio.Task[None] | None = None


@dataclass(slots=True)
class _Leader:
    """One partition leader's share session and what is under way with it."""

    session: ShareSession = field(default_factory=ShareSession)
    fetch: asyncio.Task[None] | None = None
    #: acknowledgement requests sent and not answered (ShareAcknowledge, or acks riding a fetch)
    pending: int = 0


class ShareConsumer:
    """A share consumer. ``async with ShareConsumer(bootstrap, group_id) as consumer`` or start/close.

    ``acknowledgement_mode`` is Kafka's ``share.acknowledgement.mode`` (``"implicit"`` or
    ``"explicit"``); ``max_poll_records`` (500), ``fetch_max_wait_ms`` (500), ``fetch_min_bytes`` (1),
    ``fetch_max_bytes`` (50 MiB), ``request_timeout_ms`` (30 s), ``retry_backoff_ms`` (100),
    ``metadata_max_age_ms`` (5 min), ``client_id`` and ``rack_id`` (``client.rack``) are Kafka's
    settings of the same names. ``security``: TLS / SASL (:class:`~kgroup.client.security.ClientSecurity`).
    ``rng`` draws the member id and backoff jitter (the OS's entropy by default).
    """

    def __init__(
        self,
        bootstrap_servers: str,
        group_id: str,
        *,
        acknowledgement_mode: str = "implicit",
        client_id: str = "kgroup",
        rack_id: str | None = None,
        max_poll_records: int = 500,
        fetch_max_wait_ms: int = 500,
        fetch_min_bytes: int = 1,
        fetch_max_bytes: int = 52428800,
        request_timeout_ms: int = 30000,
        retry_backoff_ms: int = 100,
        metadata_max_age_ms: int = 300000,
        security: ClientSecurity | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if acknowledgement_mode not in _MODES:
            raise KgroupError(
                f"acknowledgement_mode: {acknowledgement_mode!r}; give 'implicit' or 'explicit' "
                "(Kafka's share.acknowledgement.mode)"
            )
        for name, value in (
            ("max_poll_records", max_poll_records),
            ("fetch_max_wait_ms", fetch_max_wait_ms),
            ("fetch_min_bytes", fetch_min_bytes),
            ("fetch_max_bytes", fetch_max_bytes),
            ("request_timeout_ms", request_timeout_ms),
            ("metadata_max_age_ms", metadata_max_age_ms),
        ):
            if not isinstance(value, int) or value <= 0:
                raise KgroupError(f"{name}: {value!r}; give a positive integer")
        self._bootstrap = parse_bootstrap(bootstrap_servers)
        self.group_id = group_id
        self.acknowledgement_mode = acknowledgement_mode
        self._explicit = acknowledgement_mode == "explicit"
        self._client_id = client_id
        self._max_poll_records = max_poll_records
        self._fetch_max_wait_ms = fetch_max_wait_ms
        self._fetch_min_bytes = fetch_min_bytes
        self._fetch_max_bytes = fetch_max_bytes
        self._request_timeout_s = request_timeout_ms / 1000
        self._metadata_max_age_ms = metadata_max_age_ms
        self._retry_backoff_s = retry_backoff_ms / 1000
        self._security = security or ClientSecurity()
        self._member = ShareMember(
            ShareMemberConfig(group_id, rack_id=rack_id, retry_backoff_ms=retry_backoff_ms),
            rng=rng if rng is not None else random.Random(),
        )
        self._nodes: dict[Any, _Node] = {}
        self._bootstrap_key: Any = ("bootstrap", 0)
        self._addresses: dict[Any, tuple[str, int]] = {}
        self._leaders: dict[int, _Leader] = {}
        self._cluster: ClusterView | None = None
        self._names: dict[TopicId, str] = {}
        self._metadata_due_ms = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._driver: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._wake = asyncio.Event()
        self._ready = asyncio.Event()
        #: records fetched and not yet returned by poll, in arrival order
        self._buffer: list[ShareRecord] = []
        #: the records the last poll returned: (topic, partition, offset) -> the record
        self._delivered: dict[tuple[str, int, int], ShareRecord] = {}
        self._acknowledged: set[tuple[str, int, int]] = set()
        #: acknowledgements not yet sent: (topic id, partition) -> offset -> type
        self._acks: dict[tuple[TopicId, int], dict[int, int]] = {}
        #: acknowledgement results not yet given to the callback
        self._results: list[tuple[dict[TopicPartition, frozenset[int]], Exception | None]] = []
        self._sync_results: dict[TopicPartition, ShareAcknowledgementError | None] | None = None
        self._callback: AcknowledgementCommitCallback | None = None
        self._fetch_error: ClientError | None = None
        self._lock_timeout_ms: int | None = None
        self._closed = False

    # --- lifecycle -----------------------------------------------------------------------------------

    async def __aenter__(self) -> ShareConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Reach the cluster (the first bootstrap server that answers) and load metadata."""
        self._loop = asyncio.get_running_loop()

        async def reach(index: int, address: tuple[str, int]) -> None:
            self._addresses[("bootstrap", index)] = address
            await self._ensure_node(("bootstrap", index))

        index = await connect_first(self._bootstrap, reach, setting="bootstrap_servers")
        key = ("bootstrap", index)
        address = self._bootstrap[index]
        self._bootstrap_key = key
        versions = self._nodes[key].versions
        missing = [k.title for k in (ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_FETCH) if k not in versions]
        if missing:
            self._close_connections()
            raise ClientError(
                f"{address[0]}:{address[1]}: {SHARE_PROTOCOL_NOT_SUPPORTED} (no {', '.join(missing)})"
            )
        await self._refresh_metadata()
        self._driver = self._loop.create_task(self._drive())

    async def close(self, timeout_ms: int = 30000) -> None:
        """Kafka's ``close()``: acknowledge what is due (implicit mode: accept the last poll's records),
        close every share session (ShareAcknowledge, epoch -1: the broker releases what is still held),
        leave the group (ShareGroupHeartbeat, epoch -1), then disconnect."""
        if self._closed:
            return
        if self._loop is None:
            self._closed = True
            return
        deadline = self._now() + timeout_ms
        try:
            if self._member.fatal_error is None:
                self._ack_delivered_implicitly()
                self._move_delivered_acks()
                for task in [leader.fetch for leader in self._leaders.values() if leader.fetch is not None]:
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await asyncio.wait_for(
                            asyncio.shield(task), max(0.0, (deadline - self._now()) / 1000)
                        )
                with_acks = set(self._ack_nodes())
                closing = [
                    self._spawn(self._acknowledge(node_id, closing=True))
                    for node_id in sorted(set(self._leaders) | with_acks)
                    if node_id in with_acks or self._leaders[node_id].session.epoch > 0
                ]
                self._dispatch(self._member.close(self._now()))
                waiting = closing + [t for t in self._tasks if t not in closing]
                if waiting:
                    await asyncio.wait(waiting, timeout=max(0.0, (deadline - self._now()) / 1000))
                while not self._member.left and self._now() < deadline:
                    await asyncio.sleep(0.01)
                self._deliver_results()
            else:
                self._member.close(self._now())
        finally:
            self._closed = True
            if self._driver is not None:
                self._driver.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._driver
            for task in list(self._tasks):
                task.cancel()
            for node in self._nodes.values():
                if node.opening is not None and not node.opening.done():
                    node.opening.cancel()
            self._close_connections()

    # --- the application's calls ---------------------------------------------------------------------

    @property
    def member_id(self) -> str:
        return self._member.member_id

    @property
    def member_epoch(self) -> int:
        return self._member.member_epoch

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions the coordinator gave this member to fetch from."""
        return self._member.assignment()

    def subscription(self) -> tuple[str, ...]:
        return self._member.subscription

    @property
    def acquisition_lock_timeout_ms(self) -> int | None:
        """``acquisitionLockTimeoutMs()``: the lock duration the last ShareFetch answer named."""
        return self._lock_timeout_ms

    def subscribe(self, topics: Sequence[str]) -> None:
        """``subscribe(topics)``: the group is joined at the next :meth:`poll`."""
        self._check_usable()
        if isinstance(topics, str):
            raise KgroupError(f"subscribe: give a list of topic names, not the string {topics!r}")
        self._member.subscribe(list(topics))
        self._wake.set()

    def set_acknowledgement_commit_callback(self, callback: AcknowledgementCommitCallback | None) -> None:
        """``setAcknowledgementCommitCallback``: ``callback(offsets, exception)`` per partition result,
        called from this consumer's ``poll``, ``commit_sync`` and ``close`` (never from another task)."""
        self._callback = callback

    async def poll(self, timeout_ms: int) -> list[ShareRecord]:
        """``poll(timeout)``: the records acquired for this member (each with its delivery count), or
        ``[]`` after ``timeout_ms``. Implicit mode accepts the last poll's records first; explicit mode
        refuses to poll until each of them is acknowledged."""
        self._check_usable()
        if timeout_ms < 0:
            raise KgroupError(f"poll: timeout_ms {timeout_ms}; give 0 or more milliseconds")
        if not self._member.subscription:
            raise ShareConsumerStateError("Consumer is not subscribed to any topics.")
        if self._explicit and any(key not in self._acknowledged for key in self._delivered):
            raise ShareConsumerStateError(
                "All records must be acknowledged in explicit acknowledgement mode (acknowledge every "
                "record of the last poll with ACCEPT, RELEASE or REJECT first)."
            )
        self._ack_delivered_implicitly()
        self._move_delivered_acks()
        self._dispatch(self._member.poll(self._now()))
        self._deliver_results()
        deadline = self._now() + timeout_ms
        while True:
            self._raise_errors()
            self._send_fetches()
            if self._buffer:
                break
            remaining = deadline - self._now()
            if remaining <= 0:
                break
            self._ready.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ready.wait(), remaining / 1000)
        records = self._take_buffer()
        self._delivered = {(r.topic, r.partition, r.offset): r for r in records}
        self._acknowledged = set()
        self._deliver_results()
        return records

    def acknowledge(self, record: ShareRecord, type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        """``acknowledge(record, type)`` (explicit mode): how a record the last poll returned was processed;
        sent with the next poll's ShareFetch, or by ``commit_sync`` / ``commit_async``."""
        try:
            kind = AcknowledgeType(type)
        except ValueError:
            raise KgroupError(
                f"acknowledge: type {type!r}; give AcknowledgeType.ACCEPT, RELEASE or REJECT"
            ) from None
        self._check_usable()
        if not self._explicit:
            raise ShareConsumerStateError(
                "Implicit acknowledgement of delivery is being used (acknowledgement_mode='implicit'); "
                "create the consumer with acknowledgement_mode='explicit' to acknowledge records"
            )
        key = (record.topic, record.partition, record.offset)
        if key not in self._delivered or key in self._acknowledged:
            raise ShareConsumerStateError(
                f"The record cannot be acknowledged ({record.topic}-{record.partition} offset "
                f"{record.offset}: not returned by the last poll, or acknowledged already)."
            )
        self._acknowledged.add(key)
        topic_id = self._topic_id(record.topic)
        self._acks.setdefault((topic_id, record.partition), {})[record.offset] = int(kind)

    async def commit_sync(
        self, timeout_ms: int = 60000
    ) -> dict[TopicPartition, ShareAcknowledgementError | None]:
        """``commitSync()``: send the acknowledgements due now (ShareAcknowledge to each leader) and wait
        for them: each partition acknowledged, with ``None`` or the error its leader answered."""
        self._check_usable()
        self._ack_delivered_implicitly()
        self._move_delivered_acks()
        if not self._acks:
            self._deliver_results()
            return {}
        results: dict[TopicPartition, ShareAcknowledgementError | None] = {}
        self._sync_results = results
        try:
            tasks = [self._spawn(self._acknowledge(node_id, closing=False)) for node_id in self._ack_nodes()]
            if tasks:
                _done, pending = await asyncio.wait(tasks, timeout=timeout_ms / 1000)
                if pending:
                    raise ClientError(
                        f"commit_sync: the acknowledgements were not answered in {timeout_ms} ms"
                    )
        finally:
            self._sync_results = None
        self._deliver_results()
        return results

    def commit_async(self) -> None:
        """``commitAsync()``: send the acknowledgements due now without waiting; their results go to the
        acknowledgement commit callback during a later ``poll``, ``commit_sync`` or ``close``."""
        self._check_usable()
        self._ack_delivered_implicitly()
        self._move_delivered_acks()
        for node_id in self._ack_nodes():
            self._spawn(self._acknowledge(node_id, closing=False))

    # --- acknowledgements ----------------------------------------------------------------------------

    def _ack_delivered_implicitly(self) -> None:
        """Implicit mode: the last poll's records not acknowledged yet are accepted."""
        if self._explicit:
            return
        for key, record in self._delivered.items():
            if key not in self._acknowledged:
                self._acknowledged.add(key)
                topic_id = self._topic_id(record.topic)
                self._acks.setdefault((topic_id, record.partition), {})[record.offset] = int(
                    AcknowledgeType.ACCEPT
                )

    def _move_delivered_acks(self) -> None:
        """The last poll's records are all acknowledged (or never will be): forget them."""
        if all(key in self._acknowledged for key in self._delivered):
            self._delivered = {}
            self._acknowledged = set()

    def _ack_nodes(self) -> list[int]:
        nodes: set[int] = set()
        for topic_id, partition in self._acks:
            leader = self._leader_of(topic_id, partition)
            if leader is not None:
                nodes.add(leader)
        return sorted(nodes)

    def _acks_for(self, node_id: int) -> dict[tuple[TopicId, int], dict[int, int]]:
        """Take the acknowledgements due to ``node_id`` (removed from what is pending)."""
        taken: dict[tuple[TopicId, int], dict[int, int]] = {}
        for key in list(self._acks):
            if self._leader_of(*key) == node_id:
                taken[key] = self._acks.pop(key)
        return taken

    def _record_result(
        self, key: tuple[TopicId, int], offsets: Mapping[int, int], error: ErrorCode, message: str | None
    ) -> None:
        tp = TopicPartition(self._names.get(key[0], str(key[0])), key[1])
        exc = None if error is ErrorCode.NONE else ShareAcknowledgementError(tp, error, message)
        real = frozenset(o for o, t in offsets.items() if t != _GAP)
        if real:
            self._results.append(({tp: real}, exc))
        sync = self._sync_results
        if sync is not None and (tp not in sync or sync[tp] is None):
            sync[tp] = exc

    def _deliver_results(self) -> None:
        results, self._results = self._results, []
        if self._callback is None:
            return
        for offsets, exc in results:
            self._callback(offsets, exc)

    # --- fetching ------------------------------------------------------------------------------------

    def _wanted_by_leader(self) -> dict[int, set[tuple[TopicId, int]]]:
        wanted: dict[int, set[tuple[TopicId, int]]] = {}
        for tp in self._member.assignment():
            topic_id = self._topic_id_or_none(tp.topic)
            if topic_id is None:
                continue
            leader = self._leader_of(topic_id, tp.partition)
            if leader is not None:
                wanted.setdefault(leader, set()).add((topic_id, tp.partition))
        return wanted

    def _send_fetches(self) -> None:
        """One ShareFetch in flight per leader that has partitions to fetch from (or a session to
        shrink); the application's acknowledgements for it ride along."""
        wanted = self._wanted_by_leader()
        nodes = set(wanted) | {n for n, leader in self._leaders.items() if leader.session.partitions}
        for node_id in sorted(nodes):
            leader = self._leaders.setdefault(node_id, _Leader())
            if leader.fetch is not None and not leader.fetch.done():
                continue
            if not wanted.get(node_id) and leader.pending:
                continue
            leader.fetch = self._spawn(self._fetch(node_id, wanted.get(node_id, set())))

    async def _fetch(self, node_id: int, wanted: set[tuple[TopicId, int]]) -> None:
        leader = self._leaders[node_id]
        if not wanted and not leader.session.partitions:
            return
        acks = self._acks_for(node_id)
        if leader.session.epoch == 0 and acks:
            # Kafka: "Cannot send acknowledgements on initial epoch" (the session they belonged to is gone)
            for key, offsets in acks.items():
                self._record_result(
                    key, offsets, ErrorCode.INVALID_SHARE_SESSION_EPOCH, "the share session was reset"
                )
            acks = {}
        plan = leader.session.plan_fetch(wanted, acks)
        sent_acks = {key: acks[key] for key in plan.partitions if key in acks}
        for key in set(acks) - set(sent_acks):  # for a partition no longer in the session: ShareAcknowledge
            self._acks.setdefault(key, {}).update(acks[key])
        leader.pending += 1 if sent_acks else 0
        try:
            response = await self._request(node_id, ApiKey.SHARE_FETCH, self._share_fetch_body(plan, node_id))
        except (ConnectionLost, TimeoutError, PeerError, UnsupportedApi, KeyError) as exc:
            log.info("ShareFetch to node %s failed: %s", node_id, exc)
            leader.session.on_failure()
            for key, offsets in sent_acks.items():
                self._record_result(key, offsets, ErrorCode.NETWORK_EXCEPTION, str(exc))
            self._metadata_due_ms = self._now()
            await self._back_off()
            return
        finally:
            leader.pending -= 1 if sent_acks else 0
            self._ready.set()
        top = error_from_wire(int(response.error_code))
        leader.session.on_answer(top)
        if top is not ErrorCode.NONE:
            for key, offsets in sent_acks.items():
                self._record_result(key, offsets, top, response.error_message)
            if top in (ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED):
                self._fetch_error = ClientError(
                    f"ShareFetch for group {self.group_id} failed: {top.name}: {response.error_message or ''}"
                )
            log.info("ShareFetch to node %s: %s %s", node_id, top.name, response.error_message)
            await self._back_off()
            return
        if response.acquisition_lock_timeout is not None:
            self._lock_timeout_ms = int(response.acquisition_lock_timeout.total_seconds() * 1000)
        answered: set[tuple[TopicId, int]] = set()
        got: list[ShareRecord] = []
        gaps: dict[tuple[TopicId, int], dict[int, int]] = {}
        for topic in response.responses:
            topic_id = TopicId.from_int(topic.topic_id.int) if topic.topic_id is not None else None
            if topic_id is None:
                continue
            name = self._names.get(topic_id)
            for part in topic.partitions:
                key = (topic_id, int(part.partition_index))
                if key in sent_acks:
                    answered.add(key)
                    ack_error = error_from_wire(int(part.acknowledge_error_code))
                    self._record_result(key, sent_acks[key], ack_error, part.acknowledge_error_message)
                error = error_from_wire(int(part.error_code))
                if error is not ErrorCode.NONE:
                    if error in _LEADER_ERRORS:
                        self._metadata_due_ms = self._now()
                    log.info("ShareFetch %s-%s: %s %s", name, key[1], error.name, part.error_message)
                    continue
                acquired = [
                    (int(a.first_offset), int(a.last_offset), int(a.delivery_count))
                    for a in part.acquired_records
                ]
                if not acquired or name is None:
                    continue
                records, missing = acquired_records(part.records, acquired)
                for raw, count in records[: len(records)]:
                    got.append(
                        ShareRecord(
                            name, key[1], raw.offset, raw.timestamp, raw.key, raw.value, raw.headers, count
                        )
                    )
                if missing:
                    gaps[key] = dict.fromkeys(missing, _GAP)
        for key in set(sent_acks) - answered:
            self._record_result(key, sent_acks[key], ErrorCode.NONE, None)
        for key, offsets in gaps.items():
            self._acks.setdefault(key, {}).update(offsets)
        self._buffer.extend(got)

    async def _back_off(self) -> None:
        """After a failed ShareFetch: wait ``retry_backoff_ms``, then let a waiting poll send again."""
        await asyncio.sleep(self._retry_backoff_s)
        self._ready.set()

    def _share_fetch_body(self, plan: FetchPlan, node_id: int) -> Any:
        forgotten: dict[TopicId, list[int]] = {}
        for topic_id, partition in plan.forgotten:
            forgotten.setdefault(topic_id, []).append(partition)
        return {
            "group_id": self.group_id,
            "member_id": self._member.member_id,
            "share_session_epoch": plan.epoch,
            "max_wait": self._fetch_max_wait_ms,
            "min_bytes": self._fetch_min_bytes,
            "max_bytes": self._fetch_max_bytes,
            "max_records": self._max_poll_records,
            "batch_size": self._max_poll_records,
            "topics": _wire_acknowledgement_topics(plan),
            "forgotten_topics_data": [
                {"topic_id": _wire_uuid(t), "partitions": ps} for t, ps in forgotten.items()
            ],
        }

    async def _acknowledge(self, node_id: int, *, closing: bool) -> None:
        """A ShareAcknowledge to ``node_id`` with the acknowledgements due to it (``closing``: epoch -1,
        which also ends the share session). It waits for a ShareFetch in flight to that node first, so
        the session's epochs go out in order."""
        leader = self._leaders.setdefault(node_id, _Leader())
        if leader.fetch is not None and not leader.fetch.done():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.shield(leader.fetch)
        acks = self._acks_for(node_id)
        if leader.session.epoch == 0:
            for key, offsets in acks.items():
                self._record_result(
                    key, offsets, ErrorCode.INVALID_SHARE_SESSION_EPOCH, "no share session with the leader"
                )
            return
        if not acks and not closing:
            return
        plan = leader.session.plan_acknowledge(acks, closing=closing)
        body = {
            "group_id": self.group_id,
            "member_id": self._member.member_id,
            "share_session_epoch": plan.epoch,
            "topics": _wire_acknowledgement_topics(plan),
        }
        leader.pending += 1
        try:
            response = await self._request(node_id, ApiKey.SHARE_ACKNOWLEDGE, body)
        except (ConnectionLost, TimeoutError, PeerError, UnsupportedApi, KeyError) as exc:
            leader.session.on_failure()
            for key, offsets in acks.items():
                self._record_result(key, offsets, ErrorCode.NETWORK_EXCEPTION, str(exc))
            return
        finally:
            leader.pending -= 1
            self._ready.set()
        top = error_from_wire(int(response.error_code))
        if not closing:
            leader.session.on_answer(top)
        errors: dict[tuple[TopicId, int], tuple[ErrorCode, str | None]] = {}
        for topic in response.responses:
            if topic.topic_id is None:
                continue
            topic_id = TopicId.from_int(topic.topic_id.int)
            for part in topic.partitions:
                errors[(topic_id, int(part.partition_index))] = (
                    error_from_wire(int(part.error_code)),
                    part.error_message,
                )
        for key, offsets in acks.items():
            if top is not ErrorCode.NONE:
                self._record_result(key, offsets, top, response.error_message)
            else:
                error, message = errors.get(key, (ErrorCode.NONE, None))
                if error in _LEADER_ERRORS:
                    self._metadata_due_ms = self._now()
                self._record_result(key, offsets, error, message)

    def _take_buffer(self) -> list[ShareRecord]:
        """What poll returns: everything buffered (as Kafka's default ``share.acquire.mode``
        ``batch_optimized`` returns whole acquired batches, ``max_poll_records`` being a soft limit)."""
        records, self._buffer = self._buffer, []
        return records

    # --- membership ----------------------------------------------------------------------------------

    async def _drive(self) -> None:
        """Kafka's network thread for the membership: heartbeats, FindCoordinator, metadata refresh."""
        while not self._closed:
            now = self._now()
            self._dispatch(self._member.background(now))
            if self._member.metadata_update_requested:
                self._metadata_due_ms = min(self._metadata_due_ms, now)
            if now >= self._metadata_due_ms:
                try:
                    await self._refresh_metadata()
                except (ConnectionLost, TimeoutError, PeerError, UnsupportedApi, KeyError) as exc:
                    log.info("metadata refresh failed: %s", exc)
                    self._metadata_due_ms = self._now() + 100
            wake = self._member.next_wakeup_ms()
            due = min(x for x in (wake, self._metadata_due_ms) if x is not None)
            delay = max(0.0, min((due - self._now()) / 1000, 1.0))
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    def _dispatch(self, out: list[OutboundRequest]) -> None:
        for request in out:
            self._spawn(self._send_member_request(request))

    async def _send_member_request(self, request: OutboundRequest) -> None:
        """One of the member's requests, routed as it says: to no node in particular (FindCoordinator)
        on the admin connection, else on the coordinator's own; what the request's spec
        (:func:`~kgroup.client.translate.client_spec`) says of it does the rest."""
        body = request.body
        spec = client_spec(body)
        try:
            if request.node_id is None:
                node = self._admin_node()
            else:
                node = (_COORDINATOR, request.node_id)
                if node not in self._addresses and request.node_id in self._addresses:
                    self._addresses[node] = self._addresses[request.node_id]
            await self._ensure_node(node)
            entry = self._nodes[node]
            try:
                version = self._version(entry, spec.api_key)
            except UnsupportedApi:
                if not spec.fatal_if_unsupported:
                    raise
                self._member.on_unsupported(self._now())
                return
            assert entry.connection is not None
            wire = await entry.connection.request(to_wire(body, version), timeout_s=self._request_timeout_s)
            typed = from_wire(body, wire)
            found = spec.coordinator(typed)
            if found is not None:
                node_id, host, port = found
                self._addresses[(_COORDINATOR, node_id)] = (host, port)
        except (ConnectionLost, TimeoutError, PeerError, UnsupportedApi, KeyError) as exc:
            log.info("%s failed: %s", type(body).__name__, exc)
            if not self._closed:
                await asyncio.sleep(0.05)
            self._dispatch(self._member.on_request_failed(self._now(), request.correlation_id))
            self._wake.set()
            return
        before = self._member.assignment()
        self._dispatch(self._member.on_response(self._now(), request.correlation_id, typed))
        if self._member.assignment() != before:
            self._ready.set()
        self._wake.set()

    # --- connections and metadata --------------------------------------------------------------------

    async def _refresh_metadata(self) -> None:
        node = self._admin_node()
        await self._ensure_node(node)
        entry = self._nodes[node]
        version = self._version(entry, ApiKey.METADATA)
        cls: Any = request_class(ApiKey.METADATA, version)
        fields: dict[str, Any] = {"topics": None, "allow_auto_topic_creation": False}
        if version >= 8:
            fields["include_topic_authorized_operations"] = False
        assert entry.connection is not None
        response = await entry.connection.request(cls(**fields), timeout_s=self._request_timeout_s)
        cluster = cluster_from_metadata(response)
        self._cluster = cluster
        for broker in cluster.brokers.values():
            self._addresses[broker.node_id] = (broker.host, broker.port)
        self._names = {tid: name for name, tid in cluster.topic_ids.items()}
        before = self._member.assignment()
        self._member.update_metadata(self._names)
        if self._member.assignment() != before:
            self._ready.set()
        self._metadata_due_ms = self._now() + self._metadata_max_age_ms

    def _admin_node(self) -> Any:
        """Where Metadata and FindCoordinator go: a connection of their own to the first broker (not
        the data connection, where a ShareFetch may be parked for ``fetch_max_wait_ms``)."""
        if self._cluster is None or not self._cluster.brokers:
            return self._bootstrap_key
        broker = self._cluster.brokers[min(self._cluster.brokers)]
        key = ("admin", broker.node_id)
        self._addresses[key] = (broker.host, broker.port)
        return key

    def _topic_id_or_none(self, topic: str) -> TopicId | None:
        return None if self._cluster is None else self._cluster.topic_ids.get(topic)

    def _topic_id(self, topic: str) -> TopicId:
        topic_id = self._topic_id_or_none(topic)
        if topic_id is None:
            raise ShareConsumerStateError(
                f"topic {topic!r}: its id is not in the metadata; cannot acknowledge"
            )
        return topic_id

    def _leader_of(self, topic_id: TopicId, partition: int) -> int | None:
        if self._cluster is None:
            return None
        name = self._names.get(topic_id)
        leaders = self._cluster.leaders.get(name) if name is not None else None
        if leaders is None or partition >= len(leaders) or leaders[partition] < 0:
            return None
        return leaders[partition]

    async def _request(self, node_id: int, api_key: ApiKey, fields: dict[str, Any]) -> Any:
        await self._ensure_node(node_id)
        entry = self._nodes[node_id]
        version = self._version(entry, api_key)
        cls: Any = request_class(api_key, version)
        assert entry.connection is not None
        timeout = self._request_timeout_s + self._fetch_max_wait_ms / 1000
        return await entry.connection.request(build(cls, fields), timeout_s=timeout)

    def _version(self, entry: _Node, api_key: ApiKey) -> int:
        version = entry.versions.get(api_key)
        if version is None:
            low, high = _RANGES[api_key]
            raise UnsupportedApi(f"the broker supports no version {low}-{high} of {api_key.title}")
        return version

    async def _ensure_node(self, key: Any) -> None:
        entry = self._nodes.setdefault(key, _Node())
        if entry.connection is not None and entry.connection.connected and entry.versions:
            return
        if entry.opening is None or entry.opening.done():
            entry.opening = asyncio.get_running_loop().create_task(self._open(key, entry))
        await asyncio.shield(entry.opening)

    async def _open(self, key: Any, entry: _Node) -> None:
        host, port = self._addresses[key]
        connection = BrokerConnection(host, port, client_id=self._client_id, security=self._security)
        try:
            await connection.open(timeout_s=self._request_timeout_s)
            ranges = await broker_ranges(connection, self._request_timeout_s)
        except BaseException:
            connection.close()
            raise
        if self._closed:
            connection.close()
            raise ConnectionLost(f"{host}:{port}: the consumer closed while connecting")
        versions: dict[int, int] = {}
        for api_key, (low, high) in _RANGES.items():
            theirs = ranges.get(api_key)
            if theirs is not None and max(low, theirs[0]) <= min(high, theirs[1]):
                versions[api_key] = min(high, theirs[1])
        entry.versions = versions
        entry.connection = connection

    def _close_connections(self) -> None:
        for entry in self._nodes.values():
            if entry.connection is not None:
                entry.connection.close()

    # --- internals -----------------------------------------------------------------------------------

    def _now(self) -> int:
        assert self._loop is not None
        return int(self._loop.time() * 1000)

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        assert self._loop is not None
        task = self._loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _check_usable(self) -> None:
        if self._closed:
            raise ShareConsumerStateError("This consumer has already been closed.")
        if self._loop is None:
            raise ShareConsumerStateError("the consumer is not started; call start() or use 'async with'")
        fatal = self._member.fatal_error
        if fatal is not None:
            raise ClientError(f"share group {self.group_id}: {fatal.error.name}: {fatal.message}")

    def _raise_errors(self) -> None:
        failure = self._member.take_error()
        if failure is not None:
            raise ClientError(f"share group {self.group_id}: {failure.error.name}: {failure.message}")
        if self._fetch_error is not None:
            error, self._fetch_error = self._fetch_error, None
            raise error


def _wire_uuid(topic_id: TopicId) -> uuid.UUID:
    return uuid.UUID(int=topic_id.to_int())


def _wire_acknowledgement_topics(plan: FetchPlan) -> list[dict[str, Any]]:
    """The ``topics`` of a ShareFetch or ShareAcknowledge: the plan's partitions by topic, each with
    its acknowledgement batches."""
    topics: dict[TopicId, list[dict[str, Any]]] = {}
    for (topic_id, partition), batches in plan.partitions.items():
        topics.setdefault(topic_id, []).append(
            {
                "partition_index": partition,
                "acknowledgement_batches": [
                    {
                        "first_offset": b.first_offset,
                        "last_offset": b.last_offset,
                        "acknowledge_types": b.acknowledge_types,
                    }
                    for b in batches
                ],
            }
        )
    return [{"topic_id": _wire_uuid(t), "partitions": ps} for t, ps in topics.items()]
