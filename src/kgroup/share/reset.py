"""``share.auto.offset.reset``: where a share partition that was never initialised starts
(Kafka 4.4.0's ``ShareGroupAutoOffsetResetStrategy`` and ``SharePartition.startOffsetDuringInitialization``).

``latest`` (the default) starts at the log's end, ``earliest`` at its start, ``by_duration:<ISO-8601
duration>`` at the first record written no earlier than that long ago (Java's ``Duration.parse``
format, ``PnDTnHnMn.nS``; a negative duration is refused).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

__all__ = ["ShareAutoOffsetReset", "initial_start_offset", "parse_share_auto_offset_reset"]

_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?(?:T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class ShareAutoOffsetReset:
    """``kind`` is ``latest``, ``earliest`` or ``by_duration`` (then ``duration_ms``)."""

    kind: str
    duration_ms: int = 0


def _parse_duration_ms(text: str) -> int:
    m = _DURATION.fullmatch(text)
    if m is None or text.upper().endswith("T") or all(g is None for g in m.groups()[1:5]):
        raise ValueError(f"Text cannot be parsed to a Duration: {text}")
    sign = -1 if m.group(1) == "-" else 1
    days, hours, minutes, seconds, fraction = (m.group(i) for i in range(2, 7))
    try:
        total = Decimal(0)
        total += Decimal(int(days or 0)) * 86400
        total += Decimal(int(hours or 0)) * 3600
        total += Decimal(int(minutes or 0)) * 60
        if seconds is not None:
            sec = Decimal(int(seconds))
            frac = Decimal(f"0.{fraction}") if fraction else Decimal(0)
            total += sec - frac if seconds.startswith("-") else sec + frac
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only digits
        raise ValueError(f"Text cannot be parsed to a Duration: {text}") from exc
    return int(sign * total * 1000)


def parse_share_auto_offset_reset(value: str) -> ShareAutoOffsetReset:
    """The strategy ``value`` names, or ``ValueError`` with one line saying what is wrong."""
    text = value.strip().lower()
    if text in ("latest", "earliest"):
        return ShareAutoOffsetReset(text)
    if text.startswith("by_duration:"):
        duration = value.strip()[len("by_duration:") :]
        ms = _parse_duration_ms(duration)
        if ms < 0:
            raise ValueError(f"share.auto.offset.reset: the duration must not be negative, got {duration}")
        return ShareAutoOffsetReset("by_duration", ms)
    raise ValueError(
        f"share.auto.offset.reset: {value!r} is not latest, earliest or by_duration:<ISO-8601 duration>"
    )


def initial_start_offset(
    strategy: ShareAutoOffsetReset,
    *,
    log_start_offset: int,
    log_end_offset: int,
    offset_for_timestamp: Callable[[int], int | None],
    now_ms: int,
) -> int:
    """The SPSO of a share partition never initialised. ``offset_for_timestamp(ts)`` is the log's
    ListOffsets answer (the first offset whose timestamp is at least ``ts``), ``None`` when there is
    none — Kafka then fails the partition's initialisation (``OffsetNotAvailableException``), raised
    here as ``LookupError``."""
    if strategy.kind == "latest":
        return log_end_offset
    if strategy.kind == "earliest":
        return log_start_offset
    ts = now_ms - strategy.duration_ms
    offset = offset_for_timestamp(ts)
    if offset is None:
        raise LookupError(f"Offset for timestamp {ts} not found")
    return offset
