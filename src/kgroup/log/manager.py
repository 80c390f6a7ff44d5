"""The data directory: topics, their partition logs, the coordinator logs; recovery on open.

Layout (see ``docs/log.md``)::

    <data dir>/
      .lock                          flock'ed while a LogManager has the directory open
      .kgroup-clean-shutdown         written by close(); absent after a crash -> full tail recovery
      meta/topics/<topic>.json       name, partition count, configs, and what the broker's controller
                                     keeps with the topic (its id and replicas: "metadata") (written:
                                     temp, fsync, rename)
      <topic>-<partition>/           Kafka's partition directory: <base offset>.log/.index/.timeindex
      coordinator/<name>.log         the coordinator's record logs

A topic exists exactly when its JSON exists: partition directories are made before the JSON is
written and removed after it is deleted, and on open a partition directory of no topic is removed.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import secrets
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgroup.log.batch import TimestampBounds
from kgroup.log.coordinator import CoordinatorLog
from kgroup.log.errors import (
    InvalidConfig,
    InvalidPartitions,
    InvalidTopic,
    LogStorageError,
    TopicExists,
    UnknownTopicOrPartition,
)
from kgroup.log.handles import DEFAULT_MAX_OPEN_FILES, FileHandles
from kgroup.log.partition import (
    FsyncPolicy,
    PartitionLog,
    PartitionSettings,
    sync_directory,
    write_atomically,
)
from kgroup.log.segment import Segment
from kgroup.model import KgroupError
from kgroup.topic_configs import TOPIC_CONFIG_NAMES

__all__ = [
    "TOPIC_CONFIG_NAMES",
    "LogConfig",
    "LogManager",
    "PartitionAddition",
    "PendingFlush",
    "TopicCreation",
    "TopicDeletion",
    "remove_directories",
    "validate_topic_name",
]

CLEAN_SHUTDOWN_FILE = ".kgroup-clean-shutdown"
LOCK_FILE = ".lock"
META_DIR = "meta"
COORDINATOR_DIR = "coordinator"
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")
_PARTITION_DIR = re.compile(r"(.+)-(\d+)")
#: the suffix of a deleted partition's directory until it is removed (Kafka's ``-delete``)
_DELETED_SUFFIX = "-delete"


def remove_directories(directories: Iterable[Path]) -> None:
    """Remove deleted partitions' directories (a thread may call this: nothing else touches them)."""
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)


DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024 + 12  # message.max.bytes: 1 MiB + the 12-byte log overhead

