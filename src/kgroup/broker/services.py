"""What a request handler may use of the broker: the narrow :class:`BrokerServices` protocol.

Handlers (:mod:`.handlers_admin`, :mod:`.handlers_data`, :mod:`.handlers_group`) and the dispatch get
these services through :class:`kgroup.broker.dispatch.RequestContext`; the
:class:`kgroup.broker.broker.Broker` provides them (structurally: nothing here imports it, so the
broker module, the composition root, is imported by no module of the broker package).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import ParamSpec, Protocol, TypeVar

from kgroup.broker.cluster import Cluster
from kgroup.broker.config import BrokerConfig
from kgroup.broker.coordinator_runtime import CoordinatorRuntime
from kgroup.broker.share_host import ShareHost
from kgroup.broker.txn_host import TransactionHost
from kgroup.broker.waiters import FetchWaiter
from kgroup.security.runtime import SecurityRuntime

__all__ = ["BrokerServices"]

P = ParamSpec("P")
T = TypeVar("T")


class BrokerServices(Protocol):
    """The broker's state and services as the handlers see them."""

    @property
    def config(self) -> BrokerConfig:
        """The broker's settings (listener host, limits, topic defaults)."""

    @property
    def cluster(self) -> Cluster:
        """Topics, partitions, leaders, live nodes and the group → coordinator mapping."""

    @property
    def ports(self) -> Mapping[int, int]:
        """node id -> the port its listener is bound to (live nodes only)."""

    @property
    def coordinators(self) -> CoordinatorRuntime:
        """The group coordinators of the live nodes (on a thread of their own)."""

    @property
    def transactions(self) -> TransactionHost:
        """The transaction coordinator's host (its calls on a thread of their own)."""

    @property
    def shares(self) -> ShareHost:
        """The share partitions and share sessions (KIP-932: ShareFetch, ShareAcknowledge)."""

    @property
    def security(self) -> SecurityRuntime:
        """Listeners, authentication and the authorizer (kgroup.security)."""

    def advertised(self, listener: str) -> tuple[str, Mapping[int, int]]:
        """The host and node ports a client that came through ``listener`` is told of."""

    def clock_ms(self) -> int:
        """The wall clock in milliseconds (injected in tests)."""

    async def off_loop(self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``function(*args, **kwargs)`` in the codec thread (a pure function of its arguments)."""

    async def make_offsets_topic(self) -> None:
        """Make ``__consumer_offsets`` unless it exists: its partitions' directories in a thread, so
        the loop goes on serving; returns once it exists, or once its creation failed (logged; the
        next request tries again). Concurrent callers wait for the one creation."""

    def remove_later(self, directories: list[Path]) -> None:
        """Remove deleted partitions' directories in a thread of their own (DeleteTopics)."""

    def allocate_producer_id(self) -> int:
        """A producer id no other producer of this broker got (InitProducerId)."""

    def watch_appends(self, waiter: FetchWaiter) -> None:
        """Park a fetch: ``waiter`` hears of every append to its partitions until unwatched."""

    def unwatch_appends(self, waiter: FetchWaiter) -> None:
        """Stop telling ``waiter`` of appends."""

    def notify_appended(self, topic: str, partition: int, size: int) -> None:
        """A batch of ``size`` bytes was appended to ``topic``-``partition``."""
