"""PartitionLog on real files: appends and reads, segment rolls, the sparse index, ListOffsets, retention."""

from __future__ import annotations

import os
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.log.batches import BASE_TIME_MS, client_batch, decode, kio_batch
from tests.log.conftest import OpenLog, partition_settings

from kgroup.log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    FileSlice,
    LogStorageError,
    OffsetOutOfRange,
    PartitionLog,
)
from kgroup.log.batch import parse_header
from kgroup.log.errors import LogErrorCode
from kgroup.log.segment import SLICE_MIN_BYTES
from kgroup.model import PeerError


def test_empty_log(open_log: OpenLog) -> None:
    log = open_log()
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (0, 0, 0)
    assert log.read(0, 1000) == b""
    assert log.offset_for_timestamp(EARLIEST_TIMESTAMP) == (-1, 0)
    assert log.offset_for_timestamp(LATEST_TIMESTAMP) == (-1, 0)
    assert log.offset_for_timestamp(MAX_TIMESTAMP) is None
    assert log.offset_for_timestamp(0) is None


def test_append_assigns_offsets_and_reads_back_every_record(open_log: OpenLog) -> None:
    log = open_log()
    first = log.append(kio_batch([b"a", b"b", b"c"]), now_ms=1)
    second = log.append(client_batch([b"d" * 300, b"e" * 300]), now_ms=2)
    assert (first.base_offset, first.last_offset, first.log_append_time, first.duplicate) == (0, 2, -1, False)
    assert (second.base_offset, second.last_offset) == (3, 4)
    assert log.log_end_offset == log.high_watermark == 5
    assert [(r[0], r[3]) for r in decode(log.read(0, 1 << 20))] == list(
        enumerate([b"a", b"b", b"c", b"d" * 300, b"e" * 300])
    )


def test_stored_bytes_are_the_produced_bytes_but_offset_and_epoch(open_log: OpenLog) -> None:
    log = open_log()
    log.leader_epoch = 4
    raw = client_batch([b"x" * 300, b"y"])
    log.append(kio_batch([b"first"]), now_ms=1)
    log.append(raw, now_ms=1)
    stored = log.read(1, 1 << 20)
    assert stored[:8] == (1).to_bytes(8, "big") and stored[8:12] == raw[8:12]
    assert stored[12:16] == (4).to_bytes(4, "big")
    assert stored[16:] == raw[16:]  # magic, CRC and everything the CRC covers: untouched
    header = parse_header(stored)
    assert (header.base_offset, header.partition_leader_epoch) == (1, 4)


