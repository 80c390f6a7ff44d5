"""murmur2 and keyed partitioning: every Kafka vector, scalar and vectorised, and their agreement."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.model import KgroupError
from kgroup.partitioning import (
    murmur2,
    murmur2_array,
    partition_for_key,
    partitions_for_keys,
    partitions_for_keys_multi,
)

VECTORS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parents[1] / "vectors" / "murmur2" / "murmur2.json").read_text()
)
KEYS = [bytes.fromhex(v["input"]["keyHex"]) for v in VECTORS]
COUNTS = VECTORS[0]["input"]["numPartitions"]


def test_vector_file_is_complete() -> None:
    assert len(VECTORS) == 1000
    assert all(v["input"]["numPartitions"] == COUNTS for v in VECTORS)
    assert any(k == b"" for k in KEYS)


def test_scalar_matches_every_vector() -> None:
    for v, key in zip(VECTORS, KEYS, strict=True):
        expected = v["expected"]
        assert murmur2(key) == expected["murmur2"], v["input"]["keyHex"]
        assert murmur2(key) & 0x7FFFFFFF == expected["toPositive"]
        for n, p in expected["partitions"].items():
            assert partition_for_key(key, int(n)) == p


def test_str_keys_hash_as_utf8() -> None:
    with_text = [v for v in VECTORS if "keyUtf8" in v["input"]]
    assert len(with_text) >= 80
    for v in with_text:
        text = v["input"]["keyUtf8"]
        assert murmur2(text) == v["expected"]["murmur2"], text
        assert partition_for_key(text, 1000) == v["expected"]["partitions"]["1000"]
    texts = [v["input"]["keyUtf8"] for v in with_text]
    expected = np.array([v["expected"]["murmur2"] for v in with_text], dtype=np.int32)
    assert np.array_equal(murmur2_array(texts), expected)
    assert np.array_equal(murmur2_array(pa.array(texts, type=pa.string())), expected)
    assert np.array_equal(murmur2_array(pa.array(texts, type=pa.large_string())), expected)
    assert np.array_equal(murmur2_array(np.array(texts)), expected)


@pytest.mark.parametrize("arrow_type", [pa.binary(), pa.large_binary()])
def test_vectorised_matches_every_vector(arrow_type: pa.DataType) -> None:
    keys = pa.array(KEYS, type=arrow_type)
    hashes = murmur2_array(keys)
    assert hashes.dtype == np.int32
    assert hashes.tolist() == [v["expected"]["murmur2"] for v in VECTORS]
    table = partitions_for_keys_multi(keys, COUNTS)
    assert table.shape == (len(COUNTS), len(KEYS))
    for c, n in enumerate(COUNTS):
        expected = [v["expected"]["partitions"][str(n)] for v in VECTORS]
        assert table[c].tolist() == expected
        assert partitions_for_keys(keys, n).tolist() == expected


def test_vectorised_accepts_chunked_numpy_and_lists() -> None:
    expected = [v["expected"]["partitions"]["12"] for v in VECTORS]
    chunked = pa.chunked_array([pa.array(KEYS[:300]), pa.array(KEYS[300:301]), pa.array(KEYS[301:])])
    assert partitions_for_keys(chunked, 12).tolist() == expected
    objects = np.empty(len(KEYS), dtype=object)
    objects[:] = KEYS
    assert partitions_for_keys(objects, 12).tolist() == expected
    assert partitions_for_keys(KEYS, 12).tolist() == expected
    assert partitions_for_keys(pa.array(KEYS).dictionary_encode(), 12).tolist() == expected


def test_fixed_size_binary_keys() -> None:
    fixed: list[bytes | None] = [k for k in KEYS if len(k) == 16][:20]
    assert len(fixed) >= 5
    fixed.append(None)
    array = pa.array(fixed, type=pa.binary(16))
    expected = [-1 if k is None else partition_for_key(k, 30) for k in fixed]
    assert partitions_for_keys(array, 30).tolist() == expected
    assert partitions_for_keys(array.slice(3), 30).tolist() == expected[3:]


def test_nulls_give_minus_one() -> None:
    keys = pa.array([b"foobar", None, b"", None], type=pa.binary())
    expected = [partition_for_key(b"foobar", 7), -1, partition_for_key(b"", 7), -1]
    assert partitions_for_keys(keys, 7).tolist() == expected
    assert murmur2_array([None, b"foobar"]).tolist() == [-1, murmur2(b"foobar")]
    dictionary = pa.array(["a", None, "a"]).dictionary_encode()
    assert partitions_for_keys(dictionary, 5).tolist() == [
        partition_for_key("a", 5),
        -1,
        partition_for_key("a", 5),
    ]
    assert partitions_for_keys(pa.array([None, None]), 3).tolist() == [-1, -1]


def test_empty_input() -> None:
    assert partitions_for_keys(pa.array([], type=pa.binary()), 3).shape == (0,)
    assert partitions_for_keys([], 3).shape == (0,)
    assert partitions_for_keys(pa.chunked_array([], type=pa.binary()), 3).shape == (0,)


def test_bad_input_is_a_clear_error() -> None:
    for bad in (0, -3, True, 2**31):
        with pytest.raises(KgroupError, match=r"^num_partitions: "):
            partition_for_key(b"k", bad)  # type: ignore[arg-type]
    with pytest.raises(KgroupError, match="partition_counts"):
        partitions_for_keys([b"k"], 0)
    with pytest.raises(KgroupError, match="Arrow type int64 is not binary"):
        partitions_for_keys(pa.array([1, 2]), 3)
    with pytest.raises(KgroupError, match="single key"):
        partitions_for_keys(b"abc", 3)
    with pytest.raises(KgroupError, match=r"keys\[1\]: int"):
        partitions_for_keys([b"a", 5], 3)
    with pytest.raises(KgroupError, match="key: int is not bytes"):
        murmur2(5)  # type: ignore[arg-type]
    with pytest.raises(KgroupError, match="empty"):
        partitions_for_keys_multi([b"a"], [])


keys_strategy = st.lists(st.one_of(st.none(), st.binary(min_size=0, max_size=100)), max_size=60)


@settings(max_examples=150, deadline=None)
@given(
    keys=keys_strategy,
    counts=st.lists(st.integers(min_value=1, max_value=2**31 - 1), min_size=1, max_size=4, unique=True),
    start=st.integers(min_value=0, max_value=10),
    large=st.booleans(),
)
def test_vectorised_equals_scalar(
    keys: list[bytes | None], counts: list[int], start: int, large: bool
) -> None:
    """Random keys (with nulls), sliced Arrow arrays with offsets, random partition counts."""
    array = pa.array(keys, type=pa.large_binary() if large else pa.binary())
    sliced = array.slice(min(start, len(keys)))
    expected_keys = keys[min(start, len(keys)) :]
    table = partitions_for_keys_multi(sliced, counts)
    hashes = murmur2_array(sliced)
    for i, key in enumerate(expected_keys):
        if key is None:
            assert hashes[i] == -1
            assert all(table[c, i] == -1 for c in range(len(counts)))
        else:
            assert hashes[i] == murmur2(key)
            for c, n in enumerate(counts):
                assert table[c, i] == partition_for_key(key, n)


def test_numba_kernels_are_cached_on_disk() -> None:
    """A second process loads the compiled kernels from numba's cache instead of compiling."""
    import subprocess
    import sys

    partitions_for_keys([b"warm", b"up"], 3)  # this process compiles or loads and saves the cache
    probe = (
        "import pyarrow as pa\n"
        "from kgroup.partitioning import partitions_for_keys\n"
        "from kgroup.partitioning import _murmur2_kernels as k\n"
        "partitions_for_keys(pa.array([b'x']), 3)\n"
        "print(sum(k.partition_kernel.stats.cache_hits.values()),"
        " sum(k.partition_kernel.stats.cache_misses.values()))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True
    )
    hits, misses = (int(x) for x in result.stdout.split())
    assert hits >= 1 and misses == 0


