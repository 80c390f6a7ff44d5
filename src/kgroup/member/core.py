"""The consumer member's state and primitives, shared by its offset and rebalance halves.

:class:`MemberCore` holds everything the member knows (generation, coordinator, assignment, timers,
requests in flight) and the small operations both halves use. See :mod:`kgroup.member.consumer`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kgroup.assignors.api import Assignor
from kgroup.assignors.registry import create_assignor
from kgroup.member.base import MemberBase
from kgroup.member.config import MemberConfig, choose_protocol
from kgroup.member.errors import rebalance_failed
from kgroup.member.events import (
    MemberEvent,
    RejoinRequested,
)
from kgroup.member.leader import (
    MetadataSnapshot,
)
from kgroup.member.requests import (
    NO_GENERATION,
    Generation,
    InFlight,
    Kind,
    OutboundRequest,
)
from kgroup.member.states import MemberState, Phase, Step, next_phase
from kgroup.messages import (
    FindCoordinatorRequest,
    Request,
)
from kgroup.model import (
    KgroupError,
    RebalanceProtocol,
    TopicMetadata,
    TopicPartition,
    sorted_partitions,
)

__all__ = ["MemberCore", "checked_topics"]

_NOTHING: frozenset[TopicPartition] = frozenset()


class MemberCore(MemberBase):
    """The state of one consumer member (the host uses :class:`~kgroup.member.ClassicConsumerMember`)."""

    config: MemberConfig

    def __init__(
        self,
        config: MemberConfig,
        topics: Sequence[str],
        *,
        assignors: Sequence[Assignor] | None = None,
    ) -> None:
        self.config = config
        self._topics = checked_topics(topics)
        self._topic_set = frozenset(self._topics)
        chosen = list(assignors) if assignors is not None else [create_assignor(n) for n in config.assignors]
        if not chosen:
            raise KgroupError("assignors: empty; give the member at least one assignor")
        self._assignors: dict[str, Assignor] = {}
        for a in chosen:
            if not a.name or a.name in self._assignors:
                raise KgroupError(f"assignors: name {a.name!r} is empty or repeated; give each a unique name")
            self._assignors[a.name] = a
        self._protocol = choose_protocol(chosen)
        self._metadata: dict[str, TopicMetadata] = {}
        # Kafka's metadataSnapshot: the metadata as of the last poll() (or the leader's assignment),
        # which the leader's assignment snapshot is compared with
        self._metadata_seen: dict[str, TopicMetadata] = self._metadata

        self._phase = Phase.UNJOINED
        self._generation = Generation()
        self._coordinator: int | None = None
        self._rejoin_needed = True  # Kafka starts with rejoinNeeded = true
        self._rejoin_reason = ""
        self._joined_subscription: frozenset[str] | None = None
        self._is_leader = False
        self._assignment_snapshot: tuple[frozenset[str], MetadataSnapshot] | None = None
        # the metadata the snapshot was last found equal to (update_metadata replaces the dict, so
        # the same dict means the same metadata and the comparison need not be made again)
        self._snapshot_matches: dict[str, TopicMetadata] | None = None

        # frozen, so assignment() hands out this very object: a host compares it by identity cheaply
        self._owned: frozenset[TopicPartition] = frozenset()
        self._owned_order: tuple[TopicPartition, ...] = ()  # the same, in Java order (commits list so)
        self._owned_generation = NO_GENERATION
        self._last_assigned: tuple[tuple[TopicPartition, ...], int] = ((), NO_GENERATION)
        self._positions: dict[TopicPartition, int] = {}
        self._committed: dict[TopicPartition, int] = {}
        self._commit_sent: dict[TopicPartition, int] = {}

        self._in_flight: dict[int, InFlight] = {}
        self._next_correlation = 1
        self._attempt = 0  # bumped per JoinGroup attempt; stale join/sync answers are dropped
        self._events: list[MemberEvent] = []
        self._error_pending = False  # a FatalError is among the events not yet drained

        # timers (absolute virtual times in ms)
        self._session_deadline = 0
        self._poll_deadline = 0
        self._next_heartbeat_at = 0
        self._find_retry_at = 0
        self._join_send_at: int | None = None  # JOINING: when to (re)send JoinGroup
        self._next_auto_commit_at: int | None = None
        # onJoinPrepare
        self._prepare_deadline = 0
        self._prepare_commit: InFlight | None = None  # the pre-join commit in flight
        self._prepare_retry_at: int | None = None
        # OffsetFetch for newly assigned partitions
        self._fetch_pending: set[TopicPartition] = set()
        self._fetch_retry_at = 0
        # The application is taken to wait inside poll() for what it started there: a join that had to
        # find the coordinator first, and a rebalance the heartbeat thread reset mid-SyncGroup.
        self._poll_wants_join = False
        self._resume_on_sync: int | None = None
        # A failure Kafka throws out of poll() (FatalError) ends that poll(); what it was doing goes on
        # at the next one: a failed join is sent again, a failed OffsetFetch is retried.
        self._join_on_poll = False
        self._fetch_on_poll = False

    # --- read-only views -----------------------------------------------------------------------------

    @property
    def state(self) -> MemberState:
        return self._phase.state

    @property
    def phase(self) -> Phase:
        return self._phase

    @property
    def generation(self) -> int:
        return self._generation.generation_id

    @property
    def member_id(self) -> str:
        return self._generation.member_id

    @property
    def group_protocol(self) -> str | None:
        """The assignor the group selected in the current generation."""
        return self._generation.protocol

    @property
    def is_leader(self) -> bool:
        return self._is_leader

    @property
    def assignor_names(self) -> tuple[str, ...]:
        """The assignors this member offers in JoinGroup, in preference order."""
        return tuple(self._assignors)

    @property
    def protocol(self) -> RebalanceProtocol:
        """EAGER or COOPERATIVE, from the configured assignors (not from the group)."""
        return self._protocol

    @property
    def subscription(self) -> tuple[str, ...]:
        return self._topics

    @property
    def rejoin_needed(self) -> bool:
        return self._rejoin_needed

    def pending_revocation(self) -> frozenset[TopicPartition]:
        """EAGER members stop fetching their partitions while the pre-join commit is in flight."""
        if self._phase is Phase.PREPARING and self._protocol is RebalanceProtocol.EAGER:
            return self._owned
        return _NOTHING

    def update_metadata(self, topics: Mapping[str, TopicMetadata]) -> None:
        """Replace the cluster metadata (every topic the cluster has). The leader assigns from it."""
        self._metadata = dict(topics)

    # --- internals: requests --------------------------------------------------------------------------

    def _send(self, out: list[OutboundRequest], body: Request, sent: InFlight) -> int:
        cid = self._next_correlation
        self._next_correlation += 1
        self._in_flight[cid] = sent
        node = None if sent.kind is Kind.FIND else self._coordinator
        out.append(OutboundRequest(cid, body, node))
        return cid

    def _has_in_flight(self, kind: Kind) -> bool:
        return any(f.kind is kind for f in self._in_flight.values())

    def _join_in_flight(self) -> bool:
        return any(
            f.kind in (Kind.JOIN, Kind.SYNC) and f.attempt == self._attempt for f in self._in_flight.values()
        )

    def _when_sendable(self, due_ms: int) -> int | None:
        """When a request due at ``due_ms`` can go out: at once if the coordinator is known, else
        when the next FindCoordinator may be sent (``None`` while one is in flight)."""
        if self._coordinator is not None:
            return due_ms
        if self._has_in_flight(Kind.FIND):
            return None
        return max(due_ms, self._find_retry_at)

    def _ensure_coordinator(self, now_ms: int, out: list[OutboundRequest]) -> None:
        if self._coordinator is None and not self._has_in_flight(Kind.FIND) and now_ms >= self._find_retry_at:
            self._send(
                out, FindCoordinatorRequest(key=self.config.group_id), InFlight(Kind.FIND, self._generation)
            )

    def _mark_coordinator_unknown(self, now_ms: int, out: list[OutboundRequest]) -> None:
        """Forget the coordinator and fail everything in flight to it (Kafka disconnects it)."""
        if self._coordinator is None:
            return
        self._coordinator = None
        for cid in [c for c, f in self._in_flight.items() if f.kind is not Kind.FIND]:
            sent = self._in_flight.pop(cid, None)
            if sent is not None:
                self._on_failure(now_ms, sent, out)

    def _move(self, step: Step) -> None:
        self._phase = next_phase(self._phase, step)

    def _request_rejoin(self, reason: str) -> None:
        """Kafka's ``requestRejoin``: the next JoinGroup carries ``reason``."""
        if not self._rejoin_needed:
            self._emit(RejoinRequested(reason))
        self._rejoin_needed = True
        self._rejoin_reason = reason

    def _request_rejoin_if_necessary(self, reason: str) -> None:
        """Kafka's ``requestRejoinIfNecessary``: a rejoin already asked for keeps its reason."""
        if not self._rejoin_needed:
            self._request_rejoin(reason)

    def _rebalance_failed(self, exception: str) -> None:
        """Kafka's ``joinGroupIfNeeded`` after a failed JoinGroup / SyncGroup: rejoin, and say why."""
        self._request_rejoin(rebalance_failed(exception))

    def _set_assignment(self, partitions: set[TopicPartition] | frozenset[TopicPartition]) -> None:
        owned = frozenset(partitions)
        if owned != self._owned:  # (a rebalance mostly hands a member what it had: no new sort)
            self._owned_order = tuple(sorted_partitions(owned))
        self._owned = owned
        for tp in [tp for tp in self._positions if tp not in self._owned]:
            del self._positions[tp]
        self._fetch_pending &= self._owned

    def _check_open(self, what: str) -> None:
        if self._phase is Phase.CLOSED:
            raise KgroupError(f"{what}: the member is closed; create a new ClassicConsumerMember to rejoin")

    # --- implemented by the rebalance half (ClassicConsumerMember) ---------------------------------

    def _on_failure(self, now_ms: int, sent: InFlight, out: list[OutboundRequest]) -> None:
        raise NotImplementedError

    def _fenced(self) -> None:
        raise NotImplementedError

    def _reset_generation(self, reason: str, reset_member_id: bool) -> None:
        raise NotImplementedError

    def _finish_prepare(self, now_ms: int, out: list[OutboundRequest]) -> None:
        raise NotImplementedError


def checked_topics(topics: Sequence[str]) -> tuple[str, ...]:
    if isinstance(topics, str):
        raise KgroupError(f"topics: got the string {topics!r}; pass a list of topic names")
    names = tuple(topics)
    if not names:
        raise KgroupError("topics: empty; subscribe to at least one topic (close() to leave the group)")
    if any(not t for t in names):
        raise KgroupError("topics: an empty topic name; give every topic a non-empty name")
    return tuple(dict.fromkeys(names))
