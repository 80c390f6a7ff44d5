"""numba kernels behind :mod:`kgroup.assignors.fast.userdata` (compiled on first use, cached on disk)."""

from __future__ import annotations

from typing import Any

import numpy as np

from kgroup._njit import njit

__all__ = ["decode_kernel", "fnv1a"]

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


@njit(cache=True)
def fnv1a(data: np.ndarray, start: Any, length: Any) -> Any:
    """64-bit FNV-1a of ``data[start:start+length]`` (wrapping uint64 arithmetic)."""
    h = _FNV_OFFSET
    for i in range(start, start + length):
        h = (h ^ np.uint64(data[i])) * _FNV_PRIME
    return h


@njit(cache=True)
def _int32_be(data: np.ndarray, pos: int) -> Any:
    value = (
        (np.int64(data[pos]) << 24)
        | (np.int64(data[pos + 1]) << 16)
        | (np.int64(data[pos + 2]) << 8)
        | np.int64(data[pos + 3])
    )
    return value - (np.int64(1) << 32) if value >= (np.int64(1) << 31) else value


@njit(cache=True)
def _find_topic(
    data: np.ndarray,
    start: int,
    length: int,
    blob: np.ndarray,
    offsets: np.ndarray,
    lengths: np.ndarray,
    sorted_hashes: np.ndarray,
    ranks_by_hash: np.ndarray,
) -> Any:
    h = fnv1a(data, start, length)
    i = np.searchsorted(sorted_hashes, h)
    while i < sorted_hashes.shape[0] and sorted_hashes[i] == h:
        rank = ranks_by_hash[i]
        if lengths[rank] == length:
            same = True
            off = offsets[rank]
            for k in range(length):
                if blob[off + k] != data[start + k]:
                    same = False
                    break
            if same:
                return rank
        i += 1
    return -1


@njit(cache=True)
def decode_kernel(
    data: np.ndarray,
    blob: np.ndarray,
    offsets: np.ndarray,
    lengths: np.ndarray,
    sorted_hashes: np.ndarray,
    ranks_by_hash: np.ndarray,
) -> Any:
    """Returns (status, ranks, numbers, generation, has_generation); status 0 = read cleanly."""
    n = data.shape[0]
    ranks = np.empty(n // 4 + 1, np.int64)
    numbers = np.empty(n // 4 + 1, np.int64)
    count = 0
    bad = (1, ranks[:0], numbers[:0], np.int64(0), False)
    if n < 4:
        return bad
    topics = _int32_be(data, 0)
    pos = 4
    if topics < 0 or topics > n - pos:
        return bad
    for _ in range(topics):
        if n - pos < 2:
            return bad
        name_len: Any = (np.int64(data[pos]) << 8) | np.int64(data[pos + 1])
        if name_len >= 32768:
            return bad  # negative int16
        pos += 2
        if n - pos < name_len:
            return bad
        rank = _find_topic(data, pos, name_len, blob, offsets, lengths, sorted_hashes, ranks_by_hash)
        if rank < 0:
            for k in range(pos, pos + name_len):
                if data[k] >= 0x80:
                    return bad  # a non-ASCII name that matches no topic: let the reference decide
        pos += name_len
        if n - pos < 4:
            return bad
        parts = _int32_be(data, pos)
        pos += 4
        if parts < 0 or parts * 4 > n - pos:
            return bad
        for _ in range(parts):
            if rank >= 0:
                ranks[count] = rank
                numbers[count] = _int32_be(data, pos)
                count += 1
            pos += 4
    if n - pos >= 4:
        return 0, ranks[:count], numbers[:count], np.int64(_int32_be(data, pos)), True
    return 0, ranks[:count], numbers[:count], np.int64(0), False
