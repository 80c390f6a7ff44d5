"""kgroup.wire.varint, the one Python home of Kafka's varints, and the numba kernels' copies held to it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kgroup.log import _records_kernel
from kgroup.spark.source import _batch_kernels
from kgroup.wire.varint import (
    VarintError,
    encode_uvarint,
    encode_varint,
    read_uvarint,
    uvarint_size,
    varint_size,
)

_u32 = st.integers(0, 2**32 - 1)
_i64 = st.integers(-(2**63), 2**63 - 1)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (1, b"\x01"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (300, b"\xac\x02"),
        (2**32 - 1, b"\xff\xff\xff\xff\x0f"),
    ],
)
def test_unsigned_varints_are_kafkas_bytes(value: int, encoded: bytes) -> None:
    """``ByteUtils.writeUnsignedVarint``'s bytes, read back by ``readUnsignedVarint``."""
    assert encode_uvarint(value) == encoded
    assert read_uvarint(encoded + b"\xff", 0, len(encoded)) == (value, len(encoded))


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (-1, b"\x01"),
        (1, b"\x02"),
        (-64, b"\x7f"),
        (64, b"\x80\x01"),
        (-(2**63), b"\xff" * 9 + b"\x01"),
    ],
)
def test_zigzag_varints_are_kafkas_bytes(value: int, encoded: bytes) -> None:
    """``ByteUtils.writeVarint`` / ``writeVarlong``: zig-zag, then the unsigned bytes."""
    assert encode_varint(value) == encoded
    assert varint_size(value) == len(encoded)


@given(_u32)
def test_an_unsigned_varint_round_trips(value: int) -> None:
    encoded = encode_uvarint(value)
    assert read_uvarint(encoded, 0, len(encoded)) == (value, len(encoded))


@pytest.mark.parametrize(
    ("data", "truncated"), [(b"", True), (b"\x80", True), (b"\x80\x80\x80\x80\x80\x01", False)]
)
def test_a_truncated_or_overlong_varint_is_refused(data: bytes, truncated: bool) -> None:
    with pytest.raises(VarintError) as raised:
        read_uvarint(data, 0, len(data))
    assert raised.value.truncated is truncated


@given(st.integers(-(2**62), 2**62 - 1))
def test_the_batch_kernels_copies_agree(value: int) -> None:
    """The Spark record-batch kernels size and write zig-zag varints as the one home does, for
    values below 2**62 in magnitude (lengths and deltas: their int64 zig-zag wraps above that, where
    Kafka's unsigned shift does not)."""
    encoded = encode_varint(value)
    assert _batch_kernels._varint_size(value) == varint_size(value)
    out = np.zeros(10, dtype=np.uint8)
    assert _batch_kernels._put_varint(out, 0, value) == len(encoded)
    assert bytes(out[: len(encoded)]) == encoded


@given(st.integers(-(2**27), 2**27 - 1))
def test_the_log_kernels_reader_agrees(value: int) -> None:
    """The log's record kernel reads the zig-zag varints (of at most 4 bytes) the one home writes."""
    encoded = encode_varint(value)
    data = np.frombuffer(encoded + b"\x00", dtype=np.uint8)
    assert _records_kernel._varint4(data, 0, len(data)) == (value, len(encoded))


@given(_u32)
def test_unsigned_varint_sizes_are_the_bytes_written(value: int) -> None:
    """``ByteUtils.sizeOfUnsignedVarint``: 1 byte below 128 (a zig-zag varint needs 2 from 64)."""
    assert uvarint_size(value) == len(encode_uvarint(value))

