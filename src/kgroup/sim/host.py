"""What the simulator's parts need from their host, as small protocols (no import of the runner).

:mod:`kgroup.sim.actions` (scenario events), :mod:`kgroup.sim.coordinator_results` (carrying out
what the coordinator returns) and the result builder each depend only on the protocol here that
lists what they use; :class:`kgroup.sim.runner.Simulation` implements all three. So the modules do
not import each other in a circle, and a part can be driven by a test host.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from kgroup.group import GroupCoordinator, TimerTable
from kgroup.member import OutboundRequest
from kgroup.model import TopicMetadata
from kgroup.sim.consumer_group import ConsumerGroupObserver, HandoverTracker
from kgroup.sim.network import Network
from kgroup.sim.observer import GroupObserver
from kgroup.sim.ownership import OwnershipTracker
from kgroup.sim.process import ConsumerProcess
from kgroup.sim.result import LagSample
from kgroup.sim.scenario import ConsumerSpec, Scenario
from kgroup.sim.scheduler import EventQueue, Payload
from kgroup.sim.workload import Workload

__all__ = [
    "CoordinatorHost",
    "Disturbance",
    "ExactlyOnceBooks",
    "ProcessHost",
    "ResultSource",
    "ScenarioHost",
    "SimProcess",
]


class Disturbance(Protocol):
    start_ms: int
    ready_ms: int
    resolved_ms: int | None


class SimProcess(Protocol):
    """A simulated consumer process, as the protocol-independent events see it."""

    index: int
    id: str
    topics: tuple[str, ...]
    deployed: bool


_P = TypeVar("_P", bound=SimProcess)


class ProcessHost(Protocol[_P]):
    """What the scenario events every protocol carries out alike act through
    (:func:`kgroup.sim.actions.apply_process_event`): both simulations implement it."""

    q: EventQueue[Any]
    net: Network

    @property
    def procs(self) -> Sequence[_P]: ...

    @property
    def now(self) -> int: ...

    def log_event(self, kind: str, **fields: Any) -> None: ...

    def process_named(self, name: str | None) -> _P: ...

    def start_process(self, proc: _P) -> None: ...

    def stop_process(self, proc: _P, graceful: bool) -> None: ...

    def resubscribe(self) -> None: ...


class _Common(Protocol):
    q: EventQueue[Payload]
    net: Network
    workload: Workload
    procs: list[ConsumerProcess]
    group: GroupObserver | ConsumerGroupObserver
    own: OwnershipTracker
    #: consumer protocol: the revoking / unreleased clocks (None on the classic protocol)
    handover: HandoverTracker | None
    metadata_changed_ms: int

    @property
    def now(self) -> int: ...

    def log_event(self, kind: str, **fields: Any) -> None: ...

    def metadata(self) -> dict[str, TopicMetadata]: ...


class ScenarioHost(_Common, Protocol):
    """What a scenario event (:func:`kgroup.sim.actions.apply_scenario_event`) acts through."""

    by_id: dict[str, ConsumerProcess]

    def process_named(self, name: str | None) -> ConsumerProcess: ...

    def new_process(self, spec: ConsumerSpec) -> ConsumerProcess: ...

    def start_process(self, proc: ConsumerProcess) -> None: ...

    def stop_process(self, proc: ConsumerProcess, graceful: bool) -> None: ...

    def send_requests(self, proc: ConsumerProcess, requests: Sequence[OutboundRequest]) -> None: ...

    def poll_process(self, proc: ConsumerProcess) -> None: ...

    def after_member(self, proc: ConsumerProcess) -> None: ...

    def resubscribe(self) -> None: ...

    def add_topic_partitions(self, topic: str, count: int, now_ms: int) -> None: ...

    def give_metadata(self, proc: ConsumerProcess) -> None: ...


class CoordinatorHost(_Common, Protocol):
    """What carrying out a :class:`~kgroup.group.CoordinatorResult` acts through."""

    coord: GroupCoordinator
    group_id: str
    conn_owner: dict[str, tuple[int, int]]
    rebalances: int
    rebalance_starts: list[int]
    stable_marks: list[int]

    @property
    def coord_timers(self) -> TimerTable: ...

    def violation(self, text: str) -> None: ...

    def group_changed(self) -> None: ...

    def group_records_observed(self) -> None:
        """Records that may change the group (state, generation, members) are about to be observed."""

    def arm_timeout(self, proc: ConsumerProcess, incarnation: int, correlation_id: int) -> None: ...


class ExactlyOnceBooks(Protocol):
    """What the result needs of the exactly-once workload (:class:`kgroup.sim.exactly_once.ExactlyOnce`)."""

    def metrics(self) -> dict[str, Any]: ...


class ResultSource(_Common, Protocol):
    """What the run's result (:func:`kgroup.sim.actions.build_result`) is built from."""

    sc: Scenario
    rebalances: int
    moved: int
    max_lag: int
    max_partition_lag: int
    commits_sent: int
    steps: int
    running_count: int
    violation_count: int
    violations: list[str]
    events_dropped: int
    ownership_dropped: int
    ownership: list[dict[str, Any]]
    events: list[dict[str, Any]]
    lag: list[LagSample]
    rebalance_starts: list[int]
    stable_marks: list[int]
    settled_at_end: bool
    reconciled_at_end: bool

    @property
    def disturbances(self) -> Sequence[Disturbance]: ...

    @property
    def eos(self) -> ExactlyOnceBooks | None:
        """Exactly-once processing's books (None at least once)."""
