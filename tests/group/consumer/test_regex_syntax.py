"""Kafka refuses a subscribed regex with RE2/J's description of the mistake
(``Utils.throwIfRegularExpressionIsInvalid``; GroupMetadataManagerTest.testConsumerHeartbeatRegexValidation).

Each description below is what ``com.google.re2j.Pattern.compile`` 1.8 (the version Kafka 4.4 ships)
answers in ``PatternSyntaxException.getDescription()`` for that pattern, as run against the jar.
"""

from __future__ import annotations

import pytest

from kgroup.group.consumer.steps import check_regex
from kgroup.group.errors import ApiError
from kgroup.model import ErrorCode

RE2J_DESCRIPTIONS = [
    ("[", "missing closing ]"),
    ("[a", "missing closing ]"),
    ("(", "missing closing )"),
    ("(?:", "missing closing )"),
    ("a)", "regexp/syntax: internal error"),
    ("*", "missing argument to repetition operator"),
    ("a|*", "missing argument to repetition operator"),
    ("a**", "invalid nested repetition operator"),
    ("x{2}{3}", "invalid nested repetition operator"),
    ("a++", "invalid nested repetition operator"),
    ("a*+", "invalid nested repetition operator"),
    ("\\", "trailing backslash at end of expression"),
    ("\\q", "invalid escape sequence"),
    ("(a)\\1", "invalid escape sequence"),
    ("\\8", "invalid escape sequence"),
    ("[z-a]", "invalid character class range"),
    ("(?=a)", "invalid or unsupported Perl syntax"),
    ("(?!a)", "invalid or unsupported Perl syntax"),
    ("(?>a)", "invalid or unsupported Perl syntax"),
    ("(?#c)", "invalid or unsupported Perl syntax"),
    ("(?P=n)", "invalid or unsupported Perl syntax"),
    ("(?z)", "invalid or unsupported Perl syntax"),
    ("(?<=a)b", "invalid named capture"),
    ("(?P<>a)", "invalid named capture"),
    ("(?P<n>a)(?P<n>b)", "duplicate capture group name"),
    ("a{2,1}", "invalid repeat count"),
    ("a{1001}", "invalid repeat count"),
]


@pytest.mark.parametrize(("regex", "description"), RE2J_DESCRIPTIONS)
def test_invalid_regex_is_described_as_re2j_does(regex: str, description: str) -> None:
    with pytest.raises(ApiError) as caught:
        check_regex(regex)
    assert caught.value.code is ErrorCode.INVALID_REGULAR_EXPRESSION
    assert caught.value.message == (
        f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {description}."
    )


@pytest.mark.parametrize("regex", [".*", "(?i)a", "a{,3}", "a{1000}", "foo|bar", "[[a]", "t[0-9]+"])
def test_valid_regex_compiles(regex: str) -> None:
    # "[[a]" makes ``re`` warn of a possible nested set: the warning must not escape (pytest turns
    # warnings into errors here)
    assert check_regex(regex).pattern == regex
