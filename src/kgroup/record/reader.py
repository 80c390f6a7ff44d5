"""Read one group's records from a cluster's ``__consumer_offsets`` (confluent-kafka) into a recording.

:func:`record_group` assigns the group's partition of the topic (``abs(groupId.hashCode()) %
partitions``, the topic's partition count from metadata), reads it from the beginning or from the
first record at or after ``since_ms`` (ListOffsets by timestamp), committed records only, and feeds
:class:`kgroup.record.history.GroupHistory`; ``follow`` keeps reading until ``stop()`` says so. The
recording is written to ``DIR/<group>/result.json``, the file ``kgroup serve --record`` writes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgroup.group.discovery import coordinator_partition
from kgroup.model import KgroupError, TopicId
from kgroup.record.history import GroupHistory, OffsetsEntry

__all__ = ["OFFSETS_TOPIC", "RECORDING_FILE", "RecordOptions", "record_group", "recording_path"]

OFFSETS_TOPIC = "__consumer_offsets"
RECORDING_FILE = "result.json"
_TOPIC_AUTHORIZATION_FAILED = 29
_SAFE = re.compile(r"[^A-Za-z0-9._-]")
#: one poll's wait; a read to the end gives up after this long without a record or the end
_POLL_S = 0.5
_STALL_S = 30.0
#: in --follow mode, the recording is rewritten at most this often
_WRITE_EVERY_S = 1.0


@dataclass(frozen=True, slots=True)
class RecordOptions:
    bootstrap_servers: str
    group_id: str
    out: Path
    since_ms: int | None = None
    follow: bool = False
    timeout_s: float = 15.0
    #: the client's security settings (librdkafka's names: security.protocol, ssl.ca.location,
    #: sasl.mechanism, …), passed to confluent-kafka as they are
    client_config: tuple[tuple[str, str], ...] = ()


def recording_path(out: Path, group_id: str) -> Path:
    """Where the recording of ``group_id`` goes (the folder name ``kgroup serve --record`` uses)."""
    return out / (_SAFE.sub("_", group_id) or "_") / RECORDING_FILE


def _write(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def _topic_names(admin: Any, timeout_s: float) -> dict[TopicId, str]:
    """Every topic's id -> name (consumer-group records name topics by id)."""
    from confluent_kafka import TopicCollection

    names = [t for t in admin.list_topics(timeout=timeout_s).topics if t != OFFSETS_TOPIC]
    if not names:
        return {}
    out: dict[TopicId, str] = {}
    for name, future in admin.describe_topics(TopicCollection(names), request_timeout=timeout_s).items():
        try:
            uuid = future.result().topic_id
        except Exception:  # deleted meanwhile
            continue
        out[TopicId(uuid.get_most_significant_bits(), uuid.get_least_significant_bits())] = name
    return out


def _reach(options: RecordOptions) -> None:
    """Fail at once where librdkafka would retry until the timeout: no broker accepts a connection,
    the listener wants TLS or SASL that ``client_config`` does not give, or it refuses the login."""
    from kgroup.client import parse_bootstrap
    from kgroup.client.probe import ListenerMismatch, reach_cluster_blocking
    from kgroup.client.security import ClientSecurity

    security = ClientSecurity.from_config(dict(options.client_config))
    try:
        reach_cluster_blocking(parse_bootstrap(options.bootstrap_servers), security, options.timeout_s)
    except ListenerMismatch as exc:
        raise exc.for_command_config() from None
    except KgroupError as exc:
        field = "--command-config" if exc.message.startswith("sasl.") else "--bootstrap-servers"
        raise KgroupError(f"{field}: {exc.message.removeprefix('bootstrap servers: ')}") from None


def _not_authorized(principal: str, operation: str) -> KgroupError:
    """What ``kgroup record`` says when the cluster's authorizer refuses it (docs/record.md, ACLs)."""
    return KgroupError(
        f"--command-config: {principal} is not authorized to {operation} {OFFSETS_TOPIC} "
        f"(TOPIC_AUTHORIZATION_FAILED); kgroup record needs the ACLs Describe and Read on "
        f"Topic:{OFFSETS_TOPIC} for {principal} (kafka-acls.sh --add --allow-principal {principal} "
        f"--operation Describe --operation Read --topic {OFFSETS_TOPIC}; docs/record.md)"
    )


