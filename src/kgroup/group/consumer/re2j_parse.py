"""RE2/J 1.8's parse tree of a regex — what Kafka 4.4.0 matches a subscribed-topic regex (and a
ListTransactions pattern) by — written out as an RE2 pattern that matches what that tree matches.

RE2 and RE2/J read a pattern with the same algorithm (RE2/J is a Java port of Go's parser, itself a
port of RE2's), and RE2/J's tree is what it matches: where RE2/J builds its tree differently, its
matches differ, and kgroup must match as RE2/J does. Two such places, both checked against RE2/J from
Kafka's own jars (``tests/apache_kafka/test_re2j.py``):

* **Factoring an alternation** (``Parser.factor``, round 2): RE2/J pulls a common leading piece out of
  neighbouring alternatives when the pieces are equal, and its ``Regexp.equals`` compares a literal's
  characters but not whether it is case-insensitive. So ``K.|(?i)k`` becomes ``K(?:.|)`` — the
  second alternative loses its ``(?i)`` and matches ``K`` but not ``k`` — and in ``(?i:k).|K`` the
  second gains one.
  RE2 compares the flag and keeps each alternative as written.
* **``(?i)`` with ``\\p{…}``**: RE2/J adds to a Unicode class the characters of its fold table, and
  only seven classes have one (``Lu``, ``Ll``, ``Lt``, ``Mn``, ``Common``, ``Inherited``, ``Greek``).
  Its table for ``Ll`` holds the characters of special case orbits only: ``(?i)\\p{Ll}`` matches the
  lowercase letters, ``K`` and ``S``, not ``A``. RE2 folds every class in full.

This module is RE2/J's parser (``Parser.parse`` and the stack operations it builds a tree with) for
patterns RE2/J accepts; :mod:`kgroup.group.consumer.regex` decides that first and keeps RE2/J's
refusals. The tree is written out with every case-insensitive literal and every class spelled out
(no ``(?i)`` left for RE2 to apply to a class). Exact on ASCII — the characters of topic names and of
almost every transactional id. Beyond ASCII, two approximations (documented in
docs/consumer-protocol.md): case orbits come from Python's own Unicode tables (RE2/J's are older),
and a class built from ``\\p{…}`` compares equal to another only as written the same way.
"""

from __future__ import annotations

from enum import IntEnum

from kgroup.group.consumer.re2j_classes import (
    ALL,
    EMPTY,
    MAX_RUNE,
    NOT_NL,
    NOTHING,
    PERL_CLASSES,
    POSIX_CLASSES,
    CharSet,
    case_orbit,
    folded,
    group_ranges,
    min_fold,
    negated_ranges,
    normal_ranges,
    rune_text,
    set_text,
    unicode_class,
)

__all__ = ["NotRead", "count_ok", "read_count", "rendered"]

# RE2/J's parse flags (RE2.java)
FOLD_CASE = 0x01
CLASS_NL = 0x04
DOT_NL = 0x08
ONE_LINE = 0x10
NON_GREEDY = 0x20
PERL_X = 0x40
UNICODE_GROUPS = 0x80
WAS_DOLLAR = 0x100
#: ``Pattern.compile``'s flags
PERL = CLASS_NL | ONE_LINE | PERL_X | UNICODE_GROUPS


class NotRead(ValueError):
    """The pattern is not one RE2/J accepts (or too deep to write out): the caller keeps its own
    reading."""


class Op(IntEnum):
    """``Regexp.Op``, in RE2/J's order (merging char classes compares ordinals)."""

    NO_MATCH = 0
    EMPTY_MATCH = 1
    LITERAL = 2
    CHAR_CLASS = 3
    ANY_CHAR_NOT_NL = 4
    ANY_CHAR = 5
    BEGIN_LINE = 6
    END_LINE = 7
    BEGIN_TEXT = 8
    END_TEXT = 9
    WORD_BOUNDARY = 10
    NO_WORD_BOUNDARY = 11
    CAPTURE = 12
    STAR = 13
    PLUS = 14
    QUEST = 15
    REPEAT = 16
    CONCAT = 17
    ALTERNATE = 18
    LEFT_PAREN = 19
    VERTICAL_BAR = 20


