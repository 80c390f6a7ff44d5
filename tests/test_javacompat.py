"""Java semantics: String.hashCode, compareTo and HashMap iteration order."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import load_vectors
from kgroup.javacompat import (
    hashmap_iteration_order,
    int32,
    java_abs,
    java_compare,
    java_string_hash,
    sorted_java,
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
