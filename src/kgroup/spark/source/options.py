"""The options of the ``kgroup`` Spark data source, parsed and checked before any job starts.

The names, defaults and rules are those of Spark's own Kafka source and sink
(``KafkaSourceProvider``), so moving a job between ``format("kafka")`` and ``format("kgroup")`` is
a one-word change. Spark matches option names without regard to case; so does this module (PySpark
hands a data source its options with lower-cased names).

Where kgroup differs from Spark it says so in the error: an option Spark knows but kgroup does not
implement is refused by name (Spark would silently ignore a misspelt option; kgroup refuses it too,
suggesting the closest known name). Everything here is pure: no pyspark, no client, no clock.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

from kgroup.model import KgroupError, TopicPartition
from kgroup.spark.source.group_options import GROUP_CONFIGS, GroupSettings, parse_group_settings
from kgroup.spark.source.offsets import (
    EARLIEST,
    LATEST,
    json_object,
    offsets_from_json,
    partition_list,
    partition_number,
)

__all__ = [
    "OffsetSpec",
    "ReadKind",
    "SinkOptions",
    "SourceOptions",
    "Subscription",
    "check_client_config",
    "check_read_options_early",
    "parse_sink_options",
    "parse_source_options",
]

# Source options of Spark's Kafka source that kgroup implements (lower-cased -> documented name).
_SOURCE_OPTIONS = {
    "subscribe": "subscribe",
    "subscribepattern": "subscribePattern",
    "assign": "assign",
    "startingoffsets": "startingOffsets",
    "endingoffsets": "endingOffsets",
    "maxoffsetspertrigger": "maxOffsetsPerTrigger",
    "minpartitions": "minPartitions",
    "failondataloss": "failOnDataLoss",
    "includeheaders": "includeHeaders",
    "kafkaconsumer.polltimeoutms": "kafkaConsumer.pollTimeoutMs",
    # kgroup's own
    "consume": "consume",
    "groupmembers": "groupMembers",
}
# Spark's Kafka source options kgroup does not implement: refused by name rather than ignored.
_SPARK_ONLY_SOURCE_OPTIONS = {
    "startingtimestamp": "startingTimestamp",
    "startingoffsetsbytimestamp": "startingOffsetsByTimestamp",
    "startingoffsetsbytimestampstrategy": "startingOffsetsByTimestampStrategy",
    "endingtimestamp": "endingTimestamp",
    "endingoffsetsbytimestamp": "endingOffsetsByTimestamp",
    "minoffsetspertrigger": "minOffsetsPerTrigger",
    "maxtriggerdelay": "maxTriggerDelay",
    "maxrecordsperpartition": "maxRecordsPerPartition",
    "groupidprefix": "groupIdPrefix",
    "fetchoffset.numretries": "fetchOffset.numRetries",
    "fetchoffset.retryintervalms": "fetchOffset.retryIntervalMs",
}
_SINK_OPTIONS = {
    "topic": "topic",
    "includeheaders": "includeHeaders",  # accepted by Spark's sink and ignored there too
    "nullkeystrategy": "nullKeyStrategy",
    "nullkeyseed": "nullKeySeed",
}
_STRATEGIES = ("assign", "subscribe", "subscribepattern")
# Options Spark itself adds to a streaming source's or sink's options.
_SPARK_ADDED = ("checkpointlocation",)

# Kafka consumer configs Spark refuses (it manages offsets and deserialisation itself), with why.
_REFUSED_CONSUMER_CONFIGS = {
    "auto.offset.reset": "set the source option 'startingOffsets' to 'earliest' or 'latest' instead: "
    "the query tracks its offsets itself",
    "key.deserializer": "keys are always read as bytes; deserialise them with DataFrame operations",
    "value.deserializer": "values are always read as bytes; deserialise them with DataFrame operations",
    "enable.auto.commit": "the query tracks its offsets itself; remove it",
    "interceptor.classes": "interceptors could change the records; remove it",
}
_REFUSED_PRODUCER_CONFIGS = {
    "key.serializer": "keys are always written as bytes (a string column as UTF-8); remove it",
    "value.serializer": "values are always written as bytes (a string column as UTF-8); remove it",
}
# Java client configs kgroup reads itself (librdkafka has no such property).
_TIMEOUT_CONFIG = "default.api.timeout.ms"
DEFAULT_API_TIMEOUT_MS = 60_000  # Kafka's default for default.api.timeout.ms
DEFAULT_POLL_TIMEOUT_MS = 120_000  # Spark's default for kafkaConsumer.pollTimeoutMs (spark.network.timeout)


class ReadKind(Enum):
    """Which read the options are checked for: Spark checks a batch read's and a stream's options
    differently (``validateBatchOptions`` / ``validateStreamOptions``)."""

    #: ``spark.read``: ``endingOffsets`` allowed, ``startingOffsets`` can't be latest
    BATCH = "batch"
    #: ``spark.readStream``: no ``endingOffsets``, ``startingOffsets`` defaults to latest
    STREAM = "stream"
    #: ``load()`` before Spark says which: only what holds for both (names, forms, numbers)
    NOT_YET_KNOWN = "not yet known"


@dataclass(frozen=True, slots=True)
class Subscription:
    """Which partitions a query reads: one of Spark's three strategies."""

    kind: Literal["subscribe", "subscribePattern", "assign"]
    topics: tuple[str, ...] = ()
    pattern: str = ""
    partitions: tuple[TopicPartition, ...] = ()

    def matches(self, topic: str) -> bool:
        """Whether ``topic`` belongs to a ``subscribe`` / ``subscribePattern`` subscription.

        A pattern must match the whole name (Java's ``Pattern.matcher(topic).matches()``), and, as
        Kafka's consumer does by default (``exclude.internal.topics``), internal topics never match.
        """
        if self.kind == "subscribe":
            return topic in self.topics
        if self.kind == "subscribePattern":
            return not topic.startswith("__") and re.fullmatch(self.pattern, topic) is not None
        return any(t == topic for t, _ in self.partitions)


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """``earliest``, ``latest`` or one offset per partition (-2 earliest, -1 latest)."""

    kind: Literal["earliest", "latest", "specific"]
    offsets: tuple[tuple[TopicPartition, int], ...] = ()

    def as_dict(self) -> dict[TopicPartition, int]:
        return dict(self.offsets)


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """The checked options of a read (batch or streaming)."""

    bootstrap_servers: str
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec | None  # None in streaming reads (Spark refuses endingOffsets there)
    max_offsets_per_trigger: int | None
    min_partitions: int | None
    fail_on_data_loss: bool
    include_headers: bool
    poll_timeout_ms: int
    api_timeout_ms: int
    consume: Literal["partition", "group"]
    client_config: tuple[tuple[str, str], ...] = field(default=())
    #: consume=group: the group the query's members join
    group: GroupSettings | None = None

    def client_dict(self) -> dict[str, str]:
        """The ``kafka.*`` options without their prefix, for confluent-kafka (librdkafka)."""
        return dict(self.client_config)


