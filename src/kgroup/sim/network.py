"""The network between the consumers and the coordinator, as TCP behaves: delays, never silent drops.

Every consumer's link has the scenario's latency, jitter, loss and reset rate unless the consumer has
its own. Each connection is a pair of FIFO pipes (TCP delivers in order): a message arrives after the
latency plus a uniform jitter, never before the message sent ahead of it on the same pipe.

* **Loss** is per segment (each message is one segment, each direction independently). TCP never
  drops a message silently: a lost segment is retransmitted after the retransmission timeout, which
  doubles on every further loss (RFC 6298 §5.5). The RTO is RFC 6298's ``SRTT + 4·RTTVAR`` with Linux's
  floor ``TCP_RTO_MIN`` = 200 ms — here ``max(200, RTT + 4·jitter)`` with RTT twice the latency — capped
  at ``TCP_RTO_MAX`` = 120 s; after ``tcp_retries2`` = 15 retransmissions the connection breaks. So
  loss shows up as delay (and as head-of-line blocking of what follows on the pipe).
* **Cuts** (``network_partition``) are intervals when nothing passes. A segment sent into a cut, or
  in flight when it starts, is retransmitted on the RTO schedule and arrives after the cut heals —
  unless the connection was closed first: a Kafka client's request that is not answered within
  ``request.timeout.ms`` closes its connection, which fails every request in flight on it
  (``NetworkClient.handleTimedOutRequests``), and the client reconnects. The simulator knows every cut
  of the scenario in advance (they are scenario events), so a delivery time is exact when drawn.
* **Connection resets** (``resets_per_hour``, a Poisson rate per connection): the connection breaks
  at once; every request in flight on it fails (Kafka's disconnect: ``DisconnectException``, the
  coordinator is marked unknown) and what was in transit is gone; the client reconnects.
* A **reconnection** is ready after ``reconnect.backoff.ms`` (50 ms) plus one round trip for the TCP
  handshake (a process's first connection is taken as ready at start).

The simulator (not this class) tracks which connection is open and fails requests; this class only
answers "when does a message sent now arrive" and "when does this connection next reset".
"""

from __future__ import annotations

from random import Random

from kgroup.sim.scenario import NetworkSpec

__all__ = [
    "MAX_RETRANSMISSIONS",
    "RECONNECT_BACKOFF_MS",
    "RTO_MAX_MS",
    "RTO_MIN_MS",
    "Network",
]

#: Linux ``TCP_RTO_MIN``: the smallest retransmission timeout
RTO_MIN_MS = 200
#: Linux ``TCP_RTO_MAX``: the backed-off retransmission timeout stops growing here
RTO_MAX_MS = 120_000
#: Linux ``net.ipv4.tcp_retries2``: retransmissions before the connection is given up
MAX_RETRANSMISSIONS = 15
#: Kafka's ``reconnect.backoff.ms`` default
RECONNECT_BACKOFF_MS = 50

_MS_PER_HOUR = 3_600_000


