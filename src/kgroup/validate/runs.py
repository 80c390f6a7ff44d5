"""One scenario three ways — simulated, real clients on ``kgroup serve``, real clients on Apache
Kafka — reduced to the same metrics (:mod:`kgroup.validate.metrics`) and set side by side.

* **simulated**: :func:`kgroup.sim.simulate`; ownership from the simulated members' ``assignment()``
  (the simulator's owner intervals), records reprocessed from its workload model, rebalances = the
  generations its coordinator formed;
* **kgroup** / **apache**: :func:`kgroup.validate.driver.play` on the broker; ownership and records
  reprocessed from what the consumers saw; rebalances = the generations in the broker's recording
  (``kgroup serve --record`` for kgroup; ``kgroup record``, which reads ``__consumer_offsets``, for
  Apache Kafka), loaded with the report code (:func:`kgroup.report.recording.load_recording`).
"""

from __future__ import annotations

import dataclasses
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgroup.model import KgroupError
from kgroup.sim.scenario import Scenario
from kgroup.validate.driver import RealRun, check_playable, play
from kgroup.validate.metrics import (
    EventWindow,
    Interval,
    idle_member_ms,
    moved_partitions,
    read_intervals,
    records_redelivered,
    records_reprocessed,
    time_to_stable_ms,
    unowned_partition_ms,
)

__all__ = ["BROKERS", "MetricRow", "ScenarioResult", "event_windows", "run_metrics", "simulated", "validate"]

BROKERS = ("kgroup", "apache")
#: the real consumers: confluent-kafka (librdkafka) workers, or Apache Kafka's Java KafkaConsumer
#: (:mod:`kgroup.validate.java_driver`)
CLIENTS = ("librdkafka", "java")
#: the broker floor a scenario's session timeout must clear (both brokers are started with it)
MIN_SESSION_TIMEOUT_MS = 6000
#: share groups: a partition counts as read for this long after each delivery of its records (the
#: real share consumers cannot see their assignment; see :func:`share_real_metrics`)
READ_HOLD_MS = 1000
#: share groups: Kafka's floors (``group.share.min.session.timeout.ms``, ``group.share.min.heartbeat.
#: interval.ms``, ``group.share.min.record.lock.duration.ms``), which kgroup serve keeps too
SHARE_FLOORS = {
    "share_session_timeout_ms": 45_000,
    "share_heartbeat_interval_ms": 5000,
    "share_record_lock_duration_ms": 15_000,
}


@dataclass(frozen=True, slots=True)
class MetricRow:
    metric: str
    simulated: float | None
    measured: dict[str, float | None]  # broker -> value
    #: with several simulated seeds: the smallest and largest simulated value
    simulated_range: tuple[float, float] | None = None

    def ratio(self, broker: str) -> float | None:
        """simulated / measured (``None`` when either is missing or the measured value is 0 and the
        simulated one is not; 1.0 when both are 0)."""
        real = self.measured.get(broker)
        if self.simulated is None or real is None:
            return None
        if real == 0:
            return 1.0 if self.simulated == 0 else None
        return self.simulated / real


@dataclass
class ScenarioResult:
    scenario: str
    brokers: list[str]
    rows: list[MetricRow]
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)  # way -> details (JSON)

    def to_data(self) -> dict[str, Any]:
        """The scenario's entry in ``kgroup validate --json``."""
        return {
            "scenario": self.scenario,
            "metrics": [
                {
                    "metric": row.metric,
                    "simulated": row.simulated,
                    "simulated_range": list(row.simulated_range) if row.simulated_range else None,
                    "measured": row.measured,
                    "ratio": {b: row.ratio(b) for b in self.brokers},
                }
                for row in self.rows
            ],
            "runs": self.runs,
        }


def event_windows(scenario: Scenario) -> list[EventWindow]:
    """The group's start and each scenario event, each until the next one (or the end of the run)."""
    events = sorted(scenario.events, key=lambda e: e.at_ms)
    starts = [("start", 0)] + [
        (
            f"{e.kind} {e.consumer or ('all' if e.kind == 'rolling_restart' else '')}".rstrip()
            if e.kind != "scale"
            else f"scale {e.count:+d}",
            e.at_ms,
        )
        for e in events
    ]
    return [
        EventWindow(
            f"{label} @{at / 1000:g}s", at, starts[i + 1][1] if i + 1 < len(starts) else scenario.duration_ms
        )
        for i, (label, at) in enumerate(starts)
    ]


