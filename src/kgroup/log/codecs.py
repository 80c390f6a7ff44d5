"""The payload of a compressed RecordBatch, inflated as Kafka's ``CompressionType`` streams read it.

Codec ids are Kafka's (``CompressionType``): 1 gzip, 2 snappy, 3 lz4, 4 zstd. gzip is the standard
library's zlib; snappy, lz4 and zstd are ``cramjam``'s (see docs/dependencies.md). The framings are
the ones Kafka reads:

* gzip — ``GZIPInputStream``: one or more members; bytes after the last whole member are ignored,
  as Java's stream ignores them.
* snappy — snappy-java's ``SnappyInputStream``: the xerial framing (``\\x82SNAPPY\\x00``, two int32s,
  then int32-length raw blocks) or, without that magic, one raw snappy block.
* lz4 — ``Lz4BlockInputStream``: an LZ4 frame as Kafka reads it (version 1, independent blocks, no
  reserved bits, a block size of 64 KiB..4 MiB, the header checksum checked, block checksums checked
  when flagged, the content checksum skipped); a frame Kafka refuses is refused here.
* zstd — ``ZstdInputStream``: zstd frames.

A payload that does not inflate is :class:`UndecodablePayload`; Kafka fails such a produce with a
``KafkaException`` ("Failed to decompress record stream"), answered UNKNOWN_SERVER_ERROR. An unknown
codec id is :class:`UnknownCodec` (Kafka: ``IllegalArgumentException``, UNKNOWN_SERVER_ERROR). A
payload that inflates to more than ``limit`` bytes is :class:`TooLargeWhenInflated`: kgroup bounds
the memory one batch may take (Kafka streams the records instead).
"""

from __future__ import annotations

import struct
import zlib

import cramjam
import numpy as np

__all__ = [
    "CODEC_NAMES",
    "InflateError",
    "TooLargeWhenInflated",
    "UndecodablePayload",
    "UnknownCodec",
    "inflate",
    "xxhash32",
]

GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4
CODEC_NAMES = {GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = len(_XERIAL_MAGIC) + 8  # magic, version, compatible version
_INT32 = struct.Struct(">i")


class InflateError(Exception):
    """A compressed payload that cannot be read; ``message`` says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UnknownCodec(InflateError):
    pass


class UndecodablePayload(InflateError):
    pass


class TooLargeWhenInflated(InflateError):
    pass


def inflate(codec: int, payload: bytes | memoryview, limit: int) -> bytes:
    """The records section of a batch compressed with ``codec``; at most ``limit`` bytes."""
    name = CODEC_NAMES.get(codec)
    if name is None:
        raise UnknownCodec(f"Unknown compression type id: {codec}")
    try:
        if codec == GZIP:
            return _gunzip(bytes(payload), limit)
        if codec == SNAPPY:
            return _unsnappy(bytes(payload), limit)
        if codec == LZ4:
            return _unlz4(bytes(payload), limit)
        return _unzstd(bytes(payload), limit)
    except cramjam.DecompressionError as exc:
        if "failed to write whole buffer" in str(exc):
            raise TooLargeWhenInflated(f"{name} payload inflates to more than {limit} bytes") from None
        raise UndecodablePayload(f"Failed to decompress record stream ({name}: {exc})") from None


def _gunzip(payload: bytes, limit: int) -> bytes:
    out: list[bytes] = []
    size = 0
    data = payload
    first = True
    while first or data:
        inflater = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)
        try:
            chunk = inflater.decompress(data, limit - size + 1)
        except zlib.error as exc:
            if first:
                raise UndecodablePayload(f"Failed to decompress record stream (gzip: {exc})") from None
            break  # GZIPInputStream ignores what follows the last whole member
        size += len(chunk)
        out.append(chunk)
        if size > limit or inflater.unconsumed_tail:
            raise TooLargeWhenInflated(f"gzip payload inflates to more than {limit} bytes")
        if not inflater.eof:
            if first:
                raise UndecodablePayload("Failed to decompress record stream (gzip: truncated member)")
            break
        data = inflater.unused_data
        first = False
    return b"".join(out)


def _unsnappy(payload: bytes, limit: int) -> bytes:
    if not payload.startswith(_XERIAL_MAGIC):
        return _raw_snappy(payload, limit)
    if len(payload) < _XERIAL_HEADER:
        raise UndecodablePayload("Failed to decompress record stream (snappy: truncated xerial header)")
    out: list[bytes] = []
    size = 0
    position = _XERIAL_HEADER
    while position < len(payload):
        if position + 4 > len(payload):
            raise UndecodablePayload("Failed to decompress record stream (snappy: truncated block length)")
        (length,) = _INT32.unpack_from(payload, position)
        position += 4
        if length < 0 or position + length > len(payload):
            raise UndecodablePayload("Failed to decompress record stream (snappy: block runs past the end)")
        block = _raw_snappy(payload[position : position + length], limit - size)
        size += len(block)
        out.append(block)
        position += length
    return b"".join(out)


def _raw_snappy(block: bytes, limit: int) -> bytes:
    declared = cramjam.snappy.decompress_raw_len(block)
    if declared > limit:
        raise TooLargeWhenInflated(f"snappy payload inflates to more than {limit} bytes")
    return bytes(cramjam.snappy.decompress_raw(block))


_LZ4_MAGIC = 0x184D2204
_UINT32_LE = struct.Struct("<I")


def _lz4_error(message: str) -> UndecodablePayload:
    return UndecodablePayload(f"Failed to decompress record stream (lz4: {message})")


def _unlz4(payload: bytes, limit: int) -> bytes:
    """``Lz4BlockInputStream``: its header rules, then each block."""
    if len(payload) < 6:
        raise _lz4_error("Stream ended prematurely")
    (magic,) = _UINT32_LE.unpack_from(payload, 0)
    if magic != _LZ4_MAGIC:
        raise _lz4_error("Stream unsupported (invalid magic bytes)")
    flg, bd = payload[4], payload[5]
    if flg & 0x03:
        raise _lz4_error("Reserved bits must be 0")
    if not flg & 0x20:
        raise _lz4_error("Dependent block stream is unsupported")
    if flg >> 6 != 1:
        raise _lz4_error(f"Version {flg >> 6} is unsupported")
    size_code = (bd >> 4) & 0x07
    if bd & 0x0F or bd & 0x80:
        raise _lz4_error("Reserved2 field must be 0" if bd & 0x0F else "Reserved3 field must be 0")
    if not 4 <= size_code <= 7:
        raise _lz4_error("Block size value must be between 4 and 7")
    max_block = 1 << (2 * size_code + 8)
    position = 6 + (8 if flg & 0x08 else 0)  # the content size, if any, is skipped
    if position + 1 > len(payload):
        raise _lz4_error("Stream ended prematurely")
    if payload[position] != (xxhash32(payload[4:position]) >> 8) & 0xFF:
        raise _lz4_error("Stream frame descriptor corrupted")
    position += 1
    out: list[bytes] = []
    size = 0
    while True:
        if position + 4 > len(payload):
            raise _lz4_error("Stream ended prematurely")
        (word,) = _UINT32_LE.unpack_from(payload, position)
        position += 4
        length = word & 0x7FFFFFFF
        if length == 0:
            return b"".join(out)  # the end mark (a content checksum after it is not checked)
        if length > max_block:
            raise _lz4_error(f"Block size {length} exceeded max: {max_block}")
        if position + length > len(payload):
            raise _lz4_error("Stream ended prematurely")
        stored = payload[position : position + length]
        position += length
        if flg & 0x10:  # a block checksum follows the block
            if position + 4 > len(payload):
                raise _lz4_error("Stream ended prematurely")
            if _UINT32_LE.unpack_from(payload, position)[0] != xxhash32(stored):
                raise _lz4_error("Block checksum mismatch")
            position += 4
        if word & 0x80000000:  # stored uncompressed
            block = stored
        else:
            room = np.empty(max_block, dtype=np.uint8)
            written = cramjam.lz4.decompress_block_into(stored, room.data, output_len=max_block)
            block = room[:written].tobytes()
        size += len(block)
        if size > limit:
            raise TooLargeWhenInflated(f"lz4 payload inflates to more than {limit} bytes")
        out.append(block)


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_MASK32 = 0xFFFFFFFF


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK32


def xxhash32(data: bytes, seed: int = 0) -> int:
    """XXH32 (the LZ4 frame format's checksum), in Python: headers are a few bytes, and block
    checksums, which Kafka's producers do not write, at most max.message.bytes."""
    length = len(data)
    position = 0
    if length >= 16:
        v1 = (seed + _P1 + _P2) & _MASK32
        v2 = (seed + _P2) & _MASK32
        v3 = seed & _MASK32
        v4 = (seed - _P1) & _MASK32
        lanes = struct.unpack_from(f"<{(length // 16) * 4}I", data, 0)
        for index in range(0, len(lanes), 4):
            v1 = (_rotl((v1 + lanes[index] * _P2) & _MASK32, 13) * _P1) & _MASK32
            v2 = (_rotl((v2 + lanes[index + 1] * _P2) & _MASK32, 13) * _P1) & _MASK32
            v3 = (_rotl((v3 + lanes[index + 2] * _P2) & _MASK32, 13) * _P1) & _MASK32
            v4 = (_rotl((v4 + lanes[index + 3] * _P2) & _MASK32, 13) * _P1) & _MASK32
        position = len(lanes) * 4
        hashed = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _MASK32
    else:
        hashed = (seed + _P5) & _MASK32
    hashed = (hashed + length) & _MASK32
    while position + 4 <= length:
        (lane,) = _UINT32_LE.unpack_from(data, position)
        hashed = (_rotl((hashed + lane * _P3) & _MASK32, 17) * _P4) & _MASK32
        position += 4
    while position < length:
        hashed = (_rotl((hashed + data[position] * _P5) & _MASK32, 11) * _P1) & _MASK32
        position += 1
    hashed ^= hashed >> 15
    hashed = (hashed * _P2) & _MASK32
    hashed ^= hashed >> 13
    hashed = (hashed * _P3) & _MASK32
    hashed ^= hashed >> 16
    return hashed


def _unzstd(payload: bytes, limit: int) -> bytes:
    """zstd frames inflated into a buffer of ``limit`` bytes (uninitialized: only what is written is
    touched), so a payload that inflates to more fails instead of taking the memory."""
    buffer = np.empty(limit, dtype=np.uint8)
    written = cramjam.zstd.decompress_into(payload, buffer.data)
    return buffer[:written].tobytes()