def _partition_count(admin: Any, bootstrap: str, timeout_s: float, principal: str) -> int:
    from confluent_kafka import KafkaException

    try:
        metadata = admin.list_topics(topic=OFFSETS_TOPIC, timeout=timeout_s)
    except KafkaException as exc:
        raise KgroupError(
            f"--bootstrap-servers: cannot reach a Kafka broker at {bootstrap} within {timeout_s:.0f} s "
            f"({exc.args[0].str() if exc.args else exc}); check the address"
        ) from None
    topic = metadata.topics.get(OFFSETS_TOPIC)
    if topic is not None and topic.error is not None and topic.error.code() == _TOPIC_AUTHORIZATION_FAILED:
        raise _not_authorized(principal, "Describe")
    if topic is None or topic.error is not None or not topic.partitions:
        raise KgroupError(
            f"--group: the cluster at {bootstrap} has no {OFFSETS_TOPIC} topic yet (no group has used "
            "it); record once the group runs"
        )
    return len(topic.partitions)


def record_group(
    options: RecordOptions,
    clock: Callable[[], float],
    wall_clock_ms: Callable[[], int],
    stop: Callable[[], bool] = lambda: False,
    on_progress: Callable[[GroupHistory, int, int], None] | None = None,
) -> tuple[GroupHistory, Path]:
    """Read the group's history and write its recording; returns the history and the file's path.

    ``clock`` is a monotonic clock in seconds (the stall limit, the --follow rewrites); with
    ``follow``, the recording lasts until ``wall_clock_ms()`` (epoch ms) at each write;
    ``on_progress(history, position, end)`` is called after each batch of records read."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
    from confluent_kafka.admin import AdminClient

    common: dict[str, Any] = {
        **dict(options.client_config),
        "bootstrap.servers": options.bootstrap_servers,
        "log_level": 0,
    }
    _reach(options)
    admin = AdminClient(dict(common, **{"socket.timeout.ms": int(options.timeout_s * 1000)}))
    config = dict(options.client_config)
    username = config.get("sasl.username")
    principal = f"User:{username}" if username else "this client's principal"
    partitions = _partition_count(admin, options.bootstrap_servers, options.timeout_s, principal)
    partition = coordinator_partition(options.group_id, partitions)
    consumer = Consumer(
        dict(
            common,
            **{
                "group.id": f"kgroup-record-{options.group_id}",  # never joined nor committed (assign only)
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "isolation.level": "read_committed",
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
            },
        )
    )
    path = recording_path(options.out, options.group_id)
    history = GroupHistory(options.group_id, topic_names=_topic_names(admin, options.timeout_s))
    try:
        tp = TopicPartition(OFFSETS_TOPIC, partition, OFFSET_BEGINNING)
        if options.since_ms is not None:
            found = consumer.offsets_for_times(
                [TopicPartition(OFFSETS_TOPIC, partition, options.since_ms)], timeout=options.timeout_s
            )[0]
            tp = TopicPartition(OFFSETS_TOPIC, partition, max(found.offset, OFFSET_BEGINNING))
            if found.offset < 0:  # no record at or after --since: start at the end
                _, high = consumer.get_watermark_offsets(tp, timeout=options.timeout_s)
                tp = TopicPartition(OFFSETS_TOPIC, partition, high)
        _, end = consumer.get_watermark_offsets(tp, timeout=options.timeout_s)
        consumer.assign([tp])
        at_end = False
        last_activity = clock()
        last_write = 0.0
        position = -1
        while not stop():
            messages = consumer.consume(500, timeout=_POLL_S)
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        at_end = True
                        continue
                    if error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
                        # librdkafka looks up its group's coordinator though it only assigns and never
                        # commits: a user without rights on that group reads on
                        continue
                    if error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                        raise _not_authorized(principal, "Read")
                    if error.fatal() or not error.retriable():
                        raise KgroupError(f"reading {OFFSETS_TOPIC}-{partition}: {error.str()}")
                    continue
                position = int(message.offset() or 0)
                history.add(OffsetsEntry(position, message.timestamp()[1], message.key(), message.value()))
            if messages:
                last_activity = clock()
                if on_progress is not None:
                    on_progress(history, position + 1, end)
            if not options.follow and (at_end or position + 1 >= end):
                break
            if options.follow:
                if history.records and clock() - last_write >= _WRITE_EVERY_S:
                    if history.unknown_topic_ids:  # a topic created since: name its next records
                        history.topic_names = _topic_names(admin, options.timeout_s)
                        history.unknown_topic_ids.clear()
                    _write(path, history.document(wall_clock_ms()))
                    last_write = clock()
            elif clock() - last_activity > _STALL_S:
                raise KgroupError(
                    f"--bootstrap-servers: no answer from the leader of {OFFSETS_TOPIC}-{partition} for "
                    f"{_STALL_S:.0f} s; check the cluster"
                )
    finally:
        consumer.close()
    if not history.records:
        since = " at or after --since" if options.since_ms is not None else ""
        raise KgroupError(
            f"--group: no record of group {options.group_id!r} in {OFFSETS_TOPIC}-{partition}{since}; "
            "check the group's name (`kafka-consumer-groups.sh --list`)"
        )
    _write(path, history.document(wall_clock_ms() if options.follow else None))
    return history, path