@pytest.mark.parametrize("arrow_type", [pa.binary(), pa.large_binary()])
def test_parallel_kernels_match_every_vector(arrow_type: pa.DataType) -> None:
    """Past ``PARALLEL_MIN_KEYS`` keys the kernels run over all of numba's threads: still exact.

    The 1,000 vectors are repeated past the threshold (a sliced array, so the offsets start mid-buffer)
    and must give Kafka's answer at every partition count, in one count and several at once; the
    serial kernels, called directly on the same buffers, must agree.
    """
    import numba

    from kgroup.partitioning import _murmur2_kernels as kernels

    repeats = kernels.PARALLEL_MIN_KEYS // len(KEYS) + 2
    keys = pa.array([b"x", *KEYS * repeats], type=arrow_type).slice(1)
    assert len(keys) >= kernels.PARALLEL_MIN_KEYS
    previous = numba.get_num_threads()
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    try:
        hashes = murmur2_array(keys)
        table = partitions_for_keys_multi(keys, COUNTS)
        single = {n: partitions_for_keys(keys, n) for n in COUNTS}
    finally:
        numba.set_num_threads(previous)
    expected_hashes = np.tile(np.array([v["expected"]["murmur2"] for v in VECTORS], dtype=np.int32), repeats)
    assert np.array_equal(hashes, expected_hashes)
    for c, n in enumerate(COUNTS):
        once = np.array([v["expected"]["partitions"][str(n)] for v in VECTORS], dtype=np.int32)
        expected = np.tile(once, repeats)
        assert np.array_equal(table[c], expected), n
        assert np.array_equal(single[n], expected), n
    serial = np.empty(len(keys), dtype=np.int32)
    offset_type = np.int64 if arrow_type == pa.large_binary() else np.int32
    offsets = np.frombuffer(keys.buffers()[1], dtype=offset_type)[keys.offset : keys.offset + len(keys) + 1]
    kernels.hash_kernel(np.frombuffer(keys.buffers()[2], dtype=np.uint8), offsets, serial)
    assert np.array_equal(serial, expected_hashes)


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(st.none() | st.binary(max_size=24), max_size=50),
       container=st.sampled_from([list, tuple]))
def test_a_list_of_plain_bytes_converts_as_any_iterable_does(
    keys: list[bytes | None], container: Any
) -> None:
    """Lists and tuples of only bytes / None go straight to Arrow; the answer is the checked path's."""
    from kgroup.partitioning.murmur2 import keys_to_arrow

    direct = keys_to_arrow(container(keys))
    checked = keys_to_arrow(iter(keys))  # any other iterable: every key checked and converted
    assert direct.type == checked.type == pa.binary()
    assert direct.equals(checked)
    assert partitions_for_keys(container(keys), 7).tolist() == partitions_for_keys(iter(keys), 7).tolist()


@pytest.mark.parametrize("odd", [bytearray(b"ab"), "ab", 3, np.bytes_(b"ab")])
def test_a_list_with_other_keys_takes_the_checked_path(odd: Any) -> None:
    from kgroup.partitioning.murmur2 import keys_to_arrow

    if isinstance(odd, int):
        with pytest.raises(KgroupError, match=r"keys\[1\]: int is not bytes"):
            keys_to_arrow([b"x", odd])
        return
    assert keys_to_arrow([b"x", odd]).to_pylist() == [b"x", b"ab"]