# --- counted repetitions (shared with kgroup.group.consumer.regex's reading) ----------------------


def read_count(regex: str, at: int) -> tuple[int, int, int] | None:
    """The counted repetition ``{n}``, ``{n,}`` or ``{n,m}`` at ``at`` as RE2/J's parser reads it
    (``parseRepeat``: digits without a leading zero, more than 8 digits read as too large): (min,
    max, index after it) with -1 for no max and 1001 for a number too large, or ``None`` when the
    ``{`` is a literal."""

    def number(i: int) -> tuple[int, int] | None:
        j = i
        while j < len(regex) and regex[j].isdigit() and regex[j].isascii():
            j += 1
        digits = regex[i:j]
        if not digits or (len(digits) > 1 and digits[0] == "0"):
            return None
        return (int(digits) if len(digits) <= 8 else 1001), j

    first = number(at + 1)
    if first is None:
        return None
    low, i = first
    high = low
    if regex[i : i + 1] == ",":
        i += 1
        if regex[i : i + 1] == "}":
            high = -1
        else:
            second = number(i)
            if second is None:
                return None
            high, i = second
    if regex[i : i + 1] != "}":
        return None
    return low, high, i + 1


def count_ok(count: tuple[int, int, int]) -> bool:
    """RE2/J's bounds on a count: at most 1000, and no max below the min."""
    low, high, _ = count
    return low <= 1000 and high <= 1000 and (high < 0 or low <= high)


# --- the tree -----------------------------------------------------------------------------------


class _Node:
    __slots__ = ("cap", "flags", "max", "min", "name", "op", "runes", "set", "subs")

    def __init__(self, op: Op, flags: int = 0) -> None:
        self.op = op
        self.flags = flags
        self.runes: list[int] = []
        self.set: CharSet = EMPTY
        self.subs: list[_Node] = []
        self.min = 0
        self.max = 0
        self.cap = 0
        self.name: str | None = None


def _equals(x: _Node, y: _Node | None) -> bool:
    """``Regexp.equals`` — a literal's characters, not its flags."""
    if y is None or x.op != y.op:
        return False
    op = x.op
    if op is Op.END_TEXT:
        return (x.flags & WAS_DOLLAR) == (y.flags & WAS_DOLLAR)
    if op is Op.LITERAL:
        return x.runes == y.runes
    if op is Op.CHAR_CLASS:
        return x.set == y.set
    if op in (Op.ALTERNATE, Op.CONCAT):
        return len(x.subs) == len(y.subs) and all(_equals(a, b) for a, b in zip(x.subs, y.subs, strict=True))
    if op in (Op.STAR, Op.PLUS, Op.QUEST):
        return (x.flags & NON_GREEDY) == (y.flags & NON_GREEDY) and _equals(x.subs[0], y.subs[0])
    if op is Op.REPEAT:
        return (
            (x.flags & NON_GREEDY) == (y.flags & NON_GREEDY)
            and x.min == y.min
            and x.max == y.max
            and _equals(x.subs[0], y.subs[0])
        )
    if op is Op.CAPTURE:
        return x.cap == y.cap and x.name == y.name and _equals(x.subs[0], y.subs[0])
    return True


def _is_char_class(re: _Node) -> bool:
    return (re.op is Op.LITERAL and len(re.runes) == 1) or re.op in (
        Op.CHAR_CLASS,
        Op.ANY_CHAR_NOT_NL,
        Op.ANY_CHAR,
    )


def _literal_set(rune: int, flags: int) -> CharSet:
    if flags & FOLD_CASE:
        return CharSet(normal_ranges(folded(rune, rune)))
    return CharSet(((rune, rune),))


