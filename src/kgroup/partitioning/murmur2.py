"""Kafka's keyed partitioning: ``Utils.murmur2`` and ``BuiltInPartitioner.partitionForKey``.

Two paths with identical answers:

* a pure-Python scalar path (:func:`murmur2`, :func:`partition_for_key`) for single keys;
* a vectorised path (:func:`murmur2_array`, :func:`partitions_for_keys`,
  :func:`partitions_for_keys_multi`) that hashes an Arrow binary/string array in place — the value
  buffer and the offsets buffer are handed to a numba kernel without copying the keys.

numba and pyarrow are imported lazily, on the first vectorised call, so ``import kgroup`` stays fast.
The kernels are compiled with ``cache=True``: the first run on a machine compiles them once and
later processes load the machine code from numba's cache. From ``PARALLEL_MIN_KEYS`` keys per Arrow
chunk on, the keys are hashed on every thread numba may use (``NUMBA_NUM_THREADS=1`` keeps it to one).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from kgroup.javacompat import int32
from kgroup.model import KgroupError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "Key",
    "keys_to_arrow",
    "murmur2",
    "murmur2_array",
    "partition_for_key",
    "partitions_for_keys",
    "partitions_for_keys_multi",
    "validate_num_partitions",
]

# Utils.murmur2's constants: seed, multiplier, shift.
SEED = 0x9747B28C
M = 0x5BD1E995
R = 24
_MASK32 = 0xFFFFFFFF

#: A key as the scalar functions accept it: bytes, or a ``str`` hashed as its UTF-8 bytes
#: (what Kafka's ``StringSerializer`` sends).
Key = bytes | bytearray | memoryview | str

Int32Array = npt.NDArray[np.int32]


def _key_bytes(key: Key) -> bytes:
    if type(key) is bytes:
        return key
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, (bytes, bytearray, memoryview)):
        return bytes(key)
    raise KgroupError(f"key: {type(key).__name__} is not bytes or str; serialize the key to bytes first")


# Compiled struct formats for each number of 4-byte blocks seen so far (keys are usually short).
_BLOCK_UNPACKERS: dict[int, Callable[[bytes], tuple[int, ...]]] = {}


def murmur2(key: Key) -> int:
    """``Utils.murmur2(key)`` as Java's signed 32-bit int. A ``str`` is hashed as its UTF-8 bytes."""
    data = _key_bytes(key)
    length = len(data)
    h = (SEED ^ length) & _MASK32
    nblocks = length >> 2
    unpack = _BLOCK_UNPACKERS.get(nblocks)
    if unpack is None:
        unpack = _BLOCK_UNPACKERS[nblocks] = struct.Struct(f"<{nblocks}I").unpack_from
    # Little-endian 4-byte blocks, exactly as Java assembles them from the byte array.
    for k in unpack(data):
        k = (k * M) & _MASK32
        k ^= k >> R
        k = (k * M) & _MASK32
        h = ((h * M) & _MASK32) ^ k
    tail = length & 3
    base = length - tail
    if tail == 3:
        h ^= data[base + 2] << 16
    if tail >= 2:
        h ^= data[base + 1] << 8
    if tail >= 1:
        h ^= data[base]
        h = (h * M) & _MASK32
    h ^= h >> 13
    h = (h * M) & _MASK32
    h ^= h >> 15
    return int32(h)


def validate_num_partitions(num_partitions: int, field: str = "num_partitions") -> int:
    """Reject partition counts below 1 (and non-integers) with a one-line :class:`KgroupError`."""
    if type(num_partitions) is int and 1 <= num_partitions <= 0x7FFFFFFF:
        return num_partitions  # the common case, checked cheaply
    if isinstance(num_partitions, bool) or not isinstance(num_partitions, (int, np.integer)):
        raise KgroupError(f"{field}: {num_partitions!r} is not an integer; give a whole number >= 1")
    if num_partitions < 1:
        raise KgroupError(f"{field}: {num_partitions} partitions; a topic has at least 1 partition")
    if num_partitions > 0x7FFFFFFF:
        raise KgroupError(f"{field}: {num_partitions} does not fit Java's int; give at most 2147483647")
    return int(num_partitions)


def partition_for_key(key: Key, num_partitions: int) -> int:
    """``toPositive(murmur2(key)) % num_partitions`` — the partition of a keyed record.

    ``num_partitions`` is the number of *all* partitions of the topic, available or not.
    """
    n = validate_num_partitions(num_partitions)
    return (murmur2(key) & 0x7FFFFFFF) % n