def run_metrics(
    scenario: Scenario,
    partitions: Sequence[str],
    intervals: Sequence[Interval],
    end_ms: int,
    rebalances: int | None,
    reprocessed: int | None,
) -> dict[str, float | None]:
    """The validation metrics of one run (times in seconds, partition-time in partition-seconds)."""
    out: dict[str, float | None] = {
        "rebalances": rebalances,
        "unowned_partition_s": unowned_partition_ms(partitions, intervals, end_ms) / 1000,
        "moved_partitions": moved_partitions(intervals),
        "records_reprocessed": reprocessed,
    }
    for window in event_windows(scenario):
        ms = time_to_stable_ms(partitions, intervals, window, end_ms)
        out[f"time_to_stable_s ({window.label})"] = None if ms is None else ms / 1000
    return out


def share_real_metrics(run: RealRun) -> dict[str, float | None]:
    """A share group's validation metrics from what its real consumers got (times in seconds):

    * ``records_processed`` — deliveries processed to the end of their batch (then acknowledged);
    * ``records_redelivered`` — records delivered at a delivery count above 1;
    * ``idle_member_s`` — member-seconds from a consumer's start to its first records;
    * ``unread_partition_s`` — partition-seconds, from the first moment every partition had been
      delivered, more than :data:`READ_HOLD_MS` after the partition's last delivery.
    """
    read = read_intervals(run.deliveries, READ_HOLD_MS)
    return {
        "records_processed": run.processed,
        "records_redelivered": records_redelivered(run.deliveries),
        "idle_member_s": idle_member_ms(run.spans, run.deliveries) / 1000,
        "unread_partition_s": unowned_partition_ms(run.partitions, read, run.end_ms) / 1000,
    }


def share_details(run: RealRun) -> dict[str, Any]:
    """What a share run's consumers got, for ``--json``: each consumer's running spans with the time
    of its first records in each, the records each got, the records processed, and every delivery
    (time, consumer, partition, first and last offset, delivery count)."""
    got: dict[str, int] = {}
    for d in run.deliveries:
        got[d.consumer] = got.get(d.consumer, 0) + d.last - d.first + 1
    spans = []
    for consumer, start, end in run.spans:
        times = [d.t_ms for d in run.deliveries if d.consumer == consumer and start <= d.t_ms < end]
        first = min(times, default=None)
        spans.append({"consumer": consumer, "start_ms": start, "end_ms": end, "first_records_ms": first})
    return {
        "spans": spans,
        "records_got": got,
        "processed": run.processed,
        "deliveries": [[d.t_ms, d.consumer, d.partition, d.first, d.last, d.count] for d in run.deliveries],
    }


def share_simulated_metrics(metrics: Mapping[str, Any]) -> dict[str, float | None]:
    """The same metrics from the simulator's own books (:mod:`kgroup.sim.share_group`): processed
    deliveries, redeliveries, ``idle_member_ms`` (member-time without a partition) and
    ``unowned_partition_ms`` (partition-time assigned to no running member)."""
    return {
        "records_processed": int(metrics["records_processed"]),
        "records_redelivered": int(metrics["records_redelivered"]),
        "idle_member_s": int(metrics["idle_member_ms"]) / 1000,
        "unread_partition_s": int(metrics["unowned_partition_ms"]) / 1000,
    }


def _simulated_once(scenario: Scenario) -> tuple[dict[str, float | None], dict[str, Any]]:
    from kgroup.sim import simulate

    result = simulate(scenario)
    if scenario.group.share_protocol:
        own = {k: v for k, v in result.metrics.items() if k != "invariant_violations"}
        return share_simulated_metrics(result.metrics), own
    intervals = [(result.partitions[p], owner, s, e) for p, owner, s, e in result.intervals]
    metrics = run_metrics(
        scenario,
        result.partitions,
        intervals,
        scenario.duration_ms,
        int(result.metrics["generation"]),
        int(result.metrics["records_reprocessed"]),
    )
    return metrics, {k: v for k, v in result.metrics.items() if k != "invariant_violations"}


def with_jitter(scenario: Scenario, jitter_ms: int | None) -> Scenario:
    """``scenario`` with the scenario-wide network's ``jitter_ms`` replaced (``None``: unchanged)."""
    if jitter_ms is None:
        return scenario
    return dataclasses.replace(scenario, network=dataclasses.replace(scenario.network, jitter_ms=jitter_ms))


