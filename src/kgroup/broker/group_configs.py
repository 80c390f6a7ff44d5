"""Group configs (KIP-848, KIP-932): the configs of a GROUP resource (type 32) as Kafka 4.4.0's
``GroupConfig`` defines and checks them, their store on ``kgroup serve``, and their DescribeConfigs
entries.

* **Names, types, defaults**: the 21 configs Kafka 4.4.0 describes for a group (the internal
  ``*.assignor.offload.enable`` and a few streams settings are left out, as Kafka leaves them out),
  listed in the order Kafka's ``HashMap`` gives them; each default is the broker setting it stands
  for (``group.share.record.lock.duration.ms`` …, kgroup serve's flags where it has them).
* **Checks** (``IncrementalAlterConfigs``), in Kafka's order and words: an unknown name ("Unknown
  group config name: …"), a value that is no number of the type ("Invalid value … for configuration
  …: Not a number of type INT"), below ``ConfigDef``'s own minimum ("… Value must be at least N"),
  not one of the strings allowed, a bad ``share.auto.offset.reset``; then ``GroupConfig.validate``'s
  bounds from the broker's ``group.*.min/max.*`` settings ("… must be in the range A to B
  inclusive."). Each is ``INVALID_CONFIG``.
* **Store**: kgroup keeps the groups' configs in ``group-configs.json`` in the data directory
  (written whole, fsynced and renamed over the old file before the request is answered); Kafka keeps
  them as ``ConfigRecord``s in its metadata log. Both survive a restart.
"""

from __future__ import annotations

import json
import re
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgroup.log.partition import write_atomically
from kgroup.share.reset import parse_share_auto_offset_reset

__all__ = [
    "GROUP_CONFIG_NAMES",
    "GroupConfigError",
    "GroupConfigStore",
    "broker_bounds",
    "broker_group_settings",
    "describe_group_configs",
    "group_config_defaults",
    "store_of",
    "validate_group_config",
]

#: DescribeConfigs' config types: BOOLEAN 1, STRING 2, INT 3, LIST 7
_BOOLEAN, _STRING, _INT, _LIST = 1, 2, 3, 7
#: DescribeConfigs' sources: DEFAULT_CONFIG 5, GROUP_CONFIG 8
DEFAULT_CONFIG, GROUP_CONFIG = 5, 8
_INT_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class _Def:
    name: str
    kind: int
    #: ``ConfigDef.Range.atLeast`` (ints)
    at_least: int | None = None
    #: ``ValidString.in``
    one_of: tuple[str, ...] = ()
    #: the broker setting standing for it (None: the config's own name is its synonym)
    broker: str | None = None


#: in Kafka's ``HashMap`` order (what DescribeConfigs lists)
_DEFS = (
    _Def("consumer.session.timeout.ms", _INT, 1, broker="group.consumer.session.timeout.ms"),
    _Def("streams.assignor.name", _STRING, broker="group.streams.assignors"),
    _Def("consumer.assignment.interval.ms", _INT, 0, broker="group.consumer.assignment.interval.ms"),
    _Def("errors.deadletterqueue.copy.record.enable", _BOOLEAN),
    _Def("share.auto.offset.reset", _STRING),
    _Def("streams.rack.aware.assignment.tags", _LIST, broker="group.streams.rack.aware.assignment.tags"),
    _Def("share.renew.acknowledge.enable", _BOOLEAN),
    _Def("streams.initial.rebalance.delay.ms", _INT, 0, broker="group.streams.initial.rebalance.delay.ms"),
    _Def("share.session.timeout.ms", _INT, 1, broker="group.share.session.timeout.ms"),
    _Def("streams.assignment.interval.ms", _INT, 0, broker="group.streams.assignment.interval.ms"),
    _Def("share.heartbeat.interval.ms", _INT, 1, broker="group.share.heartbeat.interval.ms"),
    _Def("streams.heartbeat.interval.ms", _INT, 1, broker="group.streams.heartbeat.interval.ms"),
    _Def("share.delivery.count.limit", _INT, 2, broker="group.share.delivery.count.limit"),
    _Def("errors.deadletterqueue.topic.name", _STRING),
    _Def("consumer.heartbeat.interval.ms", _INT, 1, broker="group.consumer.heartbeat.interval.ms"),
    _Def("share.record.lock.duration.ms", _INT, 1000, broker="group.share.record.lock.duration.ms"),
    _Def("share.assignment.interval.ms", _INT, 0, broker="group.share.assignment.interval.ms"),
    _Def("share.isolation.level", _STRING, one_of=("read_committed", "read_uncommitted")),
    _Def("streams.session.timeout.ms", _INT, 1, broker="group.streams.session.timeout.ms"),
    _Def("share.partition.max.record.locks", _INT, 100, broker="group.share.partition.max.record.locks"),
    _Def("streams.num.standby.replicas", _INT, 0, broker="group.streams.num.standby.replicas"),
)
_BY_NAME = {d.name: d for d in _DEFS}
GROUP_CONFIG_NAMES: tuple[str, ...] = tuple(d.name for d in _DEFS)