# --------------------------------------------------------------------------------------------
# Vectorised path
# --------------------------------------------------------------------------------------------


def _kernels() -> Any:
    """The numba kernels module, imported (and its machine code loaded from numba's cache, or
    compiled once) on the first vectorised call."""
    from kgroup.partitioning import _murmur2_kernels

    return _murmur2_kernels


def _threads() -> int:
    """The threads numba may use (``NUMBA_NUM_THREADS``, or ``numba.set_num_threads``)."""
    import numba

    threads: int = numba.get_num_threads()
    return threads


#: key types Arrow's own conversion takes exactly as :func:`keys_to_arrow` would
_PLAIN_KEY_TYPES = frozenset({bytes, type(None)})


def keys_to_arrow(keys: Any) -> pa.Array | pa.ChunkedArray:
    """Turn accepted key containers into an Arrow array of binary/string type.

    Accepts an Arrow Binary/String/LargeBinary/LargeString/FixedSizeBinary (or dictionary of those) array or
    ChunkedArray (returned as is), a numpy array of ``bytes``/``str`` objects, or any iterable of
    ``bytes``/``str``/``None`` (``None`` = null key). ``str`` keys become their UTF-8 bytes.
    """
    import pyarrow as pa

    if isinstance(keys, (pa.Array, pa.ChunkedArray)):
        _check_arrow_type(keys.type)
        return keys
    if isinstance(keys, np.ndarray):
        if keys.ndim != 1:
            raise KgroupError(f"keys: a {keys.ndim}-dimensional array; give a 1-dimensional array of keys")
        if keys.dtype.kind == "U":
            return pa.array(keys.tolist(), type=pa.string())
        items: Iterable[Any] = keys.tolist()
    elif isinstance(keys, (str, bytes, bytearray, memoryview)):
        raise KgroupError("keys: got a single key; pass a list or array of keys (or use partition_for_key)")
    else:
        items = keys
        if isinstance(keys, (list, tuple)) and set(map(type, keys)) <= _PLAIN_KEY_TYPES:
            # only bytes and None (the usual list of serialized keys): Arrow converts them as they are,
            # without the per-key checks below (half the time on a million keys)
            return pa.array(keys, type=pa.binary())
    converted: list[bytes | None] = []
    for index, key in enumerate(items):
        if key is None or isinstance(key, bytes):
            converted.append(key)
        elif isinstance(key, str):
            converted.append(key.encode("utf-8"))
        elif isinstance(key, (bytearray, memoryview)):
            converted.append(bytes(key))
        else:
            raise KgroupError(
                f"keys[{index}]: {type(key).__name__} is not bytes, str or None; serialize keys to bytes"
            )
    return pa.array(converted, type=pa.binary())


def _check_arrow_type(arrow_type: Any) -> None:
    import pyarrow as pa
    import pyarrow.types as pat

    if pat.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    if not (
        pat.is_binary(arrow_type)
        or pat.is_string(arrow_type)
        or pat.is_large_binary(arrow_type)
        or pat.is_large_string(arrow_type)
        or pat.is_fixed_size_binary(arrow_type)
        or arrow_type == pa.null()
    ):
        raise KgroupError(
            f"keys: Arrow type {arrow_type} is not binary or string; cast the key column to binary"
        )


def _chunks(keys: pa.Array | pa.ChunkedArray) -> Sequence[pa.Array]:
    import pyarrow as pa

    if isinstance(keys, pa.ChunkedArray):
        return list(keys.chunks)
    return [keys]


def _buffers(chunk: pa.Array) -> tuple[npt.NDArray[np.uint8], npt.NDArray[Any]]:
    """The value bytes and the ``len + 1`` offsets of a (sliced) binary/string chunk, zero-copy."""
    import pyarrow.types as pat

    buffers = chunk.buffers()
    n = len(chunk)
    if pat.is_fixed_size_binary(chunk.type):  # e.g. 16-byte UUID keys: implicit offsets
        width = chunk.type.byte_width
        fixed_offsets = np.arange(chunk.offset, chunk.offset + n + 1, dtype=np.int64) * width
        raw = buffers[1]
        fixed_data = np.frombuffer(raw, dtype=np.uint8) if raw is not None else np.zeros(0, dtype=np.uint8)
        return fixed_data, fixed_offsets
    offset_type = np.int64 if pat.is_large_binary(chunk.type) or pat.is_large_string(chunk.type) else np.int32
    offsets_buffer, data_buffer = buffers[1], buffers[2]
    if offsets_buffer is None:  # an empty array may come without buffers
        offsets = np.zeros(n + 1, dtype=offset_type)
    else:
        offsets = np.frombuffer(offsets_buffer, dtype=offset_type)[chunk.offset : chunk.offset + n + 1]
    data = (
        np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, dtype=np.uint8)
    )
    return data, offsets