# Kafka's topic-level config names (kgroup.topic_configs, Kafka 4.4.0's LogConfig). All are accepted and
# stored; message.timestamp.type, message.timestamp.before/after.max.ms, segment.bytes,
# index.interval.bytes, max.message.bytes, retention.bytes and retention.ms change what the log does;
# the others are kept for DescribeConfigs. (The broker checks the values as Kafka does first.)


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Broker-wide log settings (Kafka's ``log.*`` defaults); topics may override the starred ones.

    ``segment_bytes``* (``log.segment.bytes``, 1 GiB), ``index_interval_bytes``* (4096),
    ``retention_bytes``* / ``retention_ms``* (None: keep everything), ``max_message_bytes``*
    (``message.max.bytes``), ``log_append_time``* (``log.message.timestamp.type=LogAppendTime``),
    ``retention_check_interval_ms`` (``log.retention.check.interval.ms``, 5 minutes),
    ``max_open_files`` (the segment files open at once, least recently used closed first; kgroup's
    own: Kafka keeps every segment's files open or mapped), ``timestamp_before_max_ms``* /
    ``timestamp_after_max_ms``* (``log.message.timestamp.before/after.max.ms``;
    None: unbounded). Both are unbounded here, so that the log takes any ``now_ms``; the broker
    (:func:`kgroup.broker.broker.open_logs`) sets Kafka 4's defaults: unbounded before, one hour after.
    """

    fsync: FsyncPolicy = FsyncPolicy.INTERVAL
    fsync_interval_ms: int = 1000
    segment_bytes: int = 1 << 30
    index_interval_bytes: int = 4096
    retention_bytes: int | None = None
    retention_ms: int | None = None
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    log_append_time: bool = False
    retention_check_interval_ms: int = 300_000
    timestamp_before_max_ms: int | None = None
    timestamp_after_max_ms: int | None = None
    max_open_files: int = DEFAULT_MAX_OPEN_FILES

    def __post_init__(self) -> None:
        if not isinstance(self.fsync, FsyncPolicy):
            raise KgroupError(f"fsync: {self.fsync!r} is not one of always, interval, never")
        for name in (
            "fsync_interval_ms",
            "segment_bytes",
            "max_message_bytes",
            "retention_check_interval_ms",
        ):
            if getattr(self, name) <= 0:
                raise KgroupError(f"{name}: {getattr(self, name)} must be a positive number")
        if self.max_open_files < 8:
            raise KgroupError(f"max_open_files: {self.max_open_files}; use at least 8")
        if self.index_interval_bytes < 0:
            raise KgroupError(f"index_interval_bytes: {self.index_interval_bytes} must be 0 or more")
        for name in ("retention_bytes", "retention_ms", "timestamp_before_max_ms", "timestamp_after_max_ms"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise KgroupError(f"{name}: {value} must be 0 or more, or None to keep everything")


def validate_topic_name(name: str) -> None:
    """Kafka's ``Topic.validate``: 1..249 characters of [a-zA-Z0-9._-], not "." or ".."."""
    if not name or name in (".", ".."):
        raise InvalidTopic(f"topic name {name!r} is illegal, it can't be empty, '.' or '..'")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopic(f"topic name is longer than {MAX_TOPIC_NAME_LENGTH} characters: {name!r}")
    if not _LEGAL_NAME.fullmatch(name):
        raise InvalidTopic(f"topic name {name!r} is illegal: only ASCII alphanumerics, '.', '_' and '-'")


def _long(configs: Mapping[str, str], name: str, minimum: int) -> int | None:
    if name not in configs:
        return None
    try:
        value = int(configs[name])
    except ValueError:
        raise InvalidConfig(
            f"invalid value {configs[name]!r} for configuration {name}: not a number"
        ) from None
    if value < minimum:
        raise InvalidConfig(
            f"invalid value {value} for configuration {name}: value must be at least {minimum}"
        )
    return value


def _validate_topic_configs(configs: Mapping[str, str]) -> None:
    for name in configs:
        if name not in TOPIC_CONFIG_NAMES:
            raise InvalidConfig(f"unknown topic config name: {name}")
    _long(configs, "segment.bytes", 14)
    _long(configs, "max.message.bytes", 0)
    _long(configs, "index.interval.bytes", 0)
    _long(configs, "retention.ms", -1)
    _long(configs, "retention.bytes", -(2**63))
    _long(configs, "message.timestamp.before.max.ms", 0)
    _long(configs, "message.timestamp.after.max.ms", 0)
    kind = configs.get("message.timestamp.type")
    if kind is not None and kind not in ("CreateTime", "LogAppendTime"):
        raise InvalidConfig(f"invalid value {kind!r} for configuration message.timestamp.type")


def _retention(configured: int | None, default: int | None) -> int | None:
    if configured is None:
        return default
    return None if configured < 0 else configured  # -1: unlimited, as in Kafka


@dataclass(slots=True)
class _Topic:
    partitions: list[PartitionLog]
    configs: dict[str, str]
    settings: PartitionSettings
    #: the broker's own record of the topic, kept with it (opaque here; ``{}`` for a topic made before)
    metadata: dict[str, Any] = field(default_factory=dict)


class PendingFlush:
    """An fsync of log files taken by :meth:`LogManager.tick`: duplicated descriptors, its own to close.

    :meth:`run` may be called in any thread (it touches nothing but its descriptors and, on failure,
    its segments' ``dirty`` flags); it fsyncs and closes every one of them, then raises the first error
    if an fsync failed — after marking the segments it took written-since-fsync again, so the next
    interval fsyncs them once more (as an inline :meth:`LogManager.flush` that fails leaves them).
    """

    def __init__(self, fds: list[int], segments: Sequence[Segment] = ()) -> None:
        self.fds = fds
        self._segments = list(segments)

    def run(self) -> None:
        fds, self.fds = self.fds, []
        failed: OSError | None = None
        for fd in fds:
            try:
                os.fsync(fd)
            except OSError as exc:
                failed = failed or exc
            finally:
                os.close(fd)
        if failed is not None:
            for segment in self._segments:
                segment.dirty = True
            raise failed


class LogManager:
    """Every topic's partition logs and the coordinator logs in one data directory."""

    def __init__(self, data_dir: Path, config: LogConfig = LogConfig()) -> None:
        """Open ``data_dir`` (created if missing) and recover whatever is on disk.

        After an unclean shutdown (no clean-shutdown marker) the last segment of every partition is
        re-read and CRC-checked whole; otherwise only its tail after the last index entry.
        """
        self.data_dir = Path(data_dir)
        self.config = config
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._lock_fd = os.open(self.data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            raise KgroupError(
                f"data dir {self.data_dir} is in use by another kgroup broker; "
                "stop it or pick another --data-dir"
            ) from None
        marker = self.data_dir / CLEAN_SHUTDOWN_FILE
        self.clean_start = marker.exists()
        marker.unlink(missing_ok=True)
        (self.data_dir / META_DIR / "topics").mkdir(parents=True, exist_ok=True)
        sync_directory(self.data_dir)
        self._topics: dict[str, _Topic] = {}
        self._coordinator_logs: dict[str, CoordinatorLog] = {}
        self._handles = FileHandles(config.max_open_files)
        self._creating: set[str] = set()  # names reserved by a TopicCreation not yet finished
        self._growing: set[str] = set()  # topics a PartitionAddition not yet finished grows
        self._last_flush_ms: int | None = None
        self._last_retention_ms: int | None = None
        try:
            self._load()
        except BaseException:
            self._close_files()
            os.close(self._lock_fd)
            raise

    # -- opening -------------------------------------------------------------------------------

    @property
    def _meta_dir(self) -> Path:
        return self.data_dir / META_DIR / "topics"

    def _load(self) -> None:
        for path in sorted(self._meta_dir.iterdir()):
            if path.suffix != ".json":
                path.unlink()  # a temp file of an interrupted write: the rename never happened
                continue
            try:
                meta = json.loads(path.read_text())
                name, count, configs = meta["name"], int(meta["partitions"]), dict(meta["configs"])
                metadata = dict(meta.get("metadata") or {})
            except (ValueError, KeyError, TypeError) as error:
                raise KgroupError(
                    f"data dir {self.data_dir}: topic metadata {path} is unreadable ({error}); "
                    "restore it from a backup or delete it and the topic's partition directories"
                ) from None
            settings = self._settings(configs)
            partitions = [
                PartitionLog(
                    self.data_dir / f"{name}-{number}",
                    settings,
                    recover_tail=not self.clean_start,
                    handles=self._handles,
                )
                for number in range(count)
            ]
            self._topics[name] = _Topic(partitions, configs, settings, metadata)
        for path in self.data_dir.iterdir():
            match = _PARTITION_DIR.fullmatch(path.name)
            if not path.is_dir() or match is None or path.name in (META_DIR, COORDINATOR_DIR):
                continue
            topic = self._topics.get(match.group(1))
            if topic is None or int(match.group(2)) >= len(topic.partitions):
                # an interrupted create, delete or add_partitions: removed as a deletion is
                path.rename(path.with_name(f"{path.name}.{secrets.token_hex(8)}{_DELETED_SUFFIX}"))

    def _settings(self, configs: Mapping[str, str]) -> PartitionSettings:
        config = self.config
        kind = configs.get("message.timestamp.type")
        before = _long(configs, "message.timestamp.before.max.ms", 0)
        after = _long(configs, "message.timestamp.after.max.ms", 0)
        return PartitionSettings(
            segment_bytes=_or(_long(configs, "segment.bytes", 14), config.segment_bytes),
            index_interval_bytes=_or(_long(configs, "index.interval.bytes", 0), config.index_interval_bytes),
            max_message_bytes=_or(_long(configs, "max.message.bytes", 0), config.max_message_bytes),
            log_append_time=config.log_append_time if kind is None else kind == "LogAppendTime",
            retention_bytes=_retention(_long(configs, "retention.bytes", -(2**63)), config.retention_bytes),
            retention_ms=_retention(_long(configs, "retention.ms", -1), config.retention_ms),
            fsync=config.fsync,
            timestamp_bounds=TimestampBounds(
                _or_none(before, config.timestamp_before_max_ms),
                _or_none(after, config.timestamp_after_max_ms),
            ),
        )

    # -- topics --------------------------------------------------------------------------------

    def create_topic(
        self,
        name: str,
        partitions: int,
        configs: Mapping[str, str] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Create a topic of ``partitions`` empty partitions; persisted before this returns, with
        ``metadata`` (JSON-able; the broker's record of the topic, given back by :meth:`topic_metadata`).

        All or nothing: a failure part of the way (a full disk) removes what was made and raises
        :class:`LogStorageError`.
        """
        creation = self.begin_topic(name, partitions, configs, metadata)
        creation.step(partitions)
        creation.finish()

    def is_creating(self, name: str) -> bool:
        """A :class:`TopicCreation` of ``name`` is under way (begun, not finished nor aborted)."""
        return name in self._creating

    def begin_topic(
        self,
        name: str,
        partitions: int,
        configs: Mapping[str, str] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> TopicCreation:
        """Start creating a topic a few partitions at a time (:class:`TopicCreation`): the name is
        checked and reserved now; the topic exists once :meth:`TopicCreation.finish` returns."""
        validate_topic_name(name)
        if name in self._topics or name in self._creating:
            raise TopicExists(f"topic '{name}' already exists")
        for existing in (*self._topics, *self._creating):  # Kafka's Topic.hasCollision ('.' vs '_')
            if existing.replace(".", "_") == name.replace(".", "_"):
                raise InvalidTopic(f"topic '{name}' collides with existing topic: {existing}")
        if partitions <= 0:
            raise InvalidPartitions(f"number of partitions must be larger than 0, not {partitions}")
        topic_configs = dict(configs or {})
        _validate_topic_configs(topic_configs)
        self._creating.add(name)
        return TopicCreation(
            self, name, partitions, topic_configs, self._settings(topic_configs), dict(metadata or {})
        )

    def delete_topic(self, name: str, *, remove: Callable[[list[Path]], None] | None = None) -> None:
        """Delete a topic and its data at once (:meth:`begin_deletion`, every step, then the renamed
        directories removed here, or handed to ``remove``)."""
        deletion = self.begin_deletion(name)
        deletion.step(deletion.partitions)
        renamed = deletion.finish()
        if remove is None:
            remove_directories(renamed)
        else:
            remove(renamed)

    def begin_deletion(self, name: str) -> TopicDeletion:
        """Delete a topic a few partitions at a time (:class:`TopicDeletion`). The metadata goes now —
        the topic is gone, after a crash too; each partition's directory is then renamed
        ``<topic>-<n>.<random>-delete``, as Kafka renames a deleted log, and the name is free again
        once all are; the renamed directories are the caller's to remove (the broker removes them in
        a thread: 10,000 partitions took 5 s on its loop). Directories a crash left behind are found
        when the data directory is opened again (:meth:`leftover_deletions`)."""
        topic = self._topic(name)
        if name in self._growing:
            raise InvalidTopic(f"topic '{name}' cannot be deleted while partitions are added to it")
        (self._meta_dir / f"{name}.json").unlink()
        sync_directory(self._meta_dir)
        del self._topics[name]
        self._creating.add(name)  # reserved until every directory is renamed
        return TopicDeletion(self, name, topic.partitions)

    def leftover_deletions(self) -> list[Path]:
        """Directories renamed by a :meth:`delete_topic` whose removal a crash interrupted."""
        return [p for p in self.data_dir.iterdir() if p.name.endswith(_DELETED_SUFFIX) and p.is_dir()]

    def add_partitions(self, name: str, total: int, metadata: Mapping[str, Any] | None = None) -> None:
        """Grow a topic to ``total`` partitions at once (:meth:`begin_partitions`, every step)."""
        addition = self.begin_partitions(name, total, metadata)
        addition.step(addition.partitions)
        addition.finish()

    def begin_partitions(
        self, name: str, total: int, metadata: Mapping[str, Any] | None = None
    ) -> PartitionAddition:
        """Start growing a topic to ``total`` partitions a few at a time (:class:`PartitionAddition`,
        CreatePartitions); fewer or equal is refused. ``metadata`` replaces what the topic keeps with
        it (the broker's record of every partition's replicas), written with the new count by
        :meth:`PartitionAddition.finish`; ``None`` keeps it. The topic can be neither grown again nor
        deleted until the addition is finished or aborted."""
        topic = self._topic(name)
        current = len(topic.partitions)
        if total == current:
            raise InvalidPartitions(f"topic already has {current} partitions")
        if total < current:
            raise InvalidPartitions(
                f"topic currently has {current} partitions, which is higher than the requested {total}"
            )
        if name in self._growing:
            raise InvalidPartitions(f"partitions are being added to topic '{name}' already")
        self._growing.add(name)
        kept = topic.metadata if metadata is None else dict(metadata)
        return PartitionAddition(self, name, topic, total, kept)

    def topics(self) -> dict[str, int]:
        """Topic name -> partition count."""
        return {name: len(topic.partitions) for name, topic in self._topics.items()}

    def topic_configs(self, name: str) -> dict[str, str]:
        """The configs the topic was created with (not the defaults)."""
        return dict(self._topic(name).configs)

    def alter_topic_configs(self, name: str, configs: Mapping[str, str]) -> None:
        """Replace the topic's configs (its overrides of the broker's defaults): kept on disk before
        this returns, then every partition takes the settings they make (an append or retention pass
        already running finishes with the ones it read)."""
        topic = self._topic(name)
        if name in self._growing:
            raise InvalidTopic(f"topic '{name}' cannot be altered while partitions are added to it")
        new_configs = dict(configs)
        _validate_topic_configs(new_configs)
        settings = self._settings(new_configs)
        meta: dict[str, Any] = {
            "version": 1,
            "name": name,
            "partitions": len(topic.partitions),
            "configs": new_configs,
        }
        if topic.metadata:
            meta["metadata"] = dict(topic.metadata)
        write_atomically(self._meta_dir / f"{name}.json", json.dumps(meta, sort_keys=True).encode())
        topic.configs = new_configs
        topic.settings = settings
        for partition in topic.partitions:
            partition.settings = settings

    def topic_metadata(self, name: str) -> dict[str, Any]:
        """What the topic was created with as ``metadata`` (``{}`` when nothing, or made before)."""
        return dict(self._topic(name).metadata)

    def partition(self, topic: str, partition: int) -> PartitionLog:
        logs = self._topic(topic).partitions
        if not 0 <= partition < len(logs):
            raise UnknownTopicOrPartition(f"topic '{topic}' has no partition {partition}")
        return logs[partition]

    def _topic(self, name: str) -> _Topic:
        topic = self._topics.get(name)
        if topic is None:
            raise UnknownTopicOrPartition(f"topic '{name}' does not exist")
        return topic

    def _new_partitions(self, name: str, numbers: range, settings: PartitionSettings) -> list[PartitionLog]:
        """Empty partitions (a directory each, no file until the first append), all or none: a
        failure removes the ones made and raises :class:`LogStorageError`."""
        logs: list[PartitionLog] = []
        try:
            for number in numbers:
                directory = self.data_dir / f"{name}-{number}"
                if directory.exists():
                    shutil.rmtree(directory)  # left by an earlier, interrupted attempt
                logs.append(PartitionLog(directory, settings, recover_tail=False, handles=self._handles))
        except OSError as error:
            self._discard(name, logs, numbers)
            raise LogStorageError(f"cannot create the partitions of topic '{name}': {error}") from None
        return logs

    def _discard(self, name: str, logs: list[PartitionLog], numbers: range) -> None:
        for log in logs:
            log.close()
        for number in numbers:
            shutil.rmtree(self.data_dir / f"{name}-{number}", ignore_errors=True)

    def _write_meta(
        self, name: str, partitions: int, configs: Mapping[str, str], metadata: Mapping[str, Any]
    ) -> None:
        meta: dict[str, Any] = {
            "version": 1,
            "name": name,
            "partitions": partitions,
            "configs": dict(configs),
        }
        if metadata:
            meta["metadata"] = dict(metadata)
        write_atomically(self._meta_dir / f"{name}.json", json.dumps(meta, sort_keys=True).encode())
        sync_directory(self.data_dir)  # the new partition directories

    # -- the coordinator's logs ----------------------------------------------------------------

    def coordinator_fsync_interval_ms(self) -> int | None:
        """How often a coordinator log's writer must fsync it when :meth:`tick` is told not to
        (``fsync interval``), or ``None`` (``always`` syncs each append, ``never`` never syncs)."""
        return self.config.fsync_interval_ms if self.config.fsync is FsyncPolicy.INTERVAL else None

    def coordinator_log(self, name: str = "__consumer_offsets") -> CoordinatorLog:
        """The coordinator log ``name`` (opened on first use, then the same object). It is read — and a
        torn tail cut off — by its first replay (or its first append), not here: the broker listens
        while its coordinators replay a large log on their own thread."""
        log = self._coordinator_logs.get(name)
        if log is None:
            validate_topic_name(name)
            path = self.data_dir / COORDINATOR_DIR / f"{name}.log"
            log = self._coordinator_logs[name] = CoordinatorLog(path, fsync=self.config.fsync, recover=False)
        return log

    # -- time, flushing, closing ---------------------------------------------------------------

    def tick(
        self,
        now_ms: int,
        flush_later: Callable[[PendingFlush], None] | None = None,
        *,
        coordinator_logs: bool = True,
    ) -> None:
        """Periodic work, ``now_ms`` being wall-clock milliseconds: interval fsync and retention.

        With ``flush_later``, the interval fsync of the partitions' segments is handed to it as a
        :class:`PendingFlush` (the files count as synced from now on; the caller runs it, e.g. in a
        thread, so appends go on meanwhile); without, it is done here. The coordinator logs are
        fsynced here too unless ``coordinator_logs`` is false (their writer, on a thread of its own,
        then syncs them itself).
        """
        config = self.config
        if config.fsync is FsyncPolicy.INTERVAL:
            if self._last_flush_ms is None:
                self._last_flush_ms = now_ms
            elif now_ms - self._last_flush_ms >= config.fsync_interval_ms:
                if flush_later is None:
                    self.flush()
                else:
                    taken: list[Segment] = []
                    pending = PendingFlush(self._take_unsynced(taken), taken)
                    if coordinator_logs:
                        for coordinator in self._coordinator_logs.values():
                            coordinator.flush()
                    flush_later(pending)
                self._last_flush_ms = now_ms
        if (
            self._last_retention_ms is None
            or now_ms - self._last_retention_ms >= config.retention_check_interval_ms
        ):
            self._last_retention_ms = now_ms
            for topic in self._topics.values():
                for log in topic.partitions:
                    log.apply_retention(now_ms)

    def _take_unsynced(self, taken: list[Segment]) -> list[int]:
        fds: list[int] = []
        try:
            for topic in self._topics.values():
                for log in topic.partitions:
                    fds += log.take_unsynced(taken)
        except OSError:
            PendingFlush(fds).run()
            raise
        return fds

    def flush(self) -> None:
        """fsync every file written since its last fsync."""
        for topic in self._topics.values():
            for log in topic.partitions:
                log.flush()
        for coordinator in self._coordinator_logs.values():
            coordinator.flush()

    def close(self) -> None:
        """Flush, close every file, mark the shutdown clean and release the directory."""
        if self._lock_fd < 0:
            return
        self.flush()
        self._close_files()
        write_atomically(self.data_dir / CLEAN_SHUTDOWN_FILE, b"")
        os.close(self._lock_fd)
        self._lock_fd = -1

    def _close_files(self) -> None:
        for topic in self._topics.values():
            for log in topic.partitions:
                log.close()
        for coordinator in self._coordinator_logs.values():
            coordinator.close()
        self._topics.clear()
        self._coordinator_logs.clear()
        self._handles.close_all()

    def __enter__(self) -> LogManager:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class TopicCreation:
    """A topic being made (:meth:`LogManager.begin_topic`): :meth:`step` makes a few of its partitions
    (a directory each, no file before the first append), :meth:`finish` writes its metadata and
    makes it exist, :meth:`abort` removes what was made. Any failure aborts: all or nothing.

    The broker makes a 10,000-partition topic fifty partitions per step and gives
    its other connections a turn between steps.
    """

    def __init__(
        self,
        manager: LogManager,
        name: str,
        partitions: int,
        configs: dict[str, str],
        settings: PartitionSettings,
        metadata: dict[str, Any],
    ) -> None:
        self._manager = manager
        self.name = name
        self.partitions = partitions
        self._configs = configs
        self._settings = settings
        self._metadata = metadata
        self._logs: list[PartitionLog] = []
        self._ended = False

    def step(self, count: int) -> bool:
        """Make up to ``count`` more partitions; True once all are made."""
        manager = self._manager
        try:
            for number in range(len(self._logs), min(self.partitions, len(self._logs) + count)):
                directory = manager.data_dir / f"{self.name}-{number}"
                if directory.exists():
                    shutil.rmtree(directory)  # left by an earlier, interrupted attempt
                self._logs.append(
                    PartitionLog(directory, self._settings, recover_tail=False, handles=manager._handles)
                )
        except OSError as error:
            self.abort()
            raise LogStorageError(f"cannot create the partitions of topic '{self.name}': {error}") from None
        return len(self._logs) == self.partitions

    def finish(self) -> None:
        """Write the topic's metadata (the topic exists from then on, after a restart too)."""
        if len(self._logs) != self.partitions:
            raise RuntimeError(f"topic '{self.name}': finish() before every partition was made")
        manager = self._manager
        try:
            manager._write_meta(self.name, self.partitions, self._configs, self._metadata)
        except OSError as error:
            (manager._meta_dir / f"{self.name}.json").unlink(missing_ok=True)
            self.abort()
            raise LogStorageError(f"cannot create topic '{self.name}': {error}") from None
        manager._topics[self.name] = _Topic(self._logs, self._configs, self._settings, self._metadata)
        manager._creating.discard(self.name)
        self._ended = True

    def abort(self) -> None:
        """Remove the partitions made so far and release the name."""
        if self._ended:
            return
        self._ended = True
        self._manager._discard(self.name, self._logs, range(self.partitions))
        self._manager._creating.discard(self.name)


class PartitionAddition:
    """Partitions being added to a topic (:meth:`LogManager.begin_partitions`): :meth:`step` makes a
    few (a directory each, no file before the first append), :meth:`finish` writes the topic's
    metadata with its new count (the partitions exist from then on, after a restart too),
    :meth:`abort` removes what was made. Any failure aborts: all or nothing. ``partitions`` is how
    many are added."""

    def __init__(
        self, manager: LogManager, name: str, topic: _Topic, total: int, metadata: dict[str, Any]
    ) -> None:
        self._manager = manager
        self.name = name
        self._topic = topic
        self._first = len(topic.partitions)
        self.total = total
        self.partitions = total - self._first
        self._metadata = metadata
        self._logs: list[PartitionLog] = []
        self._ended = False

    def step(self, count: int) -> bool:
        """Make up to ``count`` more partitions; True once all are made."""
        manager = self._manager
        start = self._first + len(self._logs)
        numbers = range(start, min(self.total, start + count))
        try:
            self._logs.extend(manager._new_partitions(self.name, numbers, self._topic.settings))
        except LogStorageError:
            self.abort()
            raise
        return len(self._logs) == self.partitions

    def finish(self) -> None:
        """Write the topic's metadata with its new partition count and replicas."""
        if len(self._logs) != self.partitions:
            raise RuntimeError(f"topic '{self.name}': finish() before every partition was made")
        manager, topic = self._manager, self._topic
        try:
            manager._write_meta(self.name, self.total, topic.configs, self._metadata)
        except OSError as error:
            self.abort()
            raise LogStorageError(f"cannot add partitions to topic '{self.name}': {error}") from None
        topic.partitions.extend(self._logs)
        topic.metadata = self._metadata
        manager._growing.discard(self.name)
        self._ended = True

    def abort(self) -> None:
        """Remove the partitions made so far; the topic stays as it was."""
        if self._ended:
            return
        self._ended = True
        self._manager._discard(self.name, self._logs, range(self._first, self.total))
        self._manager._growing.discard(self.name)


def _or(value: int | None, default: int) -> int:
    return default if value is None else value


def _or_none(value: int | None, default: int | None) -> int | None:
    return default if value is None else value


class TopicDeletion:
    """A topic being deleted (:meth:`LogManager.begin_deletion`): :meth:`step` closes and renames a
    few of its partitions' directories, :meth:`finish` frees the name and hands back the renamed
    directories. The broker renames 500 per step and gives its other connections a turn between."""

    def __init__(self, manager: LogManager, name: str, logs: list[PartitionLog]) -> None:
        self._manager = manager
        self.name = name
        self._logs = logs
        self.partitions = len(logs)
        self._done = 0
        self._renamed: list[Path] = []

    def step(self, count: int) -> bool:
        """Close and rename up to ``count`` more partitions; True once all are."""
        data_dir = self._manager.data_dir
        for number in range(self._done, min(self.partitions, self._done + count)):
            self._logs[number].close()
            directory = data_dir / f"{self.name}-{number}"
            doomed = data_dir / f"{self.name}-{number}.{secrets.token_hex(8)}{_DELETED_SUFFIX}"
            try:
                directory.rename(doomed)
                self._renamed.append(doomed)
            except FileNotFoundError:
                pass  # never made on disk
            self._done = number + 1
        return self._done == self.partitions

    def finish(self) -> list[Path]:
        """Free the topic's name; the renamed directories, for the caller to remove."""
        if self._done != self.partitions:
            self.step(self.partitions)
        self._manager._creating.discard(self.name)
        return self._renamed