#: ``ShareGroupConfig`` / ``GroupCoordinatorConfig``'s bounds (Kafka 4.4.0's defaults of
#: ``group.share.min/max.*`` and ``group.consumer.min/max.*``)
_BOUNDS: dict[str, tuple[int, int]] = {
    "share.record.lock.duration.ms": (15_000, 60_000),
    "share.delivery.count.limit": (2, 10),
    "share.partition.max.record.locks": (100, 4000),
    "share.session.timeout.ms": (45_000, 60_000),
    "share.heartbeat.interval.ms": (5000, 15_000),
    "consumer.session.timeout.ms": (45_000, 60_000),
    "consumer.heartbeat.interval.ms": (5000, 15_000),
    "streams.session.timeout.ms": (45_000, 60_000),
    "streams.heartbeat.interval.ms": (5000, 15_000),
    "streams.num.standby.replicas": (0, 2),
}


def _is_reset(value: str) -> bool:
    """``ShareGroupAutoOffsetResetStrategy``'s validator: earliest, latest or ``by_duration:`` and a
    non-negative ISO-8601 duration (the parser the share partitions use)."""
    try:
        parse_share_auto_offset_reset(value)
    except ValueError:
        return False
    return True


class GroupConfigError(Exception):
    """A refused config: Kafka's error code (INVALID_CONFIG 40, INVALID_REQUEST 42) and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def group_config_defaults(broker: Mapping[str, Any]) -> dict[str, str]:
    """Each config's default: its broker setting's value (``broker`` maps kgroup's settings by
    Kafka's names; what kgroup does not set is Kafka's default)."""
    kafka = {
        "consumer.session.timeout.ms": "45000",
        "streams.assignor.name": "sticky",
        "consumer.assignment.interval.ms": "1000",
        "errors.deadletterqueue.copy.record.enable": "false",
        "share.auto.offset.reset": "latest",
        "streams.rack.aware.assignment.tags": "",
        "share.renew.acknowledge.enable": "true",
        "streams.initial.rebalance.delay.ms": "3000",
        "share.session.timeout.ms": "45000",
        "streams.assignment.interval.ms": "1000",
        "share.heartbeat.interval.ms": "5000",
        "streams.heartbeat.interval.ms": "5000",
        "share.delivery.count.limit": "5",
        "errors.deadletterqueue.topic.name": "",
        "consumer.heartbeat.interval.ms": "5000",
        "share.record.lock.duration.ms": "30000",
        "share.assignment.interval.ms": "1000",
        "streams.session.timeout.ms": "45000",
        "share.isolation.level": "read_uncommitted",
        "share.partition.max.record.locks": "2000",
        "streams.num.standby.replicas": "0",
    }
    for d in _DEFS:
        key = d.broker or d.name
        if key in broker:
            kafka[d.name] = str(broker[key])
    return kafka


def _invalid(value: str, name: str, why: str) -> GroupConfigError:
    return GroupConfigError(40, f"Invalid value {value} for configuration {name}: {why}")


def broker_bounds(config: Any) -> dict[str, tuple[int, int]]:
    """``GroupConfig.validate``'s bounds on kgroup serve: Kafka's defaults, the consumer ones from the
    broker's ``group.consumer.min/max.*`` settings (``config``: a
    :class:`kgroup.broker.config.BrokerConfig`)."""
    return {
        **_BOUNDS,
        "consumer.session.timeout.ms": (
            config.group_consumer_min_session_timeout_ms,
            config.group_consumer_max_session_timeout_ms,
        ),
        "consumer.heartbeat.interval.ms": (
            config.group_consumer_min_heartbeat_interval_ms,
            config.group_consumer_max_heartbeat_interval_ms,
        ),
    }


def validate_group_config(name: str, value: str, bounds: Mapping[str, tuple[int, int]] | None = None) -> None:
    """One config's value, as ``GroupConfig.validateNames``, ``ConfigDef.parse`` and
    ``GroupConfig.validate`` check it (:class:`GroupConfigError` with Kafka's message); ``bounds``:
    the broker's (:func:`broker_bounds`), Kafka's defaults without."""
    d = _BY_NAME.get(name)
    if d is None:
        raise GroupConfigError(40, f"Unknown group config name: {name}")
    if d.kind == _INT:
        text = value.strip()
        if not re.fullmatch(r"[+-]?\d+", text) or not -(2**31) <= int(text) <= _INT_MAX:
            raise _invalid(value, name, "Not a number of type INT")
        number = int(text)
        if d.at_least is not None and number < d.at_least:
            raise _invalid(value, name, f"Value must be at least {d.at_least}")
        bound = (_BOUNDS if bounds is None else bounds).get(name)
        if bound is not None and not bound[0] <= number <= bound[1]:
            raise GroupConfigError(40, f"{name} must be in the range {bound[0]} to {bound[1]} inclusive.")
    elif d.kind == _BOOLEAN:
        if value.strip().lower() not in ("true", "false"):
            raise _invalid(value, name, "Expected value to be either true or false")
    elif d.one_of and value.strip() not in d.one_of:
        raise _invalid(value, name, f"String must be one of: {', '.join(d.one_of)}")
    elif name == "share.auto.offset.reset" and not _is_reset(value):
        raise _invalid(
            value,
            name,
            f"Invalid value `{value}` for configuration {name}. The value must be either 'earliest', "
            "'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
        )


def describe_group_configs(
    overrides: Mapping[str, str],
    defaults: Mapping[str, str],
    keys: list[str] | None,
    *,
    synonyms: bool,
) -> list[dict[str, Any]]:
    """DescribeConfigs' entries of one group (``ConfigHelper.createGroupConfigEntry``): every config
    (or those of ``keys`` Kafka knows) in Kafka's order, a set one from GROUP_CONFIG (8), the others
    DEFAULT_CONFIG (5); the synonyms: the group's value, then the broker setting's default. (Kafka
    4.4.0 answers no documentation for them, asked or not.)"""
    wanted = set(GROUP_CONFIG_NAMES) if keys is None else set(keys)
    out = []
    for d in _DEFS:
        if d.name not in wanted:
            continue
        default = defaults[d.name]
        set_value = overrides.get(d.name)
        entry: dict[str, Any] = {
            "name": d.name,
            "value": default if set_value is None else set_value,
            "read_only": False,
            "config_source": DEFAULT_CONFIG if set_value is None else GROUP_CONFIG,
            "is_sensitive": False,
            "synonyms": [],
            "config_type": d.kind,
            "documentation": None,
        }
        if synonyms:
            listed = (
                [] if set_value is None else [{"name": d.name, "value": set_value, "source": GROUP_CONFIG}]
            )
            listed.append({"name": d.broker or d.name, "value": default, "source": DEFAULT_CONFIG})
            entry["synonyms"] = listed
        out.append(entry)
    return out


class GroupConfigStore:
    """The groups' configs (group id -> name -> value), kept in ``group-configs.json`` under
    ``data_dir`` (``None``: in memory only)."""

    FILE = "group-configs.json"

    def __init__(self, data_dir: Path | None) -> None:
        self._path = None if data_dir is None else Path(data_dir) / self.FILE
        self._configs: dict[str, dict[str, str]] = {}
        if self._path is not None and self._path.exists():
            loaded = json.loads(self._path.read_text(encoding="utf-8"))
            self._configs = {str(g): {str(k): str(v) for k, v in c.items()} for g, c in loaded.items()}

    def get(self, group_id: str) -> dict[str, str]:
        return dict(self._configs.get(group_id, {}))

    def value(self, group_id: str, name: str) -> str | None:
        return self._configs.get(group_id, {}).get(name)

    def put(self, group_id: str, configs: Mapping[str, str]) -> None:
        """Replace the group's configs (written to disk before this returns)."""
        updated = dict(self._configs)
        if configs:
            updated[group_id] = dict(configs)
        else:
            updated.pop(group_id, None)
        if self._path is not None:
            write_atomically(self._path, json.dumps(updated, sort_keys=True).encode())
        self._configs = updated


#: one store per cluster (its data directory's), made at its first use
_STORES: weakref.WeakKeyDictionary[Any, GroupConfigStore] = weakref.WeakKeyDictionary()


def store_of(cluster: Any) -> GroupConfigStore:
    """The group configs of ``cluster`` (a :class:`kgroup.broker.cluster.Cluster`), kept in its log
    manager's data directory."""
    store = _STORES.get(cluster)
    if store is None:
        logs = getattr(cluster, "logs", None)
        store = _STORES[cluster] = GroupConfigStore(getattr(logs, "data_dir", None))
    return store


def broker_group_settings(config: Any, share_auto_offset_reset: str) -> dict[str, Any]:
    """kgroup serve's settings by Kafka's names, for :func:`group_config_defaults` (``config``: a
    :class:`kgroup.broker.config.BrokerConfig`)."""
    return {
        "group.consumer.session.timeout.ms": config.group_consumer_session_timeout_ms,
        "group.consumer.heartbeat.interval.ms": config.group_consumer_heartbeat_interval_ms,
        "group.consumer.assignment.interval.ms": config.group_consumer_assignment_interval_ms,
        "group.share.session.timeout.ms": config.group_share_session_timeout_ms,
        "group.share.heartbeat.interval.ms": config.group_share_heartbeat_interval_ms,
        "group.share.assignment.interval.ms": config.group_share_assignment_interval_ms,
        "group.share.record.lock.duration.ms": config.group_share_record_lock_duration_ms,
        "group.share.delivery.count.limit": config.group_share_delivery_count_limit,
        "share.auto.offset.reset": share_auto_offset_reset,
    }
