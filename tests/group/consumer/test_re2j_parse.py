"""Subscribed regexes are matched by RE2/J's own parse tree (:mod:`kgroup.group.consumer.re2j_parse`):
where RE2/J builds it differently from RE2, it matches differently, and Kafka with it.

Each expected answer below is what ``com.google.re2j.Pattern`` 1.8 (Kafka 4.4.0's) gave for the
pattern in ``matcher(name).matches()``, run against the jar; ``tests/apache_kafka/test_re2j.py``
asks Kafka itself again on every run, for these and thousands of fresh patterns.
"""

from __future__ import annotations

import re2

from kgroup.group.consumer.re2j_parse import NotRead, rendered
from kgroup.group.consumer.steps import check_regex

NAMES = ("k", "K", "kk", "KK", "KKx", "kkx", "Kx", "kx", "AA", "aa", "Ax", "ax", "a", "A", "b", "B", "ab",
         "Ab", "aB", "AB", "s", "S")  # fmt: skip

#: (pattern, the names RE2/J matches): alternatives RE2/J factors by their characters alone, and the
#: classes ``(?i)`` folds by RE2/J's own fold tables
RE2J_MATCHES = [
    # a leading K (case-sensitive) and (?i)k are "equal" to Regexp.equals: factored, the second
    # alternative takes the first one's case-sensitivity
    ("K.07b(?i)|k", ("K",)),
    ("K.|(?i)k", ("K", "KK", "Kx")),
    ("(?i:k).|K", ("k", "K", "kk", "KK", "Kx", "kx")),  # K takes (?i:k)'s: it matches k
    ("(?i)k.|K", ("k", "K", "kk", "KK", "Kx", "kx")),  # (?i) reaches past the bar anyway
    ("A.|[Aa]", ("AA", "Ax", "A", "Ab", "AB")),  # [Aa] is read as a case-insensitive A
    ("[Aa].|A", ("AA", "aa", "Ax", "ax", "a", "A", "ab", "Ab", "aB", "AB")),
    ("K{2}.|(?i)k{2}", ("KK", "KKx")),
    ("Ab|Ax|(?i)a", ("Ax", "A", "Ab")),
    # single characters are merged into one class first: nothing lost
    ("K|(?i)k", ("k", "K")),
    ("a(?i)|b", ("a", "b", "B")),
    ("k.|(?i)k", ("k", "K", "kk", "kx")),  # (?i)k is stored as K: not equal to k
    # (?i) with a Unicode class: RE2/J's fold table for Ll holds special orbits only (K and S)
    (r"(?i)\p{Ll}", ("k", "K", "a", "b", "s", "S")),
    (r"(?i)\p{Lu}", ("k", "K", "a", "A", "b", "B", "s", "S")),
    (r"(?i)[^\p{Ll}]", ("A", "B")),
    (r"(?i)\P{Ll}", ("A", "B")),
    (r"(?i)[\p{Ll}x]", ("k", "K", "a", "b", "s", "S")),
    (r"(?i)\p{Latin}", ("k", "K", "a", "A", "b", "B", "s", "S")),
]


def _matches(pattern: str) -> tuple[str, ...]:
    compiled = check_regex(pattern)
    return tuple(name for name in NAMES if compiled.fullmatch(name))


def test_alternatives_and_folded_classes_match_as_re2j_matches_them() -> None:
    assert {p: _matches(p) for p, _ in RE2J_MATCHES} == dict(RE2J_MATCHES)


def test_re2s_own_reading_would_match_otherwise() -> None:
    """Not vacuous: RE2 given the pattern itself answers otherwise for each of the first kind."""
    differing = [
        p for p, expected in RE2J_MATCHES if tuple(n for n in NAMES if re2.fullmatch(p, n)) != expected
    ]
    assert {"K.07b(?i)|k", "(?i:k).|K", "A.|[Aa]", "K{2}.|(?i)k{2}", r"(?i)\p{Ll}", r"(?i)\P{Ll}"} <= set(
        differing
    )


def test_the_written_out_tree_is_plain_re2() -> None:
    assert rendered("K.07b(?i)|k") == "K(?:[^\\n]07b|(?:))"
    assert rendered("abc|abd|aef|bcx|bcy") == "(?:a(?:b[c-d]|ef)|bc[x-y])"  # Parser.factor's own example
    assert rendered("(?i)k") == "(?i:K)"
    assert rendered("orders-v[0-9]+") == "orders\\x{2d}v(?:[0-9])+"


def test_a_pattern_re2j_refuses_is_not_read() -> None:
    for pattern in ("(", "a)", "[a", "\\", "\\q", "(?z)", "a{2,1}"):
        try:
            rendered(pattern)
        except NotRead:
            continue
        raise AssertionError(f"{pattern!r} was read")


def test_a_long_literal_reads_in_linear_time() -> None:
    # literal characters are concatenated in place (RE2/J copies the array each time)
    assert check_regex("a" * 100_000).fullmatch("a" * 100_000)
