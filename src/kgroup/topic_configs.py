"""Kafka 4.4.0's topic configs (``LogConfig``'s ``ConfigDef``): their names, types and validators, and
the check CreateTopics makes of the configs a request gives, with Kafka's messages.

The check, in Kafka's order: a null value (``Null value not supported for topic configs: …``), then a
name Kafka does not know (``Unknown topic config name: …``), then each config's value in the order the
``ConfigDef`` defines them — parsed as ``ConfigDef.parseType`` parses it (numbers and strings trimmed,
numbers as Java's ``parseInt``/``parseLong``/``parseDouble`` read them, booleans ``true``/``false`` in
any case, lists split on commas) and checked by its validator — then remote storage (kgroup has no
tiered storage: Kafka's broker without it answers the same) and the compaction lags' order. The first
failure is the answer (INVALID_CONFIG); a config named twice counts with its last value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kgroup.javacompat import JAVA_BLANK, java_double_to_string, java_parse_double, java_parse_int

__all__ = [
    "TOPIC_CONFIG_KEYS",
    "TOPIC_CONFIG_NAMES",
    "TopicConfigKey",
    "normalized_topic_configs",
    "topic_config_error",
]

_LONG_MAX = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class TopicConfigKey:
    """One topic config: its name, its ``ConfigDef.Type`` and what its validator refuses (a message
    about the parsed value, or ``None``)."""

    name: str
    type: str  # INT, LONG, DOUBLE, BOOLEAN, STRING, LIST
    check: Callable[[object], str | None] | None = None
    #: ``defineInternal``: accepted, not described
    internal: bool = False
    #: a list whose validator checks each value on its own (``ValidList``: the message names the value)
    each: bool = False


def _at_least(minimum: int) -> Callable[[object], str | None]:
    def check(value: object) -> str | None:
        return f"Value must be at least {minimum}" if value < minimum else None  # type: ignore[operator]

    return check


def _between(low: int, high: int) -> Callable[[object], str | None]:
    def check(value: object) -> str | None:
        if value < low:  # type: ignore[operator]
            return f"Value must be at least {low}"
        if value > high:  # type: ignore[operator]
            return f"Value must be no more than {high}"
        return None

    return check


def _one_of(*allowed: str) -> Callable[[object], str | None]:
    def check(value: object) -> str | None:
        return None if value in allowed else f"String must be one of: {', '.join(allowed)}"

    return check


def _gzip_level(value: object) -> str | None:
    ok = value == -1 or 1 <= value <= 9  # type: ignore[operator]
    return None if ok else "Value must be between 1 and 9 or equal to -1"


_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")


def _throttled_replicas(name: str) -> Callable[[object], str | None]:
    def check(value: object) -> str | None:
        items = value  # a list
        assert isinstance(items, list)
        if all(_REPLICA.fullmatch(item) for item in items) or "".join(items) == "*":
            return None
        return (
            f"{name} must be the literal '*' or a list of replicas in the following format: "
            "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
        )

    return check


_LEADER_THROTTLED = "leader.replication.throttled.replicas"
_FOLLOWER_THROTTLED = "follower.replication.throttled.replicas"

#: the topic configs in the order ``LogConfig`` defines them (read from Kafka 4.4.0's bytecode; its
#: ranges and messages checked against the broker: tests/apache_kafka/test_diff_topic_configs.py)
TOPIC_CONFIG_KEYS: tuple[TopicConfigKey, ...] = (
    TopicConfigKey("segment.bytes", "INT", _at_least(1024 * 1024)),
    TopicConfigKey("segment.ms", "LONG", _at_least(1)),
    TopicConfigKey("segment.jitter.ms", "LONG", _at_least(0)),
    TopicConfigKey("segment.index.bytes", "INT", _at_least(4)),
    TopicConfigKey("flush.messages", "LONG", _at_least(1)),
    TopicConfigKey("flush.ms", "LONG", _at_least(0)),
    TopicConfigKey("retention.bytes", "LONG"),
    TopicConfigKey("retention.ms", "LONG", _at_least(-1)),
    TopicConfigKey("max.message.bytes", "INT", _at_least(0)),
    TopicConfigKey("max.decompressed.message.bytes", "INT", _at_least(1)),
    TopicConfigKey("index.interval.bytes", "INT", _at_least(0)),
    TopicConfigKey("delete.retention.ms", "LONG", _at_least(0)),
    TopicConfigKey("min.compaction.lag.ms", "LONG", _at_least(0)),
    TopicConfigKey("max.compaction.lag.ms", "LONG", _at_least(1)),
    TopicConfigKey("file.delete.delay.ms", "LONG", _at_least(0)),
    TopicConfigKey("min.cleanable.dirty.ratio", "DOUBLE", _between(0, 1)),
    TopicConfigKey("cleanup.policy", "LIST", _one_of("compact", "delete"), each=True),
    TopicConfigKey("unclean.leader.election.enable", "BOOLEAN"),
    TopicConfigKey("min.insync.replicas", "INT", _at_least(1)),
    TopicConfigKey(
        "compression.type", "STRING", _one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
    ),
    TopicConfigKey("compression.gzip.level", "INT", _gzip_level),
    TopicConfigKey("compression.lz4.level", "INT", _between(1, 17)),
    TopicConfigKey("compression.zstd.level", "INT", _between(-131072, 22)),
    TopicConfigKey("preallocate", "BOOLEAN"),
    TopicConfigKey("message.timestamp.type", "STRING", _one_of("CreateTime", "LogAppendTime")),
    TopicConfigKey("message.timestamp.before.max.ms", "LONG", _at_least(0)),
    TopicConfigKey("message.timestamp.after.max.ms", "LONG", _at_least(0)),
    TopicConfigKey(_LEADER_THROTTLED, "LIST", _throttled_replicas(_LEADER_THROTTLED)),
    TopicConfigKey(_FOLLOWER_THROTTLED, "LIST", _throttled_replicas(_FOLLOWER_THROTTLED)),
    TopicConfigKey("remote.storage.enable", "BOOLEAN"),
    TopicConfigKey("local.retention.ms", "LONG", _at_least(-2)),
    TopicConfigKey("local.retention.bytes", "LONG", _at_least(-2)),
    TopicConfigKey("remote.log.copy.disable", "BOOLEAN"),
    TopicConfigKey("remote.copy.lag.ms", "LONG", _at_least(-1)),
    TopicConfigKey("remote.copy.lag.bytes", "LONG", _at_least(-1)),
    TopicConfigKey("remote.log.delete.on.disable", "BOOLEAN"),
    TopicConfigKey("errors.deadletterqueue.group.enable", "BOOLEAN"),
    TopicConfigKey("internal.segment.bytes", "INT", internal=True),
)

#: every topic config name Kafka 4.4.0 takes
TOPIC_CONFIG_NAMES = frozenset(key.name for key in TOPIC_CONFIG_KEYS)

_BY_NAME = {key.name: key for key in TOPIC_CONFIG_KEYS}
_LIST_SEPARATOR = re.compile(r"\s*,\s*")


class _Invalid(Exception):
    pass


def _parse(key: TopicConfigKey, value: str) -> object:
    """``ConfigDef.parseType``: the parsed value, else :class:`_Invalid` with Kafka's message."""
    trimmed = value.strip(JAVA_BLANK)

    def invalid(shown: object, why: str) -> _Invalid:
        return _Invalid(f"Invalid value {shown} for configuration {key.name}: {why}")

    if key.type == "BOOLEAN":
        if trimmed.lower() in ("true", "false"):
            return trimmed.lower() == "true"
        raise invalid(value, "Expected value to be either true or false")
    if key.type in ("INT", "LONG"):
        number = java_parse_int(trimmed, 32 if key.type == "INT" else 64)
        if number is None:
            raise invalid(value, f"Not a number of type {key.type}")
        return number
    if key.type == "DOUBLE":
        double = java_parse_double(trimmed)
        if double is None:
            raise invalid(value, "Not a number of type DOUBLE")
        return double
    if key.type == "LIST":
        items = _LIST_SEPARATOR.split(trimmed) if trimmed else []
        if any(not item for item in items):
            raise _Invalid(f"Configuration '{key.name}' values must not be empty.")
        return items
    return trimmed  # STRING


