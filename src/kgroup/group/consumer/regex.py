"""Kafka's subscribed-topic regexes are RE2/J's (Kafka 4.4 compiles them with ``com.google.re2j``):
which patterns RE2/J refuses that Python's ``re`` accepts, and RE2/J's description of each mistake
(what Kafka puts in its INVALID_REGULAR_EXPRESSION message)."""

from __future__ import annotations

import re
import warnings

__all__ = ["compile_re2"]

#: what RE2/J 1.8 (Kafka's regex engine) refuses that Python's ``re`` accepts, with RE2/J's description
_NOT_RE2 = (
    (re.compile(r"\(\?<[=!]"), "invalid named capture"),
    (re.compile(r"\(\?[=!>#]|\(\?P="), "invalid or unsupported Perl syntax"),
    (re.compile(r"\\[1-9]"), "invalid escape sequence"),
    (re.compile(r"[*+?}][+]"), "invalid nested repetition operator"),
)
#: ``{n}``, ``{n,}``, ``{n,m}``: RE2/J refuses a count above 1000
_REPEAT = re.compile(r"\{(\d+)(?:,(\d*))?\}")
#: the start of Python's ``re.error`` message -> RE2/J's description of the same mistake (what
#: Kafka puts in its INVALID_REGULAR_EXPRESSION message); anything else is Perl syntax RE2 lacks
_RE2_DESCRIPTIONS = (
    ("unterminated character set", "missing closing ]"),
    ("missing ), unterminated subpattern", "missing closing )"),
    ("unbalanced parenthesis", "regexp/syntax: internal error"),
    ("nothing to repeat", "missing argument to repetition operator"),
    ("multiple repeat", "invalid nested repetition operator"),
    ("bad escape (end of pattern)", "trailing backslash at end of expression"),
    ("bad escape", "invalid escape sequence"),
    ("invalid group reference", "invalid escape sequence"),
    ("bad character range", "invalid character class range"),
    ("redefinition of group name", "duplicate capture group name"),
    ("min repeat greater than max repeat", "invalid repeat count"),
    ("the repetition number is too large", "invalid repeat count"),
    ("missing group name", "invalid named capture"),
    ("bad character in group name", "invalid named capture"),
)


def _re2_description(error: re.error) -> str:
    message = error.msg
    for start, description in _RE2_DESCRIPTIONS:
        if message.startswith(start):
            return description
    return "invalid or unsupported Perl syntax"


def compile_re2(regex: str) -> tuple[re.Pattern[str] | None, str | None]:
    """``regex`` compiled, or ``None`` and RE2/J's description of what is wrong
    (``PatternSyntaxException.getDescription``): RE2/J's syntax — lookarounds, back-references,
    possessive quantifiers and counts above 1000 are refused as RE2/J refuses them."""
    problem: str | None = None
    try:
        with warnings.catch_warnings():
            # ``re`` warns of syntax it may change ("possible nested set"): not the user's error
            warnings.simplefilter("ignore", FutureWarning)
            pattern = re.compile(regex)
    except re.error as exc:
        problem = _re2_description(exc)
    else:
        for not_re2, description in _NOT_RE2:
            if not_re2.search(regex):
                problem = description
                break
        else:
            for repeat in _REPEAT.finditer(regex):
                if any(count and int(count) > 1000 for count in repeat.groups()):
                    problem = "invalid repeat count"
                    break
    if problem is not None:
        return None, problem
    return pattern, None
