"""Opening a partition after a crash: torn tails, corrupt batches, stale indexes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.log.batches import client_batch, decode, kio_batch
from tests.log.conftest import OpenLog

from kgroup.log import LogStorageError
from kgroup.log.batch import HEADER_SIZE


def fill(log_dir_log: OpenLog, batches: int, **overrides: object) -> tuple[list[int], bytes]:
    """Append ``batches`` batches; return the log end after each and the active segment's bytes."""
    log = log_dir_log(**overrides)
    ends = []
    for n in range(batches):
        values = [b"r%d-%d-" % (n, i) + b"z" * 200 for i in range(n % 3 + 1)]  # gzip pays for them
        raw = kio_batch(values) if n % 2 else client_batch(values)
        ends.append(log.append(raw, now_ms=1).last_offset + 1)
    return ends, log.read(0, 1 << 30)


def active_segment(directory: Path) -> Path:
    return sorted(directory.glob("*.log"))[-1]


@pytest.mark.parametrize("unclean", [True, False])
def test_torn_tail_at_every_byte_of_the_last_batch(open_log: OpenLog, tmp_path: Path, unclean: bool) -> None:
    ends, everything = fill(open_log, 6)
    segment = active_segment(tmp_path / "t-0")
    full = segment.read_bytes()
    positions = []  # where each batch starts, by its length field
    position = 0
    while position < len(full):
        positions.append(position)
        position += int.from_bytes(full[position + 8 : position + 12], "big") + 12
    last = positions[-1]
    open_log(recover_tail=False).close()
    for cut in range(last, len(full)):  # bounded: one batch's bytes
        segment.write_bytes(full[:cut])
        reopened = open_log(recover_tail=unclean)
        assert reopened.log_end_offset == ends[-2], cut
        assert reopened.recovery.truncated_bytes == cut - last
        assert segment.stat().st_size == last
        assert reopened.read(0, 1 << 30) == everything[:last]
        assert reopened.append(kio_batch([b"after"]), now_ms=1).base_offset == ends[-2]
        reopened.close()


def test_torn_tail_is_found_without_the_unclean_flag_too(open_log: OpenLog, tmp_path: Path) -> None:
    ends, everything = fill(open_log, 4)
    segment = active_segment(tmp_path / "t-0")
    with segment.open("ab") as handle:
        handle.write(everything[:30])  # half a header
    log = open_log(recover_tail=False)
    assert log.log_end_offset == ends[-1]
    assert log.recovery.truncated_bytes == 30


@pytest.mark.parametrize("where", ["header", "records", "crc"])
def test_a_flipped_bit_in_the_last_batch_truncates_it(open_log: OpenLog, tmp_path: Path, where: str) -> None:
    ends, everything = fill(open_log, 5)
    segment = active_segment(tmp_path / "t-0")
    data = bytearray(segment.read_bytes())
    last = len(data) - len(open_log(recover_tail=False).read(ends[-2], 1 << 30))
    index = {"header": last + 30, "records": len(data) - 2, "crc": last + 18}[where]
    data[index] ^= 0x10
    segment.write_bytes(bytes(data))
    log = open_log(recover_tail=True)
    assert log.log_end_offset == ends[-2]
    assert log.read(0, 1 << 30) == everything[:last]


def test_zero_filled_tail_is_cut(open_log: OpenLog, tmp_path: Path) -> None:
    ends, everything = fill(open_log, 3)
    segment = active_segment(tmp_path / "t-0")
    with segment.open("ab") as handle:
        handle.write(b"\0" * 4096)  # what a machine crash leaves after a file grew but before data landed
    log = open_log(recover_tail=True)
    assert log.log_end_offset == ends[-1]
    assert log.recovery.truncated_bytes == 4096
    assert log.read(0, 1 << 30) == everything