def _shown(key: TopicConfigKey, parsed: object) -> str:
    """How Kafka's message prints a parsed value (Java's ``toString``)."""
    if key.type == "DOUBLE":
        return java_double_to_string(parsed)  # type: ignore[arg-type]
    if key.type == "LIST":
        return "[" + ", ".join(parsed) + "]"  # type: ignore[arg-type]
    return str(parsed)


def topic_config_error(configs: Sequence[tuple[str, str | None]]) -> str | None:
    """Why Kafka 4.4.0 refuses these topic configs (``(name, value)`` as a CreateTopics request gives
    them; the message of its INVALID_CONFIG), or ``None``."""
    for name, value in configs:
        if value is None:
            return f"Null value not supported for topic configs: {name}"
    given = {name: value for name, value in configs if value is not None}
    for name in given:
        if name not in _BY_NAME:
            return f"Unknown topic config name: {name}"
    parsed: dict[str, object] = {}
    for key in TOPIC_CONFIG_KEYS:
        if key.name not in given:
            continue
        try:
            parsed_value = _parse(key, given[key.name])
        except _Invalid as exc:
            return str(exc)
        checked = list(parsed_value) if isinstance(parsed_value, list) and key.each else [parsed_value]
        for one in checked:
            why = key.check(one) if key.check is not None else None
            if why is not None:
                shown = one if key.each else _shown(key, one)
                return f"Invalid value {shown} for configuration {key.name}: {why}"
        parsed[key.name] = parsed_value
    if parsed.get("remote.storage.enable") is True:
        return (
            "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with "
            "remote log storage."
        )
    min_lag = parsed.get("min.compaction.lag.ms", 0)
    max_lag = parsed.get("max.compaction.lag.ms", _LONG_MAX)
    if min_lag > max_lag:  # type: ignore[operator]
        return (
            f"conflict topic config setting min.compaction.lag.ms ({min_lag}) > "
            f"max.compaction.lag.ms ({max_lag})"
        )
    return None


def normalized_topic_configs(configs: Mapping[str, str]) -> dict[str, str]:
    """Valid topic configs (:func:`topic_config_error` found nothing) as Kafka describes them: each
    value parsed and written back (``ConfigDef.convertToString``: ``" 5"`` is ``5``, ``TRUE`` is
    ``true``, ``5e-1`` is ``0.5``, a list's values joined by commas)."""
    out: dict[str, str] = {}
    for name, value in configs.items():
        key = _BY_NAME[name]
        parsed = _parse(key, value)
        if key.type == "LIST":
            out[name] = ",".join(parsed)  # type: ignore[arg-type]
        elif key.type == "BOOLEAN":
            out[name] = "true" if parsed else "false"
        elif key.type == "DOUBLE":
            out[name] = java_double_to_string(parsed)  # type: ignore[arg-type]
        else:
            out[name] = str(parsed)
    return out