@dataclass(frozen=True, slots=True)
class SinkOptions:
    """The checked options of a write (batch or streaming)."""

    bootstrap_servers: str
    topic: str | None
    null_key_strategy: str
    null_key_seed: int
    api_timeout_ms: int
    client_config: tuple[tuple[str, str], ...] = field(default=())

    def client_dict(self) -> dict[str, str]:
        return dict(self.client_config)


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items()}


def _unknown(name: str, known: list[str], what: str) -> KgroupError:
    close = difflib.get_close_matches(name, [k.lower() for k in known], n=1)
    by_lower = {k.lower(): k for k in known}
    hint = (
        f"; did you mean {by_lower[close[0]]!r}?"
        if close
        else f"; the {what} options are: " + ", ".join(sorted(known))
    )
    return KgroupError(f"option {name!r} is not an option of the kgroup {what}{hint}")


def _bool(name: str, value: str) -> bool:
    text = value.strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise KgroupError(f"{name}: {value!r} is not a boolean; give true or false")


def _positive_int(name: str, value: str) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        raise KgroupError(f"{name}: {value!r} is not a whole number; give a number of 1 or more") from None
    if number <= 0:
        raise KgroupError(f"{name}: {number} must be positive; give a number of 1 or more")
    return number


def parse_assign(value: str) -> tuple[TopicPartition, ...]:
    """``{"topicA":[0,1],"topicB":[2,4]}`` as sorted (topic, partition) pairs."""
    if not value.strip().startswith("{"):
        raise KgroupError(
            f'assign: no topic partitions to assign in {value!r}; give JSON like {{"topicA":[0,1]}}'
        )
    parsed = json_object("assign", value, '{"topicA":[0,1]}')
    pairs: set[TopicPartition] = set()
    for topic, parts in parsed.items():
        if not isinstance(parts, list):
            raise KgroupError(f"assign: the partitions of topic {topic!r} must be a JSON list, like [0,1]")
        pairs.update(TopicPartition(topic, partition_number("assign", topic, p)) for p in parts)
    if not pairs:
        raise KgroupError('assign: no topic partitions to assign; give JSON like {"topicA":[0,1]}')
    return tuple(sorted(pairs))


