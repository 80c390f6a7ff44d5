"""Kafka's varints, written once: the unsigned varint of the flexible versions' lengths and tagged
fields (``ByteUtils.readUnsignedVarint`` / ``writeUnsignedVarint``) and the zig-zag varint / varlong of
the record format (``ByteUtils.writeVarint`` / ``sizeOfVarint``).

The numba kernels (``kgroup.log._records_kernel``, the Spark record-batch kernels) keep their own
compiled copies; their tests hold them to these.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["VarintError", "encode_uvarint", "encode_varint", "read_uvarint", "uvarint_size", "varint_size"]


class VarintError(ValueError):
    """Bytes that are not an unsigned varint of at most 5 bytes; ``truncated`` if the bytes ran out."""

    def __init__(self, truncated: bool) -> None:
        super().__init__("truncated varint" if truncated else "varint longer than 5 bytes")
        self.truncated = truncated


def read_uvarint(data: Sequence[int] | bytes | memoryview, offset: int, end: int) -> tuple[int, int]:
    """The unsigned varint at ``data[offset:end]`` (at most 5 bytes, as Java's int): ``(value, the
    offset after it)``; :class:`VarintError` if it is truncated or longer."""
    value = shift = 0
    while True:
        if offset >= end:
            raise VarintError(truncated=True)
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, offset
        shift += 7
        if shift > 28:
            raise VarintError(truncated=False)


def encode_uvarint(value: int) -> bytes:
    """``value`` (0 or more) as an unsigned varint."""
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """``value`` as Kafka's zig-zag varint (an int) or varlong (a long): the same bytes."""
    return encode_uvarint((value << 1) ^ (value >> 63))


def uvarint_size(value: int) -> int:
    """``ByteUtils.sizeOfUnsignedVarint``: the bytes of ``value`` (0 or more) as an unsigned varint (a
    compact string's or array's length, a tagged field's tag and size)."""
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


def varint_size(value: int) -> int:
    """``ByteUtils.sizeOfVarint`` / ``sizeOfVarlong``: the bytes of ``value``'s zig-zag varint."""
    raw = (value << 1) ^ (value >> 63)
    size = 1
    while raw >= 0x80:
        raw >>= 7
        size += 1
    return size
