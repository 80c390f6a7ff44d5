"""CoordinatorLog: append and replay, tombstones, torn tails, checkpoints swapped in, failed writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.log import CoordinatorLog, FsyncPolicy
from kgroup.log.coordinator import encode_frame

Entries = list[tuple[bytes, bytes | None]]


def test_append_and_replay_in_order(tmp_path: Path) -> None:
    log = CoordinatorLog(tmp_path / "c.log")
    log.append([(b"g1", b"meta-1"), (b"g1/t-0", b"offset 5")])
    log.append([(b"g1/t-0", b"offset 9"), (b"g2", None)])
    log.append([])  # nothing to write
    expected = [(b"g1", b"meta-1"), (b"g1/t-0", b"offset 5"), (b"g1/t-0", b"offset 9"), (b"g2", None)]
    assert list(log.replay()) == expected
    log.close()
    reopened = CoordinatorLog(tmp_path / "c.log")
    assert list(reopened.replay()) == expected
    assert reopened.truncated_bytes == 0
    reopened.close()


def test_torn_tail_at_every_byte_of_the_last_frame(tmp_path: Path) -> None:
    path = tmp_path / "c.log"
    log = CoordinatorLog(path)
    log.append([(b"a", b"1")])
    log.append([(b"b", b"2"), (b"c", None)])
    good = path.stat().st_size
    log.append([(b"d", b"4" * 50), (b"e", b"5")])  # the frame a crash tears
    log.close()
    full = path.read_bytes()
    for cut in range(good, len(full)):
        path.write_bytes(full[:cut])
        reopened = CoordinatorLog(path)
        assert list(reopened.replay()) == [(b"a", b"1"), (b"b", b"2"), (b"c", None)], cut
        assert reopened.truncated_bytes == cut - good and path.stat().st_size == good
        reopened.append([(b"f", b"6")])
        assert list(reopened.replay())[-1] == (b"f", b"6")
        reopened.close()


@pytest.mark.parametrize("offset_from_end", [1, 10, 25])
def test_a_flipped_bit_drops_the_frame_and_everything_after(tmp_path: Path, offset_from_end: int) -> None:
    path = tmp_path / "c.log"
    log = CoordinatorLog(path)
    log.append([(b"a", b"1")])
    log.append([(b"b", b"x" * 30)])
    log.close()
    data = bytearray(path.read_bytes())
    data[-offset_from_end] ^= 0x04
    path.write_bytes(bytes(data))
    reopened = CoordinatorLog(path)
    assert list(reopened.replay()) == [(b"a", b"1")]
    reopened.close()


def test_zero_filled_tail(tmp_path: Path) -> None:
    path = tmp_path / "c.log"
    log = CoordinatorLog(path)
    log.append([(b"a", b"1")])
    log.close()
    with path.open("ab") as handle:
        handle.write(b"\0" * 100)
    reopened = CoordinatorLog(path)
    assert list(reopened.replay()) == [(b"a", b"1")] and reopened.truncated_bytes == 100
    reopened.close()


def test_a_checkpoint_is_swapped_in_with_the_frames_appended_meanwhile(tmp_path: Path) -> None:
    """The owner's checkpoint (made from the frames up to ``since``, in another thread) replaces the
    log; what was appended after ``since`` follows it. A crash at any point leaves one file or the other."""
    path = tmp_path / "c.log"
    log = CoordinatorLog(path)
    log.append([(b"a", b"1"), (b"b", b"2")])
    log.append([(b"a", None), (b"b", b"3")])
    since = log.size
    assert [e for frame in log.read_frames(since) for e in frame] == [
        (b"a", b"1"),
        (b"b", b"2"),
        (b"a", None),
        (b"b", b"3"),
    ]
    written = log.write_checkpoint([[(b"b", b"3")]])  # what the owner says the state is
    log.append([(b"c", b"4")])  # meanwhile
    copied = log.replace_with(log.checkpoint_path, since)
    assert copied == len(encode_frame([(b"c", b"4")])) == log.copied_bytes
    assert log.size == written + copied
    assert list(log.replay()) == [(b"b", b"3"), (b"c", b"4")]
    assert not log.checkpoint_path.exists()
    log.append([(b"d", b"5")])
    log.close()
    reopened = CoordinatorLog(path)
    assert list(reopened.replay()) == [(b"b", b"3"), (b"c", b"4"), (b"d", b"5")]
    reopened.close()


def test_an_interrupted_checkpoint_is_discarded_on_open(tmp_path: Path) -> None:
    path = tmp_path / "c.log"
    log = CoordinatorLog(path)
    log.append([(b"a", b"1")])
    log.write_checkpoint([[(b"x", b"never swapped in")]])
    log.close()  # a crash before replace_with
    reopened = CoordinatorLog(path)
    assert not reopened.checkpoint_path.exists()
    assert list(reopened.replay()) == [(b"a", b"1")]
    reopened.close()


def test_a_failed_write_raises_os_error_and_leaves_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.log"
    log = CoordinatorLog(path, fsync=FsyncPolicy.ALWAYS)
    log.append([(b"a", b"1")])
    size = path.stat().st_size
    real_write = os.write
    calls = {"n": 0}

    def half_then_fail(fd: int, data: bytes) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data)[:5])  # a short write...
        raise OSError(28, "No space left on device")  # ...then the disk is full

    monkeypatch.setattr(os, "write", half_then_fail)
    with pytest.raises(OSError):
        log.append([(b"b", b"2" * 100)])
    monkeypatch.setattr(os, "write", real_write)
    assert path.stat().st_size == size
    log.append([(b"c", b"3")])
    log.close()
    assert list(CoordinatorLog(path).replay()) == [(b"a", b"1"), (b"c", b"3")]


@settings(max_examples=40, deadline=None)
@given(
    frames=st.lists(
        st.lists(st.tuples(st.binary(max_size=20), st.none() | st.binary(max_size=40)), max_size=5),
        max_size=8,
    ),
    cut=st.integers(0, 10_000),
)
def test_replay_after_any_cut_is_a_prefix_of_whole_frames(
    tmp_path_factory: pytest.TempPathFactory, frames: list[Entries], cut: int
) -> None:
    path = tmp_path_factory.mktemp("coord") / "c.log"
    log = CoordinatorLog(path, fsync=FsyncPolicy.NEVER)
    ends = [0]
    for frame in frames:
        log.append(frame)
        ends.append(path.stat().st_size)
    log.close()
    data = path.read_bytes()
    cut = min(cut, len(data))
    path.write_bytes(data[:cut])
    whole = max(n for n, end in enumerate(ends) if end <= cut)
    reopened = CoordinatorLog(path)
    expected = [entry for frame in frames[:whole] if frame for entry in frame]
    assert list(reopened.replay()) == expected
    reopened.close()


def test_a_log_opened_unrecovered_is_cut_by_its_first_replay(tmp_path: Path) -> None:
    """A broker opens its coordinator log without reading it (it listens at once) and reads it on the
    coordinators' thread: the first replay stops at the torn tail and cuts it off; so does a first
    append that comes before any replay."""
    path = tmp_path / "c.log"
    log = CoordinatorLog(path)
    log.append([(b"a", b"1")])
    log.close()
    good = path.stat().st_size
    with path.open("ab") as f:
        f.write(b"\x00\x00\x01\x00torn")
    unread = CoordinatorLog(path, recover=False)
    assert not unread.recovered and unread.size == good + 8
    assert list(unread.replay()) == [(b"a", b"1")]
    assert unread.recovered and unread.truncated_bytes == 8 and path.stat().st_size == good
    unread.append([(b"b", b"2")])
    unread.close()
    appended_first = CoordinatorLog(path, recover=False)
    with path.open("ab") as f:
        f.write(b"junk")
    appended_first.size = path.stat().st_size
    appended_first.append([(b"c", b"3")])
    assert appended_first.truncated_bytes == 4
    assert list(appended_first.replay()) == [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]
    appended_first.close()