def _matches_rune(re: _Node, rune: int) -> bool:
    if re.op is Op.LITERAL:
        return len(re.runes) == 1 and re.runes[0] == rune
    if re.op is Op.CHAR_CLASS:
        return re.set.has(rune)
    if re.op is Op.ANY_CHAR_NOT_NL:
        return rune != 0x0A
    return re.op is Op.ANY_CHAR


def _merge_char_class(dst: _Node, src: _Node) -> None:
    """``mergeCharClass``: dst = dst | src (dst's op is at least src's)."""
    if dst.op is Op.ANY_CHAR_NOT_NL:
        if _matches_rune(src, 0x0A):
            dst.op = Op.ANY_CHAR
    elif dst.op is Op.CHAR_CLASS:
        if src.op is Op.LITERAL:
            dst.set = dst.set.union(_literal_set(src.runes[0], src.flags))
        else:
            dst.set = dst.set.union(src.set)
    elif dst.op is Op.LITERAL:
        if src.runes[0] == dst.runes[0] and src.flags == dst.flags:
            return
        dst.op = Op.CHAR_CLASS
        dst.set = _literal_set(dst.runes[0], dst.flags).union(_literal_set(src.runes[0], src.flags))
        dst.runes = []


def _clean_alt(re: _Node) -> None:
    if re.op is Op.CHAR_CLASS and not re.set.brackets:
        if re.set.ranges == ALL:
            re.op, re.set = Op.ANY_CHAR, EMPTY
        elif re.set.ranges == NOT_NL:
            re.op, re.set = Op.ANY_CHAR_NOT_NL, EMPTY


def _leading_regexp(re: _Node) -> _Node | None:
    if re.op is Op.EMPTY_MATCH:
        return None
    if re.op is Op.CONCAT and re.subs:
        sub = re.subs[0]
        return None if sub.op is Op.EMPTY_MATCH else sub
    return re


def _remove_leading_regexp(re: _Node) -> _Node:
    if re.op is Op.CONCAT and re.subs:
        re.subs = re.subs[1:]
        if not re.subs:
            re.op = Op.EMPTY_MATCH
        elif len(re.subs) == 1:
            re = re.subs[0]
        return re
    return _Node(Op.EMPTY_MATCH)


def _remove_leading_string(re: _Node, n: int) -> _Node:
    if re.op is Op.CONCAT and re.subs:
        sub = _remove_leading_string(re.subs[0], n)
        re.subs[0] = sub
        if sub.op is Op.EMPTY_MATCH:
            if len(re.subs) <= 1:
                re.op, re.subs = Op.EMPTY_MATCH, []
            elif len(re.subs) == 2:
                re = re.subs[1]
            else:
                re.subs = re.subs[1:]
        return re
    if re.op is Op.LITERAL:
        re.runes = re.runes[n:]
        if not re.runes:
            re.op = Op.EMPTY_MATCH
    return re


def _runes_length(re: _Node) -> int:
    """The length of RE2/J's ``runes`` array (which node a merge of classes keeps)."""
    if re.op is Op.LITERAL:
        return len(re.runes)
    if re.op is Op.CHAR_CLASS:
        return 2 * (len(re.set.ranges) + len(re.set.brackets))
    return 0