def _null_mask(chunk: pa.Array) -> npt.NDArray[np.bool_] | None:
    if chunk.null_count == 0:
        return None
    return np.asarray(chunk.is_null().to_numpy(zero_copy_only=False), dtype=np.bool_)


def _run(chunk: pa.Array, counts: npt.NDArray[np.int64] | None) -> npt.NDArray[np.int32]:
    """Hashes (``counts`` None, shape ``(n,)``) or partitions (shape ``(len(counts), n)``) of one chunk."""
    import pyarrow as pa
    import pyarrow.types as pat

    n = len(chunk)
    if chunk.type == pa.null():
        if counts is None:
            return np.full(n, -1, dtype=np.int32)
        return np.full((len(counts), n), -1, dtype=np.int32)
    if pat.is_dictionary(chunk.type):
        # Hash each distinct value once, then gather by index.
        per_value = _run(chunk.dictionary, counts)
        if len(chunk.dictionary) == 0:  # every slot is null
            return np.full((*per_value.shape[:-1], n), -1, dtype=np.int32)
        indices = chunk.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        gathered: npt.NDArray[np.int32] = per_value[..., indices]
        dict_nulls = _null_mask(chunk)
        if dict_nulls is not None:
            gathered[..., dict_nulls] = -1
        return gathered
    data, offsets = _buffers(chunk)
    kernels = _kernels()
    parallel = n >= kernels.PARALLEL_MIN_KEYS and _threads() > 1
    result: npt.NDArray[np.int32]
    if counts is None:
        result = np.empty(n, dtype=np.int32)
        (kernels.hash_kernel_parallel if parallel else kernels.hash_kernel)(data, offsets, result)
    else:
        result = np.empty((len(counts), n), dtype=np.int32)
        run = kernels.partition_kernel_parallel if parallel else kernels.partition_kernel
        run(data, offsets, counts, result)
    nulls = _null_mask(chunk)
    if nulls is not None:
        result[..., nulls] = -1
    return result


def _concat(pieces: list[npt.NDArray[np.int32]], shape_prefix: tuple[int, ...]) -> npt.NDArray[np.int32]:
    if len(pieces) == 1:
        return pieces[0]
    if not pieces:
        return np.empty((*shape_prefix, 0), dtype=np.int32)
    return np.concatenate(pieces, axis=-1)


def murmur2_array(keys: Any) -> Int32Array:
    """``murmur2`` of every key, as an ``int32`` array (Java's signed values).

    Null keys (Arrow nulls or ``None``) give ``-1`` in their slot — a value a real key can also hash
    to, so check nulls separately if you need to tell them apart.
    """
    arrow = keys_to_arrow(keys)
    return _concat([_run(chunk, None) for chunk in _chunks(arrow)], ())


def partitions_for_keys(keys: Any, num_partitions: int) -> Int32Array:
    """The partition of every key for a topic of ``num_partitions`` partitions, as ``int32``.

    Null keys give ``-1``: a null key has no hash partition, the caller applies a null-key strategy
    (see :mod:`kgroup.partitioning.partitioners`).
    """
    row: Int32Array = partitions_for_keys_multi(keys, [num_partitions])[0]
    return row


def partitions_for_keys_multi(keys: Any, partition_counts: Sequence[int]) -> npt.NDArray[np.int32]:
    """Partitions of every key for several partition counts at once, hashing each key only once.

    Returns an ``int32`` array of shape ``(len(partition_counts), len(keys))``; row ``c`` is
    ``partitions_for_keys(keys, partition_counts[c])``. Nulls give ``-1`` in every row.
    """
    if len(partition_counts) == 0:
        raise KgroupError("partition_counts: empty; give at least one partition count")
    counts = np.array(
        [validate_num_partitions(c, "partition_counts") for c in partition_counts], dtype=np.int64
    )
    arrow = keys_to_arrow(keys)
    return _concat([_run(chunk, counts) for chunk in _chunks(arrow)], (len(counts),))
