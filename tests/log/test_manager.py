"""LogManager: topics on disk, coordinator logs, interval fsync, retention, crash-consistent metadata."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tests.log.batches import BASE_TIME_MS, decode, kio_batch

from kgroup.log import (
    FsyncPolicy,
    InvalidConfig,
    InvalidPartitions,
    InvalidTopic,
    LogConfig,
    LogError,
    LogManager,
    TopicExists,
    UnknownTopicOrPartition,
)
from kgroup.model import KgroupError, PeerError


def test_topics_persist_across_reopen(tmp_path: Path) -> None:
    with LogManager(tmp_path) as manager:
        manager.create_topic("orders", 3, {"retention.ms": "60000"})
        manager.create_topic("payments", 1)
        manager.partition("orders", 2).append(kio_batch([b"o"]), now_ms=1)
        manager.coordinator_log().append([(b"group", b"state")])
    meta = json.loads((tmp_path / "meta" / "topics" / "orders.json").read_text())
    assert meta["partitions"] == 3 and meta["configs"] == {"retention.ms": "60000"}
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("orders-")) == [
        "orders-0",
        "orders-1",
        "orders-2",
    ]
    with LogManager(tmp_path) as manager:
        assert manager.clean_start
        assert manager.topics() == {"orders": 3, "payments": 1}
        assert manager.topic_configs("orders") == {"retention.ms": "60000"}
        assert decode(manager.partition("orders", 2).read(0, 1000))[0][3] == b"o"
        assert list(manager.coordinator_log().replay()) == [(b"group", b"state")]


def test_errors_carry_kafka_codes(tmp_path: Path) -> None:
    with LogManager(tmp_path) as manager:
        manager.create_topic("t", 2)
        manager.create_topic("a.b", 1)
        cases: list[tuple[type[LogError], int, object]] = [
            (TopicExists, 36, lambda: manager.create_topic("t", 1)),
            (InvalidPartitions, 37, lambda: manager.create_topic("u", 0)),
            (InvalidTopic, 17, lambda: manager.create_topic("bad/name", 1)),
            (InvalidTopic, 17, lambda: manager.create_topic("..", 1)),
            (InvalidTopic, 17, lambda: manager.create_topic("x" * 250, 1)),
            (InvalidTopic, 17, lambda: manager.create_topic("a_b", 1)),  # collides with a.b
            (InvalidConfig, 40, lambda: manager.create_topic("u", 1, {"no.such.config": "1"})),
            (InvalidConfig, 40, lambda: manager.create_topic("u", 1, {"segment.bytes": "ten"})),
            (InvalidConfig, 40, lambda: manager.create_topic("u", 1, {"message.timestamp.type": "Now"})),
            (UnknownTopicOrPartition, 3, lambda: manager.partition("t", 2)),
            (UnknownTopicOrPartition, 3, lambda: manager.partition("nope", 0)),
            (UnknownTopicOrPartition, 3, lambda: manager.delete_topic("nope")),
            (InvalidPartitions, 37, lambda: manager.add_partitions("t", 2)),
            (InvalidPartitions, 37, lambda: manager.add_partitions("t", 1)),
        ]
        for kind, code, call in cases:
            with pytest.raises(kind) as info:
                call()  # type: ignore[operator]
            assert info.value.error_code == code
        assert manager.topics() == {"t": 2, "a.b": 1}  # nothing half-created
        assert not (tmp_path / "u-0").exists()


def test_delete_and_add_partitions(tmp_path: Path) -> None:
    with LogManager(tmp_path) as manager:
        manager.create_topic("t", 1)
        manager.partition("t", 0).append(kio_batch([b"a"]), now_ms=1)
        manager.add_partitions("t", 3)
        manager.partition("t", 2).append(kio_batch([b"c"]), now_ms=1)
        manager.create_topic("gone", 2)
        held = manager.partition("gone", 1)  # e.g. by a fetch waiting for data
        manager.delete_topic("gone")
        assert not (tmp_path / "gone-0").exists()
        for call in (lambda: held.read(0, 100), lambda: held.append(kio_batch([b"x"]), now_ms=1)):
            with pytest.raises(UnknownTopicOrPartition):
                call()
    with LogManager(tmp_path) as manager:
        assert manager.topics() == {"t": 3}
        assert manager.partition("t", 2).log_end_offset == 1
        manager.create_topic("gone", 1)  # the name is free again, and the new topic is empty
        assert manager.partition("gone", 0).log_end_offset == 0


def test_interrupted_create_delete_and_stray_temp_files_are_cleaned_on_open(tmp_path: Path) -> None:
    with LogManager(tmp_path) as manager:
        manager.create_topic("t", 1)
    (tmp_path / "half-0").mkdir()  # a create that crashed before its metadata was written
    (tmp_path / "t-1").mkdir()  # an add_partitions that crashed likewise
    (tmp_path / "meta" / "topics" / "x.json.tmp").write_text("{")
    with LogManager(tmp_path) as manager:
        assert manager.topics() == {"t": 1}
    assert not (tmp_path / "half-0").exists() and not (tmp_path / "t-1").exists()
    assert not (tmp_path / "meta" / "topics" / "x.json.tmp").exists()
    assert (tmp_path / "t-0").exists()


def test_topic_configs_apply(tmp_path: Path) -> None:
    with LogManager(tmp_path) as manager:
        manager.create_topic("lat", 1, {"message.timestamp.type": "LogAppendTime", "segment.bytes": "500"})
        log = manager.partition("lat", 0)
        assert log.append(kio_batch([b"a"]), now_ms=BASE_TIME_MS).log_append_time == BASE_TIME_MS
        for _ in range(10):
            log.append(kio_batch([b"v" * 100]), now_ms=BASE_TIME_MS)
        assert len(log.segment_base_offsets) > 1


def test_altered_topic_configs_apply_and_persist(tmp_path: Path) -> None:
    with LogManager(tmp_path) as manager:
        manager.create_topic("alt", 2, {"retention.ms": "60000"})
        manager.partition("alt", 1).append(kio_batch([b"v" * 300]), now_ms=BASE_TIME_MS)
        manager.alter_topic_configs("alt", {"max.message.bytes": "200"})
        assert manager.topic_configs("alt") == {"max.message.bytes": "200"}
        for number in (0, 1):
            log = manager.partition("alt", number)
            assert (log.settings.max_message_bytes, log.settings.retention_ms) == (200, None)
            with pytest.raises(PeerError) as refused:
                log.append(kio_batch([b"v" * 300]), now_ms=BASE_TIME_MS)
            assert refused.value.error_code == 10  # MESSAGE_TOO_LARGE
        with pytest.raises(InvalidConfig):
            manager.alter_topic_configs("alt", {"retention.ms": "soon"})
        assert manager.topic_configs("alt") == {"max.message.bytes": "200"}  # (a refused change keeps none)
    with LogManager(tmp_path) as manager:  # kept on disk
        assert manager.topic_configs("alt") == {"max.message.bytes": "200"}
        assert manager.partition("alt", 0).settings.max_message_bytes == 200
        assert manager.partition("alt", 1).log_end_offset == 1


def test_data_dir_is_locked_while_open(tmp_path: Path) -> None:
    with LogManager(tmp_path), pytest.raises(KgroupError, match="in use"):
        LogManager(tmp_path)
    LogManager(tmp_path).close()  # released on close


def test_unclean_start_is_detected(tmp_path: Path) -> None:
    manager = LogManager(tmp_path)
    manager.create_topic("t", 1)
    manager.partition("t", 0).append(kio_batch([b"a"]), now_ms=1)
    # no close(): as after kill -9 (the lock goes with the process; here we drop it by hand)
    os.close(manager._lock_fd)
    for log in manager._topics["t"].partitions:
        log.close()
    with LogManager(tmp_path) as reopened:
        assert not reopened.clean_start
        assert reopened.partition("t", 0).log_end_offset == 1


def test_tick_flushes_on_the_interval_and_applies_retention(tmp_path: Path) -> None:
    config = LogConfig(
        fsync=FsyncPolicy.INTERVAL, fsync_interval_ms=1000, retention_ms=10_000, segment_bytes=300,
        retention_check_interval_ms=5000,
    )  # fmt: skip
    with LogManager(tmp_path, config) as manager:
        manager.create_topic("t", 1)
        log = manager.partition("t", 0)
        for n in range(8):
            log.append(kio_batch([b"v" * 150], timestamp_ms=BASE_TIME_MS + n), now_ms=BASE_TIME_MS)
        active = log._segments[-1]
        manager.tick(BASE_TIME_MS)
        assert active.dirty
        manager.tick(BASE_TIME_MS + 999)
        assert active.dirty
        manager.tick(BASE_TIME_MS + 1000)
        assert not active.dirty
        segments = len(log.segment_base_offsets)
        manager.tick(BASE_TIME_MS + 20_000)
        assert len(log.segment_base_offsets) == 1 < segments  # all but the active segment expired
        assert log.log_start_offset == 7


def test_fsync_always_leaves_nothing_dirty(tmp_path: Path) -> None:
    with LogManager(tmp_path, LogConfig(fsync=FsyncPolicy.ALWAYS)) as manager:
        manager.create_topic("t", 1)
        log = manager.partition("t", 0)
        log.append(kio_batch([b"a"]), now_ms=1)
        assert not log._segments[-1].dirty
        coordinator = manager.coordinator_log("__consumer_offsets-3")
        coordinator.append([(b"k", b"v")])
        assert not coordinator.dirty


def test_bad_log_config_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(KgroupError, match="segment_bytes"):
        LogConfig(segment_bytes=0)
    with pytest.raises(KgroupError, match="retention_ms"):
        LogConfig(retention_ms=-5)
    with pytest.raises(KgroupError, match="fsync"):
        LogConfig(fsync="sometimes")  # type: ignore[arg-type]


def test_unreadable_topic_metadata_is_a_clear_user_error(tmp_path: Path) -> None:
    with LogManager(tmp_path) as manager:
        manager.create_topic("t", 1)
    (tmp_path / "meta" / "topics" / "t.json").write_text("{not json")
    with pytest.raises(KgroupError, match=r"t\.json is unreadable"):
        LogManager(tmp_path)
    (tmp_path / "meta" / "topics" / "t.json").unlink()
    with LogManager(tmp_path) as manager:  # the failed open released the directory
        assert manager.topics() == {}


def test_timestamp_bounds_from_topic_configs(tmp_path: Path) -> None:
    from kgroup.model import PeerError

    with LogManager(tmp_path) as manager:
        manager.create_topic("t", 1, {"message.timestamp.after.max.ms": "1000"})
        log = manager.partition("t", 0)
        on_the_bound = kio_batch([b"ok"], timestamp_ms=BASE_TIME_MS + 1000)
        assert log.append(on_the_bound, now_ms=BASE_TIME_MS).base_offset == 0
        with pytest.raises(PeerError) as info:
            log.append(kio_batch([b"late"], timestamp_ms=BASE_TIME_MS + 1001), now_ms=BASE_TIME_MS)
        assert info.value.error_code == 32
        with pytest.raises(InvalidConfig):
            manager.create_topic("u", 1, {"message.timestamp.before.max.ms": "-1"})


def test_tick_hands_the_interval_fsync_over_and_appends_go_on(tmp_path: Path) -> None:
    from kgroup.log.manager import PendingFlush

    config = LogConfig(fsync=FsyncPolicy.INTERVAL, fsync_interval_ms=1000)
    with LogManager(tmp_path, config) as manager:
        manager.create_topic("t", 1)
        log = manager.partition("t", 0)
        log.append(kio_batch([b"before"]), now_ms=BASE_TIME_MS)
        active = log._segments[-1]
        handed: list[PendingFlush] = []
        manager.tick(BASE_TIME_MS, flush_later=handed.append)
        assert handed == [] and active.dirty  # not due yet
        manager.tick(BASE_TIME_MS + 1000, flush_later=handed.append)
        (pending,) = handed
        assert not active.dirty  # counted synced: the next interval takes only what comes after
        assert pending.fds, "the segment's files, duplicated"
        for fd in pending.fds:
            assert os.fstat(fd).st_ino in {os.stat(p).st_ino for p in tmp_path.rglob("*") if p.is_file()}
        # appending (and the file cache closing its descriptors) while the fsync is pending
        log.append(kio_batch([b"during"]), now_ms=BASE_TIME_MS + 1001)
        assert active.dirty
        log._handles.close_all()
        fds = list(pending.fds)
        pending.run()
        assert pending.fds == []
        for fd in fds:  # run() closed its duplicates
            with pytest.raises(OSError):
                os.fstat(fd)
        manager.tick(BASE_TIME_MS + 2000, flush_later=handed.append)
        assert len(handed) == 2 and not active.dirty
        handed[1].run()
        assert [record[3] for record in decode(log.read(0, 1 << 20))] == [b"before", b"during"]


def test_a_failed_handed_over_fsync_marks_its_segments_unsynced_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgroup.log.manager import PendingFlush

    config = LogConfig(fsync=FsyncPolicy.INTERVAL, fsync_interval_ms=1000)
    with LogManager(tmp_path, config) as manager:
        manager.create_topic("t", 1)
        log = manager.partition("t", 0)
        log.append(kio_batch([b"a"]), now_ms=BASE_TIME_MS)
        active = log._segments[-1]
        handed: list[PendingFlush] = []
        manager.tick(BASE_TIME_MS, flush_later=handed.append)
        manager.tick(BASE_TIME_MS + 1000, flush_later=handed.append)
        (pending,) = handed
        assert not active.dirty
        fds = list(pending.fds)

        def failing_fsync(fd: int) -> None:
            raise OSError(5, "Input/output error")

        monkeypatch.setattr(os, "fsync", failing_fsync)
        with pytest.raises(OSError, match="Input/output error"):
            pending.run()
        monkeypatch.undo()
        for fd in fds:  # closed even though the fsync failed
            with pytest.raises(OSError):
                os.fstat(fd)
        assert active.dirty  # the next interval takes it again
        manager.tick(BASE_TIME_MS + 2000, flush_later=handed.append)
        assert len(handed) == 2 and handed[1].fds and not active.dirty
        handed[1].run()


def test_partitions_added_a_few_at_a_time_keep_the_metadata_or_leave_the_topic_as_it_was(
    tmp_path: Path,
) -> None:
    with LogManager(tmp_path) as manager:
        manager.create_topic("t", 1, None, {"replicas": [[0]]})
        addition = manager.begin_partitions("t", 4, {"replicas": [[0]] * 4})
        assert addition.partitions == 3
        with pytest.raises(InvalidPartitions):  # one addition at a time
            manager.begin_partitions("t", 5)
        with pytest.raises(InvalidTopic):  # nor deleted meanwhile
            manager.delete_topic("t")
        assert not addition.step(2) and manager.topics() == {"t": 1}
        addition.abort()
        assert manager.topics() == {"t": 1} and not (tmp_path / "t-1").exists()
        assert manager.topic_metadata("t") == {"replicas": [[0]]}
        addition = manager.begin_partitions("t", 3, {"replicas": [[0]] * 3})
        assert not addition.step(1) and addition.step(1)
        addition.finish()
        manager.partition("t", 2).append(kio_batch([b"c"]), now_ms=1)
    with LogManager(tmp_path) as manager:
        assert manager.topics() == {"t": 3}
        assert manager.topic_metadata("t") == {"replicas": [[0]] * 3}
        assert manager.partition("t", 2).log_end_offset == 1
