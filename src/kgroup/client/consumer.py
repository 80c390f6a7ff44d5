"""``GroupConsumer``: kgroup's pure :class:`~kgroup.member.ClassicConsumerMember` over a real network.

The member decides everything (when to join, what to send, how to react to each error); this adapter
only moves its requests to brokers and their answers back, keeps the clock (``now_ms`` is the event
loop's), and keeps the member's cluster metadata fresh:

* a request for a node goes out on that node's connection in the order the member produced it (one
  connection per node, opened on first use, with ApiVersions first to pick versions); FindCoordinator
  goes to the least-loaded known node (fewest in-flight requests, connected first), as Kafka's client;
* a response is translated back and given to ``member.on_response``; a timeout
  (``request.timeout.ms``, after which the connection is closed) or a disconnect fails every request
  on that connection through ``member.on_request_failed``;
* the member's :meth:`~kgroup.member.ClassicConsumerMember.background` runs at its own
  ``next_wakeup_ms`` (Kafka's heartbeat thread), :meth:`poll` is the application's poll;
* metadata (all topics, as a pattern subscription and the group leader need) is refreshed every
  ``metadata_max_age_ms`` and when the subscription changes; a pattern subscription is re-matched on
  every refresh, so new matching topics and added partitions are noticed as Kafka's consumer does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import re
import uuid
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kgroup.assignors.api import Assignor
from kgroup.client.bootstrap import ClientError, connect_first, parse_bootstrap
from kgroup.client.cluster import ClusterView, cluster_from_metadata
from kgroup.client.connection import BrokerConnection, ConnectionLost
from kgroup.client.nodes import ConnectionState, least_loaded_node
from kgroup.client.probe import ListenerMismatch, check_listener
from kgroup.client.security import ClientSecurity, SaslAuthenticationError
from kgroup.client.translate import client_spec, from_wire, to_wire
from kgroup.client.versions import CLIENT_RANGES, LAST_BY_NAME, UnsupportedApi, negotiate, offsets_version
from kgroup.member import ClassicConsumerMember, ConsumerMemberState, ConsumerProtocolMember, MemberConfig
from kgroup.member.consumer_protocol import CONSUMER_PROTOCOL_NOT_SUPPORTED
from kgroup.member.consumer_protocol_config import ConsumerProtocolConfig
from kgroup.member.events import CommitFailed, FatalError, MemberEvent, OffsetsCommitted
from kgroup.member.requests import OutboundRequest
from kgroup.member.states import Phase
from kgroup.messages import (
    Response,
)
from kgroup.model import KgroupError, PeerError, TopicPartition
from kgroup.wire.api_keys import ApiKey, api_name
from kgroup.wire.apis._common import TopicIds
from kgroup.wire.codec import request_class

__all__ = ["ClientError", "GroupConsumer", "parse_bootstrap"]

log = logging.getLogger("kgroup.client")

_BOOTSTRAP_NODE = -1
_COORDINATOR_BASE = 2**31 - 1  # Kafka's coordinator connection id: Integer.MAX_VALUE - node id
#: kgroup's connections send without waiting for a free slot (no ``max.in.flight.requests.per.connection``)
_NO_IN_FLIGHT_CAP = 2**31 - 1
_GROUP_PROTOCOLS = ("classic", "consumer")


class _Member(Protocol):
    """What the driver needs of a member, classic or consumer protocol."""

    def poll(self, now_ms: int) -> list[OutboundRequest]: ...
    def background(self, now_ms: int) -> list[OutboundRequest]: ...
    def next_wakeup_ms(self) -> int | None: ...
    def on_response(self, now_ms: int, correlation_id: int, response: Response) -> list[OutboundRequest]: ...
    def on_request_failed(self, now_ms: int, correlation_id: int) -> list[OutboundRequest]: ...
    def close(self, now_ms: int) -> list[OutboundRequest]: ...
    def commit(self, now_ms: int, offsets: Mapping[TopicPartition, int]) -> list[OutboundRequest]: ...
    def drain_events(self) -> list[MemberEvent]: ...
    def assignment(self) -> frozenset[TopicPartition]: ...
    def seek(self, tp: TopicPartition, offset: int) -> None: ...
    def record_processed(self, tp: TopicPartition, next_offset: int) -> None: ...
    @property
    def generation(self) -> int: ...
    @property
    def member_id(self) -> str: ...


@dataclass(slots=True)
class _Node:
    connection: BrokerConnection | None = None
    versions: dict[int, int] | None = None
    opening: asyncio.Task[None] | None = None


class GroupConsumer:
    """A consumer-group member on the wire. Use ``async with GroupConsumer(...) as c`` or start/close.

    ``topics`` or ``pattern`` (a Python regular expression matched against whole topic names, like
    Java's ``Pattern.matcher().matches()``) is the subscription. ``assignors`` overrides the instances
    built from ``config.assignors`` (e.g. plug-ins with state). ``on_event`` receives every member
    event (rebalance callbacks, commits, errors) as it happens. ``max_versions`` caps the version of
    an API by name (e.g. ``{"JoinGroup": 5}``) for a broker that advertises a version it mishandles
    (librdkafka's mock cluster advertises flexible group API versions it misreads).

    ``group_protocol`` is Kafka's ``group.protocol``: ``"classic"`` (JoinGroup/SyncGroup, the
    default) or ``"consumer"`` (KIP-848: ConsumerGroupHeartbeat, the coordinator assigns; see
    ``docs/consumer-protocol-member.md``). With ``"consumer"``, ``remote_assignor`` is
    ``group.remote.assignor``, ``pattern`` is an RE2J regex the coordinator resolves, client-side
    ``assignors`` do not exist, and ``config``'s session timeout, heartbeat interval and assignors are
    not used (the coordinator owns them).

    ``security`` is how the member reaches brokers (Kafka's ``security.protocol``, TLS and SASL
    settings; see :class:`~kgroup.client.security.ClientSecurity`); a refused authentication fails
    :meth:`start`, or later calls, with a :class:`ClientError` carrying the broker's message.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        config: MemberConfig,
        *,
        topics: Sequence[str] = (),
        pattern: str | None = None,
        assignors: Sequence[Assignor] | None = None,
        request_timeout_ms: int = 30000,
        metadata_max_age_ms: int = 300000,
        on_event: Callable[[MemberEvent], None] | None = None,
        max_versions: Mapping[str, int] | None = None,
        group_protocol: str = "classic",
        remote_assignor: str | None = None,
        security: ClientSecurity | None = None,
    ) -> None:
        self._security = security or ClientSecurity()
        if group_protocol not in _GROUP_PROTOCOLS:
            raise KgroupError(f"group_protocol: {group_protocol!r}; give 'classic' or 'consumer'")
        consumer_protocol = group_protocol == "consumer"
        if consumer_protocol and assignors is not None:
            raise KgroupError(
                "assignors: the consumer group protocol assigns on the coordinator; use remote_assignor "
                "(e.g. 'uniform' or 'range') or group_protocol='classic'"
            )
        if not consumer_protocol and remote_assignor is not None:
            raise KgroupError(
                "remote_assignor: only the consumer group protocol has one; set group_protocol='consumer' "
                "or pass assignors for the classic protocol"
            )
        self.group_protocol = group_protocol
        if topics and pattern is not None:
            raise KgroupError("subscription: give topics or a pattern, not both")
        if not topics and pattern is None:
            raise KgroupError("subscription: empty; give the topics to consume or a pattern")
        self._pattern = None
        self._pattern_text = pattern
        if pattern is not None and not consumer_protocol:
            try:
                self._pattern = re.compile(pattern)
            except re.error as exc:
                raise KgroupError(f"pattern: {pattern!r} is not a regular expression ({exc})") from None
        timeouts = (("request_timeout_ms", request_timeout_ms), ("metadata_max_age_ms", metadata_max_age_ms))
        for name, value in timeouts:
            if value <= 0:
                raise KgroupError(f"{name}: {value}; give a positive number of milliseconds")
        self._caps: dict[int, int] = {}
        by_name = {key.title: key for key in CLIENT_RANGES}
        for name, cap in (max_versions or {}).items():
            key = by_name.get(name)
            low, high = CLIENT_RANGES[key] if key is not None else (0, -1)
            if key is None or not low <= cap <= high:
                low_high = {n: CLIENT_RANGES[k] for n, k in by_name.items()}
                raise KgroupError(
                    f"max_versions: {name}={cap} is not an API and version the client speaks; "
                    f"give one of {low_high}"
                )
            self._caps[key] = cap
        self._bootstrap = parse_bootstrap(bootstrap_servers)
        self.config = config
        self._assignors = assignors
        # with a pattern, the member is made once a topic matches (kgroup's member has no empty
        # subscription; Kafka's consumer joins with an empty one and gets nothing)
        self._member: ClassicConsumerMember | None = None
        self._consumer_member: ConsumerProtocolMember | None = None
        if consumer_protocol:
            # the member id is Kafka's Uuid.randomUuid() drawn from the OS's entropy
            protocol_config = ConsumerProtocolConfig.from_member_config(config, remote_assignor)
            self._consumer_member = ConsumerProtocolMember(protocol_config, rng=random.Random())
            if pattern is not None:
                self._consumer_member.subscribe_pattern(pattern)
            else:
                self._consumer_member.subscribe(list(topics))
        elif topics:
            self._member = ClassicConsumerMember(config, list(topics), assignors=assignors)
        self._request_timeout_s = request_timeout_ms / 1000
        self._metadata_max_age_ms = metadata_max_age_ms
        self._on_event = on_event
        self._nodes: dict[int, _Node] = {}
        self._addresses: dict[int, tuple[str, int]] = {}
        self._pending: dict[int, deque[OutboundRequest]] = {}
        self._senders: dict[int, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._events: list[MemberEvent] = []
        self._cluster: ClusterView | None = None
        self._metadata_due_ms = 0
        self._metadata_asked_ms = 0
        self._wake = asyncio.Event()
        self._driver: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._fatal: str | None = None
        self._closed = False

    # --- lifecycle ----------------------------------------------------------------------------------

    async def __aenter__(self) -> GroupConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Reach the cluster (first bootstrap server that answers) and load metadata."""
        self._loop = asyncio.get_running_loop()

        async def reach(index: int, address: tuple[str, int]) -> None:
            self._addresses[_BOOTSTRAP_NODE - index] = address
            await self._ensure_node(_BOOTSTRAP_NODE - index)

        index = await connect_first(
            self._bootstrap,
            reach,
            setting="kafka.bootstrap.servers",
            sasl_hint="; check sasl.username, sasl.password and sasl.mechanism",
            on_connection_lost=self._check_listener,
        )
        node = _BOOTSTRAP_NODE - index
        versions = self._nodes[node].versions or {}
        if self._consumer_member is not None and ApiKey.CONSUMER_GROUP_HEARTBEAT not in versions:
            for entry in self._nodes.values():
                if entry.connection is not None:
                    entry.connection.close()
            host, port = self._addresses[node]
            raise ClientError(f"group_protocol='consumer': {host}:{port}: {CONSUMER_PROTOCOL_NOT_SUPPORTED}")
        try:
            await self.refresh_metadata()
        except ConnectionLost:
            await self._check_listener(*self._addresses[node])  # a SASL listener closes here
            raise
        self._driver = self._loop.create_task(self._drive())

    async def close(self, timeout_ms: int = 5000) -> None:
        """Kafka's ``close()``: commit (auto-commit), revoke, LeaveGroup unless static, then disconnect."""
        if self._closed:
            return
        active = self._active
        if self._loop is not None and active is not None and not self._failed_for_good():
            self._dispatch(active.close(self._now()))
            deadline = self._now() + timeout_ms
            while self._has_in_flight() and self._now() < deadline:
                await asyncio.sleep(0.01)
        self._closed = True
        if self._driver is not None:
            self._driver.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._driver
        for task in list(self._senders.values()) + list(self._tasks):
            task.cancel()
        # a connection still opening (shielded from its sender's cancellation) is ended too: left
        # running, it would finish after the loop below and its socket would never be closed
        opening = [n.opening for n in self._nodes.values() if n.opening is not None and not n.opening.done()]
        for task in opening:
            task.cancel()
        await asyncio.gather(*opening, return_exceptions=True)
        for node in self._nodes.values():
            if node.connection is not None:
                node.connection.close()
                await node.connection.wait_closed()
        self._collect_events()

    # --- the application's side ---------------------------------------------------------------------

    @property
    def _active(self) -> _Member | None:
        return self._consumer_member if self._consumer_member is not None else self._member

    def _failed_for_good(self) -> bool:
        if self._consumer_member is not None:
            return self._consumer_member.state is ConsumerMemberState.FATAL
        return self._member is not None and self._member.phase is Phase.FAILED

    @property
    def consumer_member(self) -> ConsumerProtocolMember:
        """The pure consumer-protocol member (``group_protocol='consumer'`` only)."""
        if self._consumer_member is None:
            raise ClientError("consumer_member: this client uses the classic protocol; see member")
        return self._consumer_member

    @property
    def state(self) -> str:
        """The member's state by name (the classic member's phase, or the consumer protocol's state)."""
        if self._consumer_member is not None:
            return self._consumer_member.state.name
        return self.phase.name

    @property
    def member(self) -> ClassicConsumerMember:
        """The pure member this client drives (:class:`ClientError` while a pattern matches nothing)."""
        if self._consumer_member is not None:
            raise ClientError("member: this client uses group_protocol='consumer'; see consumer_member")
        if self._member is None:
            raise ClientError(
                f"pattern {self._pattern_text!r} matches no topic yet; the member has not joined"
            )
        return self._member

    @property
    def has_member(self) -> bool:
        """False while a pattern subscription matches no topic (no member exists yet)."""
        return self._active is not None

    @property
    def settled(self) -> bool:
        """In a stable generation with nothing to rejoin for and no request in flight."""
        cmember = self._consumer_member
        if cmember is not None:
            return (
                cmember.state is ConsumerMemberState.STABLE
                and cmember.target_assignment() == cmember.current_assignment()
                and not self._has_in_flight()
            )
        member = self._member
        return (
            member is not None
            and member.phase is Phase.STABLE
            and not member.rejoin_needed
            and not self._has_in_flight()
        )

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        active = self._active
        return frozenset() if active is None else active.assignment()

    @property
    def generation(self) -> int:
        """The generation (classic) or the member epoch (consumer protocol); -1 with no member."""
        active = self._active
        return -1 if active is None else active.generation

    @property
    def member_id(self) -> str:
        active = self._active
        return "" if active is None else active.member_id

    @property
    def phase(self) -> Phase:
        return Phase.UNJOINED if self._member is None else self._member.phase

    @property
    def cluster(self) -> ClusterView | None:
        return self._cluster

    async def poll(self, timeout_ms: int = 0) -> list[MemberEvent]:
        """The application's poll: join or rejoin if needed, then let the protocol run for up to
        ``timeout_ms``; returns the member's events since the last call."""
        self._check_usable()
        active = self._active
        if active is not None:
            self._dispatch(active.poll(self._now()))
        self._wake.set()
        if timeout_ms > 0:
            await asyncio.sleep(timeout_ms / 1000)
        self._check_usable()
        return self._take_events()

    async def wait_stable(
        self, timeout_ms: int = 30000, poll_interval_ms: int = 50
    ) -> frozenset[TopicPartition]:
        """Poll until the member is in a stable group with nothing left to revoke or fetch, or time out."""
        deadline = self._now() + timeout_ms
        while True:
            await self.poll()
            if self.settled:
                return self.assignment
            if self._now() >= deadline:
                raise ClientError(
                    f"group {self.config.group_id}: not stable after {timeout_ms} ms "
                    f"(state {self.state}); is the coordinator reachable?"
                )
            await asyncio.sleep(poll_interval_ms / 1000)

    async def commit(self, offsets: Mapping[TopicPartition, int], timeout_ms: int = 30000) -> None:
        """``commitSync(offsets)`` with the member's current generation (raises :class:`ClientError`)."""
        self._check_usable()
        correlation = self._next_commit_id()
        active = self._active
        out = [] if active is None else active.commit(self._now(), dict(offsets))
        if not out:
            raise ClientError(
                f"commit: member of {self.config.group_id} is not in an active generation; "
                "poll until stable first"
            )
        self._dispatch(out)
        deadline = self._now() + timeout_ms
        while self._now() < deadline:
            for event in self._events[correlation:]:
                if isinstance(event, OffsetsCommitted) and dict(event.offsets) == dict(offsets):
                    return
                if isinstance(event, CommitFailed) and set(event.partitions) == set(offsets):
                    raise ClientError(f"commit failed: {event.error.name}")
            await asyncio.sleep(0.005)
            self._collect_events()
        raise ClientError(f"commit: no answer within {timeout_ms} ms")

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._require_active("seek").seek(tp, offset)

    def record_processed(self, tp: TopicPartition, next_offset: int) -> None:
        self._require_active("record_processed").record_processed(tp, next_offset)

    def subscribe(self, topics: Sequence[str]) -> None:
        self._pattern = None
        if self._consumer_member is not None:
            self._consumer_member.subscribe(topics)
        elif self._member is None:
            self._member = ClassicConsumerMember(self.config, list(topics), assignors=self._assignors)
        else:
            self._member.subscribe(topics)
        self._metadata_due_ms = 0

    # --- metadata ------------------------------------------------------------------------------------

    async def refresh_metadata(self) -> ClusterView:
        node = self._least_loaded()
        await self._ensure_node(node)
        entry = self._nodes[node]
        assert entry.connection is not None and entry.versions is not None
        version = self._version(entry, ApiKey.METADATA)
        cls: Any = request_class(ApiKey.METADATA, version)
        if version >= 8:
            body = cls(
                topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
            )
        else:
            body = cls(topics=None, allow_auto_topic_creation=False)
        response = await entry.connection.request(body, timeout_s=self._request_timeout_s)
        cluster = cluster_from_metadata(response)
        self._cluster = cluster
        for broker in cluster.brokers.values():
            self._addresses[broker.node_id] = (broker.host, broker.port)
        if self._pattern is not None:
            matched = sorted(t for t in cluster.topics if self._pattern.fullmatch(t))
            if matched and self._member is None:
                self._member = ClassicConsumerMember(self.config, matched, assignors=self._assignors)
            elif matched and self._member is not None and tuple(matched) != self._member.subscription:
                self._member.subscribe(matched)
        if self._member is not None:
            self._member.update_metadata(cluster.topics)
        if self._consumer_member is not None:
            self._consumer_member.update_metadata({tid: name for name, tid in cluster.topic_ids.items()})
        self._metadata_due_ms = self._now() + self._metadata_max_age_ms
        return cluster

    # --- internals -----------------------------------------------------------------------------------

    def _now(self) -> int:
        assert self._loop is not None
        return int(self._loop.time() * 1000)

    def _require_active(self, what: str) -> _Member:
        active = self._active
        if active is None:
            raise ClientError(f"{what}: pattern {self._pattern_text!r} matches no topic yet; no member")
        return active

    def _check_usable(self) -> None:
        if self._closed:
            raise ClientError("the consumer is closed")
        if self._loop is None:
            raise ClientError("the consumer is not started; call start() or use 'async with'")
        if self._fatal is not None:
            message = self._fatal
            if not self._failed_for_good():
                # Kafka's poll() throws such an error once; the next call tries again (the member
                # has already asked to rejoin). A fenced member stays failed.
                self._fatal = None
            raise ClientError(message)

    def _next_commit_id(self) -> int:
        self._collect_events()
        return len(self._events)

    def _collect_events(self) -> None:
        active = self._active
        if active is None:
            return
        for event in active.drain_events():
            self._events.append(event)
            if isinstance(event, FatalError):
                self._fatal = f"group {self.config.group_id}: {event.error.name}: {event.reason}"
            if self._on_event is not None:
                self._on_event(event)

    def _take_events(self) -> list[MemberEvent]:
        self._collect_events()
        events, self._events = self._events, []
        return events

    def _has_in_flight(self) -> bool:
        return any(self._pending.values()) or any(
            n.connection is not None and n.connection.in_flight for n in self._nodes.values()
        )

    async def _drive(self) -> None:
        """Kafka's heartbeat thread and metadata refresh, on the loop."""
        while not self._closed:
            now = self._now()
            active = self._active
            if active is not None:
                self._dispatch(active.background(now))
            cmember = self._consumer_member
            if cmember is not None and cmember.metadata_update_requested:
                # an assigned topic id without a name: refresh now (Kafka's metadata.requestUpdate),
                # at most once per retry backoff
                self._metadata_due_ms = min(self._metadata_due_ms, self._metadata_asked_ms)
            self._collect_events()
            if now >= self._metadata_due_ms:
                try:
                    await self.refresh_metadata()
                except (ConnectionLost, TimeoutError, PeerError, UnsupportedApi) as exc:
                    log.info("metadata refresh failed: %s", exc)
                    self._metadata_due_ms = self._now() + self.config.retry_backoff_ms
            self._metadata_asked_ms = self._now() + self.config.retry_backoff_ms
            wake = active.next_wakeup_ms() if active is not None else None
            due = min(x for x in (wake, self._metadata_due_ms) if x is not None)
            delay = max(0.0, min((due - self._now()) / 1000, 1.0))
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    def _least_loaded(self) -> int:
        """Kafka's ``leastLoadedNode`` over the brokers by id (scanned from the first: the choice is
        deterministic): an idle connected node, else the connected one with fewest requests in
        flight, else the first one not connected. kgroup's connections pipeline without a cap."""
        candidates = sorted(n for n in self._addresses if n < _COORDINATOR_BASE - 2**30)
        in_flight: dict[int, int] = {}
        states: dict[int, ConnectionState] = {}
        for node_id in candidates:
            node = self._nodes.get(node_id)
            connection = node.connection if node is not None else None
            if connection is not None and connection.connected:
                states[node_id] = ConnectionState.READY
                in_flight[node_id] = connection.in_flight
        chosen = least_loaded_node(candidates, in_flight, states, 0, max_in_flight=_NO_IN_FLIGHT_CAP)
        if chosen is None:
            raise KgroupError("bootstrap_servers: no broker address is known; give one or more host:port")
        return chosen

    def _dispatch(self, out: list[OutboundRequest]) -> None:
        for request in out:
            if request.node_id is None:
                node = self._least_loaded()
            else:
                node = _COORDINATOR_BASE - request.node_id
                if node not in self._addresses:
                    address = self._addresses.get(request.node_id)
                    if address is not None:
                        self._addresses[node] = address
            self._pending.setdefault(node, deque()).append(request)
            sender = self._senders.get(node)
            if sender is None or sender.done():
                assert self._loop is not None
                self._senders[node] = self._loop.create_task(self._send_pending(node))
        self._collect_events()

    async def _send_pending(self, node: int) -> None:
        try:
            await self._ensure_node(node)
        except SaslAuthenticationError as exc:
            # Kafka's client: an authentication error is fatal, thrown from the next poll
            log.warning("node %s refused authentication: %s", node, exc)
            self._fatal = f"SASL authentication failed: {exc}"
            self._fail_pending(node)
            return
        except (ConnectionLost, UnsupportedApi, TimeoutError, PeerError, KeyError) as exc:
            log.info("node %s unreachable: %s", node, exc)
            await asyncio.sleep(0.05)  # reconnect.backoff.ms
            self._fail_pending(node)
            return
        entry = self._nodes[node]
        queue = self._pending.get(node, deque())
        assert entry.connection is not None and self._loop is not None
        while queue:
            request = queue.popleft()
            spec = client_spec(request.body)
            api_key = spec.api_key
            try:
                version = self._version(entry, api_key)
                topic_ids = None
                if spec.topics is not None:
                    version, topic_ids = self._offsets_version(spec.topics(request.body), version)
                future = entry.connection.send(to_wire(request.body, version, topic_ids))
            except UnsupportedApi as exc:
                if spec.fatal_if_unsupported and self._consumer_member:
                    # Kafka's client fails building the request: fatal, naming the setting
                    self._consumer_member.on_unsupported(self._now())
                    self._collect_events()
                    continue
                log.info("cannot send %s: %s", api_name(api_key), exc)
                self._failed(request)
                continue
            except ConnectionLost as exc:
                log.info("cannot send %s: %s", api_name(api_key), exc)
                self._failed(request)
                continue
            task = self._loop.create_task(self._await_response(entry.connection, request, future))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _fail_pending(self, node: int) -> None:
        queue = self._pending.get(node, deque())
        while queue:
            self._failed(queue.popleft())

    def _failed(self, request: OutboundRequest) -> None:
        if self._closed:
            return
        active = self._active
        if active is not None:
            self._dispatch(active.on_request_failed(self._now(), request.correlation_id))
        self._wake.set()

    async def _await_response(
        self, connection: BrokerConnection, request: OutboundRequest, future: asyncio.Future[Any]
    ) -> None:
        try:
            response = await asyncio.wait_for(asyncio.shield(future), self._request_timeout_s)
        except TimeoutError:
            connection.close(ConnectionLost("request timed out"))
            self._failed(request)
            return
        except (ConnectionLost, OSError):
            self._failed(request)
            return
        try:
            typed = from_wire(request.body, response, self._topic_ids())
        except PeerError as exc:
            log.warning("bad response: %s", exc)
            connection.close(ConnectionLost(exc.message))
            self._failed(request)
            return
        active = self._active
        assert active is not None  # a request was sent, so a member sent it
        if self._closed and self._member_closed():
            active.on_response(self._now(), request.correlation_id, typed)
            return
        found = client_spec(request.body).coordinator(typed)
        if found is not None:
            node_id, host, port = found
            self._addresses[node_id] = (host, port)
            self._addresses[_COORDINATOR_BASE - node_id] = (host, port)
        self._dispatch(active.on_response(self._now(), request.correlation_id, typed))
        self._wake.set()

    async def _check_listener(self, host: str, port: int) -> None:
        """After the broker closed a connection: a :class:`ClientError` naming the TLS or SASL the
        listener wants, when that was why (:mod:`kgroup.client.probe`)."""
        try:
            await check_listener(host, port, self._security)
        except ListenerMismatch as exc:
            raise ClientError(
                f"{exc.message}; give GroupConsumer(security=ClientSecurity(protocol="
                f"{exc.wants.protocol.split()[0]!r}, ...)) (docs/security.md)"
            ) from None

    def _member_closed(self) -> bool:
        if self._consumer_member is not None:
            return self._consumer_member.closed
        return self._member is not None and self._member.phase is Phase.CLOSED

    async def _ensure_node(self, node: int) -> None:
        entry = self._nodes.setdefault(node, _Node())
        if entry.connection is not None and entry.connection.connected and entry.versions is not None:
            return
        if entry.opening is None or entry.opening.done():
            entry.opening = asyncio.get_running_loop().create_task(self._open(node, entry))
        await asyncio.shield(entry.opening)

    async def _open(self, node: int, entry: _Node) -> None:
        host, port = self._addresses[node]
        connection = BrokerConnection(
            host, port, client_id=self.config.client_id, node_id=node, security=self._security
        )
        try:
            await connection.open(timeout_s=self._request_timeout_s)
            entry.versions = await self._negotiate(connection)
        except BaseException:
            connection.close()
            raise
        if self._closed:  # closed meanwhile: nothing will use (or close) it
            connection.close()
            raise ConnectionLost(f"{host}:{port}: the consumer closed while connecting")
        entry.connection = connection

    async def _negotiate(self, connection: BrokerConnection) -> dict[int, int]:
        chosen = await negotiate(connection, self._request_timeout_s)
        return {key: min(version, self._caps.get(key, version)) for key, version in chosen.items()}

    def _topic_ids(self) -> TopicIds:
        """The topic ids the last metadata named (what OffsetCommit / OffsetFetch v10 speak)."""
        known = {} if self._cluster is None else self._cluster.topic_ids
        by_id = {uuid.UUID(int=tid.to_int()): name for name, tid in known.items()}

        def id_of(name: str) -> uuid.UUID | None:
            tid = known.get(name)
            return None if tid is None else uuid.UUID(int=tid.to_int())

        return TopicIds(by_id.get, id_of)

    def _offsets_version(self, topics: set[str], negotiated: int) -> tuple[int, TopicIds | None]:
        """The version of a request naming ``topics`` (OffsetCommit, OffsetFetch), as Kafka's
        consumers: a classic member names its topics (v9 at most); a consumer-protocol member names
        them by id (v10) when the metadata gave every one's id."""
        known = None
        if self._consumer_member is not None and self._cluster is not None:
            known = self._cluster.topic_ids
        version = offsets_version(negotiated, topics, known)
        return version, (self._topic_ids() if version > LAST_BY_NAME else None)

    def _version(self, entry: _Node, api_key: int) -> int:
        assert entry.versions is not None
        version = entry.versions.get(api_key)
        if version is None:
            low, high = CLIENT_RANGES[ApiKey(api_key)]
            raise UnsupportedApi(
                f"the broker supports no version {low}-{high} of {api_name(api_key)}, "
                "which kgroup's client needs"
            )
        return version
