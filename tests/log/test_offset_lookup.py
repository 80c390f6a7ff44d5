"""A fetch's look-up of its offset in a segment (``Segment.position_for_offset``): from the last index
entry at or below the offset, the batch headers are read in chunks. Checked against the plain walk of
every header (``Segment.iter_headers``) on logs of random batch sizes, index intervals and offsets,
and a damaged length is refused as before."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.log.batches import kio_batch
from tests.log.conftest import OpenLog, partition_settings

from kgroup.log import LogStorageError, PartitionLog
from kgroup.log.segment import Segment


def _walked(segment: Segment, offset: int) -> int | None:
    """The position of the first batch whose last offset is at or past ``offset``, header by header."""
    position = 0
    for header in segment.iter_headers():
        if header.last_offset >= offset:
            return position
        position += header.size
    return None


@settings(max_examples=60, deadline=None)
@given(
    batches=st.lists(st.tuples(st.integers(1, 40), st.integers(1, 3000)), min_size=1, max_size=40),
    index_interval=st.sampled_from([1, 100, 4096, 20_000, 1 << 20]),
)
def test_the_chunked_look_up_finds_what_the_header_walk_finds(
    batches: list[tuple[int, int]], index_interval: int
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        log = PartitionLog(
            Path(directory) / "t-0",
            partition_settings(index_interval_bytes=index_interval),
            recover_tail=True,
        )
        try:
            for records, size in batches:
                log.append(kio_batch([b"v" * size] * records), now_ms=1)
            (segment,) = log._segments
            end = log.log_end_offset
            for offset in range(end + 2):
                assert segment.position_for_offset(offset) == _walked(segment, offset), offset
        finally:
            log.close()


def test_a_length_running_past_the_file_is_refused(open_log: OpenLog) -> None:
    log = open_log()
    for _ in range(3):
        log.append(kio_batch([b"v" * 100] * 10), now_ms=1)
    segment = log._segments[-1]
    second = segment.position_for_offset(10)
    assert second is not None and segment.position_for_offset(25) is not None
    with open(segment.log_path, "r+b") as file:  # the second batch's length now runs past the file
        file.seek(second + 8)
        file.write((10**8).to_bytes(4, "big"))
    assert segment.position_for_offset(5) == 0  # the first batch is still found
    with pytest.raises(LogStorageError, match="damaged file"):
        segment.position_for_offset(25)
