"""The network between the consumers and the coordinator: latency, jitter, loss and cuts.

Every consumer's link has the scenario's latency, jitter and loss unless the consumer has its own.

Each connection is a pair of FIFO pipes (TCP keeps order): a message is delivered after the
latency plus a uniform jitter, never before the message sent ahead of it on the same pipe. A
message is lost with probability ``loss`` (each direction independently), and every message to or
from a consumer whose link is cut is dropped; the sender only learns of it when its request times
out, as a Kafka client does (``request.timeout.ms``).
"""

from __future__ import annotations

from random import Random

from kgroup.sim.scenario import NetworkSpec

__all__ = ["Network"]


class Network:
    __slots__ = ("_cut_until", "_last_delivery", "_links", "_rng", "default")

    def __init__(
        self, spec: NetworkSpec, rng: Random, links: dict[str, NetworkSpec] | None = None
    ) -> None:
        self.default = spec
        self._links = dict(links or {})  # consumer -> its own link (latency, jitter, loss)
        self._rng = rng
        self._cut_until: dict[str, int] = {}
        self._last_delivery: dict[tuple[str, bool], int] = {}

    def cut(self, consumer: str, until_ms: int) -> None:
        """Drop everything to and from ``consumer`` until ``until_ms`` (extends a running cut)."""
        self._cut_until[consumer] = max(until_ms, self._cut_until.get(consumer, 0))

    def is_cut(self, consumer: str, now_ms: int) -> bool:
        return self._cut_until.get(consumer, -1) > now_ms

    def transit(self, consumer: str, connection: str, to_coordinator: bool, now_ms: int) -> int | None:
        """When a message sent now arrives, or ``None`` if it is lost or the link is cut."""
        if self._cut_until.get(consumer, -1) > now_ms:
            return None
        spec = self._links.get(consumer, self.default)
        # Draw in a fixed order (loss, then jitter) so the random stream does not depend on outcomes.
        if spec.loss > 0.0 and self._rng.random() < spec.loss:
            return None
        delay = spec.latency_ms
        if spec.jitter_ms:
            delay += self._rng.randint(0, spec.jitter_ms)
        pipe = (connection, to_coordinator)
        at = max(now_ms + delay, self._last_delivery.get(pipe, 0))
        self._last_delivery[pipe] = at
        return at

    def forget(self, connection: str) -> None:
        """A connection closed with its process: its pipes are gone."""
        self._last_delivery.pop((connection, True), None)
        self._last_delivery.pop((connection, False), None)
