"""A small hand-driven world for end-to-end tests: consumer members + one group coordinator.

Everything runs on a virtual clock in one deterministic event queue: requests reach the coordinator
``latency_ms`` after they are sent and replies come back as late; coordinator timers fire at their
deadlines; each member's application polls every ``poll_interval_ms`` (unless stalled or crashed) and
its background duties run at ``next_wakeup_ms()``. Ties are broken by insertion order.

Not the simulator (``kgroup.sim`` has its own driver): just enough to watch the protocol work.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from random import Random
from typing import TypeVar

from kgroup.assignors.api import Assignor
from kgroup.group import (
    ClassicGroups,
    CoordinatorConfig,
    CoordinatorResult,
    GroupCoordinator,
    GroupState,
    TimerTable,
)
from kgroup.member import ConsumerMember, MemberConfig, MemberEvent, MemberState, OutboundRequest
from kgroup.messages import (
    Envelope,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    JoinGroupResponse,
    Reply,
)
from kgroup.model import ErrorCode, TopicMetadata, TopicPartition

__all__ = ["Node", "World"]

E = TypeVar("E", bound=MemberEvent)


@dataclass
class Node:
    """One consumer process: its member, what it has said, and whether its application runs."""

    name: str
    member: ConsumerMember
    connection: str
    events: list[MemberEvent] = field(default_factory=list)
    stalled_until: int = -1  # the application does not poll before this time
    crashed: bool = False
    wakeup_token: int = 0


class World:
    def __init__(
        self,
        topics: dict[str, int],
        *,
        coordinator_config: CoordinatorConfig | None = None,
        latency_ms: int = 2,
        poll_interval_ms: int = 100,
        seed: int = 7,
    ) -> None:
        self.now = 0
        self.latency_ms = latency_ms
        self.poll_interval_ms = poll_interval_ms
        self.metadata = {name: TopicMetadata(name, n) for name, n in topics.items()}
        self.coordinator = GroupCoordinator(coordinator_config or CoordinatorConfig(), rng=Random(seed))
        self.nodes: dict[str, Node] = {}
        self.by_connection: dict[str, Node] = {}
        self.replies: list[tuple[int, str, Reply]] = []  # (time, connection, reply) as delivered
        self._timers = TimerTable()
        self._queue: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._incarnations = itertools.count(1)

    # --- building the world --------------------------------------------------------------------------

    def start(
        self,
        name: str,
        config: MemberConfig,
        topics: Sequence[str],
        *,
        assignors: Sequence[Assignor] | None = None,
    ) -> ConsumerMember:
        """Start a consumer process ``name`` (a restart replaces the previous process of that name)."""
        member = ConsumerMember(config, topics, assignors=assignors)
        member.update_metadata(self.metadata)
        node = Node(name, member, connection=f"{name}#{next(self._incarnations)}")
        self.nodes[name] = node
        self.by_connection[node.connection] = node
        self._at(self.now, lambda: self._app_poll(node))
        return member

    def crash(self, name: str) -> None:
        """The process dies: nothing more is sent or received (the coordinator finds out by timeout)."""
        self.nodes[name].crashed = True

    def stall(self, name: str, until_ms: int) -> None:
        """The application stops polling until ``until_ms`` (the heartbeat thread keeps running)."""
        self.nodes[name].stalled_until = until_ms

    def close(self, name: str) -> None:
        node = self.nodes[name]
        self._send(node, node.member.close(self.now))
        self._collect(node)
        node.crashed = True  # the process is gone after close; late replies are dropped

    def set_partitions(self, topic: str, partitions: int) -> None:
        self.metadata[topic] = TopicMetadata(topic, partitions)
        for node in self.nodes.values():
            if not node.crashed:
                node.member.update_metadata(self.metadata)

    # --- running -------------------------------------------------------------------------------------

    def run_until(self, end_ms: int) -> None:
        while self._queue and self._queue[0][0] <= end_ms:
            when, _, action = heapq.heappop(self._queue)
            self.now = when
            action()
        self.now = max(self.now, end_ms)

    def run_for(self, ms: int) -> None:
        self.run_until(self.now + ms)

    def run_until_stable(self, names: Sequence[str], *, limit_ms: int = 120_000) -> None:
        """Run until the group is Stable and every named member is STABLE with nothing pending."""
        deadline = self.now + limit_ms
        while self.now < deadline:
            self.run_for(50)
            if self.is_stable(names):
                self.run_for(2 * self.latency_ms + 1)  # let in-flight answers settle
                return
        states = {n: self.nodes[n].member.phase.name for n in names}
        raise AssertionError(f"not stable by {deadline} ms: group {self.group_state()}, members {states}")

    # --- looking at it -------------------------------------------------------------------------------

    def is_stable(self, names: Sequence[str]) -> bool:
        """The group is Stable and every named member is STABLE in its generation, nothing pending."""
        if self.group_state() is not GroupState.STABLE:
            return False
        generation = self.group_generation()
        return all(
            self.nodes[n].member.state is MemberState.STABLE
            and not self.nodes[n].member.rejoin_needed
            and self.nodes[n].member.generation == generation
            for n in names
        )

    def group_state(self) -> GroupState | None:
        group_id = self._group_id()
        if not self.coordinator.has_group(group_id):
            return None
        return self.coordinator.kind(ClassicGroups).group(group_id).state

    def group_generation(self) -> int:
        return self.coordinator.kind(ClassicGroups).group(self._group_id()).generation

    def assignment(self) -> dict[str, frozenset[TopicPartition]]:
        return {n: node.member.assignment() for n, node in self.nodes.items() if not node.crashed}

    def events_of(self, name: str, kind: type[E] | None = None) -> list[E]:
        events = self.nodes[name].events
        return [e for e in events if kind is None or isinstance(e, kind)]  # type: ignore[misc]

    def last_leader_join_response(self) -> JoinGroupResponse:
        for _, _, reply in reversed(self.replies):
            body = reply.body
            if isinstance(body, JoinGroupResponse) and body.members:
                return body
        raise AssertionError("no leader JoinGroup response was delivered")

    # --- plumbing ------------------------------------------------------------------------------------

    def _group_id(self) -> str:
        for node in self.nodes.values():
            return node.member.config.group_id
        return ""

    def _at(self, when: int, action: Callable[[], None]) -> None:
        heapq.heappush(self._queue, (when, next(self._seq), action))

    def _app_poll(self, node: Node) -> None:
        if node.crashed or self.nodes.get(node.name) is not node:
            return
        if self.now >= node.stalled_until:
            self._send(node, node.member.poll(self.now))
            self._collect(node)
        self._at(self.now + self.poll_interval_ms, lambda: self._app_poll(node))

    def _background(self, node: Node, token: int) -> None:
        if node.crashed or token != node.wakeup_token:
            return
        self._send(node, node.member.background(self.now))
        self._collect(node)

    def _collect(self, node: Node) -> None:
        node.events.extend(node.member.drain_events())
        node.wakeup_token += 1
        wake = node.member.next_wakeup_ms()
        if wake is not None:
            token = node.wakeup_token
            self._at(max(wake, self.now), lambda: self._background(node, token))

    def _send(self, node: Node, requests: list[OutboundRequest]) -> None:
        for req in requests:
            env = Envelope(node.connection, req.correlation_id, req.body, client_id=node.name)
            self._at(self.now + self.latency_ms, lambda env=env: self._arrive(env))

    def _arrive(self, env: Envelope) -> None:
        if isinstance(env.body, FindCoordinatorRequest):  # the cluster's answer: one broker, node 0
            answer = FindCoordinatorResponse(ErrorCode.NONE, 0, "127.0.0.1", 9092)
            self._apply(CoordinatorResult(replies=(Reply(env.connection, env.correlation_id, answer),)))
            return
        self._apply(self.coordinator.handle(self.now, env))

    def _apply(self, result: CoordinatorResult) -> None:
        for reply in result.replies:
            self._at(self.now + self.latency_ms, lambda reply=reply: self._deliver(reply))
        self._timers.apply(result.timers)
        for task in result.tasks:  # the coordinator's executor, run at once
            self._apply(self.coordinator.complete(self.now, task, task.run()))
        deadline = self._timers.next_deadline()
        if deadline is not None:
            self._at(deadline, self._fire)  # (a wake-up with nothing due does nothing)

    def _fire(self) -> None:
        if (key := self._timers.pop_due(self.now)) is not None:
            self._apply(self.coordinator.on_timer(self.now, key))

    def _deliver(self, reply: Reply) -> None:
        node = self.by_connection.get(reply.connection)
        self.replies.append((self.now, reply.connection, reply))
        if node is None or node.crashed:
            return
        self._send(node, node.member.on_response(self.now, reply.correlation_id, reply.body))
        self._collect(node)
