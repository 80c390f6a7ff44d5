"""One consumer process of a simulation: its member, its connection, its claims, its threads' timers.

The host (:class:`kgroup.sim.runner.Simulation`) owns these; the scenario actions receive them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kgroup.member import ClassicConsumerMember
from kgroup.model import TopicPartition
from kgroup.sim.consumer_group import SimMember
from kgroup.sim.workload import ConsumerLoad

__all__ = ["ConsumerProcess"]


@dataclass(slots=True)
class ConsumerProcess:
    """One consumer process of the scenario (``id`` is stable across restarts)."""

    index: int
    id: str
    topics: tuple[str, ...]
    assignors: tuple[str, ...]
    static: bool
    rack: str | None
    load: ConsumerLoad
    member: ClassicConsumerMember | SimMember | None = None
    incarnation: int = 0
    conn: str = ""
    deployed: bool = False
    inflight: dict[int, int] = field(default_factory=dict)  # correlation id -> timeout deadline
    wake_at: int | None = None
    wake_version: int = 0
    claim: frozenset[int] = frozenset()
    claim_current: bool = False
    claim_key: tuple[frozenset[TopicPartition], int, str] | None = None
    #: classic: partition -> the generation in which this process's uninterrupted hold of it began
    claim_since: dict[int, int] = field(default_factory=dict)
    #: classic: claimed partitions carried into a generation past ones the member missed, which another
    #: member was given meanwhile: zombie claims until the member's next assignment (docs/simulator.md)
    stale: frozenset[int] = frozenset()
    settled: bool = False
    app_poll_at: int | None = None  # the application's next poll() after its current batch
    app_tick_at: int | None = None  # the loop's next periodic look (auto-commit, poll timer)
    reconnects: int = 0  # connections this incarnation reopened (a timeout or reset closed one)
    conn_ready_at: int = 0  # when the current connection can carry requests
    epoch_seen: int = 0  # consumer protocol: the member epoch last seen (it never goes back)
