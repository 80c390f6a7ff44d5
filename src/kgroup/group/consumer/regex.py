"""Kafka's subscribed-topic regexes: RE2/J 1.8's syntax (Kafka 4.4.0 compiles them with
``com.google.re2j.Pattern``), matched by RE2 itself (``google-re2``) — linear time in the topic name
whatever the pattern, so no regex can make the coordinator backtrack.

RE2/J is a Java port of RE2's parser, so the two read almost every pattern alike. What differs, and
what kgroup does about it (each row checked against RE2/J from Kafka's own jars on fixed, random and
adversarial patterns in ``tests/apache_kafka/test_re2j.py``):

* **RE2/J refuses, RE2 accepts**: ``\\C`` (RE2's any-byte escape); a capture group name with a
  character outside ``[A-Za-z0-9_]``; a capture group name used twice; ``\\p{…}`` / ``\\P{…}`` of a
  Unicode script that RE2/J 1.8's tables (Unicode 6.0) do not have (:data:`RE2J_UNKNOWN_SCRIPTS`).
  kgroup refuses them first, with RE2/J's description, unless RE2 finds a mistake earlier in the
  pattern (both parsers read left to right and report the first mistake).
* **Both refuse**: RE2's description of the mistake is replaced by RE2/J's (:data:`_DESCRIPTIONS`).
* **RE2/J accepts, RE2 refuses**: ``\\p{Unknown}`` (RE2/J's name for code points of no script) is
  read as ``\\p{Cs}``, which matches the same characters of a topic name: none (topic names are
  ASCII letters, digits, ``.``, ``_`` and ``-``). Counted repetitions nested so that their counts
  multiply past 1000 (``(a{100}){100}``) and programs larger than RE2's memory budget stay refused:
  RE2 cannot run them, and RE2/J's lack of a bound is what makes Kafka accept them
  (``INVALID_REGULAR_EXPRESSION``, with RE2's own words for the second: docs/consumer-protocol.md).

Matching: Kafka resolves a regex with ``matcher(topic).matches()`` — the whole name; RE2's
``fullmatch`` is the same on the ASCII names topics have.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import re2

from kgroup.group.consumer.re2j_parse import NotRead, count_ok, read_count, rendered

__all__ = ["RE2J_UNKNOWN_SCRIPTS", "InvalidTopicRegex", "TopicRegex", "compile_topic_regex", "resolve"]

#: Unicode scripts RE2 knows and RE2/J 1.8 does not (its tables are Unicode 6.0's): ``\p{Adlam}`` is
#: valid in RE2 and "invalid character class range" in RE2/J. Read off both engines (the test above
#: probes every script name of Unicode 16 in each and holds this set to the difference).
RE2J_UNKNOWN_SCRIPTS = frozenset(
    """
    Adlam Ahom Anatolian_Hieroglyphs Bassa_Vah Bhaiksuki Caucasian_Albanian Chakma Chorasmian
    Cypro_Minoan Dives_Akuru Dogra Duployan Elbasan Elymaic Grantha Gunjala_Gondi Hanifi_Rohingya Hatran
    Kawi Khitan_Small_Script Khojki Khudawadi Linear_A Mahajani Makasar Manichaean Marchen Masaram_Gondi
    Medefaidrin Mende_Kikakui Meroitic_Cursive Meroitic_Hieroglyphs Miao Modi Mro Multani Nabataean
    Nag_Mundari Nandinagari Newa Nushu Nyiakeng_Puachue_Hmong Old_Hungarian Old_North_Arabian Old_Permic
    Old_Sogdian Old_Uyghur Osage Pahawh_Hmong Palmyrene Pau_Cin_Hau Psalter_Pahlavi Sharada Siddham
    SignWriting Sogdian Sora_Sompeng Soyombo Takri Tangsa Tangut Tirhuta Toto Vithkuqi Wancho
    Warang_Citi Yezidi Zanabazar_Square
    """.split()  # noqa: SIM905 - a list of words reads as one
)
#: the escapes RE2/J reads as one character in a class (``parseEscape``: octal, ``\x``, the C escapes;
#: punctuation and non-ASCII are read as themselves); any other letter or digit there is refused
_RE2J_CLASS_CHAR_ESCAPES = frozenset("01234567xafnrtv")
#: the Perl classes a class may hold (``maybeParsePerlCharClass``): not a character a range can start at
_RE2J_PERL_CLASSES = frozenset("dDsSwW")
#: RE2/J's name that RE2 lacks, and RE2's name for the same characters of a topic name (none)
_RE2J_ONLY_SCRIPTS = {"Unknown": "Cs"}

#: RE2's error text (``RE2::ErrorCode``'s words, before ``: <fragment>``) -> RE2/J's description of
#: the same mistake (``PatternSyntaxException.getDescription``, what Kafka's message carries)
_DESCRIPTIONS = {
    "invalid escape sequence": "invalid escape sequence",
    "invalid character class": "invalid character class",
    "invalid character class range": "invalid character class range",
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "unexpected )": "regexp/syntax: internal error",
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid UTF-8": "invalid UTF-8",
    "invalid named capture group": "invalid named capture",
}
#: RE2's mistakes found when the pattern ends: in the text before a construct, an artefact of the cut
_AT_END = frozenset({"missing ]", "missing )", "trailing \\"})

#: RE2 compiles each pattern in at most this much memory (its default): a larger program is refused
_MAX_MEM = 8 << 20


class InvalidTopicRegex(ValueError):
    """The pattern is not a valid RE2/J regex; ``description`` is RE2/J's description of why."""

    def __init__(self, regex: str, description: str) -> None:
        super().__init__(f"{regex!r}: {description}")
        self.regex = regex
        self.description = description


