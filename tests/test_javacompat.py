"""Java semantics: String.hashCode, compareTo and HashMap iteration order."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import load_vectors
from kgroup.javacompat import (
    _FIBONACCI,
    _MASK64,
    JavaHashMap,
    JavaHashSet,
    JavaRandom,
    hash_set_order,
    hashmap_iteration_order,
    hashmap_keys_order,
    hashmap_order_by_hash,
    hashmap_put_order,
    int32,
    java_abs,
    java_compare,
    java_double_to_string,
    java_integer_hash,
    java_parse_double,
    java_parse_int,
    java_shuffle,
    java_string_hash,
    sorted_java,
    timeline_hashmap_order,
    to_positive,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("hello", 99162322),
        ("group-1", 293427299),
        ("polygenelubricants", -2147483648),  # Java: Integer.MIN_VALUE
        ("\U0001f600", 1772899),  # surrogate pair: 0xD83D * 31 + 0xDE00
    ],
)
def test_string_hash_matches_java(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_abs_and_to_positive_follow_kafka_utils() -> None:
    assert java_abs(-2147483648) == 0
    assert java_abs(-5) == 5
    assert to_positive(-1) == 0x7FFFFFFF
    assert int32(0x80000000) == -2147483648


def test_compare_uses_utf16_code_units() -> None:
    # U+1F600 is the surrogate pair D83D DE00 in UTF-16; 0xD83D < 0xFFFF, so Java puts the emoji
    # first while Python's code-point order puts it last.
    assert java_compare("\U0001f600", "\uffff") == -1
    assert "\U0001f600" > "\uffff"
    assert sorted_java(["b", "a", "ab", ""]) == ["", "a", "ab", "b"]


@given(st.text(), st.text())
def test_compare_agrees_with_python_on_bmp_below_surrogates(a: str, b: str) -> None:
    a = "".join(c for c in a if ord(c) < 0xD800)
    b = "".join(c for c in b if ord(c) < 0xD800)
    assert java_compare(a, b) == (a > b) - (a < b)


def test_hashmap_order_matches_every_vector() -> None:
    checked = 0
    for kind in ("range", "roundrobin", "sticky", "cooperative-sticky"):
        for name, vector in load_vectors(kind):
            ids = [m["memberId"] for m in vector["input"]["members"]]
            assert hashmap_iteration_order(ids) == vector["expected"]["memberIterationOrder"], name
            checked += 1
    assert checked == 1446


def test_java_random_draws_what_java_util_random_draws() -> None:
    # printed by JDK 17: r = new Random(42); five nextInt(), three nextInt(b) for each bound b, then
    # Collections.shuffle(List.of(0..9) as an ArrayList, r)
    r = JavaRandom(42)
    assert [r.next_int() for _ in range(5)] == [-1170105035, 234785527, -1360544799, 205897768, 1325939940]
    bounds = (1, 2, 3, 5, 7, 10, 16, 100, 1 << 30, (1 << 30) + 1, 2**31 - 1)
    assert [r.next_int(b) for b in bounds for _ in range(3)] == [
        0, 0, 0, 1, 0, 1, 2, 0, 0, 1, 2, 1, 5, 0, 2, 0, 3, 6, 7, 11, 14, 30, 58, 87,
        161649123, 638178365, 363255378, 450472430, 538291085, 784177727, 369835212, 340708093, 1261490713,
    ]  # fmt: skip
    items = list(range(10))
    java_shuffle(items, r)
    assert items == [3, 2, 7, 9, 6, 1, 0, 8, 5, 4]
    with pytest.raises(ValueError, match="bound"):
        r.next_int(0)


def test_java_random_takes_any_java_long_seed() -> None:
    # new Random(-1).nextInt(), new Random(Long.MIN_VALUE).nextInt(), new Random(Long.MAX_VALUE).nextInt(1000)
    assert JavaRandom(-1).next_int() == 1155099827
    assert JavaRandom(-(2**63)).next_int() == -1155484576
    assert JavaRandom(2**63 - 1).next_int(1000) == 913


def _put_one_by_one(keys: list[str]) -> JavaHashMap[str, None]:
    puts: JavaHashMap[str, None] = JavaHashMap(java_string_hash)
    for key in keys:
        puts.put(key, None)
    return puts


_member_ids = st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", max_size=24), max_size=400)


@given(_member_ids, st.integers(0, 3000))
def test_put_order_at_once_is_the_order_of_putting_them_one_by_one(keys: list[str], more: int) -> None:
    """Whenever it answers, the order worked out at once is the map's own after put by put (a key
    put twice included); generated member ids never fill a bucket, so it answers."""
    keys = keys + [f"consumer-{i}-{java_string_hash(str(i)) & 0xFFFF:x}" for i in range(more)]
    keys = keys + keys[: len(keys) // 5]  # some put again
    found = hashmap_put_order(keys)
    assert found is not None
    assert found == _put_one_by_one(keys).keys_in_order()


def _colliding(count: int) -> list[str]:
    """``count`` strings with one ``hashCode`` ("Aa" and "BB" hash alike, and so do their blends)."""
    blocks = [format(i, "b").zfill(8).replace("0", "Aa|").replace("1", "BB|") for i in range(count)]
    return [b.replace("|", "") for b in blocks]


@pytest.mark.parametrize("before", [0, 60])
def test_a_bucket_of_nine_is_left_to_the_map(before: int) -> None:
    """Nine keys in one bucket make Java resize early (a table under 64) or turn the bucket into a
    tree: neither is the plain order, so the order is not worked out at once."""
    colliding = _colliding(9)
    assert len({java_string_hash(k) for k in colliding}) == 1
    keys = [f"m{i}" for i in range(before)] + colliding
    assert hashmap_put_order(keys) is None
    puts = _put_one_by_one(keys)
    assert puts.treeified == (before > 0)
    assert hashmap_put_order(colliding[:8] + [f"m{i}" for i in range(before)]) == (
        _put_one_by_one(colliding[:8] + [f"m{i}" for i in range(before)]).keys_in_order()
    )


@given(_member_ids, st.integers(0, 300))
def test_order_by_hash_is_the_string_put_order(keys: list[str], more: int) -> None:
    """The hash-keyed order (any keys, few of them: a Produce answer's partitions) agrees with the
    string one whenever the string one answers, and says None exactly when it does."""
    keys = list(dict.fromkeys(keys + [f"p-{i}" for i in range(more)]))
    assert hashmap_order_by_hash(keys, [java_string_hash(k) for k in keys]) == hashmap_put_order(keys)


@pytest.mark.parametrize("before", [0, 60])
def test_order_by_hash_leaves_a_bucket_of_nine_to_the_map(before: int) -> None:
    keys = [f"m{i}" for i in range(before)] + _colliding(9)
    assert hashmap_order_by_hash(keys, [java_string_hash(k) for k in keys]) is None
    eight = _colliding(8) + [f"m{i}" for i in range(before)]
    assert hashmap_order_by_hash(eight, [java_string_hash(k) for k in eight]) == (
        _put_one_by_one(eight).keys_in_order()
    )


@pytest.mark.parametrize("before", [0, 60])
def test_keys_order_is_the_maps_with_or_without_a_chain_of_nine(before: int) -> None:
    for keys in ([f"m{i}" for i in range(before)] + _colliding(9), [f"m{i}" for i in range(before + 5)]):
        assert hashmap_keys_order(keys, java_string_hash) == _put_one_by_one(keys).keys_in_order()


def _timeline_reference(keys: list[str], table: int) -> list[str]:
    slots = [((java_string_hash(k) * _FIBONACCI) & _MASK64) >> (65 - table.bit_length()) for k in keys]
    return [keys[i] for i in sorted(range(len(keys)), key=lambda i: (slots[i], -i))]


@given(st.lists(st.text(max_size=12), unique=True, max_size=300), st.integers(2, 16))
def test_timeline_order_as_arrays_is_the_slot_by_slot_order(keys: list[str], bits: int) -> None:
    table = 1 << bits
    assert timeline_hashmap_order(keys, table) == _timeline_reference(keys, table)


@pytest.mark.parametrize("count", [1, 2, 12, 13, 24, 25, 48, 49, 96, 97, 768, 769, 770, 6144, 6145])
def test_put_order_at_each_side_of_a_resize(count: int) -> None:
    """A map whose last put crosses its threshold is resized after it: counts at and one past 0.75 of
    each table size."""
    keys = [f"member-{i}" for i in range(count)]
    assert hashmap_put_order(keys) == _put_one_by_one(keys).keys_in_order()


@given(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=40), st.lists(st.text(max_size=6), max_size=40))
def test_hash_set_order_is_the_order_of_a_hash_set_made_of_the_items(
    ints: list[int], texts: list[str]
) -> None:
    """``hash_set_order`` (which makes no set for fewer than two items) lists what iterating
    ``new HashSet<>(items)`` lists, for any number of items, duplicates included."""
    for java_hash, items in ((java_integer_hash, ints), (java_string_hash, texts)):
        for n in range(len(items) + 1):
            expected = tuple(JavaHashSet.copy_of(java_hash, items[:n]))
            assert hash_set_order(java_hash, items[:n]) == expected
            assert hash_set_order(java_hash, iter(items[:n])) == expected
            assert hash_set_order(java_hash, frozenset(items[:n])) == tuple(
                JavaHashSet.copy_of(java_hash, frozenset(items[:n]))
            )


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", 1),
        ("+1", 1),
        ("-1", -1),
        ("007", 7),
        ("2147483647", 2**31 - 1),
        ("-2147483648", -(2**31)),
        ("\u0661\u0662", 12),  # Character.digit takes any script's decimal digits
        ("2147483648", None),
        ("-2147483649", None),
        ("99999999999999999999", None),
        ("", None),
        ("+", None),
        ("-", None),
        (" 1", None),
        ("1 ", None),
        ("1_0", None),
        ("0x1", None),
        ("1.0", None),
    ],
)
def test_java_parse_int(text: str, value: int | None) -> None:
    """``Integer.parseInt``: what DescribeConfigs reads a broker's id with."""
    assert java_parse_int(text) == value


@given(st.integers(min_value=-(2**31), max_value=2**31 - 1))
def test_java_parse_int_reads_every_int(value: int) -> None:
    assert java_parse_int(str(value)) == value
    assert java_parse_int(f"+{value}") == (value if value >= 0 else None)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1.5", 1.5),
        ("5e-1", 0.5),
        ("0.5d", 0.5),
        ("1f", 1.0),
        (" 5 ", 5.0),  # (Java trims)
        (".5", 0.5),
        ("5.", 5.0),
        ("-Infinity", float("-inf")),
        ("0x1p3", 8.0),
        ("1e400", float("inf")),
        ("x", None),
        ("", None),
        ("1_0", None),  # (Python's float takes these three; Java does not)
        ("inf", None),
        ("nan", None),
    ],
)
def test_java_parse_double(text: str, value: float | None) -> None:
    assert java_parse_double(text) == value


def test_java_parse_double_reads_nan() -> None:
    parsed = java_parse_double("NaN")
    assert parsed is not None and parsed != parsed


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (999999999999999.0, "9.99999999999999E14"),
        (-3.0, "-3.0"),
        (0.5, "0.5"),
        (1e7, "1.0E7"),
        (1234567.0, "1234567.0"),
        (1e-3, "0.001"),
        (9.99e-4, "9.99E-4"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
    ],
)
def test_java_double_to_string(value: float, text: str) -> None:
    """``Double.toString`` with the shortest digits (Java 19's rule; Java 17 writes a few rare values,
    ``Double.MIN_VALUE`` among them, with other digits: not modelled)."""
    assert java_double_to_string(value) == text
