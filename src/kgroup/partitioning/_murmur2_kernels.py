"""numba kernels of the vectorised murmur2 (imported lazily by :mod:`kgroup.partitioning.murmur2`).

Module-level functions with ``cache=True``: numba keeps their machine code in ``__pycache__`` so
only the first process on a machine pays the compilation. All 32-bit arithmetic is done in
``uint64`` and masked with ``0xffffffff``: the product of two values below 2**32 fits in 64 bits,
and staying unsigned keeps numba from promoting mixed integer types to float.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

__all__ = ["hash_kernel", "partition_kernel"]


@njit(cache=True, nogil=True)
def hash_one(data: Any, start: Any, end: Any) -> Any:  # pragma: no cover - compiled
    """``Utils.murmur2`` of ``data[start:end]`` as an unsigned 32-bit value in a uint64."""
    mask = np.uint64(0xFFFFFFFF)
    m = np.uint64(0x5BD1E995)
    length = np.uint64(end - start)
    h = (np.uint64(0x9747B28C) ^ length) & mask
    blocks_end = start + ((end - start) >> 2) * 4
    j = start
    while j < blocks_end:
        # little-endian 4-byte block
        k = (
            np.uint64(data[j])
            | (np.uint64(data[j + 1]) << np.uint64(8))
            | (np.uint64(data[j + 2]) << np.uint64(16))
            | (np.uint64(data[j + 3]) << np.uint64(24))
        )
        k = (k * m) & mask
        k ^= k >> np.uint64(24)
        k = (k * m) & mask
        h = ((h * m) & mask) ^ k
        j += 4
    tail = end - blocks_end
    if tail == 3:
        h ^= np.uint64(data[j + 2]) << np.uint64(16)
    if tail >= 2:
        h ^= np.uint64(data[j + 1]) << np.uint64(8)
    if tail >= 1:
        h ^= np.uint64(data[j])
        h = (h * m) & mask
    h ^= h >> np.uint64(13)
    h = (h * m) & mask
    h ^= h >> np.uint64(15)
    return h


@njit(cache=True, nogil=True)
def hash_kernel(data: Any, offsets: Any, out: Any) -> None:  # pragma: no cover - compiled
    """``out[i]`` = murmur2 of key ``i`` (bytes ``offsets[i]:offsets[i+1]``) as Java's signed int."""
    for i in range(out.shape[0]):
        h = hash_one(data, offsets[i], offsets[i + 1])
        out[i] = np.int64(h) - np.int64(0x100000000) if h >= np.uint64(0x80000000) else np.int64(h)


@njit(cache=True, nogil=True)
def partition_kernel(data: Any, offsets: Any, counts: Any, out: Any) -> None:  # pragma: no cover
    """``out[c, i]`` = ``toPositive(murmur2(key i)) % counts[c]``, each key hashed once."""
    positive_mask = np.uint64(0x7FFFFFFF)
    for i in range(out.shape[1]):
        positive = hash_one(data, offsets[i], offsets[i + 1]) & positive_mask
        for c in range(counts.shape[0]):
            out[c, i] = np.int32(positive % np.uint64(counts[c]))