@dataclass(frozen=True, slots=True)
class TopicRegex:
    """A compiled subscribed-topic regex: ``pattern`` as the member sent it, ``re2_pattern`` what RE2
    runs (RE2/J's parse tree written out, :func:`kgroup.group.consumer.re2j_parse.rendered`)."""

    pattern: str
    re2_pattern: str
    _compiled: Any

    def fullmatch(self, topic: str) -> bool:
        """``Pattern.matcher(topic).matches()``."""
        return self._compiled.fullmatch(topic) is not None


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # RE2 logs every refused pattern to stderr otherwise
    options.max_mem = _MAX_MEM
    return options


@dataclass(frozen=True, slots=True)
class _Reading:
    """What a left-to-right read of the pattern found: RE2/J's first own refusal (position and
    description), and the pattern as RE2 must be given it."""

    re2j_refusal: tuple[int, str] | None
    for_re2: str


def _name_ok(name: str) -> bool:
    """RE2/J's ``isValidCaptureName``: ASCII letters, digits and ``_``."""
    return bool(name) and all(c == "_" or (c.isascii() and c.isalnum()) for c in name)


def _escape(char: str) -> str:
    """The escape of ``char`` as RE2 must be given it: RE2/J reads an escaped non-ASCII character
    as that character, RE2 refuses the escape."""
    if char and not char.isascii():
        return f"\\x{{{ord(char):x}}}"
    return "\\" + char


def _read(regex: str) -> _Reading:
    refusal: tuple[int, str] | None = None
    names: set[str] = set()
    out: list[str] = []
    i, n = 0, len(regex)

    def refuse(at: int, description: str) -> None:
        nonlocal refusal
        if refusal is None:
            refusal = (at, description)

    def script(at: int) -> int:
        """``\\p`` / ``\\P`` at ``at``: checks the name, writes the escape; the index after it."""
        if at + 2 >= n:
            # nothing after ``\p``: RE2/J's parseUnicodeClass refuses it at once, in a class or not
            # (RE2 calls it a bad escape inside an unclosed class)
            refuse(at, "invalid character class range")
            out.append(regex[at:])
            return n
        if regex[at + 2 : at + 3] == "{":
            end = regex.find("}", at + 3)
            if end < 0:
                out.append(regex[at:])
                return n
            name = regex[at + 3 : end]
            bare = name[1:] if name.startswith("^") else name
            if bare in RE2J_UNKNOWN_SCRIPTS:
                refuse(at, "invalid character class range")
            replaced = _RE2J_ONLY_SCRIPTS.get(bare)
            if replaced is not None:
                name = name[: len(name) - len(bare)] + replaced
            out.append(regex[at : at + 3] + name + "}")
            return end + 1
        out.append(regex[at : at + 3])
        return at + 3

    while i < n:
        c = regex[i]
        if c == "\\":
            nxt = regex[i + 1 : i + 2]
            if nxt == "Q":  # literal text up to \E (or the end)
                end = regex.find("\\E", i + 2)
                stop = n if end < 0 else end + 2
                out.append(regex[i:stop])
                i = stop
            elif nxt in ("p", "P"):
                i = script(i)
            else:
                if nxt == "C":
                    refuse(i, "invalid escape sequence")
                out.append(_escape(nxt))
                i += 2
        elif c == "[":
            j = i + 1
            if regex[j : j + 1] == "^":
                j += 1
            if regex[j : j + 1] == "]":  # a ']' first is a literal
                j += 1
            out.append(regex[i:j])
            # a single character just read (it may start a range), and whether the next element
            # ends a range: RE2/J reads a range's end as one character (parseClassChar), so a class
            # escape there (\p, \d, ...) is "invalid escape sequence" before anything else about it
            single = j > i + 1 and regex[j - 1] == "]"
            range_end = False
            while j < n and regex[j] != "]":
                ends_range, range_end = range_end, False
                if regex[j] == "\\":
                    escaped = regex[j + 1 : j + 2]
                    if (
                        ends_range
                        and escaped.isascii()
                        and escaped.isalnum()
                        and escaped not in _RE2J_CLASS_CHAR_ESCAPES
                    ):
                        refuse(j, "invalid escape sequence")
                    if escaped in ("p", "P") and not ends_range:
                        j = script(j)
                        single = False
                        continue
                    single = not ends_range and escaped not in _RE2J_PERL_CLASSES
                    out.append(_escape(escaped))
                    j += 2
                elif regex.startswith("[:", j) and not ends_range:  # a range's end is one character
                    if regex.startswith("[:]", j):  # RE2/J looks for ":]" from the ':' on
                        refuse(j, "invalid character class range")
                    end = regex.find(":]", j + 2)
                    stop = j + 1 if end < 0 else end + 2
                    out.append(regex[j:stop])
                    single = end < 0 and not ends_range  # a '[' read as itself
                    j = stop
                elif regex[j] == "-" and single and regex[j + 1 : j + 2] not in ("]", ""):
                    range_end, single = True, False
                    out.append("-")
                    j += 1
                else:
                    single = not ends_range
                    out.append(regex[j])
                    j += 1
            out.append(regex[j : j + 1])
            i = j + 1
        elif c == "{":
            count = read_count(regex, i)
            if count is None:
                # RE2/J takes a '{' that starts no count for a literal, and then refuses a repetition
                # right after it as if the '{' had been one (RE2 repeats the literal)
                nxt = regex[i + 1 : i + 2]
                following = read_count(regex, i + 1) if nxt == "{" else None
                if nxt in ("*", "+", "?") or (following is not None and count_ok(following)):
                    refuse(i, "invalid nested repetition operator")
                out.append(c)
                i += 1
            else:
                # RE2/J checks the count before anything else about the repetition (RE2 reads a
                # number of more than 8 digits as a literal)
                if not count_ok(count):
                    refuse(i, "invalid repeat count")
                out.append(regex[i : count[2]])
                i = count[2]
        elif c == "(":
            if regex.startswith(("(?<=", "(?<!"), i):  # RE2/J reads (?< as a named group
                refuse(i, "invalid named capture")
            start = 0
            if regex.startswith("(?P<", i):
                start = i + 4
            elif regex.startswith("(?<", i):
                start = i + 3
            if start:
                end = regex.find(">", start)
                if end < 0:
                    refuse(i, "invalid named capture")
                else:
                    name = regex[start:end]
                    if name and not _name_ok(name):
                        refuse(i, "invalid named capture")
                    elif name in names:
                        refuse(i, "duplicate capture group name")
                    names.add(name)
            out.append(c)
            i += 1
        else:
            out.append(c)
            i += 1
    return _Reading(refusal, "".join(out))