def test_corruption_in_an_older_segment_drops_later_segments(open_log: OpenLog, tmp_path: Path) -> None:
    log = open_log(segment_bytes=600)
    for n in range(12):
        log.append(kio_batch([b"v" * 150, b"n%d" % n]), now_ms=1)
    bases = log.segment_base_offsets
    assert len(bases) >= 3
    log.close()
    second = tmp_path / "t-0" / f"{bases[1]:020d}.log"
    data = second.read_bytes()
    second.write_bytes(data[: len(data) - 5])  # a torn tail in a non-active segment
    (tmp_path / "t-0" / f"{bases[1]:020d}.index").write_bytes(b"")  # and no index: full check
    reopened = open_log(recover_tail=True)
    assert reopened.segment_base_offsets == bases[:2]
    assert reopened.recovery.segments_removed == len(bases) - 2
    assert reopened.log_end_offset < bases[2]
    assert not (tmp_path / "t-0" / f"{bases[2]:020d}.log").exists()


def test_garbage_index_is_rebuilt(open_log: OpenLog, tmp_path: Path) -> None:
    log = open_log(index_interval_bytes=64)
    for n in range(40):
        log.append(kio_batch([b"x%d" % n]), now_ms=1)
    everything = log.read(0, 1 << 30)
    log.close()
    index = tmp_path / "t-0" / f"{0:020d}.index"
    good = index.read_bytes()
    assert len(good) >= 8 * 5
    wrong_last = good[:-8] + b"\0\0\0\x27\0\0\xff\xff"  # an entry pointing into the middle of a batch
    for garbage in (good[:-3], good[8:16] + good[:8] + good[16:], b"\xff" * len(good), wrong_last):
        index.write_bytes(garbage)
        reopened = open_log(recover_tail=False, index_interval_bytes=64)
        assert reopened.recovery.indexes_rebuilt == 1
        assert index.read_bytes() == good
        for offset in range(40):
            assert decode(reopened.read(offset, 1))[0][0] == offset
        assert reopened.read(0, 1 << 30) == everything
        reopened.close()


def test_orphan_index_files_are_removed(open_log: OpenLog, tmp_path: Path) -> None:
    open_log().append(kio_batch([b"a"]), now_ms=1)
    stray = tmp_path / "t-0" / f"{77:020d}.index"
    stray.write_bytes(b"\0" * 8)
    open_log()
    assert not stray.exists()


def test_recovery_scans_a_long_segment_in_chunks(open_log: OpenLog, tmp_path: Path) -> None:
    log = open_log(index_interval_bytes=1 << 30)  # no index entries: the whole segment is scanned
    big = kio_batch([os.urandom(300_000) for _ in range(3)])
    for _ in range(5):
        log.append(big, now_ms=1)
    assert log.size_bytes > 4 * (1 << 20)  # several read chunks
    log.close()
    segment = active_segment(tmp_path / "t-0")
    with segment.open("r+b") as handle:
        handle.truncate(segment.stat().st_size - 1000)
    reopened = open_log(recover_tail=True)
    assert reopened.log_end_offset == 12
    assert reopened.recovery.truncated_bytes == len(big) - 1000
    assert len(reopened.read(9, 1)) == len(big)
    assert HEADER_SIZE == 61


@pytest.mark.timeout(30)
def test_damage_inside_an_older_segment_is_a_storage_error_never_a_hang(
    open_log: OpenLog, tmp_path: Path
) -> None:
    log = open_log(segment_bytes=2000, index_interval_bytes=100)
    for n in range(20):
        log.append(kio_batch([b"v" * 100, b"n%d" % n]), now_ms=1)
    bases = log.segment_base_offsets
    log.close()
    first = tmp_path / "t-0" / f"{bases[0]:020d}.log"
    data = bytearray(first.read_bytes())
    second_batch = int.from_bytes(data[8:12], "big") + 12
    data[second_batch + 8 : second_batch + 12] = (-40).to_bytes(4, "big", signed=True)  # bit rot in a length
    first.write_bytes(bytes(data))
    # a clean open checks only each segment's tail after its last index entry: the damage is not seen
    reopened = open_log(segment_bytes=2000, index_interval_bytes=100, recover_tail=False)
    assert reopened.log_end_offset == 40
    assert decode(reopened.read(0, 1))[0][0] == 0  # the batch before the damage is still served
    with pytest.raises(LogStorageError) as info:
        reopened.read(2, 1 << 20)  # the damaged batch is never served, nor skipped over
    assert info.value.error_code == 56
    assert decode(reopened.read(bases[1], 1))[0][0] == bases[1]  # later segments are unaffected