def test_a_short_then_failed_write_raises_and_leaves_the_log_as_it_was(
    open_log: OpenLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stamped header and the produced records go out with one pwritev: a short write of part of
    them, then a full disk, is cut back off (nothing acknowledged, nothing half there)."""
    log = open_log()
    log.append(kio_batch([b"a"]), now_ms=1)
    before = bytes(log.read(0, 1 << 20))
    real_pwritev = os.pwritev
    calls = {"n": 0}

    def short_then_fail(fd: int, buffers: Sequence[bytes | memoryview], position: int) -> int:
        calls["n"] += 1
        if calls["n"] == 1:  # header and a bit more
            return real_pwritev(fd, [b"".join(bytes(b) for b in buffers)[:70]], position)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "pwritev", short_then_fail)
    with pytest.raises(OSError):
        log.append(kio_batch([b"b" * 500]), now_ms=1)
    monkeypatch.setattr(os, "pwritev", real_pwritev)
    assert calls["n"] == 2 and log.log_end_offset == 1
    assert log.read(0, 1 << 20) == before
    log.append(kio_batch([b"c"]), now_ms=1)
    assert [(r[0], r[3]) for r in decode(log.read(0, 1 << 20))] == [(0, b"a"), (1, b"c")]


def test_read_returns_the_whole_batch_holding_the_offset(open_log: OpenLog) -> None:
    log = open_log()
    for n in range(5):
        log.append(kio_batch([b"%d-%d" % (n, i) for i in range(4)]), now_ms=1)
    fetched = log.read(9, 1)  # inside the third batch (8..11); max_bytes smaller than one batch
    assert [r[0] for r in decode(fetched)] == [8, 9, 10, 11]
    assert log.read(20, 100) == b""
    with pytest.raises(OffsetOutOfRange):
        log.read(21, 100)
    with pytest.raises(OffsetOutOfRange):
        log.read(-1, 100)


def test_read_stops_at_max_bytes_on_whole_batches(open_log: OpenLog) -> None:
    log = open_log()
    raws = [kio_batch([b"v" * 100]) for _ in range(10)]
    for raw in raws:
        log.append(raw, now_ms=1)
    size = len(raws[0])
    assert len(log.read(0, size * 3 + size // 2)) == size * 3
    assert len(log.read(0, size * 3)) == size * 3


def test_segments_roll_at_segment_bytes_and_offsets_continue(open_log: OpenLog) -> None:
    log = open_log(segment_bytes=1000)
    batch = kio_batch([b"v" * 200])
    for _ in range(12):
        log.append(batch, now_ms=1)
    bases = log.segment_base_offsets
    assert len(bases) > 3 and bases[0] == 0
    assert all(size <= 1000 for size in (p.stat().st_size for p in log.directory.glob("*.log")))
    assert sorted(p.name for p in log.directory.glob("*.log"))[1] == f"{bases[1]:020d}.log"
    records = []
    offset = 0
    while offset < log.log_end_offset:
        chunk = decode(log.read(offset, 1 << 20))
        records.extend(chunk)
        offset = chunk[-1][0] + 1
    assert [r[0] for r in records] == list(range(12))


def test_a_batch_larger_than_a_segment_is_refused(open_log: OpenLog) -> None:
    log = open_log(segment_bytes=200)
    with pytest.raises(PeerError) as info:
        log.append(kio_batch([b"v" * 300]), now_ms=1)
    assert info.value.error_code == LogErrorCode.RECORD_LIST_TOO_LARGE
    assert log.log_end_offset == 0


def test_sparse_index_finds_every_offset(open_log: OpenLog) -> None:
    log = open_log(index_interval_bytes=256, segment_bytes=20_000)
    sizes = [1, 3, 2, 5, 1, 4]
    for n in range(60):
        count = sizes[n % len(sizes)]
        log.append(kio_batch([b"p%d-%d" % (n, i) + b"." * 40 for i in range(count)]), now_ms=1)
    index_files = sorted(log.directory.glob("*.index"))
    assert sum(p.stat().st_size for p in index_files) >= 8 * 10  # the index is sparse but not empty
    for offset in range(log.log_end_offset):
        first = decode(log.read(offset, 1))
        assert first[0][0] <= offset <= first[-1][0]


def test_offset_for_timestamp(open_log: OpenLog) -> None:
    log = open_log(index_interval_bytes=100, segment_bytes=2000)
    for n in range(20):  # batch n holds timestamps BASE + 10n, BASE + 10n + 1
        log.append(kio_batch([b"a" * 30, b"b" * 30], timestamp_ms=BASE_TIME_MS + 10 * n), now_ms=1)
    assert len(log.segment_base_offsets) > 1
    assert log.offset_for_timestamp(BASE_TIME_MS) == (BASE_TIME_MS, 0)
    assert log.offset_for_timestamp(BASE_TIME_MS + 1) == (BASE_TIME_MS + 1, 1)
    assert log.offset_for_timestamp(BASE_TIME_MS + 2) == (BASE_TIME_MS + 10, 2)
    assert log.offset_for_timestamp(BASE_TIME_MS + 95) == (BASE_TIME_MS + 100, 20)
    assert log.offset_for_timestamp(BASE_TIME_MS + 191) == (BASE_TIME_MS + 191, 39)
    assert log.offset_for_timestamp(BASE_TIME_MS + 192) is None
    assert log.offset_for_timestamp(0) == (BASE_TIME_MS, 0)
    assert log.offset_for_timestamp(MAX_TIMESTAMP) == (BASE_TIME_MS + 191, 39)
    assert log.offset_for_timestamp(LATEST_TIMESTAMP) == (-1, 40)
    assert log.offset_for_timestamp(EARLIEST_TIMESTAMP) == (-1, 0)


def test_offset_for_timestamp_in_a_gzip_batch(open_log: OpenLog) -> None:
    log = open_log()
    raw = client_batch([b"a" * 200, b"b" * 200, b"c" * 200], timestamp_ms=BASE_TIME_MS)
    assert parse_header(raw).compression == 1  # kafka-python sends it gzipped (it compresses well)
    log.append(raw, now_ms=1)
    assert log.offset_for_timestamp(BASE_TIME_MS + 2) == (BASE_TIME_MS + 2, 2)


def test_log_append_time_topic(open_log: OpenLog) -> None:
    log = open_log(log_append_time=True)
    result = log.append(kio_batch([b"a", b"b"]), now_ms=BASE_TIME_MS + 5000)
    assert result.log_append_time == BASE_TIME_MS + 5000
    assert [r[1] for r in decode(log.read(0, 1 << 20))] == [BASE_TIME_MS + 5000] * 2
    assert log.offset_for_timestamp(BASE_TIME_MS + 4000) == (BASE_TIME_MS + 5000, 0)


def test_retention_by_bytes_deletes_oldest_segments_never_the_active_one(open_log: OpenLog) -> None:
    log = open_log(segment_bytes=500, retention_bytes=1000)
    batch = kio_batch([b"v" * 150])
    for _ in range(20):
        log.append(batch, now_ms=1)
    before = log.segment_base_offsets
    deleted = log.apply_retention(now_ms=1)
    assert deleted == len(before) - len(log.segment_base_offsets) > 0
    first_size = (log.directory / f"{log.segment_base_offsets[0]:020d}.log").stat().st_size
    assert 0 <= log.size_bytes - 1000 < first_size  # one more deletion would go below retention.bytes
    assert log.log_start_offset == log.segment_base_offsets[0] > 0
    assert log.log_end_offset == 20
    with pytest.raises(OffsetOutOfRange):
        log.read(0, 100)
    assert decode(log.read(log.log_start_offset, 1 << 20))[0][0] == log.log_start_offset
    assert log.offset_for_timestamp(EARLIEST_TIMESTAMP) == (-1, log.log_start_offset)


def test_retention_by_time(open_log: OpenLog) -> None:
    log = open_log(segment_bytes=300, retention_ms=1000)
    for n in range(10):
        log.append(kio_batch([b"v" * 150], timestamp_ms=BASE_TIME_MS + 100 * n), now_ms=1)
    segments = len(log.segment_base_offsets)
    assert log.apply_retention(now_ms=BASE_TIME_MS + 1000) == 0  # nothing older than 1 s yet
    deleted = log.apply_retention(now_ms=BASE_TIME_MS + 1450)  # batches up to +400 are past retention
    assert deleted > 0 and len(log.segment_base_offsets) == segments - deleted
    assert log.log_start_offset <= 5


def test_reopen_keeps_everything(open_log: OpenLog) -> None:
    log = open_log(segment_bytes=800, index_interval_bytes=100)
    for n in range(30):
        log.append(kio_batch([b"r%d" % n]), now_ms=1)
    expected = log.read(0, 1 << 20)
    reopened = open_log(segment_bytes=800, index_interval_bytes=100, recover_tail=False)
    assert reopened.log_end_offset == 30
    assert reopened.read(0, 1 << 20) == expected
    assert reopened.recovery.truncated_bytes == 0 and reopened.recovery.indexes_rebuilt == 0
    assert reopened.append(kio_batch([b"next"]), now_ms=1).base_offset == 30


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.sampled_from([1, 10, 100, 70, 120]), min_size=1, max_size=30),
    reads=st.lists(st.tuples(st.integers(0, 10**9), st.integers(0, 600_000)), min_size=1, max_size=8),
)
def test_a_slice_of_the_file_is_what_read_answers(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int], reads: list[tuple[int, int]]
) -> None:
    """read_slice answers the batches read answers: a FileSlice of the segment file from 64 KiB on
    (its bytes read back equal), bytes below that or past 16 batches."""
    log = PartitionLog(tmp_path_factory.mktemp("slice") / "t-0", partition_settings(), recover_tail=True)
    try:
        for count in sizes:  # batches of 1 to 120 records of 1 KiB
            log.append(kio_batch([b"v" * 1000] * count), now_ms=1)
        for at, max_bytes in reads:
            offset = at % (log.log_end_offset + 1)
            expected = bytes(log.read(offset, max_bytes))
            got = log.read_slice(offset, max_bytes)
            if isinstance(got, FileSlice):
                try:
                    assert len(got) >= SLICE_MIN_BYTES and got.read() == expected
                    assert got.read(100) == expected[100:]
                finally:
                    got.close()
            else:
                assert bytes(got) == expected
    finally:
        log.close()


def test_a_slice_refuses_a_damaged_file_as_read_does(open_log: OpenLog) -> None:
    log = open_log()
    log.append(kio_batch([b"v" * 1000] * 100), now_ms=1)
    log.append(kio_batch([b"w" * 1000] * 100), now_ms=1)
    segment = log._segments[-1]
    position = segment.position_for_offset(100)
    assert position is not None
    with open(segment.log_path, "r+b") as file:  # the second batch's length now runs past the file
        file.seek(position + 8)
        file.write((10**8).to_bytes(4, "big"))
    for read in (log.read, log.read_slice):
        with pytest.raises(LogStorageError, match="damaged file"):
            read(100, 1 << 20)
    whole = log.read_slice(0, 1)  # the first batch, whole, even over max_bytes
    assert isinstance(whole, FileSlice)
    try:
        assert whole.read() == bytes(log.read(0, 1))
    finally:
        whole.close()
