"""Character classes as RE2/J 1.8 builds them (``CharClass``, ``CharGroup``, the fold tables of
``UnicodeTables``) for :mod:`kgroup.group.consumer.re2j_parse`: their runes where they are known
one by one, ``\\p{…}`` tables kept as RE2 syntax, RE2/J's case folding, and their RE2 text.

Exact on ASCII. Beyond it, case orbits come from Python's own Unicode tables (RE2/J's are older),
and a class built from a ``\\p{…}`` table equals another only when written the same way.
"""

from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass

import re2

MAX_RUNE = 0x10FFFF
#: the runes RE2/J's case folding covers (Unicode.MIN_FOLD, Unicode.MAX_FOLD)
MIN_FOLD = 0x41
MAX_FOLD = 0x1044F


Ranges = tuple[tuple[int, int], ...]
#: a class RE2 must be given as one bracket: (negated, ranges, ``\\p{…}``/``\\P{…}`` items)
Bracket = tuple[bool, Ranges, tuple[str, ...]]


def normal_ranges(ranges: list[tuple[int, int]]) -> Ranges:
    """Sorted, merged where they overlap or abut (``CharClass.cleanClass``)."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


def negated_ranges(ranges: Ranges) -> Ranges:
    out: list[tuple[int, int]] = []
    next_lo = 0
    for lo, hi in ranges:
        if next_lo <= lo - 1:
            out.append((next_lo, lo - 1))
        next_lo = hi + 1
    if next_lo <= MAX_RUNE:
        out.append((next_lo, MAX_RUNE))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class CharSet:
    """The characters of a class: ``ranges`` known rune by rune, and ``brackets`` built from
    ``\\p{…}`` tables kept as RE2 syntax. Two sets are equal when both parts are."""

    ranges: Ranges
    brackets: frozenset[Bracket] = frozenset()

    def union(self, other: CharSet) -> CharSet:
        return CharSet(normal_ranges([*self.ranges, *other.ranges]), self.brackets | other.brackets)

    def single_runes(self) -> tuple[int, ...] | None:
        """Its runes when it is at most two runes known one by one, else ``None``."""
        if self.brackets or len(self.ranges) > 2:
            return None
        runes: list[int] = []
        for lo, hi in self.ranges:
            if hi - lo > 1:
                return None
            runes.extend(range(lo, hi + 1))
        return tuple(runes) if len(runes) <= 2 else None

    def has(self, rune: int) -> bool:
        if any(lo <= rune <= hi for lo, hi in self.ranges):
            return True
        return any(_bracket_has(bracket, rune) for bracket in self.brackets)


EMPTY = CharSet(())
ALL: Ranges = ((0, MAX_RUNE),)
NOT_NL: Ranges = ((0, 9), (11, MAX_RUNE))


# --- case folding -----------------------------------------------------------------------------


@functools.cache
def _orbits() -> dict[int, tuple[int, ...]]:
    """Each cased rune's orbit (the runes it folds with, itself included, ascending). ASCII letters
    fold with their other case, ``k`` also with U+212A (KELVIN SIGN) and ``s`` with U+017F (LONG S),
    as in every Unicode version; beyond ASCII, from Python's simple case mappings."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    def join(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    with_ascii = {0x212A, 0x17F}  # the only runes beyond ASCII that fold with an ASCII letter
    for rune in range(MIN_FOLD, MAX_FOLD + 1):
        if 0xD800 <= rune <= 0xDFFF:
            continue
        char = chr(rune)
        for mapped in (char.lower(), char.upper()):
            if len(mapped) != 1 or mapped == char:
                continue
            other = ord(mapped)
            if other > MAX_FOLD:
                continue
            if (rune < 0x80) != (other < 0x80) and not ({rune, other} & with_ascii):
                continue  # e.g. U+0131 (dotless i) is not in the orbit of I
            join(rune, other)
    members: dict[int, list[int]] = {}
    for rune in list(parent):
        members.setdefault(find(rune), []).append(rune)
    orbits: dict[int, tuple[int, ...]] = {}
    for root, runes in members.items():
        orbit = tuple(sorted({root, *runes}))
        for rune in orbit:
            orbits[rune] = orbit
    return orbits


@functools.cache
def _cased() -> tuple[int, ...]:
    return tuple(sorted(_orbits()))


def case_orbit(rune: int) -> tuple[int, ...]:
    return _orbits().get(rune, (rune,))


def min_fold(rune: int) -> int:
    return case_orbit(rune)[0]


def folded(lo: int, hi: int) -> list[tuple[int, int]]:
    """``CharClass.appendFoldedRange``: the range and every rune that folds with one of it."""
    out = [(lo, hi)]
    cased = _cased()
    for at in range(bisect.bisect_left(cased, lo), bisect.bisect_right(cased, hi)):
        out.extend((rune, rune) for rune in case_orbit(cased[at]))
    return out


def _folded_ranges(ranges: Ranges) -> Ranges:
    out: list[tuple[int, int]] = []
    for lo, hi in ranges:
        out.extend(folded(lo, hi))
    return normal_ranges(out)


def _special_orbit(rune: int) -> bool:
    """Whether ``rune``'s orbit is more than a plain pair of cases (three runes or more, or a pair
    whose simple case mappings are not each other's) — the orbits RE2/J's ``Ll`` fold table holds."""
    orbit = case_orbit(rune)
    if len(orbit) > 2:
        return True
    if len(orbit) < 2:
        return False
    a, b = (chr(r) for r in orbit)
    return not ((a.upper() == b and b.lower() == a) or (b.upper() == a and a.lower() == b))


