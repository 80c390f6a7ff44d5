"""numba kernels of the vectorised murmur2 (imported lazily by :mod:`kgroup.partitioning.murmur2`).

Module-level functions with ``cache=True``: numba keeps their machine code in ``__pycache__`` so
only the first process on a machine pays the compilation. All 32-bit arithmetic is done in
``uint64`` and masked with ``0xffffffff``: the product of two values below 2**32 fits in 64 bits,
and staying unsigned keeps numba from promoting mixed integer types to float.

What makes them fast (about 2.5x the first version on this machine's 16-byte keys):

* byte positions are ``uint64``: numba wraps *signed* negative indices around, which costs a compare
  and a conditional move on every byte load and stops LLVM from merging the four byte loads of a
  block into one 32-bit load; unsigned positions have no negative case;
* ``boundscheck=False`` (numba's default, stated): offsets come from a validated Arrow array;
* ``hash_one`` takes only scalars besides the byte array and is inlined by LLVM, so there is no call
  and no reference counting per key;
* each key's end offset is read once (it is the next key's start);
* the modulo is a 32-bit unsigned one (the positive hash and the count both fit 31 bits);
* above ``PARALLEL_MIN_KEYS`` keys, when numba may use more than one thread, the ``_parallel``
  variants split the keys over the cores (``prange``); below it, starting threads costs more than it
  saves.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import prange

from kgroup._njit import njit

__all__ = [
    "PARALLEL_MIN_KEYS",
    "hash_kernel",
    "hash_kernel_parallel",
    "partition_kernel",
    "partition_kernel_parallel",
]

#: from this many keys on, the parallel kernels are used (when numba has more than one thread)
PARALLEL_MIN_KEYS = 1 << 18

_MASK = np.uint64(0xFFFFFFFF)
_M = np.uint64(0x5BD1E995)
_SEED = np.uint64(0x9747B28C)
_POSITIVE = np.uint64(0x7FFFFFFF)
_BLOCK_BYTES = np.uint64(0xFFFFFFFFFFFFFFFC)  # length rounded down to whole 4-byte blocks


@njit(cache=True, nogil=True, boundscheck=False)
def hash_one(data: Any, start: Any, end: Any) -> Any:  # pragma: no cover - compiled
    """``Utils.murmur2`` of ``data[start:end]`` (``uint64`` positions) as an unsigned 32-bit value."""
    length = end - start
    h = (_SEED ^ length) & _MASK
    blocks_end = start + (length & _BLOCK_BYTES)
    j = start
    while j < blocks_end:
        # little-endian 4-byte block
        k = (
            np.uint64(data[j])
            | (np.uint64(data[j + np.uint64(1)]) << np.uint64(8))
            | (np.uint64(data[j + np.uint64(2)]) << np.uint64(16))
            | (np.uint64(data[j + np.uint64(3)]) << np.uint64(24))
        )
        k = (k * _M) & _MASK
        k ^= k >> np.uint64(24)
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
        j += np.uint64(4)
    tail = end - blocks_end
    if tail == 3:
        h ^= np.uint64(data[j + np.uint64(2)]) << np.uint64(16)
    if tail >= 2:
        h ^= np.uint64(data[j + np.uint64(1)]) << np.uint64(8)
    if tail >= 1:
        h ^= np.uint64(data[j])
        h = (h * _M) & _MASK
    h ^= h >> np.uint64(13)
    h = (h * _M) & _MASK
    h ^= h >> np.uint64(15)
    return h


@njit(cache=True, nogil=True, boundscheck=False)
def _signed(h: Any) -> Any:  # pragma: no cover - compiled
    return np.int64(h) - np.int64(0x100000000) if h >= np.uint64(0x80000000) else np.int64(h)


@njit(cache=True, nogil=True, boundscheck=False)
def hash_kernel(data: Any, offsets: Any, out: Any) -> None:  # pragma: no cover - compiled
    """``out[i]`` = murmur2 of key ``i`` (bytes ``offsets[i]:offsets[i+1]``) as Java's signed int."""
    start = np.uint64(offsets[0])
    for i in range(out.shape[0]):
        end = np.uint64(offsets[i + 1])
        out[i] = _signed(hash_one(data, start, end))
        start = end


@njit(cache=True, nogil=True, boundscheck=False, parallel=True)
def hash_kernel_parallel(data: Any, offsets: Any, out: Any) -> None:  # pragma: no cover - compiled
    """:func:`hash_kernel` over all cores."""
    for i in prange(out.shape[0]):
        out[i] = _signed(hash_one(data, np.uint64(offsets[i]), np.uint64(offsets[i + 1])))


@njit(cache=True, nogil=True, boundscheck=False)
def partition_kernel(data: Any, offsets: Any, counts: Any, out: Any) -> None:  # pragma: no cover
    """``out[c, i]`` = ``toPositive(murmur2(key i)) % counts[c]``, each key hashed once."""
    start = np.uint64(offsets[0])
    if counts.shape[0] == 1:  # the usual case: one topic, a flat loop
        count = np.uint32(counts[0])
        row = out[0]
        for i in range(out.shape[1]):
            end = np.uint64(offsets[i + 1])
            row[i] = np.int32(np.uint32(hash_one(data, start, end) & _POSITIVE) % count)
            start = end
        return
    for i in range(out.shape[1]):
        end = np.uint64(offsets[i + 1])
        positive = np.uint32(hash_one(data, start, end) & _POSITIVE)
        for c in range(counts.shape[0]):
            out[c, i] = np.int32(positive % np.uint32(counts[c]))
        start = end


@njit(cache=True, nogil=True, boundscheck=False, parallel=True)
def partition_kernel_parallel(data: Any, offsets: Any, counts: Any, out: Any) -> None:  # pragma: no cover
    """:func:`partition_kernel` over all cores."""
    for i in prange(out.shape[1]):
        positive = np.uint32(hash_one(data, np.uint64(offsets[i]), np.uint64(offsets[i + 1])) & _POSITIVE)
        for c in range(counts.shape[0]):
            out[c, i] = np.int32(positive % np.uint32(counts[c]))