def _offset_spec(name: str, value: str | None, default: Literal["earliest", "latest"]) -> OffsetSpec:
    if value is None:
        return OffsetSpec(default)
    text = value.strip()
    if text.lower() in ("earliest", "latest"):
        return OffsetSpec("earliest" if text.lower() == "earliest" else "latest")
    if not text.startswith("{"):
        raise KgroupError(
            f'{name}: {value!r}; give earliest, latest or JSON like {{"topicA":{{"0":23,"1":-2}}}}'
        )
    return OffsetSpec("specific", tuple(sorted(offsets_from_json(name, text).items())))


def _subscription(lowered: dict[str, str]) -> Subscription:
    given = [k for k in _STRATEGIES if k in lowered]
    names = "assign, subscribe, subscribePattern"
    if not given:
        raise KgroupError(f"subscribe: no topics given; set exactly one of the options {names}")
    if len(given) > 1:
        shown = ", ".join(_SOURCE_OPTIONS[k] for k in given)
        raise KgroupError(f"{shown}: only one of the options {names} may be set; remove the others")
    kind = given[0]
    value = lowered[kind]
    if kind == "assign":
        return Subscription("assign", partitions=parse_assign(value))
    if kind == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise KgroupError(
                f"subscribe: no topics to subscribe to in {value!r}; give topic names, comma-separated"
            )
        return Subscription("subscribe", topics=tuple(dict.fromkeys(topics)))
    pattern = value.strip()
    if not pattern:
        raise KgroupError(
            "subscribePattern: the pattern is empty; give a regular expression for the topic names"
        )
    try:
        re.compile(pattern)
    except re.error as exc:
        raise KgroupError(f"subscribePattern: {pattern!r} is not a regular expression ({exc})") from None
    return Subscription("subscribePattern", pattern=pattern)


def _client_options(lowered: dict[str, str], refused: Mapping[str, str]) -> tuple[dict[str, str], int]:
    """The ``kafka.*`` options (prefix removed) and the API timeout; refuses what Spark refuses."""
    config: dict[str, str] = {}
    timeout_ms = DEFAULT_API_TIMEOUT_MS
    for key, value in lowered.items():
        if not key.startswith("kafka."):
            continue
        name = key[len("kafka.") :]
        if name in refused:
            raise KgroupError(f"kafka.{name}: not supported: {refused[name]}")
        if name == _TIMEOUT_CONFIG:
            timeout_ms = _positive_int(f"kafka.{name}", value)
            continue
        config[name] = value
    if not config.get("bootstrap.servers", "").strip():
        raise KgroupError(
            "kafka.bootstrap.servers: must be set; give the brokers as host:port, comma-separated"
        )
    return config, timeout_ms


def check_client_config(config: Mapping[str, str], make_client: Any) -> None:
    """Create a client with ``config`` to have librdkafka check every property's name and value.

    ``make_client`` builds the client (e.g. ``confluent_kafka.Producer``); librdkafka refuses an
    unknown property or a bad value at once, which becomes a :class:`KgroupError` naming the option.
    """
    try:
        client = make_client(dict(config))
    except Exception as exc:  # confluent_kafka.KafkaException, or ValueError for a bad type
        text = str(exc)
        match = re.search(r'property "([^"]+)"', text) or re.search(r"\"([a-z.]+)\"", text)
        name = f"kafka.{match.group(1)}" if match else "kafka.*"
        raise KgroupError(f"{name}: the Kafka client refused it ({text.strip()}); fix or remove it") from None
    close = getattr(client, "close", None)
    if close is not None:
        close()


def check_read_options_early(options: Mapping[str, str]) -> None:
    """What can be checked while a DataFrame is being defined (``load()``), before Spark says whether
    the read is a batch or a stream: names, the strategy, numbers, ``consume``. Options that name no
    read strategy are left alone here (they may be a write's)."""
    lowered = _lower(options)
    if any(k in lowered for k in _STRATEGIES):
        _parse(lowered, ReadKind.NOT_YET_KNOWN)