class Network:
    __slots__ = ("_cuts", "_last_delivery", "_links", "_reset_rng", "_rng", "default")

    def __init__(
        self,
        spec: NetworkSpec,
        rng: Random,
        links: dict[str, NetworkSpec] | None = None,
        reset_rng: Random | None = None,
    ) -> None:
        self.default = spec
        self._links = dict(links or {})  # consumer -> its own link (latency, jitter, loss, resets)
        self._rng = rng
        self._reset_rng = reset_rng if reset_rng is not None else Random(0)
        self._cuts: dict[str, list[tuple[int, int]]] = {}  # consumer -> [start, end) intervals
        self._last_delivery: dict[tuple[str, bool], int] = {}

    def link(self, consumer: str) -> NetworkSpec:
        return self._links.get(consumer, self.default)

    def steady_latency(self, consumer: str) -> int | None:
        """The one delay every message to or from ``consumer`` takes, when its link draws nothing and
        is never cut (no jitter, no loss, no cut in the scenario) and that delay is at least 1 ms;
        else ``None``. On such a link a message sent at ``t`` arrives at ``t + latency``, whatever
        else is sent, so a host may work out deliveries in closed form."""
        spec = self._links.get(consumer, self.default)
        if spec.jitter_ms or spec.loss or consumer in self._cuts or spec.latency_ms < 1:
            return None
        return spec.latency_ms

    # --- cuts ---------------------------------------------------------------------------------------

    def cut(self, consumer: str, start_ms: int, end_ms: int) -> None:
        """Nothing passes to or from ``consumer`` in ``[start_ms, end_ms)`` (known ahead)."""
        intervals = self._cuts.setdefault(consumer, [])
        if (start_ms, end_ms) not in intervals:
            intervals.append((start_ms, end_ms))
            intervals.sort()

    def is_cut(self, consumer: str, now_ms: int) -> bool:
        return any(start <= now_ms < end for start, end in self._cuts.get(consumer, ()))

    def _blocked(self, consumer: str, start_ms: int, end_ms: int) -> bool:
        """Whether a segment on the wire from ``start_ms`` to ``end_ms`` meets a cut."""
        return any(start <= end_ms and end > start_ms for start, end in self._cuts.get(consumer, ()))

    # --- delivery -----------------------------------------------------------------------------------

    def rto_ms(self, consumer: str) -> int:
        spec = self.link(consumer)
        return max(RTO_MIN_MS, 2 * spec.latency_ms + 4 * spec.jitter_ms)

    def transit(self, consumer: str, connection: str, to_coordinator: bool, now_ms: int) -> int | None:
        """When a message sent now arrives (``None``: the connection broke after every retransmission)."""
        spec = self._links.get(consumer, self.default)
        rng = self._rng
        loss, latency, jitter = spec.loss, spec.latency_ms, spec.jitter_ms
        cuts = consumer in self._cuts
        pipe = (connection, to_coordinator)
        if not loss and not cuts:
            # a clean link (the usual case): one segment, on time, and the same draws as below
            # (randrange(jitter + 1) is randint(0, jitter) without its extra call: the same draw)
            arrives = now_ms + (latency + rng.randrange(jitter + 1) if jitter else latency)
            last = self._last_delivery.get(pipe, 0)
            if last > arrives:
                arrives = last
            self._last_delivery[pipe] = arrives
            return arrives
        rto = 0
        sent = now_ms
        at: int | None = None
        for attempt in range(MAX_RETRANSMISSIONS + 1):
            # Draw in a fixed order (loss, then jitter), so a clean link draws what it always drew.
            lost = loss > 0.0 and rng.random() < loss
            delay = latency + rng.randrange(jitter + 1) if jitter else latency
            if not lost and not (cuts and self._blocked(consumer, sent, sent + delay)):
                at = sent + delay
                break
            if not rto:
                rto = self.rto_ms(consumer)
            sent += min(rto << attempt, RTO_MAX_MS)
        if at is None:
            return None
        at = max(at, self._last_delivery.get(pipe, 0))
        self._last_delivery[pipe] = at
        return at

    def reconnect_ready_ms(self, consumer: str, now_ms: int) -> int:
        """When a connection opened now can carry requests: the backoff, then the handshake's round trip."""
        return now_ms + RECONNECT_BACKOFF_MS + 2 * self.link(consumer).latency_ms

    def next_reset_ms(self, consumer: str, now_ms: int) -> int | None:
        """When a connection of ``consumer`` open now next resets (``None``: never)."""
        rate = self.link(consumer).resets_per_hour
        if not rate:
            return None
        return now_ms + 1 + int(self._reset_rng.expovariate(rate / _MS_PER_HOUR))

    def forget(self, connection: str) -> None:
        """A connection closed: its pipes are gone."""
        self._last_delivery.pop((connection, True), None)
        self._last_delivery.pop((connection, False), None)