class _Parser:
    """``com.google.re2j.Parser`` for a pattern it accepts."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.pos = 0
        self.flags = PERL
        self.stack: list[_Node] = []
        self.caps = 0

    # -- the stack --

    def _pop_to_pseudo(self) -> list[_Node]:
        i = len(self.stack)
        while i > 0 and self.stack[i - 1].op < Op.LEFT_PAREN:
            i -= 1
        subs = self.stack[i:]
        del self.stack[i:]
        return subs

    def _push(self, re: _Node) -> _Node | None:
        runes = re.set.single_runes() if re.op is Op.CHAR_CLASS else None
        if runes is not None and len(runes) == 1:
            if self._maybe_concat(runes[0], self.flags & ~FOLD_CASE):
                return None
            re.op, re.runes, re.set, re.flags = Op.LITERAL, [runes[0]], EMPTY, self.flags & ~FOLD_CASE
        elif runes is not None and len(runes) == 2 and case_orbit(runes[0]) == runes:
            if self._maybe_concat(runes[0], self.flags | FOLD_CASE):
                return None
            re.op, re.runes, re.set, re.flags = Op.LITERAL, [runes[0]], EMPTY, self.flags | FOLD_CASE
        else:
            self._maybe_concat(-1, 0)
        self.stack.append(re)
        return re

    def _maybe_concat(self, rune: int, flags: int) -> bool:
        if len(self.stack) < 2:
            return False
        re1, re2_ = self.stack[-1], self.stack[-2]
        if (
            re1.op is not Op.LITERAL
            or re2_.op is not Op.LITERAL
            or (re1.flags & FOLD_CASE) != (re2_.flags & FOLD_CASE)
        ):
            return False
        re2_.runes.extend(re1.runes)
        if rune >= 0:
            re1.runes, re1.flags = [rune], flags
            return True
        self.stack.pop()
        return False

    def _literal(self, rune: int) -> None:
        re = _Node(Op.LITERAL, self.flags)
        re.runes = [min_fold(rune) if self.flags & FOLD_CASE else rune]
        self._push(re)

    def _op(self, op: Op) -> _Node:
        re = self._push(_Node(op, self.flags))
        assert re is not None  # only classes merge into the top of the stack
        return re

    def _repeat(self, op: Op, low: int, high: int) -> None:
        flags = self.flags
        if self.pattern.startswith("?", self.pos):
            self.pos += 1
            flags ^= NON_GREEDY
        if not self.stack or self.stack[-1].op >= Op.LEFT_PAREN:
            raise NotRead("missing argument to repetition operator")
        re = _Node(op, flags)
        re.min, re.max = low, high
        re.subs = [self.stack[-1]]
        self.stack[-1] = re

    def _concat(self) -> None:
        self._maybe_concat(-1, 0)
        subs = self._pop_to_pseudo()
        self._push(_Node(Op.EMPTY_MATCH) if not subs else self._collapse(subs, Op.CONCAT))

    def _alternate(self) -> None:
        subs = self._pop_to_pseudo()
        if subs:
            _clean_alt(subs[-1])
        self._push(_Node(Op.NO_MATCH) if not subs else self._collapse(subs, Op.ALTERNATE))

    def _collapse(self, subs: list[_Node], op: Op) -> _Node:
        if len(subs) == 1:
            return subs[0]
        flat: list[_Node] = []
        for sub in subs:
            if sub.op is op:
                flat.extend(sub.subs)
            else:
                flat.append(sub)
        re = _Node(op)
        re.subs = flat
        if op is Op.ALTERNATE:
            re.subs = self._factor(re.subs)
            if len(re.subs) == 1:
                return re.subs[0]
        return re

    def _factor(self, sub: list[_Node]) -> list[_Node]:
        """``Parser.factor``: common leading literal strings, then common leading pieces (equal by
        ``Regexp.equals``), then runs of single characters into one class, then empty matches."""
        if len(sub) < 2:
            return sub
        # round 1: common literal prefixes of the same case-sensitivity
        out: list[_Node] = []
        start = 0
        string: list[int] = []
        length = 0
        string_flags = 0
        for i in range(len(sub) + 1):
            istring: list[int] = []
            iflags = 0
            if i < len(sub):
                re = sub[i]
                if re.op is Op.CONCAT and re.subs:
                    re = re.subs[0]
                if re.op is Op.LITERAL:
                    istring, iflags = re.runes, re.flags & FOLD_CASE
                if iflags == string_flags:
                    same = 0
                    while same < length and same < len(istring) and string[same] == istring[same]:
                        same += 1
                    if same > 0:
                        length = same
                        continue
            if i == start + 1:
                out.append(sub[start])
            elif i > start + 1:
                prefix = _Node(Op.LITERAL, string_flags)
                prefix.runes = string[:length]
                for j in range(start, i):
                    sub[j] = _remove_leading_string(sub[j], length)
                concat = _Node(Op.CONCAT)
                concat.subs = [prefix, self._collapse(sub[start:i], Op.ALTERNATE)]
                out.append(concat)
            start, string, length, string_flags = i, istring, len(istring), iflags
        sub = out

        # round 2: a common leading piece that is one character (or a fixed repeat of one)
        out = []
        start = 0
        first: _Node | None = None
        for i in range(len(sub) + 1):
            ifirst: _Node | None = None
            if i < len(sub):
                ifirst = _leading_regexp(sub[i])
                if (
                    first is not None
                    and _equals(first, ifirst)
                    and (
                        _is_char_class(first)
                        or (
                            first.op is Op.REPEAT and first.min == first.max and _is_char_class(first.subs[0])
                        )
                    )
                ):
                    continue
            if i == start + 1:
                out.append(sub[start])
            elif i > start + 1:
                assert first is not None
                for j in range(start, i):
                    sub[j] = _remove_leading_regexp(sub[j])
                concat = _Node(Op.CONCAT)
                concat.subs = [first, self._collapse(sub[start:i], Op.ALTERNATE)]
                out.append(concat)
            start, first = i, ifirst
        sub = out

        # round 3: runs of single characters and classes into one class
        out = []
        start = 0
        for i in range(len(sub) + 1):
            if i < len(sub) and _is_char_class(sub[i]):
                continue
            if i == start + 1:
                out.append(sub[start])
            elif i > start + 1:
                most = start
                for j in range(start + 1, i):
                    a, b = sub[most], sub[j]
                    if a.op < b.op or (a.op == b.op and _runes_length(a) < _runes_length(b)):
                        most = j
                sub[start], sub[most] = sub[most], sub[start]
                for j in range(start + 1, i):
                    _merge_char_class(sub[start], sub[j])
                _clean_alt(sub[start])
                out.append(sub[start])
            if i < len(sub):
                out.append(sub[i])
            start = i + 1
        sub = out

        # round 4: runs of empty matches into one
        return [
            re
            for i, re in enumerate(sub)
            if not (i + 1 < len(sub) and re.op is Op.EMPTY_MATCH and sub[i + 1].op is Op.EMPTY_MATCH)
        ]

    def _swap_vertical_bar(self) -> bool:
        stack = self.stack
        n = len(stack)
        if (
            n >= 3
            and stack[n - 2].op is Op.VERTICAL_BAR
            and _is_char_class(stack[n - 1])
            and _is_char_class(stack[n - 3])
        ):
            re1, re3 = stack[n - 1], stack[n - 3]
            if re1.op > re3.op:
                re1, re3 = re3, re1
                stack[n - 3] = re3
            _merge_char_class(re3, re1)
            stack.pop()
            return True
        if n >= 2 and stack[n - 2].op is Op.VERTICAL_BAR:
            if n >= 3:
                _clean_alt(stack[n - 3])
            stack[n - 2], stack[n - 1] = stack[n - 1], stack[n - 2]
            return True
        return False

    def _vertical_bar(self) -> None:
        self._concat()
        if not self._swap_vertical_bar():
            self._op(Op.VERTICAL_BAR)

    def _right_paren(self) -> None:
        self._concat()
        if self._swap_vertical_bar():
            self.stack.pop()
        self._alternate()
        if len(self.stack) < 2:
            raise NotRead("unexpected )")
        re1 = self.stack.pop()
        re2_ = self.stack.pop()
        if re2_.op is not Op.LEFT_PAREN:
            raise NotRead("missing )")
        self.flags = re2_.flags
        if re2_.cap == 0:
            self._push(re1)
        else:
            re2_.op, re2_.subs = Op.CAPTURE, [re1]
            self._push(re2_)

    # -- reading --

    def parse(self) -> _Node:
        pattern = self.pattern
        n = len(pattern)
        while self.pos < n:
            c = pattern[self.pos]
            if c == "(":
                if pattern.startswith("(?", self.pos):
                    self._perl_flags()
                else:
                    self.caps += 1
                    self._op(Op.LEFT_PAREN).cap = self.caps
                    self.pos += 1
            elif c == "|":
                self._vertical_bar()
                self.pos += 1
            elif c == ")":
                self._right_paren()
                self.pos += 1
            elif c == "^":
                self._op(Op.BEGIN_TEXT if self.flags & ONE_LINE else Op.BEGIN_LINE)
                self.pos += 1
            elif c == "$":
                if self.flags & ONE_LINE:
                    self._op(Op.END_TEXT).flags |= WAS_DOLLAR
                else:
                    self._op(Op.END_LINE)
                self.pos += 1
            elif c == ".":
                self._op(Op.ANY_CHAR if self.flags & DOT_NL else Op.ANY_CHAR_NOT_NL)
                self.pos += 1
            elif c == "[":
                self._class()
            elif c in "*+?":
                self.pos += 1
                self._repeat({"*": Op.STAR, "+": Op.PLUS, "?": Op.QUEST}[c], -1, -1)
            elif c == "{":
                count = self._count()
                if count is None:
                    self._literal(ord("{"))
                    self.pos += 1
                else:
                    self._repeat(Op.REPEAT, *count)
            elif c == "\\":
                self._escape_at_top()
            else:
                self._literal(ord(c))
                self.pos += 1
        self._concat()
        if self._swap_vertical_bar():
            self.stack.pop()
        self._alternate()
        if len(self.stack) != 1:
            raise NotRead("missing )")
        return self.stack[0]

    def _escape_at_top(self) -> None:
        pattern = self.pattern
        nxt = pattern[self.pos + 1 : self.pos + 2]
        simple = {"A": Op.BEGIN_TEXT, "b": Op.WORD_BOUNDARY, "B": Op.NO_WORD_BOUNDARY, "z": Op.END_TEXT}
        if nxt in simple:
            self._op(simple[nxt])
            self.pos += 2
            return
        if nxt == "C" or nxt == "":
            raise NotRead("invalid escape sequence")
        if nxt == "Q":
            end = pattern.find("\\E", self.pos + 2)
            text = pattern[self.pos + 2 :] if end < 0 else pattern[self.pos + 2 : end]
            self.pos = len(pattern) if end < 0 else end + 2
            for char in text:
                self._literal(ord(char))
            return
        if nxt in ("p", "P"):
            re = _Node(Op.CHAR_CLASS, self.flags)
            re.set = self._unicode_class()
            self._push(re)
            return
        if nxt in PERL_CLASSES:
            sign, ranges = PERL_CLASSES[nxt]
            re = _Node(Op.CHAR_CLASS, self.flags)
            re.set = CharSet(group_ranges(sign, ranges, bool(self.flags & FOLD_CASE)))
            self.pos += 2
            self._push(re)
            return
        self._literal(self._escape())

    def _escape(self) -> int:
        """``parseEscape`` at a backslash: the rune."""
        pattern = self.pattern
        self.pos += 1
        if self.pos >= len(pattern):
            raise NotRead("trailing \\")
        c = pattern[self.pos]
        self.pos += 1
        if c in "1234567" and not ("0" <= pattern[self.pos : self.pos + 1] <= "7"):
            raise NotRead("backreference")
        if c in "01234567":
            rune = ord(c) - 0x30
            for _ in range(2):
                d = pattern[self.pos : self.pos + 1]
                if not d or not "0" <= d <= "7":
                    break
                rune = rune * 8 + ord(d) - 0x30
                self.pos += 1
            return rune
        if c == "x":
            if pattern.startswith("{", self.pos):
                end = pattern.find("}", self.pos)
                digits = pattern[self.pos + 1 : end] if end > 0 else ""
                if not digits or any(d not in "0123456789abcdefABCDEF" for d in digits):
                    raise NotRead("invalid escape sequence")
                rune = int(digits, 16)
                if rune > MAX_RUNE:
                    raise NotRead("invalid escape sequence")
                self.pos = end + 1
                return rune
            digits = pattern[self.pos : self.pos + 2]
            if len(digits) != 2 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise NotRead("invalid escape sequence")
            self.pos += 2
            return int(digits, 16)
        c_escapes = {"a": 7, "f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}
        if c in c_escapes:
            return c_escapes[c]
        if c.isascii() and c.isalnum():
            raise NotRead("invalid escape sequence")
        return ord(c)

    def _unicode_class(self) -> CharSet:
        """``parseUnicodeClass`` at ``\\p`` or ``\\P``."""
        pattern = self.pattern
        sign = -1 if pattern[self.pos + 1] == "P" else 1
        at = self.pos + 2
        if at >= len(pattern):
            raise NotRead("invalid character class range")
        if pattern[at] != "{":
            name = pattern[at]
            self.pos = at + 1
        else:
            end = pattern.find("}", at)
            if end < 0:
                raise NotRead("invalid character class range")
            name = pattern[at + 1 : end]
            self.pos = end + 1
        if name.startswith("^"):
            sign, name = -sign, name[1:]
        return unicode_class(name, sign, bool(self.flags & FOLD_CASE))

    def _class(self) -> None:
        """``parseClass`` at ``[``."""
        pattern = self.pattern
        n = len(pattern)
        self.pos += 1
        negated = pattern.startswith("^", self.pos)
        if negated:
            self.pos += 1
        fold = bool(self.flags & FOLD_CASE)
        ranges: list[tuple[int, int]] = []
        tables: list[CharSet] = []
        first = True
        while first or self.pos >= n or pattern[self.pos] != "]":
            if self.pos >= n:
                raise NotRead("missing ]")
            first = False
            if pattern.startswith("[:", self.pos):
                end = pattern.find(":]", self.pos)
                if end >= 0:
                    name = pattern[self.pos + 2 : end]
                    sign = -1 if name.startswith("^") else 1
                    posix = POSIX_CLASSES.get(name[1:] if sign < 0 else name)
                    if posix is None:
                        raise NotRead("invalid character class range")
                    ranges.extend(group_ranges(sign, posix, fold))
                    self.pos = end + 2
                    continue
            if pattern.startswith(("\\p", "\\P"), self.pos):
                tables.append(self._unicode_class())
                continue
            escaped = pattern[self.pos + 1 : self.pos + 2]
            if pattern[self.pos] == "\\" and escaped in PERL_CLASSES:
                sign, group = PERL_CLASSES[escaped]
                ranges.extend(group_ranges(sign, group, fold))
                self.pos += 2
                continue
            lo = self._class_char()
            hi = lo
            if pattern.startswith("-", self.pos) and not pattern.startswith("-]", self.pos):
                self.pos += 1
                if self.pos >= n:
                    raise NotRead("missing ]")
                hi = self._class_char()
                if hi < lo:
                    raise NotRead("invalid character class range")
            ranges.extend(folded(lo, hi) if fold else [(lo, hi)])
        self.pos += 1  # ']'
        known = normal_ranges(ranges)
        if not tables:
            cset = CharSet(negated_ranges(known) if negated else known)
        elif not negated:
            cset = CharSet(known)
            for table in tables:
                cset = cset.union(table)
        else:
            # one bracket: the negation of every item (a folded negated table inside cannot be)
            items: list[str] = []
            extra: list[tuple[int, int]] = list(known)
            for table in tables:
                if table.ranges:  # \p{Any}
                    extra.extend(table.ranges)
                    continue
                ((inner_negated, inner_ranges, inner_items),) = table.brackets
                if inner_negated:
                    raise NotRead("a negated folded table in a negated class")
                extra.extend(inner_ranges)
                items.extend(inner_items)
            cset = CharSet((), frozenset({(True, normal_ranges(extra), tuple(sorted(set(items))))}))
        re = _Node(Op.CHAR_CLASS, self.flags)
        re.set = cset
        self._push(re)

    def _class_char(self) -> int:
        if self.pos >= len(self.pattern):
            raise NotRead("missing ]")
        if self.pattern[self.pos] == "\\":
            return self._escape()
        rune = ord(self.pattern[self.pos])
        self.pos += 1
        return rune

    def _count(self) -> tuple[int, int] | None:
        """``parseRepeat`` at ``{``: (min, max) with -1 for no max, or ``None`` for a literal ``{``."""
        count = read_count(self.pattern, self.pos)
        if count is None:
            return None
        if not count_ok(count):
            raise NotRead("invalid repeat count")
        low, high, self.pos = count
        return low, high

    def _perl_flags(self) -> None:
        """``parsePerlFlags`` at ``(?``."""
        pattern = self.pattern
        rest = pattern[self.pos :]
        if rest.startswith(("(?P<", "(?<")):
            begin = 4 if rest[2] == "P" else 3
            end = rest.find(">", begin)
            if end < 0:
                raise NotRead("invalid named capture")
            self.caps += 1
            re = self._op(Op.LEFT_PAREN)
            re.cap, re.name = self.caps, rest[begin:end]
            self.pos += end + 1
            return
        self.pos += 2
        flags = self.flags
        sign = 1
        saw_flag = False
        while self.pos < len(pattern):
            c = pattern[self.pos]
            self.pos += 1
            if c == "i":
                flags |= FOLD_CASE
                saw_flag = True
            elif c == "m":
                flags &= ~ONE_LINE
                saw_flag = True
            elif c == "s":
                flags |= DOT_NL
                saw_flag = True
            elif c == "U":
                flags |= NON_GREEDY
                saw_flag = True
            elif c == "-" and sign > 0:
                sign = -1
                flags = ~flags
                saw_flag = False
            elif c in ":)":
                if sign < 0:
                    if not saw_flag:
                        break
                    flags = ~flags
                if c == ":":
                    self._op(Op.LEFT_PAREN)
                self.flags = flags
                return
            else:
                break
        raise NotRead("invalid or unsupported Perl syntax")


# --- writing the tree out for RE2 -------------------------------------------------------------


def _text(re: _Node) -> str:
    op = re.op
    if op is Op.LITERAL:
        text = "".join(rune_text(rune) for rune in re.runes)
        return f"(?i:{text})" if re.flags & FOLD_CASE else text
    if op is Op.CHAR_CLASS:
        return set_text(re.set)
    if op is Op.CONCAT:
        return "".join(_text(sub) for sub in re.subs)
    if op is Op.ALTERNATE:
        return f"(?:{'|'.join(_text(sub) for sub in re.subs)})"
    if op is Op.CAPTURE:
        return f"(?:{_text(re.subs[0])})"
    if op in (Op.STAR, Op.PLUS, Op.QUEST, Op.REPEAT):
        if op is Op.REPEAT:
            suffix = f"{{{re.min}}}" if re.min == re.max else f"{{{re.min},{'' if re.max < 0 else re.max}}}"
        else:
            suffix = {Op.STAR: "*", Op.PLUS: "+", Op.QUEST: "?"}[op]
        return f"(?:{_text(re.subs[0])}){suffix}{'?' if re.flags & NON_GREEDY else ''}"
    return _ATOMS[op]


_ATOMS = {
    Op.NO_MATCH: NOTHING,
    Op.EMPTY_MATCH: "(?:)",
    Op.ANY_CHAR_NOT_NL: "[^\\n]",
    Op.ANY_CHAR: "(?s:.)",
    Op.BEGIN_LINE: "(?m:^)",
    Op.END_LINE: "(?m:$)",
    Op.BEGIN_TEXT: "\\A",
    Op.END_TEXT: "\\z",
    Op.WORD_BOUNDARY: "\\b",
    Op.NO_WORD_BOUNDARY: "\\B",
}


def rendered(pattern: str) -> str:
    """``pattern`` as RE2/J 1.8 parses it, written as an RE2 pattern that matches the same; raises
    :class:`NotRead` for a pattern RE2/J refuses (or nested too deeply to write out)."""
    try:
        return _text(_Parser(pattern).parse())
    except RecursionError:
        raise NotRead("nested too deeply") from None