def parse_source_options(options: Mapping[str, str], kind: ReadKind) -> SourceOptions:
    """Check a read's options as Spark's Kafka source does (``validateBatchOptions`` /
    ``validateStreamOptions``) and return them parsed. Raises :class:`KgroupError`."""
    if kind is ReadKind.NOT_YET_KNOWN:
        raise ValueError("parse_source_options: give ReadKind.BATCH or ReadKind.STREAM")
    return _parse(_lower(options), kind)


def _parse(lowered: dict[str, str], kind: ReadKind) -> SourceOptions:
    for key in lowered:
        if key.startswith("kafka.") or key in _SPARK_ADDED:
            continue
        if key in _SPARK_ONLY_SOURCE_OPTIONS:
            raise KgroupError(
                f"{_SPARK_ONLY_SOURCE_OPTIONS[key]}: an option of Spark's Kafka source that kgroup does not "
                "support; remove it (see docs/spark.md)"
            )
        if key not in _SOURCE_OPTIONS:
            raise _unknown(key, [*_SOURCE_OPTIONS.values(), "kafka.*"], "source")
    consume = lowered.get("consume", "partition").strip().lower()
    if consume not in ("partition", "group"):
        raise KgroupError(f"consume: {lowered['consume']!r}; give partition (the default) or group")
    if consume == "group":
        if not lowered.get("kafka.group.id", "").strip():
            raise KgroupError(
                "kafka.group.id: consume=group needs the consumer group's id; set kafka.group.id"
            )
        if kind is ReadKind.BATCH:
            raise KgroupError(
                "consume: group is for streaming reads (spark.readStream), where the group's offsets "
                "follow the query's batches; use consume=partition (the default) for batch reads"
            )
    elif "groupmembers" in lowered:
        raise KgroupError("groupMembers: only used with consume=group; remove it")
    subscription = _subscription(lowered)
    config, timeout_ms = _client_options(lowered, _REFUSED_CONSUMER_CONFIGS)
    group: GroupSettings | None = None
    if consume == "group":
        if subscription.kind == "assign":
            raise KgroupError(
                "assign: consume=group reads the partitions the group gives its members; use subscribe or "
                "subscribePattern (or consume=partition to name partitions with assign)"
            )
        group = parse_group_settings(config, lowered.get("groupmembers"))
        config = {k: v for k, v in config.items() if k not in GROUP_CONFIGS}

    if kind is ReadKind.NOT_YET_KNOWN:  # only the JSON's form
        starting = _offset_spec("startingOffsets", lowered.get("startingoffsets"), "earliest")
        ending = _offset_spec("endingOffsets", lowered.get("endingoffsets"), "latest")
    elif kind is ReadKind.STREAM:
        if "endingoffsets" in lowered:
            raise KgroupError("endingOffsets: not valid in streaming queries; remove it (streams never end)")
        starting = _offset_spec("startingOffsets", lowered.get("startingoffsets"), "latest")
        ending = None
    else:
        starting = _offset_spec("startingOffsets", lowered.get("startingoffsets"), "earliest")
        _check_batch_bound("startingOffsets", starting, ("latest", LATEST), ("earliest", EARLIEST))
        ending = _offset_spec("endingOffsets", lowered.get("endingoffsets"), "latest")
        _check_batch_bound("endingOffsets", ending, ("earliest", EARLIEST), ("latest", LATEST))
        _check_start_before_end(starting, ending)
    for spec_name, spec in (("startingOffsets", starting), ("endingOffsets", ending)):
        if spec is not None and spec.kind == "specific" and subscription.kind != "subscribePattern":
            _check_specific_partitions(spec_name, spec, subscription)

    max_per_trigger = (
        _positive_int("maxOffsetsPerTrigger", lowered["maxoffsetspertrigger"])
        if "maxoffsetspertrigger" in lowered
        else None
    )
    min_partitions = (
        _positive_int("minPartitions", lowered["minpartitions"]) if "minpartitions" in lowered else None
    )
    return SourceOptions(
        bootstrap_servers=config["bootstrap.servers"],
        subscription=subscription,
        starting=starting,
        ending=ending,
        max_offsets_per_trigger=max_per_trigger,
        min_partitions=min_partitions,
        fail_on_data_loss=_bool("failOnDataLoss", lowered.get("failondataloss", "true")),
        include_headers=_bool("includeHeaders", lowered.get("includeheaders", "false")),
        poll_timeout_ms=_positive_int(
            "kafkaConsumer.pollTimeoutMs",
            lowered.get("kafkaconsumer.polltimeoutms", str(DEFAULT_POLL_TIMEOUT_MS)),
        ),
        api_timeout_ms=timeout_ms,
        consume="group" if group is not None else "partition",
        client_config=tuple(sorted(config.items())),
        group=group,
    )