# --- Unicode classes ------------------------------------------------------------------------

#: the classes RE2/J has a fold table for (``UnicodeTables.FOLD_CATEGORIES`` and ``FOLD_SCRIPT``)
_FOLD_TABLES = frozenset({"Lu", "Ll", "Lt", "Mn", "Common", "Inherited", "Greek"})
#: RE2/J's name RE2 lacks, and RE2's name for the same characters of a topic name (none)
_RE2J_ONLY = {"Unknown": "Cs"}


@functools.cache
def _table_item(name: str) -> str:
    return f"\\p{{{_RE2J_ONLY.get(name, name)}}}"


@functools.cache
def _fold_extras(name: str) -> Ranges:
    """The runes RE2/J's fold table adds to class ``name`` under ``(?i)``: those outside it that fold
    with one in it — for ``Ll``, only those of special orbits (``K`` and ``S`` among ASCII)."""
    member = re2.compile(_table_item(name))
    extras: list[tuple[int, int]] = []
    for rune in _cased():
        if member.fullmatch(chr(rune)) is not None:
            continue
        if name == "Ll" and not _special_orbit(rune):
            continue
        if any(member.fullmatch(chr(other)) is not None for other in case_orbit(rune) if other != rune):
            extras.append((rune, rune))
    return normal_ranges(extras)


@functools.cache
def _bracket_pattern(bracket: Bracket) -> object:
    return re2.compile(_bracket_text(bracket))


def _bracket_has(bracket: Bracket, rune: int) -> bool:
    if 0xD800 <= rune <= 0xDFFF:
        return False
    return _bracket_pattern(bracket).fullmatch(chr(rune)) is not None  # type: ignore[attr-defined]


def unicode_class(name: str, sign: int, fold: bool) -> CharSet:
    """``parseUnicodeClass``'s characters for ``\\p{name}`` (sign 1) or ``\\P{name}`` (-1)."""
    if name == "Any":
        return CharSet(ALL if sign > 0 else ())
    if fold and name in _FOLD_TABLES:
        return CharSet((), frozenset({(sign < 0, _fold_extras(name), (_table_item(name),))}))
    item = _table_item(name)
    if sign < 0:
        item = "\\P" + item[2:]
    return CharSet((), frozenset({(False, (), (item,))}))


#: the Perl classes (``CharGroup.PERL_GROUPS``) and POSIX classes (``POSIX_GROUPS``): sign, ranges
PERL_CLASSES = {
    "d": (1, ((0x30, 0x39),)),
    "D": (-1, ((0x30, 0x39),)),
    "s": (1, ((0x9, 0xA), (0xC, 0xD), (0x20, 0x20))),
    "S": (-1, ((0x9, 0xA), (0xC, 0xD), (0x20, 0x20))),
    "w": (1, ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))),
    "W": (-1, ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))),
}
POSIX_CLASSES: dict[str, Ranges] = {
    "alnum": ((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)),
    "alpha": ((0x41, 0x5A), (0x61, 0x7A)),
    "ascii": ((0x0, 0x7F),),
    "blank": ((0x9, 0x9), (0x20, 0x20)),
    "cntrl": ((0x0, 0x1F), (0x7F, 0x7F)),
    "digit": ((0x30, 0x39),),
    "graph": ((0x21, 0x7E),),
    "lower": ((0x61, 0x7A),),
    "print": ((0x20, 0x7E),),
    "punct": ((0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)),
    "space": ((0x9, 0xD), (0x20, 0x20)),
    "upper": ((0x41, 0x5A),),
    "word": ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)),
    "xdigit": ((0x30, 0x39), (0x41, 0x46), (0x61, 0x66)),
}


def group_ranges(sign: int, ranges: Ranges, fold: bool) -> Ranges:
    """``CharClass.appendGroup``: folded first, then negated."""
    if fold:
        ranges = _folded_ranges(ranges)
    return negated_ranges(ranges) if sign < 0 else ranges


# --- RE2 text ----------------------------------------------------------------------------------

NOTHING = "[^\\x00-\\x{10ffff}]"


def rune_text(rune: int) -> str:
    char = chr(rune)
    if char.isascii() and (char.isalnum() or char == "_"):
        return char
    return f"\\x{{{rune:x}}}"


def _ranges_text(ranges: Ranges) -> str:
    parts: list[str] = []
    for lo, hi in ranges:
        # surrogates are no text RE2 reads: what matches them matches nothing
        for a, b in ((lo, min(hi, 0xD7FF)), (max(lo, 0xE000), hi)):
            if a > b:
                continue
            parts.append(rune_text(a) if a == b else f"{rune_text(a)}-{rune_text(b)}")
    return "".join(parts)


def _bracket_text(bracket: Bracket) -> str:
    negated, ranges, items = bracket
    body = _ranges_text(ranges) + "".join(items)
    if not body:
        return "(?s:.)" if negated else NOTHING
    return f"[{'^' if negated else ''}{body}]"


def set_text(cset: CharSet) -> str:
    parts = [_bracket_text((False, cset.ranges, ()))] if cset.ranges else []
    parts.extend(_bracket_text(bracket) for bracket in sorted(cset.brackets))
    if not parts:
        return NOTHING
    return parts[0] if len(parts) == 1 else f"(?:{'|'.join(parts)})"