def simulated(
    scenario: Scenario, seeds: int = 1, jitter_ms: int | None = None
) -> tuple[dict[str, float | None], dict[str, Any]]:
    """The simulated metrics: one run, or the median over ``seeds`` runs (the scenario's seed and the
    next ones), with the network's jitter set to ``jitter_ms`` when given. The details hold every
    seed's values and the first run's own simulator metrics."""
    base = with_jitter(scenario, jitter_ms)
    per_seed: dict[str, list[float | None]] = {}
    first: dict[str, Any] = {}
    for i in range(seeds):
        metrics, own = _simulated_once(dataclasses.replace(base, seed=base.seed + i))
        first = first or own
        for metric, value in metrics.items():
            per_seed.setdefault(metric, []).append(value)
    medians = {metric: _median(values) for metric, values in per_seed.items()}
    details: dict[str, Any] = {"simulator_metrics": first, "jitter_ms": base.network.jitter_ms}
    if seeds > 1:
        details["seeds"] = [base.seed + i for i in range(seeds)]
        details["per_seed"] = per_seed
    return medians, details


def _median(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _real_metrics(scenario: Scenario, run: RealRun, generations: int | None) -> dict[str, float | None]:
    if scenario.group.share_protocol:
        return share_real_metrics(run)
    return run_metrics(
        scenario, run.partitions, run.intervals, run.end_ms, generations, records_reprocessed(run.batches)
    )


def _generations(recording_file: Path) -> int | None:
    from kgroup.report.recording import load_recording

    if not recording_file.exists():
        return None
    return int(load_recording(recording_file).metrics["generation"])


def check_scenario(scenario: Scenario, client: str = "librdkafka") -> None:
    check_playable(scenario)
    if client == "java":
        from kgroup.validate.java_driver import check_java_playable

        check_java_playable(scenario)
    group = scenario.group
    if group.share_protocol:
        for name, floor in SHARE_FLOORS.items():
            if getattr(group, name) < floor:
                raise KgroupError(
                    f"{scenario.name}: group.{name}: below {floor}, the brokers' minimum "
                    f"(group.share.min.{name.removeprefix('share_').replace('_', '.')}); raise it"
                )
        if any(e.kind == "slow_poll" for e in scenario.events):
            raise KgroupError(
                f"{scenario.name}: events: slow_poll is not played for share groups yet "
                "(the share worker has no stall yet); use crash, stop, restart or scale"
            )
        return
    if group.consumer_protocol:
        if group.consumer_heartbeat_interval_ms >= group.consumer_session_timeout_ms:
            raise KgroupError(
                f"{scenario.name}: group.consumer_heartbeat_interval_ms: not below "
                "group.consumer_session_timeout_ms, which the brokers refuse; lower it"
            )
        return
    if scenario.group.max_poll_interval_ms < scenario.group.session_timeout_ms:
        raise KgroupError(
            f"{scenario.name}: group.max_poll_interval_ms: below group.session_timeout_ms, which librdkafka "
            "refuses; raise it to at least the session timeout"
        )
    if scenario.group.session_timeout_ms < MIN_SESSION_TIMEOUT_MS:
        raise KgroupError(
            f"{scenario.name}: group.session_timeout_ms: below {MIN_SESSION_TIMEOUT_MS}, the brokers' "
            "group.min.session.timeout.ms; raise it"
        )


def _on_kgroup(scenario: Scenario, work: Path, progress: Callable[[str], None]) -> tuple[RealRun, int | None]:
    from kgroup.record.reader import recording_path
    from kgroup.testing.broker import KafkaBroker

    run_id = uuid.uuid4().hex[:8]
    record_dir = work / f"kgroup-{run_id}"
    consumer = consumer_group_settings(scenario)  # {} for a classic scenario: Kafka's defaults
    broker = KafkaBroker(
        record_dir=record_dir,
        group_initial_rebalance_delay_ms=scenario.group.initial_rebalance_delay_ms,
        group_min_session_timeout_ms=MIN_SESSION_TIMEOUT_MS,
        group_consumer_session_timeout_ms=consumer.get("group.consumer.session.timeout.ms", 45_000),
        group_consumer_min_session_timeout_ms=consumer.get("group.consumer.min.session.timeout.ms", 45_000),
        group_consumer_max_session_timeout_ms=consumer.get("group.consumer.max.session.timeout.ms", 60_000),
        group_consumer_heartbeat_interval_ms=consumer.get("group.consumer.heartbeat.interval.ms", 5_000),
        group_consumer_min_heartbeat_interval_ms=consumer.get(
            "group.consumer.min.heartbeat.interval.ms", 5_000
        ),
        group_consumer_max_heartbeat_interval_ms=consumer.get(
            "group.consumer.max.heartbeat.interval.ms", 15_000
        ),
        **_kgroup_share_settings(scenario),
    ).start()
    try:
        run = _player(scenario)(scenario, broker.bootstrap_servers, broker.create_topic, run_id, progress)
    finally:
        broker.stop()
    return run, _generations(recording_path(record_dir, f"{scenario.group.group_id}-{run_id}"))


def _player(scenario: Scenario) -> Callable[..., RealRun]:
    """The driver of the client the scenario's members model (``group.client``, set to ``--client``)."""
    if scenario.group.client == "java":
        from kgroup.validate.java_driver import play_java

        return play_java
    return play


def _kgroup_share_settings(scenario: Scenario) -> dict[str, Any]:
    """kgroup serve's share settings for a share scenario (``{}`` otherwise: its defaults): Kafka's
    (:func:`share_group_settings`) under kgroup serve's names; ``share.auto.offset.reset`` is
    broker-wide on kgroup serve (it has no group configs yet)."""
    settings: dict[str, Any] = {
        name.replace(".", "_"): value for name, value in share_group_settings(scenario).items()
    }
    if settings:
        settings["share_auto_offset_reset"] = scenario.workload.auto_offset_reset
    return settings


def share_group_settings(scenario: Scenario) -> dict[str, int]:
    """Apache Kafka's broker settings for a share scenario (Kafka's names; ``{}`` otherwise)."""
    group = scenario.group
    if not group.share_protocol:
        return {}
    return {
        "group.share.session.timeout.ms": group.share_session_timeout_ms,
        "group.share.heartbeat.interval.ms": group.share_heartbeat_interval_ms,
        "group.share.record.lock.duration.ms": group.share_record_lock_duration_ms,
        "group.share.delivery.count.limit": group.share_delivery_count_limit,
    }


def _set_share_offset_reset(bootstrap: str, group: str, reset: str) -> None:
    """Apache Kafka: the share group's ``share.auto.offset.reset`` (a group config), before it exists."""
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
    resource = ConfigResource(
        ResourceType.GROUP,
        group,
        incremental_configs=[
            ConfigEntry("share.auto.offset.reset", reset, incremental_operation=AlterConfigOpType.SET)
        ],
    )
    for future in admin.incremental_alter_configs([resource], request_timeout=30).values():
        future.result(timeout=60)


def _on_apache(
    scenario: Scenario, kafka: Any, work: Path, progress: Callable[[str], None]
) -> tuple[RealRun, int | None]:
    from kgroup.record.reader import RecordOptions, record_group

    run_id = uuid.uuid4().hex[:8]
    if scenario.group.share_protocol:
        group = f"{scenario.group.group_id}-{run_id}"
        _set_share_offset_reset(kafka.bootstrap_servers, group, scenario.workload.auto_offset_reset)
        run = play(scenario, kafka.bootstrap_servers, kafka.create_topic, run_id, progress)
        return run, None  # (kgroup record does not read share groups: no generations)
    run = _player(scenario)(scenario, kafka.bootstrap_servers, kafka.create_topic, run_id, progress)
    group = f"{scenario.group.group_id}-{run_id}"
    progress(f"{scenario.name}: kgroup record (Apache Kafka's __consumer_offsets)")
    _history, path = record_group(
        RecordOptions(kafka.bootstrap_servers, group, work / f"apache-{run_id}"),
        time.monotonic,
        lambda: int(time.time() * 1000),
    )
    return run, _generations(path)


def _range(details: dict[str, Any], metric: str) -> tuple[float, float] | None:
    known = [v for v in details.get("per_seed", {}).get(metric, ()) if v is not None]
    return (min(known), max(known)) if known else None


def consumer_group_settings(scenario: Scenario) -> dict[str, int]:
    """The brokers' KIP-848 settings a consumer-protocol scenario runs with (Kafka's names): its
    session timeout and heartbeat interval, with the bounds widened to admit them (``{}`` for a
    classic scenario: the brokers' defaults)."""
    group = scenario.group
    if not group.consumer_protocol:
        return {}
    session, heartbeat = group.consumer_session_timeout_ms, group.consumer_heartbeat_interval_ms
    return {
        "group.consumer.session.timeout.ms": session,
        "group.consumer.min.session.timeout.ms": min(session, 45_000),
        "group.consumer.max.session.timeout.ms": max(session, 60_000),
        "group.consumer.heartbeat.interval.ms": heartbeat,
        "group.consumer.min.heartbeat.interval.ms": min(heartbeat, 5_000),
        "group.consumer.max.heartbeat.interval.ms": max(heartbeat, 15_000),
    }


#: Kafka 4.4.0's defaults of the share settings (a node started without them serves any share scenario
#: that keeps them)
_SHARE_DEFAULTS = {
    "group.share.session.timeout.ms": 45_000,
    "group.share.heartbeat.interval.ms": 5000,
    "group.share.record.lock.duration.ms": 30_000,
    "group.share.delivery.count.limit": 5,
}


def _nondefault_share_settings(scenario: Scenario) -> dict[str, int]:
    return {k: v for k, v in share_group_settings(scenario).items() if _SHARE_DEFAULTS.get(k) != v}


class ApachePool:
    """One Apache Kafka node per broker setting the scenarios ask for — ``group.initial.rebalance.delay.ms``
    (the key: the delay), and for a consumer-protocol scenario the group.consumer settings too (the key:
    the delay and those) — started on first use, stopped by :meth:`stop`; ``running`` lends nodes
    started elsewhere (by key), which :meth:`stop` leaves running."""

    def __init__(self, running: Mapping[Hashable, Any] | None = None) -> None:
        self.nodes: dict[Hashable, Any] = dict(running or {})
        self.lent = set(self.nodes)

    def get(self, scenario: Scenario) -> Any:
        from kgroup.testing.apache_kafka import ApacheKafka

        delay = scenario.group.initial_rebalance_delay_ms
        consumer = {**consumer_group_settings(scenario), **_nondefault_share_settings(scenario)}
        key: Hashable = (delay, *sorted(consumer.items())) if consumer else delay
        if key not in self.nodes:
            self.nodes[key] = ApacheKafka(
                configs={
                    "group.initial.rebalance.delay.ms": delay,
                    "group.min.session.timeout.ms": MIN_SESSION_TIMEOUT_MS,
                    **consumer,
                }
            ).start()
        return self.nodes[key]

    def stop(self) -> None:
        for key, node in self.nodes.items():
            if key not in self.lent:
                node.stop()
        self.nodes.clear()


@contextmanager
def apache_pool() -> Iterator[ApachePool]:
    pool = ApachePool()
    try:
        yield pool
    finally:
        pool.stop()


def validate(
    scenario: Scenario,
    brokers: Sequence[str],
    pool: ApachePool | None,
    progress: Callable[[str], None] = lambda text: None,
    *,
    seeds: int = 1,
    jitter_ms: int | None = None,
    client: str = "librdkafka",
) -> ScenarioResult:
    """Run ``scenario`` simulated (over ``seeds`` seeds, optionally with network jitter: see
    :func:`simulated`) and on each of ``brokers`` with real clients; the metric rows. The simulated
    members model ``client``, the library the real consumers use (``group.client``)."""
    check_scenario(scenario, client)
    scenario = dataclasses.replace(scenario, group=dataclasses.replace(scenario.group, client=client))
    progress(f"{scenario.name}: simulating")
    sim_metrics, sim_details = simulated(scenario, seeds, jitter_ms)
    measured: dict[str, dict[str, float | None]] = {}
    runs: dict[str, dict[str, Any]] = {"simulated": {"metrics": sim_metrics, **sim_details}}
    with tempfile.TemporaryDirectory(prefix="kgroup-validate-") as tmp:
        work = Path(tmp)
        for broker in brokers:
            progress(f"{scenario.name}: real clients on {broker}")
            if broker == "kgroup":
                run, generations = _on_kgroup(scenario, work, progress)
            else:
                assert pool is not None
                kafka = pool.get(scenario)
                run, generations = _on_apache(scenario, kafka, work, progress)
            measured[broker] = _real_metrics(scenario, run, generations)
            runs[broker] = {
                "metrics": measured[broker],
                "generations_recorded": generations,
                "intervals": [list(iv) for iv in run.intervals],
                "batches": len(run.batches),
                "consumer_log": run.consumer_log,
            }
            if scenario.group.share_protocol:
                runs[broker]["share"] = share_details(run)
    rows = [
        MetricRow(metric, value, {b: measured[b].get(metric) for b in brokers}, _range(sim_details, metric))
        for metric, value in sim_metrics.items()
    ]
    return ScenarioResult(scenario.name, list(brokers), rows, runs)