def _check_batch_bound(
    name: str, spec: OffsetSpec, refused: tuple[str, int], instead: tuple[str, int]
) -> None:
    """A batch query's start may not be ``latest`` and its end not ``earliest`` (``refused``: the name
    and its offset), neither as a whole nor for one partition (Spark's Kafka source's rule)."""
    if spec.kind == refused[0]:
        raise KgroupError(
            f"{name}: can't be {refused[0]} for batch queries; use {instead[0]} or JSON offsets"
        )
    for (topic, part), offset in spec.offsets:
        if offset == refused[1]:
            raise KgroupError(
                f"{name}: {topic}-{part} can't be {refused[0]} ({refused[1]}) for batch queries; "
                f"give an offset or {instead[1]} ({instead[0]})"
            )


def _check_start_before_end(starting: OffsetSpec, ending: OffsetSpec) -> None:
    """Spark's ``checkOffsetLimitValidity``: two JSON specs name the same partitions, start <= end."""
    if starting.kind != "specific" or ending.kind != "specific":
        return
    start, end = starting.as_dict(), ending.as_dict()
    if set(start) != set(end):
        raise KgroupError(
            f"endingOffsets: names partitions {partition_list(end)} but startingOffsets names "
            f"{partition_list(start)}; give both the same partitions"
        )
    for tp, offset in start.items():
        if offset >= 0 and end[tp] >= 0 and offset > end[tp]:
            raise KgroupError(
                f"startingOffsets: {tp} starts at {offset}, after its endingOffsets {end[tp]}; "
                "give a start at or before the end"
            )


def _check_specific_partitions(name: str, spec: OffsetSpec, subscription: Subscription) -> None:
    """JSON offsets must name exactly the subscribed partitions' topics (Spark asserts the same)."""
    named_topics = {t for (t, _), _o in spec.offsets}
    if subscription.kind == "assign":
        assigned = set(subscription.partitions)
        named = {tp for tp, _o in spec.offsets}
        if named != assigned:
            raise KgroupError(
                f"{name}: JSON offsets must name every assigned partition and no other "
                f"(assigned {partition_list(assigned)}, named {partition_list(named)}); "
                "use -2 for earliest, -1 for latest"
            )
    elif named_topics != set(subscription.topics):
        raise KgroupError(
            f"{name}: JSON offsets name topics {sorted(named_topics)} but subscribe names "
            f"{sorted(subscription.topics)}; give offsets for every partition of the subscribed topics"
        )


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Check a write's options (Spark's Kafka sink, plus kgroup's null-key strategy)."""
    from kgroup.spark.null_keys import DEFAULT_NULL_KEY_STRATEGY

    lowered = _lower(options)
    for key in lowered:
        if key.startswith("kafka.") or key in _SINK_OPTIONS or key in _SPARK_ADDED:
            continue
        raise _unknown(key, [*_SINK_OPTIONS.values(), "kafka.*"], "sink")
    config, timeout_ms = _client_options(lowered, _REFUSED_PRODUCER_CONFIGS)
    topic = lowered.get("topic")
    if topic is not None:
        topic = topic.strip()
        if not topic:
            raise KgroupError("topic: the topic name is empty; give a topic or remove the option")
    strategy = lowered.get("nullkeystrategy", DEFAULT_NULL_KEY_STRATEGY).strip()
    seed_text = lowered.get("nullkeyseed", "0").strip()
    try:
        seed = int(seed_text)
    except ValueError:
        raise KgroupError(f"nullKeySeed: {seed_text!r} is not a whole number; give an integer seed") from None
    return SinkOptions(
        bootstrap_servers=config["bootstrap.servers"],
        topic=topic,
        null_key_strategy=strategy,
        null_key_seed=seed,
        api_timeout_ms=timeout_ms,
        client_config=tuple(sorted(config.items())),
    )
