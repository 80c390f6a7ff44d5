"""Scenario files: the group, its consumers, the network, the workload and the events to simulate.

A scenario is plain data (YAML or JSON) validated field by field into frozen dataclasses. Every
problem is reported as one line naming the field, what is wrong and what is allowed; unknown keys
are rejected so that a typo never silently changes a simulation. ``docs/simulator.md`` documents
every field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgroup.model import KgroupError

__all__ = [
    "EVENT_KINDS",
    "PROCESSING_MODES",
    "ConsumerSpec",
    "EventSpec",
    "GroupSpec",
    "NetworkSpec",
    "Scenario",
    "WorkloadSpec",
    "load_scenario",
    "no_op_events",
    "parse_scenario",
    "scenario_from_text",
]

#: every event kind a scenario may use, in the order the docs list them
EVENT_KINDS = (
    "start",
    "stop",
    "crash",
    "restart",
    "rolling_restart",
    "scale",
    "add_partitions",
    "subscribe",
    "slow_poll",
    "network_partition",
)

# Kafka's defaults (consumer: session 45 s, heartbeat 3 s, max.poll.interval 5 min, auto-commit
# every 5 s, request.timeout.ms 30 s, partition.assignment.strategy [range, cooperative-sticky];
# broker: group.initial.rebalance.delay.ms 3 s).
DEFAULT_ASSIGNORS = ("range", "cooperative-sticky")
#: Kafka's ``group.protocol``: the classic JoinGroup/SyncGroup protocol, or KIP-848's consumer protocol
GROUP_PROTOCOLS = ("classic", "consumer", "share")
#: the client library the members model (``group.client``): ``java`` is Kafka's consumer;
#: ``librdkafka`` differs in one modelled way, it commits a revoked partition's offset when it
#: revokes it if auto-commit is on (docs/validate.md)
CLIENTS = ("java", "librdkafka")
#: the server-side assignors a consumer-protocol member may name (``group.remote.assignor``); the
#: coordinator's default (``group.consumer.assignors``' first) is ``uniform``
SERVER_ASSIGNORS = ("uniform", "range")
#: the group fields that only the consumer protocol reads, with their defaults (left out of
#: :meth:`Scenario.to_data` when at the default, so a classic scenario's data is unchanged)
_CONSUMER_GROUP_DEFAULTS: dict[str, object] = {
    "protocol": "classic",
    "server_assignor": None,
    "consumer_session_timeout_ms": 45000,
    "consumer_heartbeat_interval_ms": 5000,
}
#: the group fields that only share groups (KIP-932, ``protocol: share``) read, with Kafka's defaults
_SHARE_GROUP_DEFAULTS: dict[str, object] = {
    "share_session_timeout_ms": 45000,
    "share_heartbeat_interval_ms": 5000,
    "share_record_lock_duration_ms": 30000,
    "share_delivery_count_limit": 5,
    "share_max_record_locks": 2000,
}
#: the workload fields only share groups read (per-record outcomes), with their defaults
_SHARE_WORKLOAD_DEFAULTS: dict[str, object] = {
    "failure_share": 0.0,
    "poison_share": 0.0,
    "failure_action": "release",
}
#: what a share consumer's application acknowledges a record it failed to process with
FAILURE_ACTIONS = ("release", "reject")
#: how a consumer group's application processes (``workload.processing``): at-least-once (commits
#: offsets after processing) or exactly-once (consume-transform-produce in transactions, KIP-447)
PROCESSING_MODES = ("at_least_once", "exactly_once")
#: the exactly-once workload's fields, with their defaults (left out of the data when at them)
_EOS_WORKLOAD_DEFAULTS: dict[str, object] = {
    "processing": "at_least_once",
    "commit_interval_ms": 100,  # Kafka Streams' commit.interval.ms under exactly-once
    "transaction_timeout_ms": 60000,  # the producer's transaction.timeout.ms default
}


@dataclass(frozen=True, slots=True)
class GroupSpec:
    group_id: str = "sim-group"
    assignors: tuple[str, ...] = DEFAULT_ASSIGNORS
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 3000
    max_poll_interval_ms: int = 300000
    initial_rebalance_delay_ms: int = 3000
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5000
    request_timeout_ms: int = 30000
    #: the client library the members model (:data:`CLIENTS`)
    client: str = "java"
    # --- KIP-848 (``protocol: consumer``) ---------------------------------------------------------------
    #: Kafka's ``group.protocol``: ``classic`` (JoinGroup/SyncGroup; ``assignors`` decide EAGER or
    #: COOPERATIVE) or ``consumer`` (ConsumerGroupHeartbeat; the coordinator assigns)
    protocol: str = "classic"
    #: ``group.remote.assignor`` (``uniform`` or ``range``); None: the coordinator's default, uniform
    server_assignor: str | None = None
    #: the broker's ``group.consumer.session.timeout.ms`` / ``group.consumer.heartbeat.interval.ms``
    #: (with this protocol the coordinator owns both; Kafka's defaults)
    consumer_session_timeout_ms: int = 45000
    consumer_heartbeat_interval_ms: int = 5000
    # --- KIP-932 (``protocol: share``) -----------------------------------------------------------------
    #: the broker's ``group.share.session.timeout.ms`` / ``group.share.heartbeat.interval.ms``
    share_session_timeout_ms: int = 45000
    share_heartbeat_interval_ms: int = 5000
    #: the group configs ``share.record.lock.duration.ms``, ``share.delivery.count.limit`` and
    #: ``share.partition.max.record.locks`` (Kafka's defaults)
    share_record_lock_duration_ms: int = 30000
    share_delivery_count_limit: int = 5
    share_max_record_locks: int = 2000

    @property
    def consumer_protocol(self) -> bool:
        return self.protocol == "consumer"

    @property
    def share_protocol(self) -> bool:
        return self.protocol == "share"


@dataclass(frozen=True, slots=True)
class NetworkSpec:
    latency_ms: int = 1
    jitter_ms: int = 0
    loss: float = 0.0  # per message: a lost segment is retransmitted (a delay), never dropped
    resets_per_hour: float | None = None  # connection resets per connection-hour (None: none)


@dataclass(frozen=True, slots=True)
class ConsumerSpec:
    """One consumer process. ``id`` names it in every output, across restarts."""

    id: str
    topics: tuple[str, ...]
    static: bool = False  # group.instance.id = id
    rack: str | None = None
    assignors: tuple[str, ...] | None = None  # None: the group's list
    autostart: bool = True
    network: NetworkSpec | None = None  # this consumer's link; None: the scenario's network


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    produce_per_partition_per_s: int = 100
    consume_per_consumer_per_s: int = 2000
    auto_offset_reset: str = "latest"  # Kafka's default
    max_poll_records: int = 500  # Kafka's default: the records one poll() returns at most
    sample_interval_ms: int | None = None  # None: max(1000, duration / 300)
    # --- share groups only: what the application does with each record it gets ----------------------
    #: the share of deliveries whose processing fails once (a fresh draw per delivery)
    failure_share: float = 0.0
    #: what the application acknowledges a failed record with: release (redelivered) or reject (archived)
    failure_action: str = "release"
    #: the share of records that fail every time (poison): redelivered until archived at the limit
    poison_share: float = 0.0
    # --- consumer groups: exactly-once processing (kgroup.sim.exactly_once) ---------------------------
    #: at_least_once (the default) or exactly_once (transactions of output records and offsets)
    processing: str = "at_least_once"
    #: exactly_once: a transaction is committed this often (Kafka Streams' commit.interval.ms)
    commit_interval_ms: int = 100
    #: exactly_once: the producer's transaction.timeout.ms (an open transaction older is aborted)
    transaction_timeout_ms: int = 60000

    @property
    def exactly_once(self) -> bool:
        return self.processing == "exactly_once"


@dataclass(frozen=True, slots=True)
class EventSpec:
    """One scenario event; the fields a kind does not use keep their defaults."""

    at_ms: int
    kind: str
    consumer: str | None = None
    consumers: tuple[str, ...] | None = None  # rolling_restart; None = all
    downtime_ms: int = 0
    gap_ms: int = 30000
    graceful: bool = True
    assignors: tuple[str, ...] | None = None  # restart / rolling_restart: redeploy with this list
    count: int = 0
    topic: str | None = None
    topics: tuple[str, ...] | None = None
    prefix: str = "scale-"
    static: bool = False
    rack: str | None = None
    duration_ms: int = 0


@dataclass(frozen=True, slots=True)
class Scenario:
    duration_ms: int
    topics: tuple[tuple[str, int], ...]  # (name, partitions) in file order
    consumers: tuple[ConsumerSpec, ...]
    seed: int = 0
    group: GroupSpec = GroupSpec()
    network: NetworkSpec = NetworkSpec()
    workload: WorkloadSpec = WorkloadSpec()
    events: tuple[EventSpec, ...] = ()
    name: str = "scenario"

    def to_data(self) -> dict[str, Any]:
        """The scenario as plain data that :func:`parse_scenario` reads back to an equal scenario."""
        return {
            "name": self.name,
            "seed": self.seed,
            "duration_ms": self.duration_ms,
            "topics": dict(self.topics),
            "group": _group_plain(self.group),
            "consumers": [_plain(c) for c in self.consumers],
            "network": _plain(self.network),
            "workload": _workload_plain(self.workload),
            "events": [_event_plain(e) for e in self.events],
        }


def _plain(obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, NetworkSpec):
            out[f.name] = _plain(value)
        elif value is not None:
            out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def _group_plain(group: GroupSpec) -> dict[str, Any]:
    out = _plain(group)
    for key, default in (*_CONSUMER_GROUP_DEFAULTS.items(), *_SHARE_GROUP_DEFAULTS.items()):
        if out.get(key) == default:
            out.pop(key, None)
    if group.consumer_protocol or group.share_protocol:
        out.pop("assignors", None)  # the consumer protocol and share groups have no client-side assignors
    if out.get("client") == "java":
        out.pop("client")  # the default, left out (as files written before the field read)
    return out


def _workload_plain(workload: WorkloadSpec) -> dict[str, Any]:
    out = _plain(workload)
    for key, default in (*_SHARE_WORKLOAD_DEFAULTS.items(), *_EOS_WORKLOAD_DEFAULTS.items()):
        if out.get(key) == default:
            out.pop(key)  # (a scenario without share outcomes or exactly-once reads as it always did)
    return out


def _event_plain(event: EventSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"at_ms": event.at_ms, "kind": event.kind}
    for name in _EVENT_FIELDS[event.kind]:
        value = getattr(event, name)
        if name == "consumers" and value is None:
            value = "all"
        if value is None:
            continue
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


# --- validation helpers ------------------------------------------------------------------------


def _fail(field: str, problem: str, fix: str) -> KgroupError:
    return KgroupError(f"{field}: {problem}; {fix}")


def _mapping(value: Any, field: str, allowed: Sequence[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(field, f"is {_show(value)}", f"give a mapping with keys: {', '.join(allowed)}")
    for key in value:
        if key not in allowed:
            raise _fail(f"{field}.{key}", "is not a known field", f"use one of: {', '.join(allowed)}")
    return value


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _int(value: Any, field: str, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(field, f"is {_show(value)}", f"give a whole number >= {minimum}")
    if value < minimum or (maximum is not None and value > maximum):
        allowed = f"between {minimum} and {maximum}" if maximum is not None else f">= {minimum}"
        raise _fail(field, f"is {value}", f"give a whole number {allowed}")
    return value


def _bool(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(field, f"is {_show(value)}", "give true or false")
    return value


def _name(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise _fail(field, f"is {_show(value)}", "give a non-empty string")
    return value


def _names(value: Any, field: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise _fail(field, f"is {_show(value)}", "give a non-empty list of names")
    return tuple(_name(v, f"{field}[{i}]") for i, v in enumerate(value))


def _topics_ref(value: Any, field: str, topics: Mapping[str, int]) -> tuple[str, ...]:
    names = _names(value, field)
    for i, name in enumerate(names):
        if name not in topics:
            raise _fail(
                f"{field}[{i}]", f"topic {name!r} is not in 'topics'", f"use one of: {', '.join(topics)}"
            )
    return names


def _assignor_list(value: Any, field: str) -> tuple[str, ...]:
    from kgroup.assignors import available_assignors

    names = _names(value, field)
    known = available_assignors()
    for i, name in enumerate(names):
        if name not in known:
            raise _fail(f"{field}[{i}]", f"{name!r} is not an assignor", f"use one of: {', '.join(known)}")
    if len(set(names)) != len(names):
        raise _fail(field, "lists an assignor twice", "list each assignor once")
    return names


# --- sections ----------------------------------------------------------------------------------

_GROUP_FIELDS = tuple(f.name for f in dataclasses.fields(GroupSpec))


def _group(value: Any) -> GroupSpec:
    data = _mapping(value, "group", _GROUP_FIELDS)
    kw: dict[str, Any] = {}
    for key, raw in data.items():
        field = f"group.{key}"
        if key == "group_id":
            kw[key] = _name(raw, field)
        elif key == "assignors":
            kw[key] = _assignor_list(raw, field)
        elif key == "enable_auto_commit":
            kw[key] = _bool(raw, field)
        elif key == "initial_rebalance_delay_ms":
            kw[key] = _int(raw, field, 0)
        elif key == "client":
            kw[key] = _one_of(raw, field, CLIENTS, f"use one of {', '.join(CLIENTS)}")
        elif key == "protocol":
            kw[key] = _one_of(
                raw,
                field,
                GROUP_PROTOCOLS,
                "use classic (JoinGroup/SyncGroup), consumer (KIP-848) or share (KIP-932)",
            )
        elif key == "server_assignor":
            kw[key] = _one_of(
                raw,
                field,
                SERVER_ASSIGNORS,
                f"use one of the server assignors: {', '.join(SERVER_ASSIGNORS)}",
            )
        else:
            kw[key] = _int(raw, field, 1)
    spec = GroupSpec(**kw)
    if spec.consumer_protocol:
        if "assignors" in data:
            raise _fail(
                "group.assignors",
                "does not apply with protocol: consumer (the coordinator assigns; Kafka refuses "
                "partition.assignment.strategy with group.protocol=consumer)",
                "remove it and give group.server_assignor: uniform or range",
            )
        _below(
            spec, "consumer_heartbeat_interval_ms", "consumer_session_timeout_ms", _HEARTBEAT_BELOW_SESSION
        )
    elif spec.share_protocol:
        _check_share_group(spec, data)
    if not spec.consumer_protocol:
        _only_with(
            "consumer",
            ("server_assignor", "consumer_session_timeout_ms", "consumer_heartbeat_interval_ms"),
            data,
        )
    if not spec.share_protocol:
        _only_with("share", _SHARE_GROUP_DEFAULTS, data)
    _below(
        spec,
        "heartbeat_interval_ms",
        "session_timeout_ms",
        "Kafka requires heartbeat.interval.ms < session.timeout.ms (typically a third or less)",
    )
    if not 6000 <= spec.session_timeout_ms <= 1_800_000:
        raise _fail(
            "group.session_timeout_ms",
            f"{spec.session_timeout_ms} is outside the broker's limits",
            "give 6000..1800000 (group.min/max.session.timeout.ms)",
        )
    return spec


#: the fix for a heartbeat interval not below its session timeout (consumer and share protocols)
_HEARTBEAT_BELOW_SESSION = (
    "give a heartbeat interval below the session timeout (Kafka's defaults: 5000 and 45000)"
)


def _one_of(raw: Any, field: str, allowed: Collection[str], fix: str) -> str:
    """``raw`` when it is one of ``allowed``, else the one-line error ``fix`` ends."""
    if raw not in allowed:
        raise _fail(field, f"is {_show(raw)}", fix)
    return str(raw)


def _below(spec: GroupSpec, field: str, bound: str, fix: str) -> None:
    """``group.<field>`` must be below ``group.<bound>`` (a heartbeat interval, its session timeout)."""
    value, limit = getattr(spec, field), getattr(spec, bound)
    if value >= limit:
        raise _fail(f"group.{field}", f"{value} is not below {bound} {limit}", fix)


def _within(spec: GroupSpec, field: str, low: int, high: int, fix: str) -> None:
    """``group.<field>`` must lie in ``low..high`` (Kafka's min/max bounds of the setting)."""
    value = getattr(spec, field)
    if not low <= value <= high:
        raise _fail(f"group.{field}", f"is {value}", fix)


def _only_with(protocol: str, keys: Iterable[str], data: Mapping[str, Any]) -> None:
    """The ``keys`` apply with ``protocol`` only: none of them may be given with another."""
    for key in keys:
        if key in data:
            raise _fail(
                f"group.{key}",
                f"only applies with protocol: {protocol}",
                f"add group.protocol: {protocol} or remove it",
            )


def _check_share_group(spec: GroupSpec, data: Mapping[str, Any]) -> None:
    """A share group (KIP-932): the coordinator assigns (``simple``), and the share settings' bounds."""
    if "assignors" in data:
        raise _fail(
            "group.assignors",
            "does not apply with protocol: share (the coordinator assigns with its simple assignor)",
            "remove it",
        )
    _below(spec, "share_heartbeat_interval_ms", "share_session_timeout_ms", _HEARTBEAT_BELOW_SESSION)
    _within(
        spec,
        "share_delivery_count_limit",
        2,
        10,
        "give 2..10 (Kafka's group.share.min/max.delivery.count.limit)",
    )
    _within(
        spec,
        "share_record_lock_duration_ms",
        1000,
        3_600_000,
        "give 1000..3600000 (Kafka's group.share.min/max.record.lock.duration.ms)",
    )
    _within(
        spec,
        "share_max_record_locks",
        100,
        10_000,
        "give 100..10000 (Kafka's group.share.partition.max.record.locks bounds)",
    )


_CONSUMER_FIELDS = ("id", "count", "prefix", "topics", "static", "rack", "assignors", "autostart", "network")


def _consumers(value: Any, topics: Mapping[str, int]) -> tuple[ConsumerSpec, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise _fail("consumers", f"is {_show(value)}", "give a non-empty list of consumers")
    out: list[ConsumerSpec] = []
    seen: set[str] = set()
    for i, raw in enumerate(value):
        field = f"consumers[{i}]"
        data = _mapping(raw, field, _CONSUMER_FIELDS)
        if "topics" not in data:
            raise _fail(f"{field}.topics", "is missing", "list the topics this consumer subscribes to")
        common: dict[str, Any] = {"topics": _topics_ref(data["topics"], f"{field}.topics", topics)}
        if "static" in data:
            common["static"] = _bool(data["static"], f"{field}.static")
        if "rack" in data and data["rack"] is not None:
            common["rack"] = _name(data["rack"], f"{field}.rack")
        if "assignors" in data:
            common["assignors"] = _assignor_list(data["assignors"], f"{field}.assignors")
        if "autostart" in data:
            common["autostart"] = _bool(data["autostart"], f"{field}.autostart")
        if "network" in data:
            common["network"] = _network(data["network"], f"{field}.network")
        if ("id" in data) == ("count" in data):
            raise _fail(
                field, "needs exactly one of 'id' or 'count'", "give id: NAME, or count: N with prefix"
            )
        if "id" in data:
            if "prefix" in data:
                raise _fail(f"{field}.prefix", "only goes with 'count'", "remove it or use count: N")
            ids = [_name(data["id"], f"{field}.id")]
        else:
            count = _int(data["count"], f"{field}.count", 1, 100_000)
            prefix = _name(data.get("prefix", "c"), f"{field}.prefix")
            ids = [f"{prefix}{k}" for k in range(count)]
        for cid in ids:
            if cid in seen:
                raise _fail(field, f"consumer id {cid!r} is used twice", "give every consumer a unique id")
            seen.add(cid)
            out.append(ConsumerSpec(id=cid, **common))
    return tuple(out)


def _network(value: Any, field: str = "network") -> NetworkSpec:
    data = _mapping(value, field, ("latency_ms", "jitter_ms", "loss", "resets_per_hour"))
    kw: dict[str, Any] = {}
    if "latency_ms" in data:
        kw["latency_ms"] = _int(data["latency_ms"], f"{field}.latency_ms", 0, 600_000)
    if "jitter_ms" in data:
        kw["jitter_ms"] = _int(data["jitter_ms"], f"{field}.jitter_ms", 0, 600_000)
    if "loss" in data:
        loss = data["loss"]
        if isinstance(loss, bool) or not isinstance(loss, (int, float)) or not 0.0 <= loss < 1.0:
            raise _fail(
                f"{field}.loss", f"is {_show(loss)}", "give a probability from 0.0 up to (not incl.) 1.0"
            )
        kw["loss"] = float(loss)
    if "resets_per_hour" in data:
        rate = data["resets_per_hour"]
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0.0 <= rate <= 3600.0:
            raise _fail(
                f"{field}.resets_per_hour",
                f"is {_show(rate)}",
                "give a rate from 0 to 3600 connection resets per hour",
            )
        kw["resets_per_hour"] = float(rate)
    return NetworkSpec(**kw)


def _workload(value: Any) -> WorkloadSpec:
    fields = tuple(f.name for f in dataclasses.fields(WorkloadSpec))
    data = _mapping(value, "workload", fields)
    kw: dict[str, Any] = {}
    for key, raw in data.items():
        field = f"workload.{key}"
        if key == "auto_offset_reset":
            if raw not in ("latest", "earliest"):
                raise _fail(field, f"is {_show(raw)}", "use latest (Kafka's default) or earliest")
            kw[key] = raw
        elif key == "sample_interval_ms":
            kw[key] = None if raw is None else _int(raw, field, 1)
        elif key == "max_poll_records":
            kw[key] = _int(raw, field, 1, 1_000_000)
        elif key in ("failure_share", "poison_share"):
            if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not 0.0 <= raw <= 1.0:
                raise _fail(field, f"is {_show(raw)}", "give a share from 0.0 to 1.0")
            kw[key] = float(raw)
        elif key == "failure_action":
            if raw not in FAILURE_ACTIONS:
                raise _fail(field, f"is {_show(raw)}", "use release (redelivered) or reject (archived)")
            kw[key] = raw
        elif key == "processing":
            if raw not in PROCESSING_MODES:
                raise _fail(field, f"is {_show(raw)}", "use at_least_once (the default) or exactly_once")
            kw[key] = raw
        elif key == "commit_interval_ms":
            kw[key] = _int(raw, field, 1, 3_600_000)
        elif key == "transaction_timeout_ms":
            # (transaction.max.timeout.ms, the broker's limit: 15 min by default)
            kw[key] = _int(raw, field, 1, 900_000)
        else:
            kw[key] = _int(raw, field, 0, 10_000_000)
    return WorkloadSpec(**kw)


# which fields each kind takes (besides at_ms and kind), and which of them are required
_EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "start": ("consumer",),
    "stop": ("consumer",),
    "crash": ("consumer",),
    "restart": ("consumer", "downtime_ms", "graceful", "assignors"),
    "rolling_restart": ("consumers", "gap_ms", "downtime_ms", "graceful", "assignors"),
    "scale": ("count", "topics", "prefix", "static", "rack", "assignors"),
    "add_partitions": ("topic", "count"),
    "subscribe": ("consumer", "topics"),
    "slow_poll": ("consumer", "duration_ms"),
    "network_partition": ("consumer", "duration_ms"),
}
_EVENT_REQUIRED: dict[str, tuple[str, ...]] = {
    "start": ("consumer",),
    "stop": ("consumer",),
    "crash": ("consumer",),
    "restart": ("consumer",),
    "rolling_restart": (),
    "scale": ("count",),
    "add_partitions": ("topic", "count"),
    "subscribe": ("consumer", "topics"),
    "slow_poll": ("consumer", "duration_ms"),
    "network_partition": ("consumer", "duration_ms"),
}


def _scale_count(raw: Any, field: str) -> int:
    value = raw
    if isinstance(raw, str) and raw[:1] in "+-" and raw[1:].isdigit():
        value = int(raw)
    if isinstance(value, bool) or not isinstance(value, int) or value == 0 or abs(value) > 100_000:
        raise _fail(field, f"is {_show(raw)}", "give +N to add N consumers or -N to stop N (N >= 1)")
    return value


def _event(
    raw: Any, field: str, duration_ms: int, topics: dict[str, int], consumers: dict[str, tuple[str, ...]]
) -> EventSpec:
    if not isinstance(raw, Mapping):
        raise _fail(field, f"is {_show(raw)}", "give a mapping with at_ms and kind")
    kind = raw.get("kind")
    if kind not in EVENT_KINDS:
        raise _fail(f"{field}.kind", f"is {_show(kind)}", f"use one of: {', '.join(EVENT_KINDS)}")
    data = _mapping(raw, field, ("at_ms", "kind", *_EVENT_FIELDS[kind]))
    for key in ("at_ms", *_EVENT_REQUIRED[kind]):
        if key not in data:
            raise _fail(f"{field}.{key}", f"is missing (a {kind} event needs it)", f"add {key}")
    kw: dict[str, Any] = {"kind": kind, "at_ms": _int(data["at_ms"], f"{field}.at_ms", 0, duration_ms)}

    def consumer_ref(value: Any, where: str) -> str:
        name = _name(value, where)
        if name not in consumers:
            raise _fail(
                where,
                f"consumer {name!r} does not exist (yet)",
                "use an id from 'consumers' or a scale event",
            )
        return name

    for key, value in data.items():
        where = f"{field}.{key}"
        if key in ("at_ms", "kind"):
            continue
        if key == "consumer":
            kw[key] = consumer_ref(value, where)
        elif key == "consumers":
            if value == "all":
                kw[key] = None
            else:
                names = _names(value, where)
                kw[key] = tuple(consumer_ref(n, f"{where}[{i}]") for i, n in enumerate(names))
        elif key in ("downtime_ms", "gap_ms"):
            kw[key] = _int(value, where, 0)
        elif key == "duration_ms":
            kw[key] = _int(value, where, 1)
        elif key in ("graceful", "static"):
            kw[key] = _bool(value, where)
        elif key == "assignors":
            kw[key] = _assignor_list(value, where)
        elif key == "count":
            kw[key] = _scale_count(value, where) if kind == "scale" else _int(value, where, 1, 100_000)
        elif key == "topic":
            name = _name(value, where)
            if name not in topics:
                raise _fail(where, f"topic {name!r} is not in 'topics'", f"use one of: {', '.join(topics)}")
            kw[key] = name
        elif key == "topics":
            kw[key] = _topics_ref(value, where, topics)
        elif key in ("prefix", "rack"):
            kw[key] = _name(value, where)
    event = EventSpec(**kw)
    if kind == "scale" and event.count > 0:
        if event.topics is None:
            raise _fail(f"{field}.topics", "is missing", "say which topics the new consumers subscribe to")
        for name in scaled_ids(event, consumers):
            consumers[name] = event.topics
    if kind == "add_partitions" and event.topic is not None:
        topics[event.topic] += event.count
    return event


def _no_client_assignors(raw: Any, field: str, protocol: str = "consumer") -> None:
    """``assignors`` (a client-side ``partition.assignment.strategy``) has no meaning with the consumer
    protocol; Kafka's client refuses it."""
    if isinstance(raw, str) or not isinstance(raw, Sequence):
        return
    for i, item in enumerate(raw):
        if isinstance(item, Mapping) and "assignors" in item:
            raise _fail(
                f"{field}[{i}].assignors",
                f"does not apply with protocol: {protocol} (the coordinator assigns)",
                "remove it (group.server_assignor names the coordinator's assignor)"
                if protocol == "consumer"
                else "remove it (a share group's coordinator assigns with its simple assignor)",
            )


def scaled_ids(event: EventSpec, existing: Mapping[str, object]) -> list[str]:
    """The ids a ``scale: +n`` event gives its new consumers: ``prefix`` + the first free numbers."""
    out: list[str] = []
    k = 0
    while len(out) < event.count:
        name = f"{event.prefix}{k}"
        if name not in existing and name not in out:
            out.append(name)
        k += 1
    return out


_TOP_FIELDS = ("name", "seed", "duration_ms", "topics", "group", "consumers", "network", "workload", "events")


def parse_scenario(data: Any, *, name: str = "scenario") -> Scenario:
    """Validate plain data (as read from YAML/JSON) into a :class:`Scenario`."""
    doc = _mapping(data, "scenario", _TOP_FIELDS)
    if "duration_ms" not in doc:
        raise _fail("duration_ms", "is missing", "give the simulated time in milliseconds, e.g. 600000")
    duration = _int(doc["duration_ms"], "duration_ms", 1, 30 * 24 * 3_600_000)
    seed = _int(doc.get("seed", 0), "seed", 0, 2**63 - 1)
    raw_topics = doc.get("topics")
    if not isinstance(raw_topics, Mapping) or not raw_topics:
        raise _fail("topics", f"is {_show(raw_topics)}", "give a mapping topic name -> partition count")
    topics: dict[str, int] = {}
    for tname, count in raw_topics.items():
        topics[_name(tname, "topics")] = _int(count, f"topics.{tname}", 1, 1_000_000)
    group = _group(doc.get("group", {}))
    if "consumers" not in doc:
        raise _fail(
            "consumers", "is missing", "list the consumers, e.g. - {count: 3, prefix: c, topics: [orders]}"
        )
    consumers = _consumers(doc["consumers"], topics)
    if group.consumer_protocol or group.share_protocol:
        _no_client_assignors(doc["consumers"], "consumers", group.protocol)
        _no_client_assignors(doc.get("events") or [], "events", group.protocol)
    if group.share_protocol:
        for i, c in enumerate(consumers):
            if c.static:
                raise _fail(
                    f"consumers[{i}].static",
                    "does not apply with protocol: share (a share consumer has no group.instance.id)",
                    "remove it",
                )
    network = _network(doc.get("network", {}))
    workload = _workload(doc.get("workload", {}))
    if workload.exactly_once and group.share_protocol:
        raise _fail(
            "workload.processing",
            "exactly_once does not apply with protocol: share (Kafka 4.4's share groups have no "
            "transactional acknowledgement)",
            "use at_least_once, or a consumer-group protocol",
        )
    raw_events = doc.get("events", [])
    if raw_events is None:
        raw_events = []
    if isinstance(raw_events, str) or not isinstance(raw_events, Sequence):
        raise _fail("events", f"is {_show(raw_events)}", "give a list of events")
    known = {c.id: c.topics for c in consumers}
    live_topics = dict(topics)
    indexed = sorted(enumerate(raw_events), key=lambda item: _at(item[1]))
    parsed: list[tuple[int, EventSpec]] = []
    for i, raw in indexed:
        parsed.append((i, _event(raw, f"events[{i}]", duration, live_topics, known)))
    events = tuple(e for _, e in sorted(parsed, key=lambda item: (item[1].at_ms, item[0])))
    scenario_name = _name(doc.get("name", name), "name")
    return Scenario(
        duration_ms=duration,
        topics=tuple(topics.items()),
        consumers=consumers,
        seed=seed,
        group=group,
        network=network,
        workload=workload,
        events=events,
        name=scenario_name,
    )


def no_op_events(scenario: Scenario) -> list[str]:
    """Events that, from the file alone, can do nothing: crashing a consumer that is already down
    (crashed and not started or restarted since, stopped, or ``autostart: false`` and never
    started), and ``scale: -N`` with N above the consumers deployed at that time.

    They are valid — the simulator treats them as documented (docs/simulator.md: a crash of a
    down process does nothing; a scale-down stops at most the consumers running) and kgroup's
    own random campaigns draw them on purpose — but in a hand-written file they are most likely
    mistakes, so ``kgroup simulate FILE`` prints each as a warning. States: ``up``, ``crashed``,
    ``stopped`` and ``unknown`` (after a scale-down, which stops the most recently created
    *running* consumers: which ones depends on the run); restarts count as up.
    """
    state = {c.id: "up" if c.autostart else "stopped" for c in scenario.consumers}
    notes: list[str] = []
    for event in scenario.events:
        kind, name, at = event.kind, event.consumer, event.at_ms
        if kind == "crash" and name is not None:
            now = state.get(name, "unknown")
            if now in ("crashed", "stopped"):
                why = "crashed earlier and not started since" if now == "crashed" else "stopped"
                notes.append(f"crash of {name!r} at {at} ms does nothing: it is {why}")
            state[name] = "crashed"
        elif kind in ("start", "restart") and name is not None:
            state[name] = "up"
        elif kind == "stop" and name is not None:
            state[name] = "stopped"
        elif kind == "rolling_restart":
            if event.consumers is not None:
                state.update(dict.fromkeys(event.consumers, "up"))
            else:  # 'all' = the deployed consumers at that moment: the crashed ones come back
                state.update({n: "up" for n, s in state.items() if s == "crashed"})
        elif kind == "scale" and event.count > 0:
            for n in scaled_ids(event, state):
                state[n] = "up"
        elif kind == "scale":
            deployed = [n for n, s in state.items() if s != "stopped"]
            if -event.count > len(deployed):
                notes.append(
                    f"scale {event.count} at {at} ms stops at most {len(deployed)}: only "
                    f"{len(deployed)} consumer(s) are deployed then"
                )
            for n in deployed:
                state[n] = "unknown"
    return notes


def _at(raw: Any) -> int:
    # events are validated in time order so that 'scale' ids exist before later events use them
    at = raw.get("at_ms") if isinstance(raw, Mapping) else None
    return at if isinstance(at, int) and not isinstance(at, bool) else 0


def scenario_from_text(text: str, *, name: str = "scenario") -> Scenario:
    """Parse YAML (or JSON, which is YAML) text into a scenario."""
    import yaml

    try:
        data = yaml.load(text, Loader=_strict_loader())
    except _DuplicateKey as exc:
        raise KgroupError(
            f"scenario: key {exc.key!r} appears twice in one mapping at line {exc.line}; "
            "keep one (YAML would silently take the last)"
        ) from None
    except RecursionError:
        raise KgroupError("scenario: nested too deeply to read; give a scenario file") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "malformed"
        raise KgroupError(
            f"scenario: YAML is not readable{where} ({problem}); fix the file's syntax"
        ) from None
    return parse_scenario(data, name=name)


class _DuplicateKey(Exception):
    def __init__(self, key: object, line: int) -> None:
        super().__init__(key, line)
        self.key = key
        self.line = line


def _strict_loader() -> Any:
    """PyYAML's SafeLoader, except that a key given twice in one mapping is an error (a typo such
    as a second ``duration_ms`` must not silently replace the first)."""
    import yaml

    class StrictLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                seen: set[object] = set()
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":  # '<<': merged keys may be overridden
                        continue
                    key = self.construct_object(key_node, deep=deep)
                    try:
                        duplicate = key in seen
                        seen.add(key)
                    except TypeError:  # an unhashable key: the base class reports it
                        continue
                    if duplicate:
                        raise _DuplicateKey(key, key_node.start_mark.line + 1)
            return super().construct_mapping(node, deep=deep)

    return StrictLoader


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file."""
    p = Path(path)
    if not p.is_file():
        raise KgroupError(f"scenario: {str(p)!r} is not a file; give the path of a scenario YAML file")
    raw = p.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise KgroupError(
            f"scenario: {str(p)!r} is not UTF-8 text (byte {exc.start}); give a scenario YAML file"
        ) from None
    if "\x00" in text:
        raise KgroupError(f"scenario: {str(p)!r} is binary (it holds NUL bytes); give a scenario YAML file")
    return scenario_from_text(text, name=p.stem)