def _re2_mistake(error: Exception) -> tuple[str, str]:
    """RE2's error as (its words, the fragment it names)."""
    text = error.args[0] if error.args else ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    words, _, fragment = str(text).partition(": ")
    return words, fragment


def _re2_description(pattern: str) -> str | None:
    """RE2/J's description of the mistake RE2 finds in ``pattern`` where it is (not only at its
    end), or ``None``."""
    try:
        re2.compile(_read(pattern).for_re2, _options())
    except re2.error as exc:
        words, _ = _re2_mistake(exc)
        if words in _AT_END:
            return None
        return _DESCRIPTIONS.get(words, words)
    except UnicodeEncodeError:
        return "invalid UTF-8"
    return None


def compile_topic_regex(regex: str) -> TopicRegex:
    """``regex`` as RE2/J reads it, compiled by RE2; :class:`InvalidTopicRegex` with RE2/J's
    description of the first mistake when RE2/J refuses it (or RE2 cannot run it)."""
    reading = _read(regex)
    if reading.re2j_refusal is not None:
        # both parsers report the first mistake from the left: RE2's, if it finds one before the
        # construct only RE2/J refuses (read in the text before it)
        at, description = reading.re2j_refusal
        earlier = _re2_description(regex[:at])
        raise InvalidTopicRegex(regex, earlier or description)
    try:
        compiled = re2.compile(reading.for_re2, _options())
    except re2.error as exc:
        words, _ = _re2_mistake(exc)
        raise InvalidTopicRegex(regex, _DESCRIPTIONS.get(words, words)) from None
    except UnicodeEncodeError:  # a lone surrogate: not text RE2 can read
        raise InvalidTopicRegex(regex, "invalid UTF-8") from None
    # valid: matched by RE2/J's own tree (where RE2/J builds it differently from RE2, it matches
    # differently); RE2's reading of the pattern is kept only if the tree cannot be written out
    try:
        tree = rendered(regex)
        return TopicRegex(regex, tree, re2.compile(tree, _options()))
    except (NotRead, re2.error):
        return TopicRegex(regex, reading.for_re2, compiled)


def resolve(regexes: Iterable[str], topics: Iterable[str]) -> dict[str, frozenset[str]]:
    """``TopicRegexResolver.resolveRegularExpressions`` without the authorizer: each regex's topics
    (none for a regex that does not compile, as Kafka logs and ignores one)."""
    names = tuple(topics)
    resolved: dict[str, frozenset[str]] = {}
    for regex in regexes:
        try:
            compiled = compile_topic_regex(regex)
        except InvalidTopicRegex:
            resolved[regex] = frozenset()
            continue
        resolved[regex] = frozenset(_matching(compiled, names))
    return resolved


def _matching(compiled: TopicRegex, names: tuple[str, ...]) -> Iterator[str]:
    match = compiled._compiled.fullmatch
    return (name for name in names if match(name) is not None)
